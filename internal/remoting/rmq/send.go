package rmq

// Send headers: SEND_MESSAGE (10) carries the V1 header with long ext
// keys; SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) carry the V2
// header, whose keys are single letters:
//
//	a producerGroup  b topic  c defaultTopic  d defaultTopicQueueNums
//	e queueId  f sysFlag  g bornTimestamp  h flag  i properties
//	j reconsumeTimes  k unitMode  l maxReconsumeTimes  m batch  n brokerName
//
// A send is also where the 4.x protocol says a message is a transaction's
// half (the sysflag's prepared type, or TRAN_MSG=true) and when it is to
// be delivered (the DELAY level, TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS properties): Prepared and PropertiesDelay read those, so
// that the broker gets typed fields and never parses a sysflag.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

// SendHeader is the header of a send (V1 or V2 alike).
type SendHeader struct {
	ProducerGroup string
	Topic         string
	// DefaultTopic names the auto-create template; DefaultTopicQueueNums
	// the queue count the producer asks an auto-created topic to have.
	DefaultTopic          string
	DefaultTopicQueueNums int32
	// QueueID < 0 lets the broker choose.
	QueueID       int32
	SysFlag       int32
	BornTimestamp int64 // ms
	Flag          int32
	// Properties are encoded (key 0x01 value 0x02 ...), as sent.
	Properties        string
	ReconsumeTimes    int32
	UnitMode          bool
	MaxReconsumeTimes int32
	// Batch is the header's batch field; a SEND_BATCH_MESSAGE is a batch
	// whatever it says (see IsBatch).
	Batch      bool
	BrokerName string
}

// IsBatch reports whether a send command with header h carries a
// MessageBatch body.
func (h *SendHeader) IsBatch(code int16) bool { return h.Batch || code == CodeSendBatchMessage }

// DecodeSendHeader reads a send's header in one pass over its ext fields,
// V1 names and V2 letters alike (sends go to a remoting BatchHandler,
// whose requests have no ExtFields map). Every field is optional, as Petrel has always taken them (the
// broker refuses an empty topic); a numeric field that does not parse is a
// *FieldError naming the field by its V1 name.
func DecodeSendHeader(c *remoting.Command) (SendHeader, error) {
	var h SendHeader
	f := fields{c: c}
	c.EachExt(func(k, v string) {
		switch k {
		case "a", "producerGroup":
			h.ProducerGroup = v
		case "b", "topic":
			h.Topic = v
		case "c", "defaultTopic":
			h.DefaultTopic = v
		case "d", "defaultTopicQueueNums":
			h.DefaultTopicQueueNums = int32(f.parseNum("defaultTopicQueueNums", v, 32))
		case "e", "queueId":
			h.QueueID = int32(f.parseNum("queueId", v, 32))
		case "f", "sysFlag":
			h.SysFlag = int32(f.parseNum("sysFlag", v, 32))
		case "g", "bornTimestamp":
			h.BornTimestamp = f.parseNum("bornTimestamp", v, 64)
		case "h", "flag":
			h.Flag = int32(f.parseNum("flag", v, 32))
		case "i", "properties":
			h.Properties = v
		case "j", "reconsumeTimes":
			h.ReconsumeTimes = int32(f.parseNum("reconsumeTimes", v, 32))
		case "k", "unitMode":
			h.UnitMode = parseBool(v)
		case "l", "maxReconsumeTimes":
			h.MaxReconsumeTimes = int32(f.parseNum("maxReconsumeTimes", v, 32))
		case "m", "batch":
			h.Batch = h.Batch || v == "true"
		case "n", "brokerName":
			h.BrokerName = v
		}
	})
	return h, f.result()
}

// ExtForwarded is the ext field ("true") of a send a slave forwarded to its
// master (Petrel's own): a slave never forwards such a send again, so two
// slaves whose views name each other during a failover refuse it instead
// of passing it around, and a send that reaches a slave about to be
// promoted is refused there, not passed on to the master it replaces.
const ExtForwarded = "petrelForwarded"

// EncodeSendHeader is a SEND_MESSAGE_V2 request with header h (a
// SEND_BATCH_MESSAGE when h.Batch) and no body.
func EncodeSendHeader(h SendHeader) *remoting.Command {
	code := CodeSendMessageV2
	if h.Batch {
		code = CodeSendBatchMessage
	}
	return AppendSendHeader(remoting.NewRequest(code, nil, nil), h)
}

// AppendSendHeader replaces the ext fields c's AppendExt added with the V2
// form of h, so that a sender can reuse one request (the code and body
// are left alone). It returns c.
func AppendSendHeader(c *remoting.Command, h SendHeader) *remoting.Command {
	return c.ResetExt().
		AppendExt("a", h.ProducerGroup).AppendExt("b", h.Topic).AppendExt("c", h.DefaultTopic).
		AppendExt("d", itoa(h.DefaultTopicQueueNums)).AppendExt("e", itoa(h.QueueID)).AppendExt("f", itoa(h.SysFlag)).
		AppendExt("g", itoa(h.BornTimestamp)).AppendExt("h", itoa(h.Flag)).
		AppendExt("i", h.Properties).AppendExt("j", itoa(h.ReconsumeTimes)).AppendExt("k", btoa(h.UnitMode)).
		AppendExt("l", itoa(h.MaxReconsumeTimes)).AppendExt("m", btoa(h.Batch)).AppendExt("n", h.BrokerName)
}

// SendResponse is the header of a send's answer (SendMessageResponseHeader;
// PETREL_RESEND_DLQ is answered alike): msgId, the stored message's offset
// id, queueId and queueOffset are required; MSG_REGION, TRACE_ON and
// recallHandle (RocketMQ 5.3+: a single delayed message's recall handle,
// for RECALL_MESSAGE) are optional.
type SendResponse struct {
	MsgID        string
	QueueID      int32
	QueueOffset  int64
	Region       string // MSG_REGION
	TraceOn      bool   // TRACE_ON
	RecallHandle string // recallHandle; written only when set
}

// EncodeSendResponse answers req with code and header r, the fields in
// the order Petrel has always written them.
func EncodeSendResponse(req *remoting.Command, code int16, r SendResponse) *remoting.Command {
	c := remoting.NewResponse(req, code, "").
		AppendExt("msgId", r.MsgID).
		AppendExt("queueId", itoa(r.QueueID)).
		AppendExt("queueOffset", itoa(r.QueueOffset)).
		AppendExt("MSG_REGION", r.Region).
		AppendExt("TRACE_ON", btoa(r.TraceOn))
	if r.RecallHandle != "" {
		c.AppendExt("recallHandle", r.RecallHandle)
	}
	return c
}

// DecodeSendResponse reads a send answer's header. Only a stored send
// (SUCCESS, FLUSH_DISK_TIMEOUT and the like) carries it; other codes are
// refusals with a remark.
func DecodeSendResponse(c *remoting.Command) (SendResponse, error) {
	f := fields{c: c}
	r := SendResponse{
		MsgID:        f.need("msgId"),
		QueueID:      f.needI32("queueId"),
		QueueOffset:  f.needI64("queueOffset"),
		Region:       f.str("MSG_REGION"),
		TraceOn:      f.boolean("TRACE_ON"),
		RecallHandle: f.str("recallHandle"),
	}
	return r, f.result()
}

// Property keys of a 4.x send's relative delay (RocketMQ 5's).
const (
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS  = "TIMER_DELAY_MS"
)

// Prepared reports whether a 4.x send is a transaction's half: its
// sysflag has the prepared type, or its properties TRAN_MSG=true (any
// case).
func Prepared(sysFlag int32, props string) bool {
	if sysFlag&message.SysFlagTxMask == message.SysFlagTxPrepared {
		return true
	}
	v, ok := message.PropertyOf(props, message.PropertyTransactionFlag)
	return ok && strings.EqualFold(v, "true")
}

// PropertyError is a send property that does not parse. Its Error text is
// a sentence for the client (the front sends it as the remark).
type PropertyError struct {
	Key, Value string
	Want       string // what the value must be
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("property %s %q is not %s", e.Key, e.Value, e.Want)
}

// PropertiesDelay is the delay that a 4.x send's encoded properties ask
// for, by RocketMQ's order: TIMER_DELIVER_MS (unix ms), else
// TIMER_DELAY_SEC or TIMER_DELAY_MS (seconds win), else the DELAY level (a
// level that is not a positive number is no delay, as RocketMQ ignores
// it). A delivery time or relative delay that does not parse is a
// *PropertyError; the broker applies its limits. Properties without any
// of these cost one scan and no allocation.
func PropertiesDelay(props string) (message.Delay, error) {
	if !strings.Contains(props, "DELAY") && !strings.Contains(props, message.PropertyTimerDeliverMS) {
		return message.Delay{}, nil // no DELAY, TIMER_DELAY_* or TIMER_DELIVER_MS
	}
	if v, ok := message.PropertyOf(props, message.PropertyTimerDeliverMS); ok && v != "" {
		at, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return message.Delay{}, &PropertyError{Key: message.PropertyTimerDeliverMS, Value: v, Want: "a time in unix milliseconds"}
		}
		return message.Delay{AtMS: at}, nil
	}
	key, unit := PropertyTimerDelaySec, time.Second
	v, ok := message.PropertyOf(props, key)
	if !ok || v == "" {
		key, unit = PropertyTimerDelayMS, time.Millisecond
		v, ok = message.PropertyOf(props, key)
	}
	if ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return message.Delay{}, &PropertyError{Key: key, Value: v, Want: "a non-negative number"}
		}
		if n > math.MaxInt64/int64(unit) {
			return message.Delay{After: math.MaxInt64}, nil // beyond any limit
		}
		return message.Delay{After: time.Duration(n) * unit}, nil
	}
	if v, ok := message.PropertyOf(props, message.PropertyDelayLevel); ok {
		lv, err := strconv.ParseInt(v, 10, 64)
		if err != nil || lv <= 0 {
			return message.Delay{}, nil
		}
		return message.Delay{Level: int32(min(lv, math.MaxInt32))}, nil
	}
	return message.Delay{}, nil
}
