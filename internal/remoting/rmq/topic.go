package rmq

// Topic administration:
//
//	17  UPDATE_AND_CREATE_TOPIC  ext topic, defaultTopic, readQueueNums, writeQueueNums,
//	                             perm, topicFilterType, topicSysFlag, order, attributes
//	215 DELETE_TOPIC_IN_BROKER   ext topic
//	216 DELETE_TOPIC_IN_NAMESRV  ext topic
//	21  GET_ALL_TOPIC_CONFIG     answer: TopicConfigSerializeWrapper JSON
//	206 GET_ALL_TOPIC_LIST       answer: {"topicList":[...]}

import (
	"encoding/json"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Topic perm bits (Java's PermName).
const (
	PermRead    int32 = 4
	PermWrite   int32 = 2
	PermInherit int32 = 1
)

// DataVersion is Java's DataVersion: a state of a broker's topic or group
// table (the time of its last change in ms, and a change counter).
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// String renders v as the JSON Java writes, e.g. {"timestamp":1,"counter":2}.
func (v DataVersion) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CreateTopicRequest is the header of 17. Required (Java's @CFNotNull,
// and what mqadmin, the dashboard and the Go client always send): topic,
// readQueueNums, writeQueueNums and perm. defaultTopic and topicFilterType
// are read but optional (Petrel does not use the first; an empty second
// means SINGLE_TAG). Attributes are RocketMQ 5's changes to the topic's
// current attributes, "+key=value,-key".
type CreateTopicRequest struct {
	Topic           string
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string
	TopicSysFlag    int32
	Order           bool
	Attributes      string
}

// DecodeCreateTopic reads the header of 17.
func DecodeCreateTopic(c *remoting.Command) (CreateTopicRequest, error) {
	f := fields{c: c}
	h := CreateTopicRequest{
		Topic:           f.need("topic"),
		DefaultTopic:    f.str("defaultTopic"),
		ReadQueueNums:   f.needI32("readQueueNums"),
		WriteQueueNums:  f.needI32("writeQueueNums"),
		Perm:            f.needI32("perm"),
		TopicFilterType: f.str("topicFilterType"),
		TopicSysFlag:    f.i32("topicSysFlag"),
		Order:           f.boolean("order"),
		Attributes:      f.str("attributes"),
	}
	return h, f.result()
}

// EncodeCreateTopic is a 17 request; attributes only when set.
func EncodeCreateTopic(h CreateTopicRequest) *remoting.Command {
	ext := map[string]string{
		"topic": h.Topic, "defaultTopic": h.DefaultTopic,
		"readQueueNums": itoa(h.ReadQueueNums), "writeQueueNums": itoa(h.WriteQueueNums),
		"perm": itoa(h.Perm), "topicFilterType": h.TopicFilterType, "topicSysFlag": itoa(h.TopicSysFlag),
		"order": btoa(h.Order),
	}
	if h.Attributes != "" {
		ext["attributes"] = h.Attributes
	}
	return remoting.NewRequest(CodeUpdateAndCreateTopic, ext, nil)
}

// DeleteTopicRequest is the header of 215 and 216; topic is required.
type DeleteTopicRequest struct {
	Topic string
}

// DecodeDeleteTopic reads the header of 215 or 216.
func DecodeDeleteTopic(c *remoting.Command) (DeleteTopicRequest, error) {
	f := fields{c: c}
	h := DeleteTopicRequest{Topic: f.need("topic")}
	return h, f.result()
}

// EncodeDeleteTopicInBroker is a 215 request.
func EncodeDeleteTopicInBroker(h DeleteTopicRequest) *remoting.Command {
	return remoting.NewRequest(CodeDeleteTopicInBroker, map[string]string{"topic": h.Topic}, nil)
}

// EncodeDeleteTopicInNamesrv is a 216 request.
func EncodeDeleteTopicInNamesrv(h DeleteTopicRequest) *remoting.Command {
	return remoting.NewRequest(CodeDeleteTopicInNamesrv, map[string]string{"topic": h.Topic}, nil)
}

// TopicConfig is Java's TopicConfig as a broker lists it (21): the
// fields in this order, attributes (RocketMQ 5) only when set.
type TopicConfig struct {
	TopicName      string `json:"topicName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	// Perm is a sum of PermRead, PermWrite and PermInherit.
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes,omitempty"`
}

// TopicConfigBody is Java's TopicConfigSerializeWrapper, the answer of 21.
type TopicConfigBody struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// EncodeTopicConfigBody writes the answer body of 21 (a nil table as {}).
func EncodeTopicConfigBody(b TopicConfigBody) []byte {
	if b.TopicConfigTable == nil {
		b.TopicConfigTable = map[string]TopicConfig{}
	}
	return mustJSON(b)
}

// DecodeTopicConfigBody reads the answer body of 21.
func DecodeTopicConfigBody(body []byte) (TopicConfigBody, error) {
	var b TopicConfigBody
	err := decodeJSON(body, "TopicConfigSerializeWrapper", &b)
	return b, err
}

// TopicListBody is the answer body of 206 (Java's TopicList).
type TopicListBody struct {
	TopicList []string `json:"topicList"`
}

// EncodeTopicListBody writes the answer body of 206 (a nil list as []).
func EncodeTopicListBody(b TopicListBody) []byte {
	if b.TopicList == nil {
		b.TopicList = []string{}
	}
	return mustJSON(b)
}

// DecodeTopicListBody reads the answer body of 206.
func DecodeTopicListBody(body []byte) (TopicListBody, error) {
	var b TopicListBody
	err := decodeJSON(body, "TopicList", &b)
	return b, err
}
