package rmq

import (
	"encoding/json"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Admin lists and checks (RocketMQ's AdminBrokerProcessor,
// ClientManageProcessor and the name server's DefaultRequestProcessor):
//
//	18  UPDATE_AND_CREATE_TOPIC_LIST  body {"topicConfigList":[TopicConfig,...]}
//	225 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST  body {"groupConfigList":[SubscriptionGroupConfig,...]}
//	46  CHECK_CLIENT_CONFIG  body {"clientId","group","subscriptionData":{...},"namespace"}
//	303 QUERY_CONSUME_TIME_SPAN  ext topic, group; answer {"consumeTimeSpanSet":[QueueTimeSpan,...]}
//	305 GET_SYSTEM_TOPIC_LIST_FROM_BROKER  answer TopicList {"topicList":[...]}
//	224 GET_TOPICS_BY_CLUSTER (name server)  ext cluster; answer TopicList
//	304 GET_SYSTEM_TOPIC_LIST_FROM_NS (name server)  answer TopicList with brokerAddr

// Limits of the list bodies.
const (
	MaxListBodyBytes = 4 << 20
	MaxListEntries   = 1000
)

// QueryConsumeTimeSpanRequest is the header of 303 (both required).
type QueryConsumeTimeSpanRequest struct {
	Topic string
	Group string
}

// DecodeQueryConsumeTimeSpan reads a 303 header.
func DecodeQueryConsumeTimeSpan(c *remoting.Command) (QueryConsumeTimeSpanRequest, error) {
	f := fields{c: c}
	h := QueryConsumeTimeSpanRequest{Topic: f.need("topic"), Group: f.need("group")}
	return h, f.result()
}

// EncodeQueryConsumeTimeSpan is a 303 request.
func EncodeQueryConsumeTimeSpan(h QueryConsumeTimeSpanRequest) *remoting.Command {
	return remoting.NewRequest(CodeQueryConsumeTimeSpan, map[string]string{"topic": h.Topic, "group": h.Group}, nil)
}

// QueueTimeSpan is one queue of a 303 answer; times in ms since the
// epoch, DelayTime in ms (0 when the group has consumed everything).
type QueueTimeSpan struct {
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	DelayTime        int64        `json:"delayTime"`
}

// QueryConsumeTimeSpanBody is the answer body of 303.
type QueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet []QueueTimeSpan `json:"consumeTimeSpanSet"`
}

// EncodeQueryConsumeTimeSpanBody writes the answer body of 303 (nil as []).
func EncodeQueryConsumeTimeSpanBody(b QueryConsumeTimeSpanBody) []byte {
	if b.ConsumeTimeSpanSet == nil {
		b.ConsumeTimeSpanSet = []QueueTimeSpan{}
	}
	return mustJSON(b)
}

// DecodeQueryConsumeTimeSpanBody reads the answer body of 303.
func DecodeQueryConsumeTimeSpanBody(body []byte) (QueryConsumeTimeSpanBody, error) {
	var b QueryConsumeTimeSpanBody
	err := decodeJSON(body, "QueryConsumeTimeSpanBody", &b)
	return b, err
}

// GetTopicsByClusterRequest is the header of 224 (cluster required).
type GetTopicsByClusterRequest struct{ Cluster string }

// DecodeGetTopicsByCluster reads a 224 header.
func DecodeGetTopicsByCluster(c *remoting.Command) (GetTopicsByClusterRequest, error) {
	f := fields{c: c}
	h := GetTopicsByClusterRequest{Cluster: f.need("cluster")}
	return h, f.result()
}

// EncodeGetTopicsByCluster is a 224 request.
func EncodeGetTopicsByCluster(h GetTopicsByClusterRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetTopicsByCluster, map[string]string{"cluster": h.Cluster}, nil)
}

// TopicListAddr is Java's TopicList with its brokerAddr: the answer of
// 301 (this broker's address), 304 (a broker's address the admin then
// asks 305) and 305.
type TopicListAddr struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// EncodeTopicListAddr writes a TopicList with brokerAddr (nil list as []).
func EncodeTopicListAddr(b TopicListAddr) []byte {
	if b.TopicList == nil {
		b.TopicList = []string{}
	}
	return mustJSON(b)
}

// DecodeTopicListAddr reads a TopicList body of 224, 304 or 305.
func DecodeTopicListAddr(body []byte) (TopicListAddr, error) {
	var b TopicListAddr
	err := decodeJSON(body, "TopicList", &b)
	return b, err
}

func boundList(body []byte, name string) error {
	switch {
	case len(body) == 0:
		return &BodyError{Body: name, Problem: "the request has no " + name + " JSON body"}
	case len(body) > MaxListBodyBytes:
		return &BodyError{Body: name, Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxListBodyBytes)}
	}
	return nil
}

// CreateTopicListBody is the body of 18.
type CreateTopicListBody struct {
	TopicConfigList []TopicConfig `json:"topicConfigList"`
}

// DecodeCreateTopicList reads the body of 18: at most MaxListEntries
// topics, each named. Missing fields keep Java's TopicConfig defaults
// (16 read and write queues, perm 6, SINGLE_TAG).
func DecodeCreateTopicList(body []byte) (CreateTopicListBody, error) {
	const name = "CreateTopicListRequestBody"
	if err := boundList(body, name); err != nil {
		return CreateTopicListBody{}, err
	}
	var raw struct {
		TopicConfigList []jsonObject `json:"topicConfigList"`
	}
	if err := decodeJSON(body, name, &raw); err != nil {
		return CreateTopicListBody{}, err
	}
	if raw.TopicConfigList == nil {
		return CreateTopicListBody{}, &BodyError{Body: name, Problem: "topicConfigList is missing"}
	}
	if len(raw.TopicConfigList) > MaxListEntries {
		return CreateTopicListBody{}, &BodyError{Body: name, Problem: fmt.Sprintf("topicConfigList has %d entries, more than the limit of %d", len(raw.TopicConfigList), MaxListEntries)}
	}
	out := CreateTopicListBody{TopicConfigList: make([]TopicConfig, 0, len(raw.TopicConfigList))}
	for i, o := range raw.TopicConfigList {
		t := TopicConfig{ReadQueueNums: 16, WriteQueueNums: 16, Perm: PermRead | PermWrite, TopicFilterType: "SINGLE_TAG"}
		if err := decodeJSON(o, name, &t); err != nil {
			return CreateTopicListBody{}, err
		}
		if t.TopicName == "" {
			return CreateTopicListBody{}, &BodyError{Body: name, Problem: fmt.Sprintf("topicConfigList[%d] has no topicName", i)}
		}
		out.TopicConfigList = append(out.TopicConfigList, t)
	}
	return out, nil
}

// EncodeCreateTopicList is an 18 request.
func EncodeCreateTopicList(b CreateTopicListBody) *remoting.Command {
	return remoting.NewRequest(CodeUpdateAndCreateTopicList, nil, mustJSON(b))
}

// SubscriptionGroupList is the body of 225.
type SubscriptionGroupList struct {
	GroupConfigList []SubscriptionGroupConfig `json:"groupConfigList"`
}

// DecodeSubscriptionGroupList reads the body of 225: at most
// MaxListEntries groups, each over Java's defaults as in
// DecodeSubscriptionGroupBody.
func DecodeSubscriptionGroupList(body []byte) (SubscriptionGroupList, error) {
	const name = "SubscriptionGroupList"
	if err := boundList(body, name); err != nil {
		return SubscriptionGroupList{}, err
	}
	var raw struct {
		GroupConfigList []jsonObject `json:"groupConfigList"`
	}
	if err := decodeJSON(body, name, &raw); err != nil {
		return SubscriptionGroupList{}, err
	}
	if raw.GroupConfigList == nil {
		return SubscriptionGroupList{}, &BodyError{Body: name, Problem: "groupConfigList is missing"}
	}
	if len(raw.GroupConfigList) > MaxListEntries {
		return SubscriptionGroupList{}, &BodyError{Body: name, Problem: fmt.Sprintf("groupConfigList has %d entries, more than the limit of %d", len(raw.GroupConfigList), MaxListEntries)}
	}
	out := SubscriptionGroupList{GroupConfigList: make([]SubscriptionGroupConfig, 0, len(raw.GroupConfigList))}
	for i, o := range raw.GroupConfigList {
		g, err := DecodeSubscriptionGroupBody(o)
		if err != nil {
			return SubscriptionGroupList{}, err
		}
		if g.GroupName == "" {
			return SubscriptionGroupList{}, &BodyError{Body: name, Problem: fmt.Sprintf("groupConfigList[%d] has no groupName", i)}
		}
		out.GroupConfigList = append(out.GroupConfigList, g)
	}
	return out, nil
}

// EncodeSubscriptionGroupList is a 225 request.
func EncodeSubscriptionGroupList(b SubscriptionGroupList) *remoting.Command {
	return remoting.NewRequest(CodeUpdateAndCreateSubscriptionGroupList, nil, mustJSON(b))
}

// CheckClientRequest is the body of 46.
type CheckClientRequest struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
	Namespace        string            `json:"namespace,omitempty"`
}

// DecodeCheckClientConfig reads the body of 46 (bounded; an empty body
// is an empty request, which RocketMQ answers SUCCESS).
func DecodeCheckClientConfig(body []byte) (CheckClientRequest, error) {
	const name = "CheckClientRequestBody"
	var r CheckClientRequest
	if len(body) == 0 {
		return r, nil
	}
	if len(body) > MaxAssignmentBodyBytes {
		return r, &BodyError{Body: name, Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxAssignmentBodyBytes)}
	}
	err := decodeJSON(body, name, &r)
	return r, err
}

// EncodeCheckClientConfig is a 46 request.
func EncodeCheckClientConfig(r CheckClientRequest) *remoting.Command {
	return remoting.NewRequest(CodeCheckClientConfig, nil, mustJSON(r))
}

// jsonObject is one raw element of a list body.
type jsonObject = json.RawMessage
