package rmq

// 106 GET_BROKER_CLUSTER_INFO: no header; answer ClusterInfo JSON.

import "github.com/petrelmq/petrel/internal/remoting"

// ClusterInfo is the answer to 106: every live broker name with its
// addresses, and the broker names of each cluster.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// EncodeClusterInfoRequest is a 106 request.
func EncodeClusterInfoRequest() *remoting.Command {
	return remoting.NewRequest(CodeGetBrokerClusterInfo, nil, nil)
}

// EncodeClusterInfoBody writes the answer body of 106.
func EncodeClusterInfoBody(ci ClusterInfo) []byte { return mustJSON(ci) }

// DecodeClusterInfoBody reads the answer body of 106.
func DecodeClusterInfoBody(body []byte) (ClusterInfo, error) {
	var ci ClusterInfo
	err := decodeJSON(body, "ClusterInfo", &ci)
	return ci, err
}
