package rmq

// The rest of RocketMQ 5's pop requests over remoting, JSON headers only
// as pop.go's:
//
//	PEEK_MESSAGE (200052): Java's PeekMessageRequestHeader (consumerGroup,
//	  topic, queueId, maxMsgNums, all required; queueId -1 every queue).
//	  The answer carries PopMessageResponseHeader's fields (PopResponse;
//	  only restNum means anything) and the messages as a pull's body.
//	NOTIFICATION (200054): NotificationRequestHeader (consumerGroup, topic,
//	  queueId, pollTime required; bornTime, order, attemptId optional:
//	  Java's broker fills a missing bornTime in before it decodes). The
//	  answer: NotificationResponseHeader's hasMsg (required) and
//	  pollingFull.
//	POLLING_INFO (200055): PollingInfoRequestHeader (consumerGroup, topic,
//	  queueId, all required); the answer PollingInfoResponseHeader's
//	  pollingNum (required).
//	BATCH_ACK_MESSAGE (200151): no header; the body is Java's
//	  BatchAckMessageRequestBody as fastjson writes it:
//
//	    {"acks":[{"b":"<bit set>","c":"<group>","it":60000,"pt":1733046000123,
//	      "q":1,"r":"0","rq":0,"so":40,"t":"<topic>"}],"brokerName":"broker-a"}
//
//	  Each BatchAck's fields have a one- or two-letter JSON name (Java's
//	  @JSONField name) and are also read under their long names (its
//	  alternateNames): c consumerGroup, t topic, r retry, so startOffset,
//	  q queueId, rq reviveQueueId, pt popTime, it invisibleTime, b bitSet.
//	  The bit set is java.util.BitSet.toByteArray() (little-endian: bit i
//	  of the set is bit i%8 of byte i/8) written by fastjson's
//	  writeByteArray as a base64 string (the standard alphabet with
//	  padding); bit i set acknowledges queue offset startOffset + i. The
//	  Java client builds one BatchAck per (retry, queueId, ck offset, pop
//	  time) of the extra infos it acknowledges (MQClientAPIImpl
//	  .batchAckMessageAsync), so popTime + invisibleTime is the time the
//	  messages would become visible again: with the queue offset it names
//	  the delivery, as a receipt handle does.

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
)

// PeekRequest is the header of PEEK_MESSAGE.
type PeekRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1 (any negative): every queue of the topic
	MaxMsgNums    int32
}

// DecodePeekRequest reads a PEEK_MESSAGE header; a negative queueId reads
// as -1, as Java's getter gives it.
func DecodePeekRequest(c *remoting.Command) (PeekRequest, error) {
	f := fields{c: c}
	h := PeekRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       max(f.needI32("queueId"), -1),
		MaxMsgNums:    f.needI32("maxMsgNums"),
	}
	return h, f.result()
}

// EncodePeekRequest returns a PEEK_MESSAGE request.
func EncodePeekRequest(h PeekRequest) *remoting.Command {
	return remoting.NewWideRequest(CodePeekMessage, map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
		"maxMsgNums":    itoa(h.MaxMsgNums),
	}, nil)
}

// NotificationRequest is the header of NOTIFICATION: does the group have
// a message to pop on the topic (one queue, or every queue with -1),
// waiting up to PollTime for one.
type NotificationRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1 (any negative): every queue
	PollTime      int64 // ms the broker may hold the request
	BornTime      int64 // ms, the client's clock; 0 when not sent
	Order         bool  // the group pops in order: a queue with a message in flight has none
	AttemptID     string
}

// DecodeNotificationRequest reads a NOTIFICATION header.
func DecodeNotificationRequest(c *remoting.Command) (NotificationRequest, error) {
	f := fields{c: c}
	h := NotificationRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       max(f.needI32("queueId"), -1),
		PollTime:      f.needI64("pollTime"),
		BornTime:      f.i64("bornTime"),
		Order:         f.boolean("order"),
		AttemptID:     f.str("attemptId"),
	}
	return h, f.result()
}

// EncodeNotificationRequest returns a NOTIFICATION request.
func EncodeNotificationRequest(h NotificationRequest) *remoting.Command {
	ext := map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
		"pollTime":      itoa(h.PollTime),
		"bornTime":      itoa(h.BornTime),
		"order":         btoa(h.Order),
	}
	if h.AttemptID != "" {
		ext["attemptId"] = h.AttemptID
	}
	return remoting.NewWideRequest(CodeNotification, ext, nil)
}

// NotificationResponse is the header of a NOTIFICATION answer.
type NotificationResponse struct {
	HasMsg bool
	// PollingFull: the broker could not hold the request (too many are
	// waiting) and answered at once.
	PollingFull bool
}

// EncodeNotificationResponse returns the successful answer to req.
func EncodeNotificationResponse(req *remoting.Command, r NotificationResponse) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.ExtFields = map[string]string{"hasMsg": btoa(r.HasMsg), "pollingFull": btoa(r.PollingFull)}
	return resp
}

// DecodeNotificationResponse reads a NOTIFICATION answer's header:
// hasMsg is required; both read as Java's Boolean.parseBoolean.
func DecodeNotificationResponse(c *remoting.Command) (NotificationResponse, error) {
	f := fields{c: c}
	r := NotificationResponse{HasMsg: f.needBool("hasMsg"), PollingFull: f.boolean("pollingFull")}
	return r, f.result()
}

// PollingInfoRequest is the header of POLLING_INFO.
type PollingInfoRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1 (any negative): the topic
}

// DecodePollingInfoRequest reads a POLLING_INFO header.
func DecodePollingInfoRequest(c *remoting.Command) (PollingInfoRequest, error) {
	f := fields{c: c}
	h := PollingInfoRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       max(f.needI32("queueId"), -1),
	}
	return h, f.result()
}

// EncodePollingInfoRequest returns a POLLING_INFO request.
func EncodePollingInfoRequest(h PollingInfoRequest) *remoting.Command {
	return remoting.NewWideRequest(CodePollingInfo, map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
	}, nil)
}

// PollingInfoResponse is the header of a POLLING_INFO answer.
type PollingInfoResponse struct {
	PollingNum int32 // pops of the group waiting on the topic
}

// EncodePollingInfoResponse returns the successful answer to req.
func EncodePollingInfoResponse(req *remoting.Command, r PollingInfoResponse) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.ExtFields = map[string]string{"pollingNum": itoa(r.PollingNum)}
	return resp
}

// DecodePollingInfoResponse reads a POLLING_INFO answer's header.
func DecodePollingInfoResponse(c *remoting.Command) (PollingInfoResponse, error) {
	f := fields{c: c}
	r := PollingInfoResponse{PollingNum: f.needI32("pollingNum")}
	return r, f.result()
}

// Bounds of a BATCH_ACK_MESSAGE body.
const (
	// MaxBatchAckBodyBytes bounds the body.
	MaxBatchAckBodyBytes = 256 << 10
	// MaxBatchAcks bounds the BatchAcks of one body.
	MaxBatchAcks = 1024
	// MaxBatchAckOffsets bounds the offsets (set bits) of one body.
	MaxBatchAckOffsets = 8192
	// MaxBatchAckSpan bounds the bit set of one BatchAck: its offsets lie
	// below startOffset + MaxBatchAckSpan.
	MaxBatchAckSpan = 1 << 16
)

// BatchAck is one entry of a BATCH_ACK_MESSAGE body: the messages of one
// pop of one queue a client acknowledges.
type BatchAck struct {
	ConsumerGroup string
	Topic         string
	Retry         string // RetryMark…: "0" the topic, "1"/"2" Java's pop retry topics
	StartOffset   int64  // the ck offset of the extra infos
	QueueID       int32
	ReviveQueueID int32 // PopOrderReviveQid: an orderly pop's
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	// Offsets are the queue offsets acknowledged, ascending (the bit set's
	// bits from StartOffset).
	Offsets []int64
}

// BatchAckRequest is the body of BATCH_ACK_MESSAGE.
type BatchAckRequest struct {
	BrokerName string
	Acks       []BatchAck
}

// batchAckJSON is a BatchAck as fastjson may write it: under its short
// names or its long ones.
type batchAckJSON struct {
	C             *string `json:"c"`
	ConsumerGroup *string `json:"consumerGroup"`
	T             *string `json:"t"`
	Topic         *string `json:"topic"`
	R             *string `json:"r"`
	Retry         *string `json:"retry"`
	SO            *int64  `json:"so"`
	StartOffset   *int64  `json:"startOffset"`
	Q             *int32  `json:"q"`
	QueueID       *int32  `json:"queueId"`
	RQ            *int32  `json:"rq"`
	ReviveQueueID *int32  `json:"reviveQueueId"`
	PT            *int64  `json:"pt"`
	PopTime       *int64  `json:"popTime"`
	IT            *int64  `json:"it"`
	InvisibleTime *int64  `json:"invisibleTime"`
	B             *string `json:"b"`
	BitSet        *string `json:"bitSet"`
}

type batchAckBodyJSON struct {
	BrokerName string         `json:"brokerName"`
	Acks       []batchAckJSON `json:"acks"`
}

// batchAckOut is a BatchAck as Petrel writes it: fastjson's names.
type batchAckOut struct {
	B  string `json:"b"`
	C  string `json:"c"`
	IT int64  `json:"it"`
	PT int64  `json:"pt"`
	Q  int32  `json:"q"`
	R  string `json:"r"`
	RQ int32  `json:"rq"`
	SO int64  `json:"so"`
	T  string `json:"t"`
}

type batchAckBodyOut struct {
	Acks       []batchAckOut `json:"acks"`
	BrokerName string        `json:"brokerName,omitempty"`
}

func pick[T any](short, long *T) (T, bool) {
	switch {
	case short != nil:
		return *short, true
	case long != nil:
		return *long, true
	}
	var zero T
	return zero, false
}

// DecodeBatchAckRequest reads a BATCH_ACK_MESSAGE body. An empty body or
// one without acks gives no acks and no error (Java answers NO_MESSAGE
// then). consumerGroup, topic and retry ("0", "1" or "2") are required of
// every ack; a missing bit set acknowledges nothing. Errors are
// *BodyError.
func DecodeBatchAckRequest(body []byte) (BatchAckRequest, error) {
	const name = "BatchAckMessageRequestBody"
	if len(body) == 0 {
		return BatchAckRequest{}, nil
	}
	if len(body) > MaxBatchAckBodyBytes {
		return BatchAckRequest{}, &BodyError{Body: name, Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d; acknowledge in smaller batches", len(body), MaxBatchAckBodyBytes)}
	}
	var in batchAckBodyJSON
	if err := decodeJSON(body, name, &in); err != nil {
		return BatchAckRequest{}, err
	}
	if len(in.Acks) > MaxBatchAcks {
		return BatchAckRequest{}, &BodyError{Body: name, Problem: fmt.Sprintf("acks has %d entries, more than the limit of %d; acknowledge in smaller batches", len(in.Acks), MaxBatchAcks)}
	}
	out := BatchAckRequest{BrokerName: in.BrokerName, Acks: make([]BatchAck, 0, len(in.Acks))}
	total := 0
	for i, a := range in.Acks {
		bad := func(format string, args ...any) error {
			return &BodyError{Body: name, Problem: fmt.Sprintf("acks[%d] ", i) + fmt.Sprintf(format, args...)}
		}
		var b BatchAck
		var ok bool
		if b.ConsumerGroup, ok = pick(a.C, a.ConsumerGroup); !ok || b.ConsumerGroup == "" {
			return BatchAckRequest{}, bad("names no consumer group (c or consumerGroup)")
		}
		if b.Topic, ok = pick(a.T, a.Topic); !ok || b.Topic == "" {
			return BatchAckRequest{}, bad("names no topic (t or topic)")
		}
		b.Retry, _ = pick(a.R, a.Retry)
		switch b.Retry {
		case RetryMarkTopic, RetryMarkRetryV1, RetryMarkRetryV2:
		default:
			return BatchAckRequest{}, bad("has retry (r) %.16q, not \"0\", \"1\" or \"2\"", b.Retry)
		}
		b.StartOffset, _ = pick(a.SO, a.StartOffset)
		b.QueueID, _ = pick(a.Q, a.QueueID)
		b.ReviveQueueID, _ = pick(a.RQ, a.ReviveQueueID)
		b.PopTime, _ = pick(a.PT, a.PopTime)
		b.InvisibleTime, _ = pick(a.IT, a.InvisibleTime)
		set, _ := pick(a.B, a.BitSet)
		if b.StartOffset < 0 || b.QueueID < 0 {
			return BatchAckRequest{}, bad("has a negative startOffset (so) or queueId (q)")
		}
		bs, err := decodeBitSet(set)
		if err != nil {
			return BatchAckRequest{}, bad("%s", err.Error())
		}
		n := 0
		for _, x := range bs {
			n += bits.OnesCount8(x)
		}
		if total += n; total > MaxBatchAckOffsets {
			return BatchAckRequest{}, &BodyError{Body: name, Problem: fmt.Sprintf("the acks name more than %d offsets; acknowledge in smaller batches", MaxBatchAckOffsets)}
		}
		if n > 0 && b.StartOffset > math.MaxInt64-MaxBatchAckSpan {
			return BatchAckRequest{}, bad("has startOffset (so) %d, too large for its bit set", b.StartOffset)
		}
		b.Offsets = make([]int64, 0, n)
		for j, x := range bs {
			for x != 0 {
				k := bits.TrailingZeros8(x)
				b.Offsets = append(b.Offsets, b.StartOffset+int64(8*j+k))
				x &= x - 1
			}
		}
		out.Acks = append(out.Acks, b)
	}
	return out, nil
}

// decodeBitSet reads a fastjson byte array: base64 of the standard
// alphabet, with or without padding.
func decodeBitSet(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if base64.StdEncoding.EncodedLen(MaxBatchAckSpan/8) < len(s) {
		return nil, fmt.Errorf("has a bit set (b) of %d characters, spanning more than %d offsets; acknowledge in smaller batches", len(s), MaxBatchAckSpan)
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("has a bit set (b) that is not base64 (java.util.BitSet.toByteArray as fastjson writes it)")
	}
	return b, nil
}

// EncodeBatchAckRequest returns a BATCH_ACK_MESSAGE request, its body as
// fastjson writes it. Every offset must lie in [StartOffset, StartOffset +
// MaxBatchAckSpan) (others are left out).
func EncodeBatchAckRequest(r BatchAckRequest) *remoting.Command {
	out := batchAckBodyOut{BrokerName: r.BrokerName, Acks: make([]batchAckOut, 0, len(r.Acks))}
	for _, a := range r.Acks {
		var bs []byte
		for _, o := range a.Offsets {
			i := o - a.StartOffset
			if i < 0 || i >= MaxBatchAckSpan {
				continue
			}
			for int(i/8) >= len(bs) {
				bs = append(bs, 0)
			}
			bs[i/8] |= 1 << (i % 8)
		}
		out.Acks = append(out.Acks, batchAckOut{B: base64.StdEncoding.EncodeToString(bs), C: a.ConsumerGroup, IT: a.InvisibleTime,
			PT: a.PopTime, Q: a.QueueID, R: a.Retry, RQ: a.ReviveQueueID, SO: a.StartOffset, T: a.Topic})
	}
	return remoting.NewWideRequest(CodeBatchAckMessage, nil, mustJSON(out))
}
