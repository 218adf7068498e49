package rmq

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Clients: 34 HEART_BEAT (body HeartbeatData), 35 UNREGISTER_CLIENT,
// 38 GET_CONSUMER_LIST_BY_GROUP (answer ConsumerListBody), 40
// NOTIFY_CONSUMER_IDS_CHANGED (broker → consumer, oneway), 41
// LOCK_BATCH_MQ and 42 UNLOCK_BATCH_MQ (body LockBatchBody; the lock
// answer LockBatchResponse).
//
// Bodies are read with encoding/json, as leniently as it reads: unknown
// keys are skipped and keys match their field whatever their case
// ("clientId" is clientID). The official Go client writes codeSet as
// strings, Java as numbers: CodeSet reads both.

// decodeBody unmarshals a request body into v. Its error reads "<what>
// body is not valid JSON: <the JSON decoder's error>", the remark the
// front has always sent for such a body (it carries no internal cause).
func decodeBody(what string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s body is not valid JSON: %w", what, err)
	}
	return nil
}

// HeartbeatData is the body of HEART_BEAT.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// ProducerData is one producer group of a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group of a heartbeat. ConsumeType is
// CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (pull), MessageModel
// CLUSTERING or BROADCASTING, ConsumeFromWhere CONSUME_FROM_LAST_OFFSET,
// CONSUME_FROM_FIRST_OFFSET or CONSUME_FROM_TIMESTAMP.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription, as heartbeats carry it and
// GET_CONSUMER_CONNECTION_LIST answers it. SubVersion is a 19-digit
// integer (Java's nanoTime of the subscription).
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"` // "*", "TagA || TagB", or SQL92 text
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"` // TAG or SQL92
}

// MarshalJSON writes absent sets as [] (Java reads null sets as absent
// subscriptions).
func (s SubscriptionData) MarshalJSON() ([]byte, error) {
	type plain SubscriptionData
	p := plain(s)
	if p.TagsSet == nil {
		p.TagsSet = []string{}
	}
	if p.CodeSet == nil {
		p.CodeSet = CodeSet{}
	}
	return json.Marshal(p)
}

// CodeSet is a subscription's tag hash codes. It is written as numbers,
// and read from numbers or digit strings; anything else (an element of
// another kind, or no array at all) reads as nothing: the broker hashes
// tags itself, so a client's codes never refuse its heartbeat.
type CodeSet []int32

// UnmarshalJSON reads numbers and digit strings, skipping the rest.
func (s *CodeSet) UnmarshalJSON(b []byte) error {
	var elems []json.RawMessage
	if json.Unmarshal(b, &elems) != nil {
		*s = nil
		return nil
	}
	out := make(CodeSet, 0, len(elems))
	for _, e := range elems {
		v := string(e)
		if len(v) >= 2 && v[0] == '"' {
			if json.Unmarshal(e, &v) != nil {
				continue
			}
		}
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			out = append(out, int32(n))
		}
	}
	*s = out
	return nil
}

// DecodeHeartbeatBody reads a HEART_BEAT body; the error (a body that is
// not JSON of that shape) is a sentence for the client.
func DecodeHeartbeatBody(b []byte) (HeartbeatData, error) {
	var h HeartbeatData
	err := decodeBody("heartbeat", b, &h)
	return h, err
}

// EncodeHeartbeatBody returns h as JSON; absent sets are written as [].
func EncodeHeartbeatBody(h HeartbeatData) []byte {
	if h.ProducerDataSet == nil {
		h.ProducerDataSet = []ProducerData{}
	}
	if h.ConsumerDataSet == nil {
		h.ConsumerDataSet = []ConsumerData{}
	}
	cs := make([]ConsumerData, len(h.ConsumerDataSet))
	for i, c := range h.ConsumerDataSet {
		if c.SubscriptionDataSet == nil {
			c.SubscriptionDataSet = []SubscriptionData{}
		}
		cs[i] = c
	}
	h.ConsumerDataSet = cs
	b, _ := json.Marshal(h) // strings, numbers and booleans only
	return b
}

// DecodeHeartbeat reads a HEART_BEAT request's body.
func DecodeHeartbeat(c *remoting.Command) (HeartbeatData, error) { return DecodeHeartbeatBody(c.Body) }

// EncodeHeartbeat returns a HEART_BEAT request.
func EncodeHeartbeat(h HeartbeatData) *remoting.Command {
	return remoting.NewRequest(CodeHeartBeat, nil, EncodeHeartbeatBody(h))
}

// UnregisterClientRequest is the header of UNREGISTER_CLIENT; clientID is
// required (Java's @CFNotNull), the groups are optional.
type UnregisterClientRequest struct {
	ClientID      string
	ProducerGroup string
	ConsumerGroup string
}

// DecodeUnregisterClientRequest reads an UNREGISTER_CLIENT header.
func DecodeUnregisterClientRequest(c *remoting.Command) (UnregisterClientRequest, error) {
	f := fields{c: c}
	h := UnregisterClientRequest{ClientID: f.need("clientID"), ProducerGroup: f.str("producerGroup"), ConsumerGroup: f.str("consumerGroup")}
	return h, f.result()
}

// EncodeUnregisterClientRequest returns an UNREGISTER_CLIENT request.
func EncodeUnregisterClientRequest(h UnregisterClientRequest) *remoting.Command {
	ext := map[string]string{"clientID": h.ClientID}
	if h.ProducerGroup != "" {
		ext["producerGroup"] = h.ProducerGroup
	}
	if h.ConsumerGroup != "" {
		ext["consumerGroup"] = h.ConsumerGroup
	}
	return remoting.NewRequest(CodeUnregisterClient, ext, nil)
}

// ConsumerGroupRequest is the header of GET_CONSUMER_LIST_BY_GROUP and of
// NOTIFY_CONSUMER_IDS_CHANGED: consumerGroup, required.
type ConsumerGroupRequest struct {
	ConsumerGroup string
}

// DecodeConsumerGroupRequest reads a GET_CONSUMER_LIST_BY_GROUP or
// NOTIFY_CONSUMER_IDS_CHANGED header.
func DecodeConsumerGroupRequest(c *remoting.Command) (ConsumerGroupRequest, error) {
	f := fields{c: c}
	h := ConsumerGroupRequest{ConsumerGroup: f.need("consumerGroup")}
	return h, f.result()
}

// EncodeGetConsumerListRequest returns a GET_CONSUMER_LIST_BY_GROUP request.
func EncodeGetConsumerListRequest(h ConsumerGroupRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetConsumerListByGroup, map[string]string{"consumerGroup": h.ConsumerGroup}, nil)
}

// EncodeNotifyConsumerIDsChanged returns a NOTIFY_CONSUMER_IDS_CHANGED
// request (the broker sends it oneway).
func EncodeNotifyConsumerIDsChanged(h ConsumerGroupRequest) *remoting.Command {
	return remoting.NewRequest(CodeNotifyConsumerIDsChanged, map[string]string{"consumerGroup": h.ConsumerGroup}, nil)
}

// ConsumerListBody is the answer to GET_CONSUMER_LIST_BY_GROUP.
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// EncodeConsumerListResponse returns the successful answer to req; an
// absent list is written as [].
func EncodeConsumerListResponse(req *remoting.Command, r ConsumerListBody) *remoting.Command {
	if r.ConsumerIDList == nil {
		r.ConsumerIDList = []string{}
	}
	return jsonResponse(req, r)
}

// DecodeConsumerListResponse reads the answer's body.
func DecodeConsumerListResponse(c *remoting.Command) (ConsumerListBody, error) {
	var r ConsumerListBody
	err := decodeBody("consumer list", c.Body, &r)
	return r, err
}

// LockBatchBody is the body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type LockBatchBody struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []MessageQueue `json:"mqSet"`
}

// DecodeLockBatch reads a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ request's body.
func DecodeLockBatch(c *remoting.Command) (LockBatchBody, error) {
	var b LockBatchBody
	what := "lock"
	if c.Code == CodeUnlockBatchMQ {
		what = "unlock"
	}
	err := decodeBody(what, c.Body, &b)
	return b, err
}

// EncodeLockBatchRequest returns a LOCK_BATCH_MQ request.
func EncodeLockBatchRequest(b LockBatchBody) *remoting.Command {
	return encodeLockBatch(CodeLockBatchMQ, b)
}

// EncodeUnlockBatchRequest returns an UNLOCK_BATCH_MQ request.
func EncodeUnlockBatchRequest(b LockBatchBody) *remoting.Command {
	return encodeLockBatch(CodeUnlockBatchMQ, b)
}

func encodeLockBatch(code int16, b LockBatchBody) *remoting.Command {
	if b.MQSet == nil {
		b.MQSet = []MessageQueue{}
	}
	body, _ := json.Marshal(b) // strings and integers only
	return remoting.NewRequest(code, nil, body)
}

// LockBatchResponse is the answer to LOCK_BATCH_MQ: the queues the client
// now holds.
type LockBatchResponse struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// EncodeLockBatchResponse returns the successful answer to req; an absent
// set is written as [].
func EncodeLockBatchResponse(req *remoting.Command, r LockBatchResponse) *remoting.Command {
	if r.LockOKMQSet == nil {
		r.LockOKMQSet = []MessageQueue{}
	}
	return jsonResponse(req, r)
}

// DecodeLockBatchResponse reads the answer's body.
func DecodeLockBatchResponse(c *remoting.Command) (LockBatchResponse, error) {
	var r LockBatchResponse
	err := decodeBody("lock answer", c.Body, &r)
	return r, err
}

// jsonResponse returns a successful answer with v as its JSON body; v
// holds only strings, numbers and booleans, so marshalling cannot fail.
func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.Body, _ = json.Marshal(v)
	return resp
}
