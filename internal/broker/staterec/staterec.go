// Package staterec is the codec of the broker's state stream: the records
// a master writes into its own commit log (topic rmq_sys_PETREL_STATE,
// queue 0) so that its slaves, which replicate that log byte for byte,
// rebuild the same topic, group and offset tables (and, through kinds
// registered by other parts of the broker, pop and timer state).
//
// A message of the state topic carries a batch:
//
//	version u8 (= Version)
//	then, repeated to the end: kind u8, length u32 big-endian, payload
//
// The payload codecs of the kinds this package defines are below; a topic,
// group, user or ACL put's payload is the JSON of the broker's config type
// (the broker encodes it; this package only bounds it), the rest is binary,
// big-endian, with strings as u16 length + bytes.
//
// The package is a leaf (standard library only). Decoders never allocate
// more than their input implies and reject trailing bytes.
package staterec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind is a record's kind.
type Kind uint8

// Kinds. 1..31 are the broker's metadata and the stream's own marks, 32..
// other state of the broker.
const (
	// KindTopicPut: JSON of a topic config (add or replace).
	KindTopicPut Kind = 1
	// KindTopicDelete: a topic name (AppendName).
	KindTopicDelete Kind = 2
	// KindGroupPut: JSON of a subscription group config.
	KindGroupPut Kind = 3
	// KindGroupDelete: a group name.
	KindGroupDelete Kind = 4
	// KindOffsets: entries (group, topic, queue id, offset) to set.
	KindOffsets Kind = 5
	// KindOffsetsDelete: (group, topic); topic "" is all of the group's.
	KindOffsetsDelete Kind = 6
	// KindTopicOffsetsDelete: a topic name; every group's offsets on it.
	KindTopicOffsetsDelete Kind = 7
	// KindUserPut: JSON of a user of the access control (add or
	// replace), at most MaxUserPayload bytes.
	KindUserPut Kind = 8
	// KindUserDelete: a user name.
	KindUserDelete Kind = 9
	// KindAclPut: JSON of a subject's whole ACL (add or replace), at most
	// MaxAclPayload bytes.
	KindAclPut Kind = 10
	// KindAclDelete: a subject ("User:<name>"); its whole ACL.
	KindAclDelete Kind = 11
	// KindMark: no effect; an empty record whose storing marks a position
	// of the stream (the broker's hand-back waits for one).
	KindMark Kind = 31
	// KindSnapshotBegin: a Snapshot; every kind's whole state follows.
	KindSnapshotBegin Kind = 16
	// KindSnapshotEnd: the Snapshot of the matching begin.
	KindSnapshotEnd Kind = 17
	// KindPop: pop store operations (payload defined by the pop part).
	KindPop Kind = 32
	// KindTimerFired: timers fired (payload defined by the timer part).
	KindTimerFired Kind = 33
)

func (k Kind) String() string {
	switch k {
	case KindTopicPut:
		return "topic-put"
	case KindTopicDelete:
		return "topic-delete"
	case KindGroupPut:
		return "group-put"
	case KindGroupDelete:
		return "group-delete"
	case KindOffsets:
		return "offsets"
	case KindOffsetsDelete:
		return "offsets-delete"
	case KindTopicOffsetsDelete:
		return "topic-offsets-delete"
	case KindUserPut:
		return "user-put"
	case KindUserDelete:
		return "user-delete"
	case KindAclPut:
		return "acl-put"
	case KindAclDelete:
		return "acl-delete"
	case KindMark:
		return "mark"
	case KindSnapshotBegin:
		return "snapshot-begin"
	case KindSnapshotEnd:
		return "snapshot-end"
	case KindPop:
		return "pop"
	case KindTimerFired:
		return "timer-fired"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Version is the batch format's version byte.
const Version = 1

// RecordHeader is the bytes a record adds to a batch besides its payload.
const RecordHeader = 5

// MaxPayload bounds one record's payload (a batch message is at most a
// few MiB; the length field alone could say 4 GiB).
const MaxPayload = 16 << 20

// Bounds of the access-control payloads: a user is four short strings;
// an ACL holds at most a few thousand entries. The broker refuses larger
// changes before storing them, and its applier refuses larger records.
const (
	MaxUserPayload = 8 << 10
	MaxAclPayload  = 512 << 10
)

// CheckAuthPayload refuses (ErrTooLong) a user or ACL put's payload over
// its bound; other kinds pass.
func CheckAuthPayload(k Kind, p []byte) error {
	limit := 0
	switch k {
	case KindUserPut:
		limit = MaxUserPayload
	case KindAclPut:
		limit = MaxAclPayload
	default:
		return nil
	}
	if len(p) > limit {
		return fmt.Errorf("%w: %v payload of %d bytes, limit %d", ErrTooLong, k, len(p), limit)
	}
	return nil
}

// Record is one state change.
type Record struct {
	Kind    Kind
	Payload []byte
}

// Errors of the decoders.
var (
	ErrVersion   = errors.New("staterec: unknown batch version")
	ErrTruncated = errors.New("staterec: truncated")
	ErrTooLong   = errors.New("staterec: length beyond its bound")
	ErrTrailing  = errors.New("staterec: trailing bytes")
)

// BatchLen is the length AppendBatch adds for recs.
func BatchLen(recs ...Record) int {
	n := 1
	for _, r := range recs {
		n += RecordHeader + len(r.Payload)
	}
	return n
}

// AppendBatch appends the batch of recs to dst. A payload longer than
// MaxPayload panics (a caller bug: the decoder would refuse it).
func AppendBatch(dst []byte, recs ...Record) []byte {
	dst = append(dst, Version)
	for _, r := range recs {
		if len(r.Payload) > MaxPayload {
			panic(fmt.Sprintf("staterec: %v payload of %d bytes exceeds MaxPayload", r.Kind, len(r.Payload)))
		}
		dst = append(dst, byte(r.Kind))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Payload)))
		dst = append(dst, r.Payload...)
	}
	return dst
}

// DecodeBatch calls fn with each record of b in order; a record's Payload
// aliases b. Unknown kinds are passed on (the caller decides). It stops at
// the first error of fn, returned as is, or of the format.
func DecodeBatch(b []byte, fn func(Record) error) error {
	if len(b) < 1 {
		return ErrTruncated
	}
	if b[0] != Version {
		return fmt.Errorf("%w %d", ErrVersion, b[0])
	}
	b = b[1:]
	for len(b) > 0 {
		if len(b) < RecordHeader {
			return ErrTruncated
		}
		k := Kind(b[0])
		n := binary.BigEndian.Uint32(b[1:5])
		if n > MaxPayload {
			return fmt.Errorf("%w: %v payload of %d bytes", ErrTooLong, k, n)
		}
		if uint64(n) > uint64(len(b)-RecordHeader) {
			return ErrTruncated
		}
		p := b[RecordHeader : RecordHeader+int(n) : RecordHeader+int(n)]
		b = b[RecordHeader+int(n):]
		if err := fn(Record{Kind: k, Payload: p}); err != nil {
			return err
		}
	}
	return nil
}

// MaxName bounds a topic or group name in a payload (RocketMQ's names are
// at most 127 (topics) or 255 (groups) characters; the bound leaves room).
const MaxName = 1024

func appendStr(dst []byte, s string) []byte {
	if len(s) > MaxName {
		panic(fmt.Sprintf("staterec: name of %d bytes exceeds MaxName", len(s)))
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func readStr(b []byte) (string, []byte, error) {
	if len(b) < 2 {
		return "", nil, ErrTruncated
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > MaxName {
		return "", nil, fmt.Errorf("%w: name of %d bytes", ErrTooLong, n)
	}
	if len(b)-2 < n {
		return "", nil, ErrTruncated
	}
	return string(b[2 : 2+n]), b[2+n:], nil
}

// AppendName appends the payload of KindTopicDelete, KindGroupDelete,
// KindTopicOffsetsDelete, KindUserDelete and KindAclDelete: the name.
func AppendName(dst []byte, name string) []byte { return appendStr(dst, name) }

// DecodeName decodes AppendName's payload.
func DecodeName(p []byte) (string, error) {
	s, rest, err := readStr(p)
	if err != nil {
		return "", err
	}
	if len(rest) != 0 {
		return "", ErrTrailing
	}
	return s, nil
}

// AppendGroupTopic appends KindOffsetsDelete's payload: group, then topic
// ("" for all of the group's).
func AppendGroupTopic(dst []byte, group, topic string) []byte {
	return appendStr(appendStr(dst, group), topic)
}

// DecodeGroupTopic decodes AppendGroupTopic's payload.
func DecodeGroupTopic(p []byte) (group, topic string, err error) {
	group, p, err = readStr(p)
	if err != nil {
		return "", "", err
	}
	topic, p, err = readStr(p)
	if err != nil {
		return "", "", err
	}
	if len(p) != 0 {
		return "", "", ErrTrailing
	}
	return group, topic, nil
}

// Offset is one entry of KindOffsets: group's next offset to consume on a
// queue.
type Offset struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
}

// minOffsetLen is the shortest encoded Offset (empty names).
const minOffsetLen = 2 + 2 + 4 + 8

// AppendOffsets appends KindOffsets' payload: count u32, then per entry
// group, topic, queue id i32, offset i64.
func AppendOffsets(dst []byte, offs []Offset) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(offs)))
	for _, o := range offs {
		dst = appendStr(dst, o.Group)
		dst = appendStr(dst, o.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(o.QueueID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(o.Offset))
	}
	return dst
}

// OffsetLen is the bytes e adds to an AppendOffsets payload.
func OffsetLen(e Offset) int { return minOffsetLen + len(e.Group) + len(e.Topic) }

// DecodeOffsets calls fn with each entry of an AppendOffsets payload. The
// count is checked against the length before anything is decoded.
func DecodeOffsets(p []byte, fn func(Offset) error) error {
	if len(p) < 4 {
		return ErrTruncated
	}
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(n)*minOffsetLen > uint64(len(p)) {
		return ErrTruncated
	}
	for range n {
		var o Offset
		var err error
		if o.Group, p, err = readStr(p); err != nil {
			return err
		}
		if o.Topic, p, err = readStr(p); err != nil {
			return err
		}
		if len(p) < 12 {
			return ErrTruncated
		}
		o.QueueID = int32(binary.BigEndian.Uint32(p))
		o.Offset = int64(binary.BigEndian.Uint64(p[4:]))
		p = p[12:]
		if err := fn(o); err != nil {
			return err
		}
	}
	if len(p) != 0 {
		return ErrTrailing
	}
	return nil
}

// Snapshot is the payload of KindSnapshotBegin and KindSnapshotEnd: ID
// numbers the master's snapshots (a begin and its end carry the same), Epoch
// is the master's replication epoch when it wrote it (0 when it has none).
type Snapshot struct {
	ID    uint64
	Epoch uint32
}

// SnapshotLen is the length of a Snapshot payload.
const SnapshotLen = 12

// AppendSnapshot appends a Snapshot payload: id u64, epoch u32.
func AppendSnapshot(dst []byte, s Snapshot) []byte {
	dst = binary.BigEndian.AppendUint64(dst, s.ID)
	return binary.BigEndian.AppendUint32(dst, s.Epoch)
}

// DecodeSnapshot decodes AppendSnapshot's payload.
func DecodeSnapshot(p []byte) (Snapshot, error) {
	if len(p) < SnapshotLen {
		return Snapshot{}, ErrTruncated
	}
	if len(p) > SnapshotLen {
		return Snapshot{}, ErrTrailing
	}
	return Snapshot{ID: binary.BigEndian.Uint64(p), Epoch: binary.BigEndian.Uint32(p[8:])}, nil
}
