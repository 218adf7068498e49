package pbcodec

// SendMessageResponse encoding: the size first, then one append into a
// buffer of that size.

import (
	"unicode/utf8"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// AppendSendMessageResponse appends r's encoding to b and reports true; or
// it reports false, with b unchanged, when r holds anything it leaves to
// proto.Marshal (see the package doc): a nil r or entry, unknown fields, a
// string that is not UTF-8.
func AppendSendMessageResponse(b []byte, r *v2.SendMessageResponse) ([]byte, bool) {
	if !encodable(r) {
		return b, false
	}
	if b == nil {
		b = make([]byte, 0, responseSize(r))
	}
	return appendResponse(b, r), true
}

// encodable reports whether the hand encoder writes r as proto.Marshal
// does: r and its entries are not nil, no message carries unknown fields
// (which proto.Marshal writes out), and every string is UTF-8 (proto.Marshal
// refuses others).
func encodable(r *v2.SendMessageResponse) bool {
	if r == nil || hasUnknown(r) || !statusEncodable(r.Status) {
		return false
	}
	for _, e := range r.Entries {
		if e == nil || hasUnknown(e) || !statusEncodable(e.Status) ||
			!utf8.ValidString(e.MessageId) || !utf8.ValidString(e.TransactionId) {
			return false
		}
	}
	return true
}

func statusEncodable(s *v2.Status) bool {
	return s == nil || !hasUnknown(s) && utf8.ValidString(s.Message)
}

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// The sizes and appends below are of encodable messages.

func responseSize(r *v2.SendMessageResponse) int {
	n := 0
	if r.Status != nil {
		n += 1 + protowire.SizeBytes(statusSize(r.Status))
	}
	for _, e := range r.Entries {
		n += 1 + protowire.SizeBytes(entrySize(e))
	}
	return n
}

func appendResponse(b []byte, r *v2.SendMessageResponse) []byte {
	if r.Status != nil {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(statusSize(r.Status)))
		b = appendStatus(b, r.Status)
	}
	for _, e := range r.Entries {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(entrySize(e)))
		b = appendEntry(b, e)
	}
	return b
}

// stringSize is the size of a proto3 string field of a one-byte tag (none
// when empty: proto3 leaves it out).
func stringSize(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func statusSize(s *v2.Status) int {
	n := stringSize(s.Message)
	if s.Code != 0 {
		n += 1 + protowire.SizeVarint(uint64(s.Code))
	}
	return n
}

func appendStatus(b []byte, s *v2.Status) []byte {
	if s.Code != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s.Code))
	}
	return appendString(b, 2, s.Message)
}

func entrySize(e *v2.SendResultEntry) int {
	n := stringSize(e.MessageId) + stringSize(e.TransactionId)
	if e.Status != nil {
		n += 1 + protowire.SizeBytes(statusSize(e.Status))
	}
	if e.Offset != 0 {
		n += 1 + protowire.SizeVarint(uint64(e.Offset))
	}
	return n
}

func appendEntry(b []byte, e *v2.SendResultEntry) []byte {
	if e.Status != nil {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(statusSize(e.Status)))
		b = appendStatus(b, e.Status)
	}
	b = appendString(b, 2, e.MessageId)
	b = appendString(b, 3, e.TransactionId)
	if e.Offset != 0 {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(e.Offset))
	}
	return b
}
