package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/vfs"
)

const (
	checkpointName  = "checkpoint"
	wheelPrefix     = "wheel-"
	tmpSuffix       = vfs.TmpSuffix
	checkpointMagic = "PTMRCKP1"
	wheelMagic      = "PTMRWHL1"
)

// runState is the durable part of a run (a chain taken for firing).
type runState struct {
	present   bool
	chain     uint32 // round (slot run) or generation (late run)
	head      uint64 // ref of the newest record of the chain
	rollBelow uint64 // slot run: records with ref < rollBelow are not rolled yet; 0: all are
	progAt    int64  // key (DeliverAt, ref) of the last entry passed (fired or
	progRef   uint64 // cancelled); entries with a greater key remain
}

type segState struct {
	start             uint64
	maxRound, maxLate uint32
}

// ckptState is everything a checkpoint file holds; see doc.go for its bytes.
type ckptState struct {
	slots      uint32
	per        uint32
	applied    int64  // src of the next Add/Cancel to apply
	cursor     int64  // next second whose slot is taken
	end        uint64 // records in the log
	pending    int64
	hasSnap    bool   // a wheel file exists
	snapEnd    uint64 // the wheel file holds the heads as of end = snapEnd
	snapCursor int64  // and cursor = snapCursor
	lateHead   uint64
	lateGen    uint32
	slotRun    runState
	lateRuns   []runState // oldest generation first
	segs       []segState
}

type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) i64(v int64)  { e.u64(uint64(v)) }
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || len(d.b) < n {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
		}
		return make([]byte, n)
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *decoder) u8() uint8   { return d.take(1)[0] }
func (d *decoder) u32() uint32 { return binary.BigEndian.Uint32(d.take(4)) }
func (d *decoder) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }
func (d *decoder) i64() int64  { return int64(d.u64()) }
func (d *decoder) bool() bool {
	switch v := d.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		if d.err == nil {
			d.err = fmt.Errorf("flag byte %d", v)
		}
		return false
	}
}

func (e *encoder) run(r runState) {
	e.bool(r.present)
	e.u32(r.chain)
	e.u64(r.head)
	e.u64(r.rollBelow)
	e.i64(r.progAt)
	e.u64(r.progRef)
}

func (d *decoder) run() runState {
	return runState{present: d.bool(), chain: d.u32(), head: d.u64(), rollBelow: d.u64(), progAt: d.i64(), progRef: d.u64()}
}

func (c *ckptState) encode() []byte {
	e := &encoder{b: make([]byte, 0, 256+16*len(c.segs))}
	e.b = append(e.b, checkpointMagic...)
	e.u32(c.slots)
	e.u32(c.per)
	e.i64(c.applied)
	e.i64(c.cursor)
	e.u64(c.end)
	e.i64(c.pending)
	e.bool(c.hasSnap)
	e.u64(c.snapEnd)
	e.i64(c.snapCursor)
	e.u64(c.lateHead)
	e.u32(c.lateGen)
	e.run(c.slotRun)
	e.u32(uint32(len(c.lateRuns)))
	for _, r := range c.lateRuns {
		e.run(r)
	}
	e.u32(uint32(len(c.segs)))
	for _, s := range c.segs {
		e.u64(s.start)
		e.u32(s.maxRound)
		e.u32(s.maxLate)
	}
	e.u32(crc32.Checksum(e.b, castagnoli))
	return e.b
}

// decodeCheckpoint parses a checkpoint file; errors wrap ErrCorrupt.
func decodeCheckpoint(b []byte) (ckptState, error) {
	var c ckptState
	if len(b) < len(checkpointMagic)+4 || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return c, fmt.Errorf("%w: checkpoint: bad magic", ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return c, fmt.Errorf("%w: checkpoint: checksum mismatch", ErrCorrupt)
	}
	d := &decoder{b: body[len(checkpointMagic):]}
	c.slots = d.u32()
	c.per = d.u32()
	c.applied = d.i64()
	c.cursor = d.i64()
	c.end = d.u64()
	c.pending = d.i64()
	c.hasSnap = d.bool()
	c.snapEnd = d.u64()
	c.snapCursor = d.i64()
	c.lateHead = d.u64()
	c.lateGen = d.u32()
	c.slotRun = d.run()
	nl := d.u32()
	if d.err == nil && nl > maxLateRuns {
		d.err = fmt.Errorf("%d late runs", nl)
	}
	for i := uint32(0); i < nl && d.err == nil; i++ {
		c.lateRuns = append(c.lateRuns, d.run())
	}
	n := d.u32()
	if d.err == nil && uint64(n)*16 != uint64(len(d.b)) {
		d.err = fmt.Errorf("%d log files in %d bytes", n, len(d.b))
	}
	for i := uint32(0); i < n && d.err == nil; i++ {
		c.segs = append(c.segs, segState{start: d.u64(), maxRound: d.u32(), maxLate: d.u32()})
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err == nil {
		d.err = c.check()
	}
	if d.err != nil {
		return ckptState{}, fmt.Errorf("%w: checkpoint: %w", ErrCorrupt, d.err)
	}
	return c, nil
}

// check rejects states no store writes.
func (c *ckptState) check() error {
	switch {
	case c.slots == 0 || c.slots > maxSlots:
		return fmt.Errorf("%d slots", c.slots)
	case c.per == 0 || c.per > 1<<30:
		return fmt.Errorf("%d records per file", c.per)
	case c.pending < 0:
		return fmt.Errorf("pending %d", c.pending)
	case c.lateGen == 0:
		return errors.New("late generation 0")
	case c.snapEnd > c.end || c.lateHead > c.end || c.slotRun.head > c.end:
		return fmt.Errorf("reference beyond the log end %d", c.end)
	case c.slotRun.present && int64(c.slotRun.chain) != c.cursor-1:
		return fmt.Errorf("slot run of round %d with cursor %d", c.slotRun.chain, c.cursor)
	case c.slotRun.present && c.slotRun.head == 0:
		return errors.New("slot run with an empty chain")
	}
	for i, r := range c.lateRuns {
		switch {
		case !r.present || r.head == 0 || r.head > c.end || r.rollBelow != 0:
			return fmt.Errorf("late run %+v", r)
		case r.chain >= c.lateGen || i > 0 && r.chain <= c.lateRuns[i-1].chain:
			return fmt.Errorf("late run of generation %d (open chain %d)", r.chain, c.lateGen)
		}
	}
	for i, s := range c.segs {
		if i > 0 && s.start <= c.segs[i-1].start {
			return errors.New("log files out of order")
		}
	}
	return nil
}

func wheelName(end uint64) string { return fmt.Sprintf("%s%020d", wheelPrefix, end) }

func parseWheelName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, wheelPrefix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

func encodeWheel(heads []uint64, cursor int64, end uint64) []byte {
	b := make([]byte, 0, 8+4+8+8+8*len(heads)+4)
	b = append(b, wheelMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(heads)))
	b = binary.BigEndian.AppendUint64(b, uint64(cursor))
	b = binary.BigEndian.AppendUint64(b, end)
	for _, h := range heads {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeWheel parses a wheel file and checks it is the one the checkpoint
// names; errors wrap ErrCorrupt.
func decodeWheel(b []byte, slots uint32, cursor int64, end uint64) ([]uint64, error) {
	const hdr = 8 + 4 + 8 + 8
	if len(b) != hdr+8*int(slots)+4 || string(b[:8]) != wheelMagic {
		return nil, fmt.Errorf("%w: wheel file of %d bytes, want %d for %d slots", ErrCorrupt, len(b), hdr+8*int(slots)+4, slots)
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: wheel file checksum mismatch", ErrCorrupt)
	}
	if n, c, e := binary.BigEndian.Uint32(b[8:]), int64(binary.BigEndian.Uint64(b[12:])), binary.BigEndian.Uint64(b[20:]); n != slots || c != cursor || e != end {
		return nil, fmt.Errorf("%w: wheel file has slots %d cursor %d end %d, checkpoint says %d %d %d", ErrCorrupt, n, c, e, slots, cursor, end)
	}
	heads := make([]uint64, slots)
	for i := range heads {
		h := binary.BigEndian.Uint64(b[hdr+8*i:])
		if h > end {
			return nil, fmt.Errorf("%w: wheel slot %d refers to record %d beyond %d", ErrCorrupt, i, h, end)
		}
		heads[i] = h
	}
	return heads, nil
}
