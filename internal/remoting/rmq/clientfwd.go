package rmq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Requests an admin sends a broker that the broker answers by asking a
// consumer client over the client's own connection (RocketMQ's
// AdminBrokerProcessor.callConsumer and Broker2Client):
//
//	307 GET_CONSUMER_RUNNING_INFO   ext consumerGroup, clientId, jstackEnable;
//	                                forwarded as is, the client's answer relayed
//	                                (body: its ConsumerRunningInfo JSON)
//	309 CONSUME_MESSAGE_DIRECTLY    ext consumerGroup, clientId, msgId, topic;
//	                                the broker adds brokerName, topicSysFlag,
//	                                groupSysFlag and the stored message as body
//	223 INVOKE_BROKER_TO_GET_CONSUMER_STATUS  ext topic, group, clientAddr
//	                                (a client id; empty: every member); the
//	                                broker sends 221 GET_CONSUMER_STATUS_FROM_CLIENT
//	                                (ext topic, group) to each and answers
//	                                GetConsumerStatusBody {"consumerTable":
//	                                {clientId:{queue:offset}}, "messageQueueTable":{}}
//
// A member not connected is SYSTEM_ERROR "The Consumer <g> <c> not
// online"; a client that does not answer in time is CONSUME_MSG_TIMEOUT
// (207), as in RocketMQ.

// Request codes of this file and of the admin lists (adminlist.go).
const (
	CodeUpdateAndCreateTopicList             int16 = 18
	CodeCheckClientConfig                    int16 = 46
	CodeGetConsumerStatusFromClient          int16 = 221 // broker → consumer
	CodeInvokeBrokerToGetConsumerStatus      int16 = 223
	CodeGetTopicsByCluster                   int16 = 224
	CodeUpdateAndCreateSubscriptionGroupList int16 = 225
	CodeQueryConsumeTimeSpan                 int16 = 303
	CodeGetSystemTopicListFromNS             int16 = 304
	CodeGetSystemTopicListFromBroker         int16 = 305
	CodeGetConsumerRunningInfo               int16 = 307 // admin → broker → consumer
	CodeConsumeMessageDirectly               int16 = 309 // admin → broker → consumer
	CodeQueryAssignment                      int16 = 400
	CodeSetMessageRequestMode                int16 = 401
)

// RespConsumeMsgTimeout answers a forwarded request the client did not
// answer in time.
const RespConsumeMsgTimeout int16 = 207

// GetConsumerRunningInfoRequest is the header of 307; consumerGroup and
// clientId are required.
type GetConsumerRunningInfoRequest struct {
	ConsumerGroup string
	ClientID      string
	JstackEnable  bool
}

// DecodeGetConsumerRunningInfo reads a 307 header.
func DecodeGetConsumerRunningInfo(c *remoting.Command) (GetConsumerRunningInfoRequest, error) {
	f := fields{c: c}
	h := GetConsumerRunningInfoRequest{ConsumerGroup: f.need("consumerGroup"), ClientID: f.need("clientId"), JstackEnable: f.boolean("jstackEnable")}
	return h, f.result()
}

// EncodeGetConsumerRunningInfo is a 307 request.
func EncodeGetConsumerRunningInfo(h GetConsumerRunningInfoRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetConsumerRunningInfo, map[string]string{
		"consumerGroup": h.ConsumerGroup, "clientId": h.ClientID, "jstackEnable": btoa(h.JstackEnable)}, nil)
}

// ConsumeMessageDirectlyRequest is the header of 309; consumerGroup is
// required, the rest optional (Java's @CFNullable).
type ConsumeMessageDirectlyRequest struct {
	ConsumerGroup string
	ClientID      string
	MsgID         string
	BrokerName    string
	Topic         string
}

// DecodeConsumeMessageDirectly reads a 309 header.
func DecodeConsumeMessageDirectly(c *remoting.Command) (ConsumeMessageDirectlyRequest, error) {
	f := fields{c: c}
	h := ConsumeMessageDirectlyRequest{ConsumerGroup: f.need("consumerGroup"), ClientID: f.str("clientId"),
		MsgID: f.str("msgId"), BrokerName: f.str("brokerName"), Topic: f.str("topic")}
	return h, f.result()
}

// EncodeConsumeMessageDirectly is a 309 request (as an admin sends it).
func EncodeConsumeMessageDirectly(h ConsumeMessageDirectlyRequest) *remoting.Command {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup, "clientId": h.ClientID, "msgId": h.MsgID}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return remoting.NewRequest(CodeConsumeMessageDirectly, ext, nil)
}

// GetConsumerStatusRequest is the header of 223 and 221: topic and group
// are required; ClientAddr (223 only) names one member by client id.
type GetConsumerStatusRequest struct {
	Topic      string
	Group      string
	ClientAddr string
}

// DecodeGetConsumerStatus reads a 223 or 221 header.
func DecodeGetConsumerStatus(c *remoting.Command) (GetConsumerStatusRequest, error) {
	f := fields{c: c}
	h := GetConsumerStatusRequest{Topic: f.need("topic"), Group: f.need("group"), ClientAddr: f.str("clientAddr")}
	return h, f.result()
}

// EncodeGetConsumerStatus is a 223 request.
func EncodeGetConsumerStatus(h GetConsumerStatusRequest) *remoting.Command {
	ext := map[string]string{"topic": h.Topic, "group": h.Group}
	if h.ClientAddr != "" {
		ext["clientAddr"] = h.ClientAddr
	}
	return remoting.NewRequest(CodeInvokeBrokerToGetConsumerStatus, ext, nil)
}

// EncodeGetConsumerStatusFromClient is the 221 the broker sends a member.
func EncodeGetConsumerStatusFromClient(topic, group string) *remoting.Command {
	return remoting.NewRequest(CodeGetConsumerStatusFromClient, map[string]string{"topic": topic, "group": group}, nil)
}

// MaxConsumerStatusBytes bounds a client's answer to 221.
const MaxConsumerStatusBytes = 4 << 20

// DecodeClientConsumerStatus reads a client's answer body to 221: its
// messageQueueTable (queue → offset). A body without the table is empty.
func DecodeClientConsumerStatus(body []byte) (OffsetTable, error) {
	if len(body) > MaxConsumerStatusBytes {
		return nil, &BodyError{Body: "GetConsumerStatusBody", Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxConsumerStatusBytes)}
	}
	if !bytes.Contains(body, []byte(`"messageQueueTable":`)) {
		return OffsetTable{}, nil
	}
	m, err := DecodeMQMap[int64](body, "messageQueueTable")
	if err != nil {
		return nil, &BodyError{Body: "GetConsumerStatusBody", Problem: "messageQueueTable is not a map of queues to offsets"}
	}
	return OffsetTable(m), nil
}

// EncodeConsumerStatusBody writes the answer body of 223:
// {"consumerTable":{clientId:{queue:offset}},"messageQueueTable":{}}.
func EncodeConsumerStatusBody(table map[string]OffsetTable) []byte {
	ids := make([]string, 0, len(table))
	for id := range table {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := []byte(`{"consumerTable":{`)
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, mustJSON(id)...)
		out = append(out, ':')
		out, _ = AppendMQMap(out, map[MessageQueue]int64(table[id])) // int64 values always marshal
	}
	return append(out, `},"messageQueueTable":{}}`...)
}

// DecodeConsumerStatusBody reads the answer body of 223 (for tests and
// the CLI): per client id its queue offsets. The inner maps are fastjson
// maps keyed by queues (not JSON), so the table is split by hand.
func DecodeConsumerStatusBody(body []byte) (map[string]OffsetTable, error) {
	bad := func(problem string) error { return &BodyError{Body: "GetConsumerStatusBody", Problem: problem} }
	if len(body) > MaxConsumerStatusBytes {
		return nil, bad(fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxConsumerStatusBytes))
	}
	out := map[string]OffsetTable{}
	key := []byte(`"consumerTable":`)
	i := bytes.Index(body, key)
	if i < 0 {
		return out, nil
	}
	p := &scan{b: body, i: i + len(key)}
	p.ws()
	if p.peek() != '{' {
		return nil, bad("consumerTable is not an object")
	}
	p.i++
	for {
		p.ws()
		switch p.peek() {
		case '}':
			return out, nil
		case ',':
			p.i++
			continue
		case '"':
		default:
			return nil, bad(fmt.Sprintf("consumerTable: want a client id at byte %d", p.i))
		}
		idRaw, err := p.value()
		if err != nil {
			return nil, bad("consumerTable: " + err.Error())
		}
		var id string
		if err := json.Unmarshal(idRaw, &id); err != nil {
			return nil, bad("consumerTable: a client id is not a string")
		}
		p.ws()
		if p.peek() != ':' {
			return nil, bad(fmt.Sprintf("consumerTable: want ':' after a client id at byte %d", p.i))
		}
		p.i++
		p.ws()
		entries, err := p.queueMap()
		if err != nil {
			return nil, bad("consumerTable: " + err.Error())
		}
		t := make(OffsetTable, len(entries))
		for _, e := range entries {
			var v int64
			if err := json.Unmarshal(e.value, &v); err != nil {
				return nil, bad("consumerTable: an offset is not a number")
			}
			t[e.MessageQueue] = v
		}
		out[id] = t
	}
}
