package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// The topic and group lookups mqadmin makes (topicStatus, consumerProgress,
// queryMsgById, statsAll, ...): GET_TOPIC_CONFIG (351),
// QUERY_TOPIC_CONSUME_BY_WHO (300) and QUERY_TOPICS_BY_CONSUMER (301).
const (
	CodeQueryTopicConsumeByWho int16 = 300
	CodeQueryTopicsByConsumer  int16 = 301
	CodeGetTopicConfig         int16 = 351
)

// TopicRequest is a header of one topic field (300, 351; 351's lo, the
// static-topic mapping, is read as absent: Petrel has no static topics).
type TopicRequest struct{ Topic string }

// DecodeTopicRequest reads the header of 300 or 351.
func DecodeTopicRequest(c *remoting.Command) (TopicRequest, error) {
	f := fields{c: c}
	h := TopicRequest{Topic: f.need("topic")}
	return h, f.result()
}

// EncodeGetTopicConfig is a 351 request.
func EncodeGetTopicConfig(topic string) *remoting.Command {
	return remoting.NewRequest(CodeGetTopicConfig, map[string]string{"topic": topic}, nil)
}

// EncodeQueryTopicConsumeByWho is a 300 request.
func EncodeQueryTopicConsumeByWho(topic string) *remoting.Command {
	return remoting.NewRequest(CodeQueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
}

// GroupRequest is the header of 301: group.
type GroupRequest struct{ Group string }

// DecodeGroupRequest reads the header of 301.
func DecodeGroupRequest(c *remoting.Command) (GroupRequest, error) {
	f := fields{c: c}
	h := GroupRequest{Group: f.need("group")}
	return h, f.result()
}

// EncodeQueryTopicsByConsumer is a 301 request.
func EncodeQueryTopicsByConsumer(group string) *remoting.Command {
	return remoting.NewRequest(CodeQueryTopicsByConsumer, map[string]string{"group": group}, nil)
}

// TopicConfigAndMapping is the answer body of 351 (Java's
// TopicConfigAndQueueMapping: a TopicConfig and, for a static topic, its
// queue mapping, never set here).
type TopicConfigAndMapping struct {
	TopicConfig
	MappingDetail any `json:"mappingDetail"`
}

// EncodeTopicConfigAndMapping writes the answer body of 351.
func EncodeTopicConfigAndMapping(b TopicConfigAndMapping) []byte { return mustJSON(b) }

// DecodeTopicConfigAndMapping reads the answer body of 351.
func DecodeTopicConfigAndMapping(body []byte) (TopicConfigAndMapping, error) {
	var b TopicConfigAndMapping
	err := decodeJSON(body, "TopicConfigAndQueueMapping", &b)
	return b, err
}

// GroupListBody is the answer body of 300 (Java's GroupList).
type GroupListBody struct {
	GroupList []string `json:"groupList"`
}

// EncodeGroupListBody writes the answer body of 300 (a nil list as []).
func EncodeGroupListBody(b GroupListBody) []byte {
	if b.GroupList == nil {
		b.GroupList = []string{}
	}
	return mustJSON(b)
}

// DecodeGroupListBody reads the answer body of 300.
func DecodeGroupListBody(body []byte) (GroupListBody, error) {
	var b GroupListBody
	err := decodeJSON(body, "GroupList", &b)
	return b, err
}
