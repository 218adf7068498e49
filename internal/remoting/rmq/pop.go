package rmq

// RocketMQ 5's pop requests over remoting: POP_MESSAGE (200050),
// ACK_MESSAGE (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053), with the
// header fields of Java's PopMessageRequestHeader, PopMessageResponseHeader,
// AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader and
// ChangeInvisibleTimeResponseHeader. Their codes do not fit int16: they go
// with JSON headers only (remoting.NewWideRequest, Server.HandleWide).
//
// The receipt a client sends back (the "extra info"). A Java client keeps,
// for every popped message, the string of its POP_CK property and sends it
// verbatim as ACK_MESSAGE's and CHANGE_MESSAGE_INVISIBLETIME's extraInfo
// (DefaultMQPushConsumerImpl.ackAsync, changePopInvisibleTimeAsync); it
// takes the other fields of those requests from it (queueId = field 6,
// offset = field 7, topic by field 4). When the message in the answer's
// body has no POP_CK property the client builds the string itself, from
// the answer's popTime, invisibleTime, reviveQid, startOffsetInfo and
// msgOffsetInfo (MQClientAPIImpl.processPopResponse); when it has one it
// keeps it. Its fields, separated by one space (Java's ExtraInfoUtil):
//
//	0 ckQueueOffset  1 popTime  2 invisibleTime  3 reviveQid  4 retry mark
//	("0" the topic, "1"/"2" a Java pop retry topic)  5 brokerName
//	6 queueId  7 queueOffset
//
// Petrel's receipt handle (broker/pop's, which names the delivery by a
// generation the numbers above cannot carry) is a ninth field, after the
// eight, that Java's parser ignores (it reads fields by index). Petrel's
// broker therefore puts POP_CK, with the handle as field 8, into every
// message of a POP_MESSAGE answer, so that the string the client echoes
// back names the delivery exactly. Petrel writes retry mark "0" always:
// it hands retried messages out under the asked topic and takes their
// acknowledgement with it.
//
// CHANGE_MESSAGE_INVISIBLETIME's answer carries, besides Java's three
// fields, the new handle in ext field receiptHandle (a Petrel extension;
// Java's decoder ignores fields it does not declare). A Java client
// rebuilds the extra info after a change from the answer's numbers, without
// the ninth field: Petrel's broker refuses an extra info without its
// handle (INVALID_PARAMETER). The Java push consumer never uses that
// rebuilt string (after a change it waits for the message to be popped
// again, with a new POP_CK), and Petrel's own forwarder reads
// receiptHandle.
//
// BATCH_ACK_MESSAGE (200151, popmore.go) names messages without the
// handle: by queue, offset (a bit set from the ck offset) and popTime +
// invisibleTime, which is the time the delivery becomes visible again
// (Petrel writes popTime so): the broker takes that as the delivery's
// name, as the handle's generation would be.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Property names of popped messages (Java's MessageConst).
const (
	// PropertyPopCK is the extra info of a popped message.
	PropertyPopCK = "POP_CK"
	// PropertyFirstPopTime is the pop time of a message's first delivery.
	PropertyFirstPopTime = "1ST_POP_TIME"
)

// PopOrderReviveQid is the reviveQid of an orderly (FIFO) pop's answer
// (Java's KeyBuilder.POP_ORDER_REVIVE_QUEUE): the client reads an extra
// info with it as orderly.
const PopOrderReviveQid int32 = 999

// PopRequest is the header of POP_MESSAGE. Required, as Java's
// @CFNotNull: consumerGroup, topic, queueId, maxMsgNums, invisibleTime,
// pollTime, bornTime, initMode.
type PopRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32 // -1: any queue of the topic
	MaxMsgNums    int32
	InvisibleTime int64 // ms
	PollTime      int64 // ms the broker may hold the request (long polling); 0: answer at once
	BornTime      int64 // ms, the client's clock when it sent the request
	InitMode      int32 // where a new group starts: 0 the last message, 1 the first
	ExpType       string
	Exp           string
	Order         bool // FIFO: a queue's next message waits for the earlier one's ack
	AttemptID     string
}

// DecodePopRequest reads a POP_MESSAGE header.
func DecodePopRequest(c *remoting.Command) (PopRequest, error) {
	f := fields{c: c}
	h := PopRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       f.needI32("queueId"),
		MaxMsgNums:    f.needI32("maxMsgNums"),
		InvisibleTime: f.needI64("invisibleTime"),
		PollTime:      f.needI64("pollTime"),
		BornTime:      f.needI64("bornTime"),
		InitMode:      f.needI32("initMode"),
		ExpType:       f.str("expType"),
		Exp:           f.str("exp"),
		Order:         f.boolean("order"),
		AttemptID:     f.str("attemptId"),
	}
	return h, f.result()
}

// EncodePopRequest returns a POP_MESSAGE request.
func EncodePopRequest(h PopRequest) *remoting.Command {
	ext := map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
		"maxMsgNums":    itoa(h.MaxMsgNums),
		"invisibleTime": itoa(h.InvisibleTime),
		"pollTime":      itoa(h.PollTime),
		"bornTime":      itoa(h.BornTime),
		"initMode":      itoa(h.InitMode),
		"order":         btoa(h.Order),
	}
	if h.ExpType != "" {
		ext["expType"] = h.ExpType
	}
	if h.Exp != "" {
		ext["exp"] = h.Exp
	}
	if h.AttemptID != "" {
		ext["attemptId"] = h.AttemptID
	}
	return remoting.NewWideRequest(CodePopMessage, ext, nil)
}

// PopResponse is the header of a POP_MESSAGE answer (codes RespSuccess,
// with the messages in the body as a pull's, RespPollingTimeout and
// RespPullNotFound with none). Java requires popTime, invisibleTime,
// reviveQid and restNum in every one of them.
type PopResponse struct {
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int32
	RestNum       int64 // messages left in the queues popped
	// StartOffsetInfo, MsgOffsetInfo and OrderCountInfo are Java's
	// per-queue lists (FormatStartOffsetInfo, FormatMsgOffsetInfo).
	StartOffsetInfo string
	MsgOffsetInfo   string
	OrderCountInfo  string
}

// EncodePopResponse returns the answer to req with code and r's fields;
// the caller adds the body.
func EncodePopResponse(req *remoting.Command, code int16, remark string, r PopResponse) *remoting.Command {
	resp := remoting.NewResponse(req, code, remark)
	resp.ExtFields = map[string]string{
		"popTime":       itoa(r.PopTime),
		"invisibleTime": itoa(r.InvisibleTime),
		"reviveQid":     itoa(r.ReviveQid),
		"restNum":       itoa(r.RestNum),
	}
	if r.StartOffsetInfo != "" {
		resp.ExtFields["startOffsetInfo"] = r.StartOffsetInfo
	}
	if r.MsgOffsetInfo != "" {
		resp.ExtFields["msgOffsetInfo"] = r.MsgOffsetInfo
	}
	if r.OrderCountInfo != "" {
		resp.ExtFields["orderCountInfo"] = r.OrderCountInfo
	}
	return resp
}

// DecodePopResponse reads a POP_MESSAGE answer's header.
func DecodePopResponse(c *remoting.Command) (PopResponse, error) {
	f := fields{c: c}
	r := PopResponse{
		PopTime:         f.needI64("popTime"),
		InvisibleTime:   f.needI64("invisibleTime"),
		ReviveQid:       f.needI32("reviveQid"),
		RestNum:         f.needI64("restNum"),
		StartOffsetInfo: f.str("startOffsetInfo"),
		MsgOffsetInfo:   f.str("msgOffsetInfo"),
		OrderCountInfo:  f.str("orderCountInfo"),
	}
	return r, f.result()
}

// AckRequest is the header of ACK_MESSAGE; every field is required.
type AckRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	ExtraInfo     string // the message's POP_CK, as the pop gave it
	Offset        int64  // the message's queue offset
}

// DecodeAckRequest reads an ACK_MESSAGE header.
func DecodeAckRequest(c *remoting.Command) (AckRequest, error) {
	f := fields{c: c}
	h := AckRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       f.needI32("queueId"),
		ExtraInfo:     f.need("extraInfo"),
		Offset:        f.needI64("offset"),
	}
	return h, f.result()
}

// EncodeAckRequest returns an ACK_MESSAGE request.
func EncodeAckRequest(h AckRequest) *remoting.Command {
	return remoting.NewWideRequest(CodeAckMessage, map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
		"extraInfo":     h.ExtraInfo,
		"offset":        itoa(h.Offset),
	}, nil)
}

// AckRequestFor is the ACK_MESSAGE header a Java client sends for a
// message whose POP_CK is extraInfo, in topic, for group
// (DefaultMQPushConsumerImpl.ackAsync): queueId and offset from the extra
// info, the topic as given for retry mark "0".
func AckRequestFor(group, topic string, e ExtraInfo) AckRequest {
	return AckRequest{ConsumerGroup: group, Topic: topic, QueueID: e.QueueID, ExtraInfo: e.String(), Offset: e.QueueOffset}
}

// ChangeInvisibleRequest is the header of CHANGE_MESSAGE_INVISIBLETIME;
// every field is required.
type ChangeInvisibleRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	ExtraInfo     string
	Offset        int64
	InvisibleTime int64 // ms from now
}

// DecodeChangeInvisibleRequest reads a CHANGE_MESSAGE_INVISIBLETIME header.
func DecodeChangeInvisibleRequest(c *remoting.Command) (ChangeInvisibleRequest, error) {
	f := fields{c: c}
	h := ChangeInvisibleRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		QueueID:       f.needI32("queueId"),
		ExtraInfo:     f.need("extraInfo"),
		Offset:        f.needI64("offset"),
		InvisibleTime: f.needI64("invisibleTime"),
	}
	return h, f.result()
}

// EncodeChangeInvisibleRequest returns a CHANGE_MESSAGE_INVISIBLETIME
// request.
func EncodeChangeInvisibleRequest(h ChangeInvisibleRequest) *remoting.Command {
	return remoting.NewWideRequest(CodeChangeInvisibleTime, map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa(h.QueueID),
		"extraInfo":     h.ExtraInfo,
		"offset":        itoa(h.Offset),
		"invisibleTime": itoa(h.InvisibleTime),
	}, nil)
}

// ChangeInvisibleResponse is the header of a successful
// CHANGE_MESSAGE_INVISIBLETIME answer: Java's three required fields and
// Petrel's new receipt handle.
type ChangeInvisibleResponse struct {
	PopTime       int64 // ms; PopTime + InvisibleTime is when the message is visible again
	InvisibleTime int64 // ms
	ReviveQid     int32
	ReceiptHandle string // Petrel's (ext receiptHandle); "" from other brokers
}

// EncodeChangeInvisibleResponse returns the successful answer to req.
func EncodeChangeInvisibleResponse(req *remoting.Command, r ChangeInvisibleResponse) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.ExtFields = map[string]string{
		"popTime":       itoa(r.PopTime),
		"invisibleTime": itoa(r.InvisibleTime),
		"reviveQid":     itoa(r.ReviveQid),
	}
	if r.ReceiptHandle != "" {
		resp.ExtFields["receiptHandle"] = r.ReceiptHandle
	}
	return resp
}

// DecodeChangeInvisibleResponse reads a successful answer's header.
func DecodeChangeInvisibleResponse(c *remoting.Command) (ChangeInvisibleResponse, error) {
	f := fields{c: c}
	r := ChangeInvisibleResponse{
		PopTime:       f.needI64("popTime"),
		InvisibleTime: f.needI64("invisibleTime"),
		ReviveQid:     f.needI32("reviveQid"),
		ReceiptHandle: f.str("receiptHandle"),
	}
	return r, f.result()
}

// ForwardPopToDLQRequest is the header of Petrel's
// CodePetrelForwardPopToDLQ: move a popped message to the group's
// dead-letter queue and acknowledge it (the 5.x
// ForwardMessageToDeadLetterQueue, forwarded by a slave's gRPC front).
type ForwardPopToDLQRequest struct {
	ConsumerGroup string
	Topic         string
	ReceiptHandle string
}

// DecodeForwardPopToDLQRequest reads its header; every field is required.
func DecodeForwardPopToDLQRequest(c *remoting.Command) (ForwardPopToDLQRequest, error) {
	f := fields{c: c}
	h := ForwardPopToDLQRequest{
		ConsumerGroup: f.need("consumerGroup"),
		Topic:         f.need("topic"),
		ReceiptHandle: f.need("receiptHandle"),
	}
	return h, f.result()
}

// EncodeForwardPopToDLQRequest returns the request.
func EncodeForwardPopToDLQRequest(h ForwardPopToDLQRequest) *remoting.Command {
	return remoting.NewRequest(CodePetrelForwardPopToDLQ, map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"receiptHandle": h.ReceiptHandle,
	}, nil)
}

// Retry marks of an extra info (Java's ExtraInfoUtil).
const (
	RetryMarkTopic   = "0" // the asked topic
	RetryMarkRetryV1 = "1" // Java's pop retry topic %RETRY%<group>_<topic>
	RetryMarkRetryV2 = "2" // Java's pop retry topic %RETRY%<group>+<topic>
)

// ExtraInfo is a popped message's receipt as a client sends it back.
type ExtraInfo struct {
	CkQueueOffset int64 // the first offset the pop took from the queue
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int32
	Retry         string // RetryMark…
	BrokerName    string
	QueueID       int32
	// QueueOffset is the message's queue offset; -1 when the string had
	// only seven fields (Java's form without it).
	QueueOffset int64
	// Handle is Petrel's receipt handle, the ninth field; "" when absent.
	Handle string
}

// maxExtraInfoLen bounds an extra info ParseExtraInfo reads: eight
// numbers and names, and a handle, fit many times over.
const maxExtraInfoLen = 1024

// String is the extra info as the client sends it back.
func (e ExtraInfo) String() string {
	var b strings.Builder
	b.Grow(64 + len(e.BrokerName) + len(e.Handle))
	b.WriteString(strconv.FormatInt(e.CkQueueOffset, 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(e.PopTime, 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(e.InvisibleTime, 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(int64(e.ReviveQid), 10))
	b.WriteByte(' ')
	b.WriteString(e.Retry)
	b.WriteByte(' ')
	b.WriteString(e.BrokerName)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(int64(e.QueueID), 10))
	if e.QueueOffset >= 0 || e.Handle != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.QueueOffset, 10))
	}
	if e.Handle != "" {
		b.WriteByte(' ')
		b.WriteString(e.Handle)
	}
	return b.String()
}

// ExtraInfoError is an extra info that does not parse; its text is a
// sentence for the client.
type ExtraInfoError struct {
	Reason string
}

func (e *ExtraInfoError) Error() string {
	return "extraInfo " + e.Reason + "; send the POP_CK property of the popped message unchanged"
}

// ParseExtraInfo reads an extra info: seven to nine fields separated by
// single spaces (more are ignored, as Java does), the numeric ones decimal.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	if len(s) > maxExtraInfoLen {
		return ExtraInfo{}, &ExtraInfoError{Reason: fmt.Sprintf("is %d bytes, over the limit of %d", len(s), maxExtraInfoLen)}
	}
	p := strings.SplitN(s, " ", 10)
	if len(p) < 7 {
		return ExtraInfo{}, &ExtraInfoError{Reason: fmt.Sprintf("has %d fields, not at least 7", len(p))}
	}
	e := ExtraInfo{Retry: p[4], BrokerName: p[5], QueueOffset: -1}
	var bad string
	num := func(i, bits int, name string) int64 {
		x, ok := parseDecimal(p[i], bits)
		if !ok && bad == "" {
			bad = name
		}
		return x
	}
	e.CkQueueOffset = num(0, 64, "the ck offset (field 0)")
	e.PopTime = num(1, 64, "the pop time (field 1)")
	e.InvisibleTime = num(2, 64, "the invisible time (field 2)")
	e.ReviveQid = int32(num(3, 32, "the revive queue id (field 3)"))
	e.QueueID = int32(num(6, 32, "the queue id (field 6)"))
	if len(p) > 7 {
		e.QueueOffset = num(7, 64, "the queue offset (field 7)")
	}
	if bad != "" {
		return ExtraInfo{}, &ExtraInfoError{Reason: bad + " is not a decimal integer of its width"}
	}
	if len(p) > 8 {
		e.Handle = p[8]
	}
	return e, nil
}

// QueueOffsets is one queue's entry of a pop answer's startOffsetInfo and
// msgOffsetInfo.
type QueueOffsets struct {
	Retry   string // RetryMark…
	QueueID int32
	Start   int64   // startOffsetInfo: the ck offset
	Offsets []int64 // msgOffsetInfo: the queue offsets popped, in body order
}

// FormatOffsetInfo returns a pop answer's startOffsetInfo and
// msgOffsetInfo for the queues (Java's buildStartOffsetInfo and
// buildMsgOffsetInfo: "mark queueId start" and "mark queueId off,off,…",
// joined by ";"). Each (mark, queue id) must appear once: Java's parser
// refuses duplicates.
func FormatOffsetInfo(qs []QueueOffsets) (start, msg string) {
	var sb, mb strings.Builder
	for i, q := range qs {
		if i > 0 {
			sb.WriteByte(';')
			mb.WriteByte(';')
		}
		fmt.Fprintf(&sb, "%s %d %d", q.Retry, q.QueueID, q.Start)
		fmt.Fprintf(&mb, "%s %d ", q.Retry, q.QueueID)
		for j, o := range q.Offsets {
			if j > 0 {
				mb.WriteByte(',')
			}
			mb.WriteString(strconv.FormatInt(o, 10))
		}
	}
	return sb.String(), mb.String()
}

// maxOffsetInfoQueues bounds the queue entries ParseOffsetInfo reads.
const maxOffsetInfoQueues = 4096

// ParseOffsetInfo reads a startOffsetInfo and msgOffsetInfo pair (either
// may be empty) into entries by "mark@queueId", as Java's
// parseStartOffsetInfo and parseMsgOffsetInfo key them.
func ParseOffsetInfo(start, msg string) (map[string]QueueOffsets, error) {
	out := map[string]QueueOffsets{}
	each := func(s, what string, fn func(key string, q QueueOffsets, last string) error) error {
		if s == "" {
			return nil
		}
		parts := strings.SplitN(s, ";", maxOffsetInfoQueues+1)
		if len(parts) > maxOffsetInfoQueues {
			return &ExtraInfoError{Reason: fmt.Sprintf("%s has over %d queues", what, maxOffsetInfoQueues)}
		}
		seen := make(map[string]bool, len(parts))
		for _, one := range parts {
			f := strings.Split(one, " ")
			if len(f) != 3 {
				return &ExtraInfoError{Reason: fmt.Sprintf("%s entry %q has %d fields, not 3", what, one, len(f))}
			}
			qid, ok := parseDecimal(f[1], 32)
			if !ok {
				return &ExtraInfoError{Reason: fmt.Sprintf("%s entry %q has a queue id that is not a 32-bit integer", what, one)}
			}
			key := f[0] + "@" + f[1]
			if seen[key] {
				return &ExtraInfoError{Reason: fmt.Sprintf("%s names %s twice", what, key)}
			}
			seen[key] = true
			if err := fn(key, QueueOffsets{Retry: f[0], QueueID: int32(qid)}, f[2]); err != nil {
				return err
			}
		}
		return nil
	}
	err := each(start, "startOffsetInfo", func(key string, q QueueOffsets, last string) error {
		v, ok := parseDecimal(last, 64)
		if !ok {
			return &ExtraInfoError{Reason: fmt.Sprintf("startOffsetInfo of %s has a start offset that is not a 64-bit integer", key)}
		}
		q.Start = v
		out[key] = q
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(msg, "msgOffsetInfo", func(key string, q QueueOffsets, last string) error {
		have, ok := out[key]
		if ok {
			q = have
		}
		for _, o := range strings.Split(last, ",") {
			v, ok := parseDecimal(o, 64)
			if !ok {
				return &ExtraInfoError{Reason: fmt.Sprintf("msgOffsetInfo of %s has an offset that is not a 64-bit integer", key)}
			}
			q.Offsets = append(q.Offsets, v)
		}
		out[key] = q
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
