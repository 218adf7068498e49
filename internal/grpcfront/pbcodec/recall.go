package pbcodec

// RecallMessage (RocketMQ 5.3's MessagingService.RecallMessage) came to the
// v2 protos after the generated code Petrel builds on (the v5.1.2 Go
// client's protocol/v2), so its two messages are written here by hand,
// byte-compatible with protobuf, and the codec encodes and decodes them
// (the gRPC front adds the method to the service it registers). Layout,
// from apache/rocketmq/v2/service.proto:
//
//	RecallMessageRequest   1: Resource topic  2: string recall_handle
//	RecallMessageResponse  1: Status status   2: string message_id
//
// Decoding follows protobuf's rules: a submessage given twice is merged,
// the last of a string given twice wins, a string that is not UTF-8 is an
// error, and an unknown field (or a known one with another wire type) is
// skipped (protobuf would keep it; nothing reads it here).

import (
	"errors"
	"unicode/utf8"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// RecallMessageRequest is apache.rocketmq.v2.RecallMessageRequest.
type RecallMessageRequest struct {
	Topic        *v2.Resource
	RecallHandle string
}

// RecallMessageResponse is apache.rocketmq.v2.RecallMessageResponse.
type RecallMessageResponse struct {
	Status    *v2.Status
	MessageId string //nolint:revive // the proto field's Go name
}

// GetTopic returns the topic, nil when unset (or r is nil).
func (r *RecallMessageRequest) GetTopic() *v2.Resource {
	if r == nil {
		return nil
	}
	return r.Topic
}

// GetStatus returns the status, nil when unset (or r is nil).
func (r *RecallMessageResponse) GetStatus() *v2.Status {
	if r == nil {
		return nil
	}
	return r.Status
}

// errRecallWire is the error of a recall message that does not decode.
var errRecallWire = errors.New("pbcodec: malformed RecallMessage request or response")

// Both messages have one shape: a submessage at field 1 and a string at
// field 2; marshalPair and unmarshalPair encode and decode it.

// Marshal encodes r as protobuf does (fields in number order, unset
// ones omitted).
func (r *RecallMessageRequest) Marshal() ([]byte, error) {
	return marshalPair(r.Topic, r.RecallHandle)
}

// Unmarshal decodes b into r (reset first).
func (r *RecallMessageRequest) Unmarshal(b []byte) error {
	*r = RecallMessageRequest{}
	return unmarshalPair(b, &r.Topic, &r.RecallHandle)
}

// Marshal encodes r as protobuf does.
func (r *RecallMessageResponse) Marshal() ([]byte, error) {
	return marshalPair(r.Status, r.MessageId)
}

// Unmarshal decodes b into r (reset first).
func (r *RecallMessageResponse) Unmarshal(b []byte) error {
	*r = RecallMessageResponse{}
	return unmarshalPair(b, &r.Status, &r.MessageId)
}

// marshalPair encodes m (omitted when nil) as field 1 and s (omitted when
// empty) as field 2.
func marshalPair(m proto.Message, s string) ([]byte, error) {
	var b []byte
	if m.ProtoReflect().IsValid() { // false for a nil message
		sub, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), sub)
	}
	if s != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), s)
	}
	return b, nil
}

// unmarshalPair decodes field 1 into *m (allocated on its first
// occurrence, merged on the next) and field 2 into *s (the last wins; it
// must be UTF-8).
func unmarshalPair[T any, P interface {
	*T
	proto.Message
}](b []byte, m *P, s *string) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			if *m == nil {
				*m = P(new(T))
			}
			return proto.UnmarshalOptions{Merge: true}.Unmarshal(v, *m)
		case 2:
			if !utf8.Valid(v) {
				return errRecallWire
			}
			*s = string(v)
		}
		return nil
	})
}

// eachField calls f with each length-delimited field of fields 1 and 2
// of b, in order, and skips every other field.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errRecallWire
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errRecallWire
			}
			if err := f(num, v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errRecallWire
		}
		b = b[n:]
	}
	return nil
}

// SendRecallHandle is the field number of SendResultEntry.recall_handle,
// which the v5.1.2 generated SendResultEntry lacks: the front writes it
// as an unknown field of the entry, which protobuf encodes after the
// known ones (SetRecallHandle).
const SendRecallHandle protowire.Number = 5

// SetRecallHandle sets e's recall_handle (field 5), replacing any.
func SetRecallHandle(e *v2.SendResultEntry, handle string) {
	m := e.ProtoReflect()
	var keep []byte
	for u := m.GetUnknown(); len(u) > 0; {
		num, typ, n := protowire.ConsumeField(u)
		if n < 0 {
			break
		}
		if num != SendRecallHandle || typ != protowire.BytesType {
			keep = append(keep, u[:n]...)
		}
		u = u[n:]
	}
	if handle != "" {
		keep = protowire.AppendString(protowire.AppendTag(keep, SendRecallHandle, protowire.BytesType), handle)
	}
	m.SetUnknown(keep)
}

// RecallHandle returns e's recall_handle (field 5), "" when unset.
func RecallHandle(e *v2.SendResultEntry) string {
	var h string
	for u := e.ProtoReflect().GetUnknown(); len(u) > 0; {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return h
		}
		u = u[n:]
		if num == SendRecallHandle && typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(u)
			if k < 0 {
				return h
			}
			h = string(v)
			u = u[k:]
			continue
		}
		k := protowire.ConsumeFieldValue(num, typ, u)
		if k < 0 {
			return h
		}
		u = u[k:]
	}
	return h
}
