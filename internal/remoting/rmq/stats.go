package rmq

// Operator requests about topics and groups, answered in RocketMQ's shapes
// so that its tools read them too:
//
//	202 GET_TOPIC_STATS_INFO         ext topic -> TopicStatsTable; 17 for an unknown topic
//	203 GET_CONSUMER_CONNECTION_LIST ext consumerGroup -> ConsumerConnection; 206 when no member is online
//	208 GET_CONSUME_STATS            ext consumerGroup, topic (optional) -> ConsumeStats; 26 for an unknown group
//
// The offset tables of 202 and 208 are maps keyed by a message queue,
// written as Java's fastjson writes them, with the queue object as the
// key, which is not JSON:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":0,...},...},"topicPutTps":0}
//
// Decoders also read the array form [[{queue},value],...] that other
// writers use.

import (
	"encoding/json"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
)

// TopicStatsRequest is the header of 202; topic is required.
type TopicStatsRequest struct {
	Topic string
}

// DecodeTopicStatsRequest reads the header of 202.
func DecodeTopicStatsRequest(c *remoting.Command) (TopicStatsRequest, error) {
	f := fields{c: c}
	h := TopicStatsRequest{Topic: f.need("topic")}
	return h, f.result()
}

// EncodeTopicStatsRequest is a 202 request.
func EncodeTopicStatsRequest(h TopicStatsRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetTopicStatsInfo, map[string]string{"topic": h.Topic}, nil)
}

// ConsumerConnectionListRequest is the header of 203; consumerGroup is
// required.
type ConsumerConnectionListRequest struct {
	ConsumerGroup string
}

// DecodeConsumerConnectionListRequest reads the header of 203.
func DecodeConsumerConnectionListRequest(c *remoting.Command) (ConsumerConnectionListRequest, error) {
	f := fields{c: c}
	h := ConsumerConnectionListRequest{ConsumerGroup: f.need("consumerGroup")}
	return h, f.result()
}

// EncodeConsumerConnectionListRequest is a 203 request.
func EncodeConsumerConnectionListRequest(h ConsumerConnectionListRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetConsumerConnectionList, map[string]string{"consumerGroup": h.ConsumerGroup}, nil)
}

// ConsumeStatsRequest is the header of 208: consumerGroup (required) and
// topic (optional: every topic of the group).
type ConsumeStatsRequest struct {
	ConsumerGroup string
	Topic         string
}

// DecodeConsumeStatsRequest reads the header of 208.
func DecodeConsumeStatsRequest(c *remoting.Command) (ConsumeStatsRequest, error) {
	f := fields{c: c}
	h := ConsumeStatsRequest{ConsumerGroup: f.need("consumerGroup"), Topic: f.str("topic")}
	return h, f.result()
}

// EncodeConsumeStatsRequest is a 208 request (topic only when set).
func EncodeConsumeStatsRequest(h ConsumeStatsRequest) *remoting.Command {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return remoting.NewRequest(CodeGetConsumeStats, ext, nil)
}

// TopicOffset is one queue's entry in a TopicStatsTable.
type TopicOffset struct {
	Topic               string
	BrokerName          string
	QueueID             int32
	MinOffset           int64
	MaxOffset           int64
	LastUpdateTimestamp int64
}

type topicOffsetJSON struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is the answer body of 202.
type TopicStatsTable struct {
	Offsets     []TopicOffset // in the order written
	TopicPutTps float64
	// RemovedUnconsumed is Petrel's own: per group, the messages of the
	// topic that retention removed early before the group consumed them.
	RemovedUnconsumed map[string]uint64
}

// EncodeTopicStatsBody writes the answer body of 202.
func EncodeTopicStatsBody(t TopicStatsTable) []byte {
	lost := t.RemovedUnconsumed
	if lost == nil {
		lost = map[string]uint64{}
	}
	return queueMapBody(len(t.Offsets), func(i int) (MessageQueue, any) {
		o := t.Offsets[i]
		return MessageQueue{o.Topic, o.BrokerName, o.QueueID}, topicOffsetJSON{o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp}
	}, struct {
		RemovedUnconsumed map[string]uint64 `json:"removedUnconsumed"`
		TopicPutTps       float64           `json:"topicPutTps"`
	}{lost, t.TopicPutTps})
}

// DecodeTopicStatsBody reads the answer body of 202.
func DecodeTopicStatsBody(body []byte) (TopicStatsTable, error) {
	var t TopicStatsTable
	var rest struct {
		RemovedUnconsumed map[string]uint64 `json:"removedUnconsumed"`
		TopicPutTps       float64           `json:"topicPutTps"`
	}
	entries, err := decodeQueueMapBody(body, "TopicStatsTable", &rest)
	if err != nil {
		return t, err
	}
	t.TopicPutTps, t.RemovedUnconsumed = rest.TopicPutTps, rest.RemovedUnconsumed
	for _, e := range entries {
		var o topicOffsetJSON
		if err := json.Unmarshal(e.value, &o); err != nil {
			return TopicStatsTable{}, &BodyError{Body: "TopicStatsTable", Problem: "an offsetTable value is not a TopicOffset object: " + jsonProblem(err, "TopicOffset")}
		}
		t.Offsets = append(t.Offsets, TopicOffset{e.Topic, e.BrokerName, e.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
	}
	return t, nil
}

// ConsumeOffset is one queue's entry in ConsumeStats. PullOffset −
// ConsumerOffset is what mqadmin shows as in flight; InFlight (Petrel's)
// counts a pop group's unacknowledged, invisible messages exactly.
type ConsumeOffset struct {
	Topic          string
	BrokerName     string
	QueueID        int32
	BrokerOffset   int64
	ConsumerOffset int64
	PullOffset     int64
	LastTimestamp  int64
	InFlight       int64
}

type consumeOffsetJSON struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	InFlight       int64 `json:"inFlight"`
}

// ConsumeStats is the answer body of 208.
type ConsumeStats struct {
	Offsets    []ConsumeOffset // in the order written
	ConsumeTps float64
}

// EncodeConsumeStatsBody writes the answer body of 208.
func EncodeConsumeStatsBody(s ConsumeStats) []byte {
	return queueMapBody(len(s.Offsets), func(i int) (MessageQueue, any) {
		o := s.Offsets[i]
		return MessageQueue{o.Topic, o.BrokerName, o.QueueID}, consumeOffsetJSON{o.BrokerOffset, o.ConsumerOffset, o.PullOffset, o.LastTimestamp, o.InFlight}
	}, struct {
		ConsumeTps float64 `json:"consumeTps"`
	}{s.ConsumeTps})
}

// DecodeConsumeStatsBody reads the answer body of 208.
func DecodeConsumeStatsBody(body []byte) (ConsumeStats, error) {
	var s ConsumeStats
	var rest struct {
		ConsumeTps float64 `json:"consumeTps"`
	}
	entries, err := decodeQueueMapBody(body, "ConsumeStats", &rest)
	if err != nil {
		return s, err
	}
	s.ConsumeTps = rest.ConsumeTps
	for _, e := range entries {
		var o consumeOffsetJSON
		if err := json.Unmarshal(e.value, &o); err != nil {
			return ConsumeStats{}, &BodyError{Body: "ConsumeStats", Problem: "an offsetTable value is not an OffsetWrapper object: " + jsonProblem(err, "OffsetWrapper")}
		}
		s.Offsets = append(s.Offsets, ConsumeOffset{e.Topic, e.BrokerName, e.QueueID, o.BrokerOffset, o.ConsumerOffset, o.PullOffset, o.LastTimestamp, o.InFlight})
	}
	return s, nil
}

// ConsumerConnection is the answer body of 203.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// Connection is one member of a ConsumerConnection.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int16  `json:"version"`
}

// EncodeConsumerConnectionBody writes the answer body of 203 (nil sets,
// tables and lists as {} and []; SubscriptionData writes its nil sets as
// []).
func EncodeConsumerConnectionBody(c ConsumerConnection) []byte {
	if c.ConnectionSet == nil {
		c.ConnectionSet = []Connection{}
	}
	if c.SubscriptionTable == nil {
		c.SubscriptionTable = map[string]SubscriptionData{}
	}
	return mustJSON(c)
}

// DecodeConsumerConnectionBody reads the answer body of 203.
func DecodeConsumerConnectionBody(body []byte) (ConsumerConnection, error) {
	var c ConsumerConnection
	err := decodeJSON(body, "ConsumerConnection", &c)
	return c, err
}

// queueMapBody writes {"offsetTable":{key:value,...},...}: n entries of
// a map keyed by message queues, entry i from at(i), in that order, then
// the fields of rest (a struct).
func queueMapBody(n int, at func(i int) (MessageQueue, any), rest any) []byte {
	b := append(make([]byte, 0, 64+128*n), `{"offsetTable":{`...)
	for i := range n {
		q, v := at(i)
		b = appendMQEntry(b, i == 0, q, mustJSON(v))
	}
	b = append(b, '}')
	if x := mustJSON(rest); len(x) > 2 {
		b = append(b, ',')
		b = append(b, x[1:len(x)-1]...)
	}
	return append(b, '}')
}

// decodeQueueMapBody reads a top-level JSON-like object whose offsetTable
// is a map keyed by message queues (object keys or the array form); the
// other fields are unmarshalled into rest. Errors are *BodyError for name.
func decodeQueueMapBody(body []byte, name string, rest any) ([]queueEntry, error) {
	bad := func(format string, args ...any) error {
		return &BodyError{Body: name, Problem: fmt.Sprintf(format, args...)}
	}
	p := &scan{b: body}
	p.ws()
	if p.peek() != '{' {
		return nil, bad("the body is not a JSON object")
	}
	p.i++
	var entries []queueEntry
	seen := false
	others := []byte{'{'}
	for {
		p.ws()
		if p.peek() == '}' {
			break
		}
		kb, err := p.value()
		if err != nil {
			return nil, bad("%v", err)
		}
		var key string
		if err := json.Unmarshal(kb, &key); err != nil {
			return nil, bad("a top-level key is not a string (at byte %d)", p.i)
		}
		p.ws()
		if p.peek() != ':' {
			return nil, bad("want ':' after key %.64q at byte %d", key, p.i)
		}
		p.i++
		p.ws()
		if key == "offsetTable" {
			if entries, err = p.queueMap(); err != nil {
				return nil, bad("offsetTable: %v", err)
			}
			seen = true
		} else {
			v, err := p.value()
			if err != nil {
				return nil, bad("%v", err)
			}
			if len(others) > 1 {
				others = append(others, ',')
			}
			others = append(others, kb...)
			others = append(others, ':')
			others = append(others, v...)
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
		default:
			return nil, bad("want ',' or '}' at byte %d", p.i)
		}
	}
	p.i++
	p.ws()
	if p.i != len(p.b) {
		return nil, bad("data after the object at byte %d", p.i)
	}
	if !seen {
		return nil, bad("the body has no offsetTable")
	}
	others = append(others, '}')
	if err := json.Unmarshal(others, rest); err != nil {
		return nil, bad("%s", jsonProblem(err, name))
	}
	return entries, nil
}
