package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// change is one log record: the new state of some entries of one queue.
type change struct {
	key    Key
	cursor int64 // new cursor; -1 leaves it; cursorForget drops the queue
	put    []Entry
	del    []int64
}

// cursorForget as a change's cursor removes the queue's state altogether
// (its group was deleted): the key is unknown again afterwards.
const cursorForget = -2

const (
	frameHeader = 8  // length uint32, crc uint32
	entryBytes  = 28 // offset, until, attempt, gen
	// maxFrame bounds a record's payload: a change holds at most a few
	// hundred entries; anything larger is a torn or corrupt length.
	maxFrame = 1 << 24
	// maxName bounds a group or topic name in a record.
	maxName = 1 << 10
)

type enc struct{ b []byte }

func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string) { e.u16(uint16(len(s))); e.b = append(e.b, s...) }
func (e *enc) key(k Key)    { e.str(k.Group); e.str(k.Topic); e.u32(uint32(k.QueueID)) }
func (e *enc) entry(x Entry) {
	e.u64(uint64(x.Offset))
	e.u64(uint64(x.Until))
	e.u32(uint32(x.Attempt))
	e.u64(x.Gen)
}

var errShort = errors.New("short")

type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
func (d *dec) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}
func (d *dec) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}
func (d *dec) str() string {
	n := int(d.u16())
	if n > maxName {
		d.err = fmt.Errorf("name of %d bytes", n)
		return ""
	}
	return string(d.take(n))
}
func (d *dec) key() Key {
	return Key{Group: d.str(), Topic: d.str(), QueueID: int32(d.u32())}
}
func (d *dec) entry() Entry {
	return Entry{Offset: int64(d.u64()), Until: int64(d.u64()), Attempt: int32(d.u32()), Gen: d.u64()}
}

// count reads a count of items of size bytes each, refusing one the
// remaining input cannot hold.
func (d *dec) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n > len(d.b)/size {
		d.err = fmt.Errorf("count %d exceeds the record", n)
		return 0
	}
	return n
}

// appendFrame appends c as a framed record to b.
func appendFrame(b []byte, c *change) []byte {
	start := len(b)
	e := enc{b: append(b, make([]byte, frameHeader)...)}
	e.change(c)
	payload := e.b[start+frameHeader:]
	binary.BigEndian.PutUint32(e.b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(e.b[start+4:], crc32.Checksum(payload, castagnoli))
	return e.b
}

// change appends the payload of a log record (and of a replicated op).
func (e *enc) change(c *change) {
	e.key(c.key)
	e.u64(uint64(c.cursor))
	e.u32(uint32(len(c.put)))
	for _, x := range c.put {
		e.entry(x)
	}
	e.u32(uint32(len(c.del)))
	for _, o := range c.del {
		e.u64(uint64(o))
	}
}

// readFrame decodes the record at the start of b and returns it and its
// framed size, or n 0 when b does not start with a whole, intact record
// (a torn or corrupt tail).
func readFrame(b []byte) (c change, n int) {
	if len(b) < frameHeader {
		return change{}, 0
	}
	size := binary.BigEndian.Uint32(b)
	if size > maxFrame || int(size) > len(b)-frameHeader {
		return change{}, 0
	}
	payload := b[frameHeader : frameHeader+int(size)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return change{}, 0
	}
	c, ok := decodeChange(payload)
	if !ok {
		return change{}, 0
	}
	return c, frameHeader + int(size)
}

// decodeChange parses the payload of a log record; ok is false when it
// does not parse or has bytes left over.
func decodeChange(payload []byte) (c change, ok bool) {
	d := dec{b: payload}
	c.key = d.key()
	c.cursor = int64(d.u64())
	if np := d.count(entryBytes); np > 0 {
		c.put = make([]Entry, np)
		for i := range c.put {
			c.put[i] = d.entry()
		}
	}
	if nd := d.count(8); nd > 0 {
		c.del = make([]int64, nd)
		for i := range c.del {
			c.del[i] = int64(d.u64())
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return change{}, false
	}
	return c, true
}

const snapshotMagic = "PPOPSNP1"

// encodeSnapshot writes the whole state; see the package doc.
func encodeSnapshot(logGen, nextGen uint64, queues []*queue) []byte {
	e := enc{b: make([]byte, 0, 64)}
	e.b = append(e.b, snapshotMagic...)
	e.u64(logGen)
	e.u64(nextGen)
	e.u32(uint32(len(queues)))
	for _, q := range queues {
		e.key(q.key)
		e.u64(uint64(q.cursor))
		es := q.entries()
		e.u32(uint32(len(es)))
		for _, x := range es {
			e.entry(x)
		}
	}
	e.u32(crc32.Checksum(e.b, castagnoli))
	return e.b
}

type snapshot struct {
	logGen, nextGen uint64
	queues          []*queue
}

// decodeSnapshot parses a snapshot file; any damage is ErrCorrupt.
func decodeSnapshot(b []byte) (*snapshot, error) {
	if len(b) < len(snapshotMagic)+20+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: snapshot has no header", ErrCorrupt)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: snapshot checksum mismatch", ErrCorrupt)
	}
	d := dec{b: body[len(snapshotMagic):]}
	s := &snapshot{logGen: d.u64(), nextGen: d.u64()}
	n := d.count(16)
	for range n {
		k := d.key()
		q := newQueue(k, int64(d.u64()))
		ne := d.count(entryBytes)
		for range ne {
			q.put(d.entry())
		}
		if d.err != nil {
			break
		}
		s.queues = append(s.queues, q)
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: snapshot body does not parse", ErrCorrupt)
	}
	return s, nil
}
