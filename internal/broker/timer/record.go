package timer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Entry is one timer: a timer record the broker stored in the commit log and
// the time it becomes due.
type Entry struct {
	DeliverAt int64  // unix milliseconds when the message becomes due
	Offset    int64  // commit-log offset of the stored timer record
	Size      int32  // its size in bytes
	Key       uint64 // caller-chosen id (hash of the message's unique id), used by Cancel; 0 = none
}

// recordSize is the size of one timer-log record in bytes (see doc.go).
const recordSize = 48

// Record kinds (byte 40). kindLate is a flag on top of kindAdd or kindCancel.
const (
	kindAdd    = 1
	kindCancel = 2
	kindLate   = 0x80
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is the decoded form of one timer-log record; see doc.go.
type record struct {
	prev  uint64 // ref of the previous record of the same chain, 0 = none
	at    int64  // DeliverAt
	off   int64  // Offset
	key   uint64 // Key
	size  int32  // Size
	chain uint32 // slot chains: the round (a unix second); late chains: the generation
	kind  uint8
}

func (r *record) late() bool     { return r.kind&kindLate != 0 }
func (r *record) isCancel() bool { return r.kind&^kindLate == kindCancel }

func (r *record) entry() Entry {
	return Entry{DeliverAt: r.at, Offset: r.off, Size: r.size, Key: r.key}
}

// put encodes r into b[:recordSize].
func (r *record) put(b []byte) {
	b = b[:recordSize]
	binary.BigEndian.PutUint64(b[0:], r.prev)
	binary.BigEndian.PutUint64(b[8:], uint64(r.at))
	binary.BigEndian.PutUint64(b[16:], uint64(r.off))
	binary.BigEndian.PutUint64(b[24:], r.key)
	binary.BigEndian.PutUint32(b[32:], uint32(r.size))
	binary.BigEndian.PutUint32(b[36:], r.chain)
	b[40], b[41], b[42], b[43] = r.kind, 0, 0, 0
	binary.BigEndian.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
}

// decodeRecord decodes b[:recordSize]. It fails with ErrCorrupt when the
// checksum, the kind or the reserved bytes are wrong (an all-zero record,
// such as a hole in a file, fails the kind check).
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordSize {
		return record{}, fmt.Errorf("%w: record of %d bytes", ErrCorrupt, len(b))
	}
	b = b[:recordSize]
	if got, want := crc32.Checksum(b[:44], castagnoli), binary.BigEndian.Uint32(b[44:]); got != want {
		return record{}, fmt.Errorf("%w: record checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	r := record{
		prev:  binary.BigEndian.Uint64(b[0:]),
		at:    int64(binary.BigEndian.Uint64(b[8:])),
		off:   int64(binary.BigEndian.Uint64(b[16:])),
		key:   binary.BigEndian.Uint64(b[24:]),
		size:  int32(binary.BigEndian.Uint32(b[32:])),
		chain: binary.BigEndian.Uint32(b[36:]),
		kind:  b[40],
	}
	if k := r.kind &^ kindLate; (k != kindAdd && k != kindCancel) || b[41]|b[42]|b[43] != 0 {
		return record{}, fmt.Errorf("%w: record kind %#x, reserved %x", ErrCorrupt, r.kind, b[41:44])
	}
	return r, nil
}

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// mod is a modulo b in [0, b) (b > 0).
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
