package rmq

// 105 GET_ROUTEINFO_BY_TOPIC: ext topic; answer TopicRouteData JSON, or
// TOPIC_NOT_EXIST (17).

import (
	"encoding/json"

	"github.com/petrelmq/petrel/internal/remoting"
)

// MasterID is the broker id of a master; every other id is a slave.
const MasterID int64 = 0

// RouteRequest is the header of 105; topic is required.
type RouteRequest struct {
	Topic string
}

// DecodeRouteRequest reads the header of 105.
func DecodeRouteRequest(c *remoting.Command) (RouteRequest, error) {
	f := fields{c: c}
	h := RouteRequest{Topic: f.need("topic")}
	return h, f.result()
}

// EncodeRouteRequest is a 105 request.
func EncodeRouteRequest(h RouteRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetRouteInfoByTopic, map[string]string{"topic": h.Topic}, nil)
}

// QueueData is a route's entry for one broker's queues of a topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int32  `json:"perm"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData lists the addresses of one broker name, by broker id.
// BrokerAddrs always encodes as an object ({} when empty): the Go client
// panics on a missing one. Its keys are written quoted ("0"), which
// fastjson and the Go client read.
type BrokerData struct {
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
	BrokerName  string           `json:"brokerName"`
	Cluster     string           `json:"cluster"`
}

// MarshalJSON writes brokerAddrs as {} rather than null when empty.
func (b BrokerData) MarshalJSON() ([]byte, error) {
	type plain BrokerData
	if b.BrokerAddrs == nil {
		b.BrokerAddrs = map[int64]string{}
	}
	return json.Marshal(plain(b))
}

// TopicRouteData is a topic route, the answer to 105. Its JSON is
// compact, with queueDatas and brokerDatas always arrays and
// orderTopicConf only when set.
type TopicRouteData struct {
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
}

// MarshalJSON writes nil slices and maps as [] and {}.
func (r TopicRouteData) MarshalJSON() ([]byte, error) {
	type plain TopicRouteData
	if r.BrokerDatas == nil {
		r.BrokerDatas = []BrokerData{}
	}
	if r.QueueDatas == nil {
		r.QueueDatas = []QueueData{}
	}
	if r.FilterServerTable == nil {
		r.FilterServerTable = map[string][]string{}
	}
	return json.Marshal(plain(r))
}

// EncodeTopicRouteDataBody writes the answer body of 105.
func EncodeTopicRouteDataBody(r TopicRouteData) []byte { return mustJSON(r) }

// DecodeTopicRouteDataBody reads the answer body of 105.
func DecodeTopicRouteDataBody(body []byte) (TopicRouteData, error) {
	var r TopicRouteData
	err := decodeJSON(body, "TopicRouteData", &r)
	return r, err
}
