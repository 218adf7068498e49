package message

import (
	"fmt"
	"strconv"
	"strings"
)

// The body of a message-trace message (what clients with enableMsgTrace
// send to RMQ_SYS_TRACE_TOPIC, or to the trace topic they are given) is
// UTF-8 text: records, each ended by FIELD_SPLITOR (0x02), whose fields are
// separated by CONTENT_SPLITOR (0x01). The first field names the record's
// type and fixes the meaning of the others:
//
//	Pub             type, timestamp, regionId, producer group, topic, msgId,
//	                tags, keys, storeHost, bodyLength, costTime, msgType,
//	                [offsetMsgId,] [success,] [clientHost]
//	SubBefore       type, timestamp, regionId, consumer group, requestId,
//	                msgId, retryTimes, keys
//	SubAfter        type, requestId, msgId, costTime, success, keys,
//	                [contextCode,] [timestamp, consumer group]
//	EndTransaction  type, timestamp, regionId, producer group, topic, msgId,
//	                tags, keys, storeHost, msgType, transactionId,
//	                transactionState, fromTransactionCheck
//	Recall          type, timestamp, regionId, producer group, topic, msgId,
//	                success
//
// Bracketed fields are missing in records of older clients: a Pub record
// has 12 to 15 fields (with 13, the 13th is success; with 14 or more,
// offsetMsgId then success), a SubAfter 6 to 9. Timestamps are ms since
// the epoch; costTime is in ms; msgType is an ordinal of MessageType
// (TraceMsgTypeName); contextCode an ordinal of ConsumeReturnType
// (TraceContextName); success and fromTransactionCheck are "true" or
// "false". One trace message holds the records of several traced messages
// (the client batches them); its keys are the traced msgIds and keys.
//
// Java writes an absent string (a message without tags or keys, a
// transaction without an id) as "null".

// TraceType is the kind of a trace record, as RocketMQ's TraceType names
// it.
type TraceType string

// The trace record types.
const (
	TracePub            TraceType = "Pub"            // a send, written by the producer
	TraceSubBefore      TraceType = "SubBefore"      // a delivery about to be consumed
	TraceSubAfter       TraceType = "SubAfter"       // the outcome of that consumption
	TraceEndTransaction TraceType = "EndTransaction" // a transaction's commit or rollback
	TraceRecall         TraceType = "Recall"         // a recall of a delayed message (5.x)
)

// TraceRecord is one decoded trace record. Fields a type does not carry
// are zero (see the layout above); an absent string ("null") is "".
type TraceRecord struct {
	Type      TraceType `json:"type"`
	Timestamp int64     `json:"timestamp"` // ms since the epoch; 0 in a SubAfter of an old client
	RegionID  string    `json:"regionId,omitempty"`
	// Group is the producer group (Pub, EndTransaction, Recall) or the
	// consumer group (SubBefore, SubAfter; "" in a SubAfter of an old
	// client).
	Group string `json:"group"`
	// RequestID pairs a SubBefore with its SubAfter.
	RequestID   string `json:"requestId,omitempty"`
	Topic       string `json:"topic,omitempty"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId,omitempty"`
	Tags        string `json:"tags,omitempty"`
	Keys        string `json:"keys,omitempty"`
	StoreHost   string `json:"storeHost,omitempty"`
	ClientHost  string `json:"clientHost,omitempty"`
	BodyLength  int32  `json:"bodyLength,omitempty"`
	CostMS      int32  `json:"costTime"`
	MsgType     int32  `json:"msgType"`
	// Success is the send's outcome (Pub: SEND_OK), the consumption's
	// (SubAfter: the listener returned success) or the recall's. A
	// SubBefore or EndTransaction record has no outcome; it is true.
	Success     bool  `json:"success"`
	RetryTimes  int32 `json:"retryTimes,omitempty"`
	ContextCode int32 `json:"contextCode,omitempty"`
	// TransactionState is COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW.
	TransactionID        string `json:"transactionId,omitempty"`
	TransactionState     string `json:"transactionState,omitempty"`
	FromTransactionCheck bool   `json:"fromTransactionCheck,omitempty"`
}

// traceFields is the most fields a known record type has; fields past it
// are ignored, as Java's decoder ignores them.
const traceFields = 15

// DecodeTrace decodes the body of a trace message into its records, in
// body order. Empty records and records of a type it does not know are
// skipped (newer clients may add types; Java's decoder skips them too). A
// record of a known type that is malformed (too few fields, a number that
// does not parse) is left out and reported: the error wraps ErrCorrupt
// and names the first such record's index; the records around it are
// still returned, since each is delimited on its own.
//
// The records' strings share one copy of body; nothing is allocated from
// counts in the input, so the result is bounded by the body's size.
func DecodeTrace(body []byte) ([]TraceRecord, error) {
	s := string(body)
	var out []TraceRecord
	var first error
	for i := 0; len(s) > 0; i++ {
		rec := s
		if j := strings.IndexByte(s, 0x02); j >= 0 {
			rec, s = s[:j], s[j+1:]
		} else {
			s = ""
		}
		r, ok, err := parseTraceRecord(rec)
		switch {
		case err != nil:
			if first == nil {
				first = fmt.Errorf("%w: trace record %d: %w", ErrCorrupt, i, err)
			}
		case ok:
			out = append(out, r)
		}
	}
	return out, first
}

// parseTraceRecord decodes one record (without its 0x02). ok is false for
// an empty record or an unknown type.
func parseTraceRecord(rec string) (TraceRecord, bool, error) {
	var f [traceFields]string
	n := 0
	for n < traceFields {
		j := strings.IndexByte(rec, 0x01)
		if j < 0 {
			f[n] = rec
			n++
			break
		}
		f[n], rec = rec[:j], rec[j+1:]
		n++
	}
	p := fieldParser{f: f[:n]}
	r := TraceRecord{Type: TraceType(f[0]), Success: true}
	var min int
	switch r.Type {
	case TracePub:
		min = 12
	case TraceSubBefore:
		min = 8
	case TraceSubAfter:
		min = 6
	case TraceEndTransaction:
		min = 13
	case TraceRecall:
		min = 7
	default:
		return TraceRecord{}, false, nil
	}
	if n < min {
		return TraceRecord{}, false, fmt.Errorf("%s record has %d fields, want at least %d", r.Type, n, min)
	}
	switch r.Type {
	case TracePub:
		r.Timestamp, r.RegionID, r.Group = p.int64(1), p.str(2), p.str(3)
		r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = p.str(4), p.str(5), p.str(6), p.str(7), p.str(8)
		r.BodyLength, r.CostMS, r.MsgType = p.int32(9), p.int32(10), p.int32(11)
		switch {
		case n == 13:
			r.Success = p.boolean(12)
		case n >= 14:
			r.OffsetMsgID, r.Success = p.str(12), p.boolean(13)
			if n >= 15 {
				r.ClientHost = p.str(14)
			}
		}
	case TraceSubBefore:
		r.Timestamp, r.RegionID, r.Group, r.RequestID = p.int64(1), p.str(2), p.str(3), p.str(4)
		r.MsgID, r.RetryTimes, r.Keys = p.str(5), p.int32(6), p.str(7)
	case TraceSubAfter:
		r.RequestID, r.MsgID, r.CostMS, r.Success, r.Keys = p.str(1), p.str(2), p.int32(3), p.boolean(4), p.str(5)
		if n >= 7 {
			r.ContextCode = p.int32(6)
		}
		// A cloud-channel client ends the record after contextCode's
		// separator: an 8th field that is empty.
		if n >= 9 || n == 8 && f[7] != "" {
			r.Timestamp = p.int64(7)
		}
		if n >= 9 {
			r.Group = p.str(8)
		}
	case TraceEndTransaction:
		r.Timestamp, r.RegionID, r.Group = p.int64(1), p.str(2), p.str(3)
		r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost = p.str(4), p.str(5), p.str(6), p.str(7), p.str(8)
		r.MsgType, r.TransactionID, r.TransactionState, r.FromTransactionCheck = p.int32(9), p.str(10), p.str(11), p.boolean(12)
	case TraceRecall:
		r.Timestamp, r.RegionID, r.Group = p.int64(1), p.str(2), p.str(3)
		r.Topic, r.MsgID, r.Success = p.str(4), p.str(5), p.boolean(6)
	}
	if p.err != nil {
		return TraceRecord{}, false, fmt.Errorf("%s record: %w", r.Type, p.err)
	}
	return r, true, nil
}

// fieldParser reads a record's fields, keeping the first parse error.
type fieldParser struct {
	f   []string
	err error
}

// str is a string field; Java's "null" (an absent value) is "".
func (p *fieldParser) str(i int) string {
	if p.f[i] == "null" {
		return ""
	}
	return p.f[i]
}

func (p *fieldParser) int64(i int) int64 {
	v, err := strconv.ParseInt(p.f[i], 10, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("field %d is not a number: %q", i, clipField(p.f[i]))
	}
	return v
}

func (p *fieldParser) int32(i int) int32 {
	v, err := strconv.ParseInt(p.f[i], 10, 32)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("field %d is not a 32-bit number: %q", i, clipField(p.f[i]))
	}
	return int32(v)
}

// boolean is Java's Boolean.parseBoolean: "true" in any ASCII case is
// true, anything else false.
func (p *fieldParser) boolean(i int) bool {
	s := p.f[i]
	if len(s) != 4 {
		return false
	}
	for k := range 4 {
		if s[k]|0x20 != "true"[k] {
			return false
		}
	}
	return true
}

// clipField keeps an error message short whatever a peer wrote.
func clipField(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// AppendTrace appends r to dst in the layout a current Java client writes
// for r.Type, with its 0x02 end; a Pub gets a clientHost field only when
// r.ClientHost is set. An unknown type appends nothing. Strings holding
// 0x01 or 0x02 cannot be encoded; AppendTrace does not check for them.
func AppendTrace(dst []byte, r TraceRecord) []byte {
	w := traceWriter{b: dst}
	switch r.Type {
	case TracePub:
		w.str(string(r.Type)).int(r.Timestamp).str(r.RegionID).str(r.Group).str(r.Topic).str(r.MsgID).str(r.Tags).str(r.Keys).
			str(r.StoreHost).int(int64(r.BodyLength)).int(int64(r.CostMS)).int(int64(r.MsgType)).str(r.OffsetMsgID)
		if r.ClientHost != "" {
			w.bool(r.Success).last(r.ClientHost)
		} else {
			w.last(strconv.FormatBool(r.Success))
		}
	case TraceSubBefore:
		w.str(string(r.Type)).int(r.Timestamp).str(r.RegionID).str(r.Group).str(r.RequestID).str(r.MsgID).
			int(int64(r.RetryTimes)).last(r.Keys)
	case TraceSubAfter:
		w.str(string(r.Type)).str(r.RequestID).str(r.MsgID).int(int64(r.CostMS)).bool(r.Success).str(r.Keys).
			int(int64(r.ContextCode)).int(r.Timestamp).last(r.Group)
	case TraceEndTransaction:
		w.str(string(r.Type)).int(r.Timestamp).str(r.RegionID).str(r.Group).str(r.Topic).str(r.MsgID).str(r.Tags).str(r.Keys).
			str(r.StoreHost).int(int64(r.MsgType)).str(r.TransactionID).str(r.TransactionState).last(strconv.FormatBool(r.FromTransactionCheck))
	case TraceRecall:
		w.str(string(r.Type)).int(r.Timestamp).str(r.RegionID).str(r.Group).str(r.Topic).str(r.MsgID).last(strconv.FormatBool(r.Success))
	}
	return w.b
}

type traceWriter struct{ b []byte }

func (w *traceWriter) str(s string) *traceWriter { w.b = append(append(w.b, s...), 0x01); return w }
func (w *traceWriter) int(v int64) *traceWriter {
	w.b = append(strconv.AppendInt(w.b, v, 10), 0x01)
	return w
}
func (w *traceWriter) bool(v bool) *traceWriter {
	w.b = append(strconv.AppendBool(w.b, v), 0x01)
	return w
}
func (w *traceWriter) last(s string) { w.b = append(append(w.b, s...), 0x02) }

// TraceMsgTypeName names a Pub or EndTransaction record's msgType ordinal
// as RocketMQ's MessageType does, or gives the number when it is unknown.
func TraceMsgTypeName(t int32) string {
	names := [...]string{"Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg", "Order_Msg"}
	if t >= 0 && int(t) < len(names) {
		return names[t]
	}
	return strconv.Itoa(int(t))
}

// TraceContextName names a SubAfter record's contextCode ordinal as
// RocketMQ's ConsumeReturnType does, or gives the number when it is
// unknown.
func TraceContextName(c int32) string {
	names := [...]string{"SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return strconv.Itoa(int(c))
}
