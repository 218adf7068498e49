package pbcodec

// SendMessageRequest decoding. One pass counts the messages, so that the
// messages with their system properties, topics, born timestamps and
// optional values are allocated as one slice, and every body is copied
// into one buffer; strings equal to the previous message's (the topic, the
// born host, the tag) share its string.

import (
	"unicode/utf8"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DecodeSendMessageRequest decodes b into r, replacing r's messages, and
// reports true; or it reports false, leaving r's messages unspecified,
// when b holds anything it leaves to proto.Unmarshal (see the package
// doc), including every malformed input.
func DecodeSendMessageRequest(b []byte, r *v2.SendMessageRequest) bool {
	r.Messages = nil
	n, ok := countMessages(b)
	if !ok {
		return false
	}
	if n == 0 {
		return true
	}
	d := decoder{
		slots: make([]slot, n),
		arena: make([]byte, 0, len(b)),
	}
	ptrs := make([]*v2.Message, n)
	for i := 0; len(b) > 0; i++ {
		// countMessages checked the tags and lengths.
		_, _, k := protowire.ConsumeTag(b)
		b = b[k:]
		v, k := protowire.ConsumeBytes(b)
		b = b[k:]
		if !d.message(v, i) {
			return false
		}
		ptrs[i] = &d.slots[i].msg
	}
	r.Messages = ptrs
	return true
}

// countMessages counts the messages of a request, or reports false when it
// holds anything but field 1 as length-delimited values.
func countMessages(b []byte) (int, bool) {
	n := 0
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 || num != 1 || typ != protowire.BytesType {
			return 0, false
		}
		b = b[k:]
		_, k = protowire.ConsumeBytes(b)
		if k < 0 {
			return 0, false
		}
		b = b[k:]
		n++
	}
	return n, true
}

// slot is what one message is decoded into: the message, the parts it
// points to, and the values of the optional scalar fields its system
// properties point to.
type slot struct {
	msg  v2.Message
	sp   v2.SystemProperties
	res  v2.Resource
	born timestamppb.Timestamp
	opt  optionals
}

type optionals struct {
	tag, receiptHandle, messageGroup, traceContext string
	queueOffset                                    int64
	deliveryAttempt                                int32
}

// decoder holds what one request's messages are decoded into.
type decoder struct {
	slots []slot
	arena []byte // the bodies; its capacity is the request's size, so it never moves

	// The previous message's strings, shared when equal.
	namespace, topic, bornHost, tag string
}

// field reads one tag and value of b: the field number, the varint value
// (varint fields) or the bytes (length-delimited fields), and the rest of
// b; ok is false on malformed input and on wire types other than varint
// and length-delimited.
func field(b []byte) (num protowire.Number, typ protowire.Type, x uint64, v, rest []byte, ok bool) {
	num, typ, k := protowire.ConsumeTag(b)
	if k < 0 {
		return 0, 0, 0, nil, nil, false
	}
	b = b[k:]
	switch typ {
	case protowire.VarintType:
		x, k = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		v, k = protowire.ConsumeBytes(b)
	default:
		return 0, 0, 0, nil, nil, false
	}
	if k < 0 {
		return 0, 0, 0, nil, nil, false
	}
	return num, typ, x, v, b[k:], true
}

// str returns v as a string, the same string as *prev when equal (and
// makes it *prev otherwise); ok is false when v is not UTF-8.
func str(v []byte, prev *string) (string, bool) {
	if string(v) == *prev {
		return *prev, true
	}
	if !utf8.Valid(v) {
		return "", false
	}
	s := string(v)
	*prev = s
	return s, true
}

// newStr returns v as a new string; ok is false when v is not UTF-8.
func newStr(v []byte) (string, bool) {
	if !utf8.Valid(v) {
		return "", false
	}
	return string(v), true
}

func (d *decoder) message(b []byte, i int) bool {
	sl := &d.slots[i]
	m := &sl.msg
	for len(b) > 0 {
		num, typ, _, v, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		b = rest
		switch num {
		case 1:
			if m.Topic != nil || !d.resource(v, &sl.res) {
				return false
			}
			m.Topic = &sl.res
		case 2:
			if m.UserProperties == nil {
				m.UserProperties = make(map[string]string)
			}
			if !mapEntry(v, m.UserProperties) {
				return false
			}
		case 3:
			if m.SystemProperties != nil || !d.systemProperties(v, sl) {
				return false
			}
			m.SystemProperties = &sl.sp
		case 4:
			start := len(d.arena)
			d.arena = append(d.arena, v...)
			m.Body = d.arena[start:len(d.arena):len(d.arena)]
		default:
			return false
		}
	}
	return true
}

func (d *decoder) resource(b []byte, r *v2.Resource) bool {
	for len(b) > 0 {
		num, typ, _, v, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		b = rest
		switch num {
		case 1:
			r.ResourceNamespace, ok = str(v, &d.namespace)
		case 2:
			r.Name, ok = str(v, &d.topic)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// mapEntry decodes one entry of a map<string, string> into m (a key or
// value left out is "", as protobuf has it).
func mapEntry(b []byte, m map[string]string) bool {
	var key, val string
	for len(b) > 0 {
		num, typ, _, v, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		b = rest
		switch num {
		case 1:
			key, ok = newStr(v)
		case 2:
			val, ok = newStr(v)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	m[key] = val
	return true
}

func (d *decoder) systemProperties(b []byte, sl *slot) bool {
	sp, o := &sl.sp, &sl.opt
	for len(b) > 0 {
		num, typ, x, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		if typ != wireType(num) {
			return false
		}
		switch num {
		case 1:
			if o.tag, ok = str(v, &d.tag); ok {
				sp.Tag = &o.tag
			}
		case 2:
			var k string
			if k, ok = newStr(v); ok {
				sp.Keys = append(sp.Keys, k)
			}
		case 3:
			sp.MessageId, ok = newStr(v)
		case 4:
			if sp.BodyDigest != nil {
				return false
			}
			sp.BodyDigest = new(v2.Digest)
			ok = digest(v, sp.BodyDigest)
		case 5:
			sp.BodyEncoding = v2.Encoding(int32(x))
		case 6:
			sp.MessageType = v2.MessageType(int32(x))
		case 7:
			if sp.BornTimestamp != nil {
				return false
			}
			sp.BornTimestamp = &sl.born
			ok = timestamp(v, sp.BornTimestamp)
		case 8:
			sp.BornHost, ok = str(v, &d.bornHost)
		case 9:
			sp.StoreTimestamp, ok = newTimestamp(v, sp.StoreTimestamp)
		case 10:
			sp.StoreHost, ok = newStr(v)
		case 11:
			sp.DeliveryTimestamp, ok = newTimestamp(v, sp.DeliveryTimestamp)
		case 12:
			if o.receiptHandle, ok = newStr(v); ok {
				sp.ReceiptHandle = &o.receiptHandle
			}
		case 13:
			sp.QueueId = int32(x)
		case 14:
			o.queueOffset = int64(x)
			sp.QueueOffset = &o.queueOffset
		case 15:
			sp.InvisibleDuration, ok = newDuration(v, sp.InvisibleDuration)
		case 16:
			o.deliveryAttempt = int32(x)
			sp.DeliveryAttempt = &o.deliveryAttempt
		case 17:
			if o.messageGroup, ok = newStr(v); ok {
				sp.MessageGroup = &o.messageGroup
			}
		case 18:
			if o.traceContext, ok = newStr(v); ok {
				sp.TraceContext = &o.traceContext
			}
		case 19:
			sp.OrphanedTransactionRecoveryDuration, ok = newDuration(v, sp.OrphanedTransactionRecoveryDuration)
		}
		if !ok {
			return false
		}
	}
	return true
}

// wireType is the wire type of a SystemProperties field; -1 for field
// numbers it does not have (no wire type matches).
func wireType(num protowire.Number) protowire.Type {
	switch num {
	case 5, 6, 13, 14, 16:
		return protowire.VarintType
	case 1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 15, 17, 18, 19:
		return protowire.BytesType
	}
	return -1
}

func digest(b []byte, g *v2.Digest) bool {
	for len(b) > 0 {
		num, typ, x, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.VarintType:
			g.Type = v2.DigestType(int32(x))
		case num == 2 && typ == protowire.BytesType:
			if g.Checksum, ok = newStr(v); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// secondsNanos decodes a Timestamp or a Duration (the same fields).
func secondsNanos(b []byte, seconds *int64, nanos *int32) bool {
	for len(b) > 0 {
		num, typ, x, _, rest, ok := field(b)
		if !ok || typ != protowire.VarintType {
			return false
		}
		b = rest
		switch num {
		case 1:
			*seconds = int64(x)
		case 2:
			*nanos = int32(x)
		default:
			return false
		}
	}
	return true
}

func timestamp(b []byte, t *timestamppb.Timestamp) bool {
	return secondsNanos(b, &t.Seconds, &t.Nanos)
}

// newTimestamp decodes a timestamp field that prev (the field's value so
// far) must not hold yet.
func newTimestamp(b []byte, prev *timestamppb.Timestamp) (*timestamppb.Timestamp, bool) {
	if prev != nil {
		return nil, false
	}
	t := new(timestamppb.Timestamp)
	return t, timestamp(b, t)
}

// newDuration decodes a duration field that prev must not hold yet.
func newDuration(b []byte, prev *durationpb.Duration) (*durationpb.Duration, bool) {
	if prev != nil {
		return nil, false
	}
	t := new(durationpb.Duration)
	return t, secondsNanos(b, &t.Seconds, &t.Nanos)
}
