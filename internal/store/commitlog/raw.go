package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/message"
)

// Raw appends and reads: replication ships the master's log byte for byte
// (ReadRaw on the master, AppendRaw on a slave), so a slave's segments hold
// the same bytes at the same offsets, blank padding included.
//
// A chunk may end inside a record (or inside a segment's blank padding):
// the bytes go to the file as they come, and Written moves with them, but
// the log keeps apart the end of its last whole record (whole): Durable and
// Flushed never pass it, so the dispatcher, readers and the checkpoint only
// ever see whole records. After a crash with a partial record at the end
// recovery cuts it like any torn tail, and the slave fetches it again.
//
// AppendRaw checks every record as recovery does (message.Check, the record
// naming its own position) and the segment layout the writer produces (a
// record leaves room for the 8-byte blank before the segment end, a blank
// ends exactly at the segment end): a master whose SegmentBytes differ shows
// up at its first segment end as ErrSegmentMismatch.

// Errors of raw appends and reads.
var (
	// ErrBelowRetention: a raw read names bytes below the oldest segment,
	// which retention removed.
	ErrBelowRetention = errors.New("commitlog: offset below the oldest retained byte")
	// ErrSegmentMismatch: replicated bytes do not fit this log's segment
	// layout: the master's SegmentBytes differ from this log's.
	ErrSegmentMismatch = errors.New("commitlog: the replicated bytes do not fit this log's segments")
	// ErrBadRaw: replicated bytes are not records of this log's layout at
	// their offsets.
	ErrBadRaw = errors.New("commitlog: replicated bytes are not valid records")
	// ErrPartialTail: a message append on a log whose replicated tail ends
	// inside a record.
	ErrPartialTail = errors.New("commitlog: the log ends inside a replicated record")
	// ErrReplica: a local append on a log in replica mode (SetReplica), which
	// takes only its master's bytes.
	ErrReplica = errors.New("commitlog: the log is a replica and takes only its master's bytes")
)

// SetReplica turns replica mode on or off. In replica mode the log refuses
// every local append (ErrReplica), at admission and again in the single
// writer, so none that was admitted before can land between the
// replicated bytes; raw appends go on. A slave's log is a replica; a
// promoted one turns it off before it takes writes.
func (l *Log) SetReplica(on bool) { l.replica.Store(on) }

// rawState is the writer's bookkeeping of a replicated tail (wmu).
type rawState struct {
	// carry holds the bytes of a record cut at the end of the last raw
	// append, from whole on (at most MaxRecordBytes).
	carry []byte
	// blankEnd, when not 0, is the segment end the blank that starts at
	// whole reaches; its bytes after the header are still coming.
	blankEnd int64
}

// writtenSignal wakes WaitWritten callers when Written moves.
type writtenSignal struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiting atomic.Bool
}

// grew wakes the waiters of WaitWritten. Called after written moves.
func (l *Log) grew() {
	if !l.wsig.waiting.Load() {
		return
	}
	l.wsig.mu.Lock()
	if l.wsig.ch != nil {
		close(l.wsig.ch)
		l.wsig.ch = nil
	}
	l.wsig.waiting.Store(false)
	l.wsig.mu.Unlock()
}

// WaitWritten returns once Written() > off, or with ctx's error, or
// ErrClosed once the log closes. It is the long poll of a replication
// fetch that has nothing to send: it does not poll.
func (l *Log) WaitWritten(ctx context.Context, off int64) error {
	for {
		if l.written.Load() > off {
			return nil
		}
		l.wsig.mu.Lock()
		if l.wsig.ch == nil {
			l.wsig.ch = make(chan struct{})
		}
		ch := l.wsig.ch
		l.wsig.waiting.Store(true)
		l.wsig.mu.Unlock()
		// The writer stores written before it looks at waiting: either it
		// sees waiting, or this sees its end.
		if l.written.Load() > off {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.quit:
			return ErrClosed
		}
	}
}

// ReadRaw returns a copy of the log bytes [off, min(off+max, Written, the
// end of off's segment)): never past Written — a master ships bytes before
// its own fsync (replication.md §2.5), the commit point, not the shipping,
// decides what is acknowledged — and never across a segment. off ==
// Written gives no bytes and no error. An offset below the oldest segment
// is ErrBelowRetention; one past Written is ErrBadOffset. The bytes may end
// inside a record.
func (l *Log) ReadRaw(off int64, max int) ([]byte, error) {
	if max <= 0 {
		return nil, fmt.Errorf("commitlog: raw read of %d bytes", max)
	}
	n, err := l.rawLen(off, max)
	if err != nil || n == 0 {
		return nil, err
	}
	p := make([]byte, n)
	if err := l.readRaw(p, off); err != nil {
		return nil, err
	}
	return p, nil
}

// ReadRawInto is ReadRaw into p, at most len(p) bytes: it returns how many
// it read, so that a reader that sends the bytes before its next read
// (the master's fetch server) reuses one buffer.
func (l *Log) ReadRawInto(off int64, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, fmt.Errorf("commitlog: raw read of %d bytes", len(p))
	}
	n, err := l.rawLen(off, len(p))
	if err != nil || n == 0 {
		return 0, err
	}
	if err := l.readRaw(p[:n], off); err != nil {
		return 0, err
	}
	return n, nil
}

// rawLen is how many bytes a raw read of at most max bytes at off gets.
func (l *Log) rawLen(off int64, max int) (int, error) {
	w := l.written.Load()
	if off < l.MinOffset() {
		return 0, fmt.Errorf("%w: %d is below %d", ErrBelowRetention, off, l.MinOffset())
	}
	if off > w {
		return 0, fmt.Errorf("%w: %d is past the written end %d", ErrBadOffset, off, w)
	}
	return int(min(w, off+int64(max), l.SegmentStart(off)+l.opts.SegmentBytes) - off), nil
}

func (l *Log) readRaw(p []byte, off int64) error {
	if err := l.ReadAt(p, off); err != nil {
		if off < l.MinOffset() {
			// Retention removed the segment meanwhile.
			return fmt.Errorf("%w: %d is below %d", ErrBelowRetention, off, l.MinOffset())
		}
		return err
	}
	return nil
}

// AppendRaw appends b, bytes of a master's log starting at off, byte for
// byte at the same offsets. off must be Written(), except that an empty
// log (no segment yet) may start at any segment start past its end: a
// fresh slave copies from its master's oldest retained byte. It goes through the
// writer like every append: under FlushSync it returns once b is durable,
// under FlushAsync once written. Bytes that are not records of this
// log's layout at their offsets are refused with nothing written
// (ErrBadRaw, ErrSegmentMismatch). b may end inside a record; the next
// AppendRaw continues it. b is not kept after AppendRaw returns.
func (l *Log) AppendRaw(off int64, b []byte) (Result, error) {
	if len(b) == 0 {
		if w := l.written.Load(); off != w {
			return Result{}, fmt.Errorf("%w: a raw append at %d, but the log ends at %d", ErrBadOffset, off, w)
		}
		return Result{Offset: off, End: off}, nil
	}
	if l.failed.Load() {
		return Result{}, ErrFailed
	}
	if l.busy.Load() {
		return Result{}, fmt.Errorf("%w: appends have waited over %v for the disk to sync", ErrBusy, l.opts.BusyAfter)
	}
	if l.noSpace.Load() != nil {
		if err := l.admitSpace(); err != nil {
			return Result{}, err
		}
	}
	r := &request{raw: b, rawOff: off, size: len(b), done: make(chan struct{}, 1)}
	r.self[0] = r
	if err := l.submitList(r.self[:]); err != nil {
		return Result{}, err
	}
	<-r.done
	return r.res, r.err
}

// AppendRawAsync is AppendRaw without the wait: cb is called once b is
// durable under FlushSync (written under FlushAsync), or with the error
// that refused it, from a log goroutine (or from AppendRawAsync itself when
// the log refuses it at once). Calls from one goroutine are written in the
// order they were made, so a slave can hand the writer its next chunk
// while the previous one's fsync runs. b must not be modified until cb
// runs; cb must not block.
func (l *Log) AppendRawAsync(off int64, b []byte, cb func(Result, error)) {
	if len(b) == 0 {
		cb(l.AppendRaw(off, b))
		return
	}
	if l.failed.Load() {
		cb(Result{}, ErrFailed)
		return
	}
	if l.busy.Load() {
		cb(Result{}, fmt.Errorf("%w: appends have waited over %v for the disk to sync", ErrBusy, l.opts.BusyAfter))
		return
	}
	if l.noSpace.Load() != nil {
		if err := l.admitSpace(); err != nil {
			cb(Result{}, err)
			return
		}
	}
	r := &request{raw: b, rawOff: off, size: len(b), cb: cb}
	r.self[0] = r
	if err := l.submitList(r.self[:]); err != nil {
		cb(Result{}, err)
	}
}

// writeRaw writes one raw request. It reports whether it handed a sync job
// to the flusher. Writer (wmu).
func (l *Log) writeRaw(r *request) (synced bool) {
	if l.failed.Load() {
		l.finish(r, Result{}, ErrFailed)
		return
	}
	if l.probe.Load() {
		l.retryForProbe()
	}
	start := l.written.Load()
	if r.rawOff != start && l.canStartAt(r.rawOff) {
		l.startAt(r.rawOff)
		start = r.rawOff
	}
	if r.rawOff != start {
		l.finish(r, Result{}, fmt.Errorf("%w: a raw append at %d, but the log ends at %d", ErrBadOffset, r.rawOff, start))
		return
	}
	next, whole, err := l.scanRaw(start, r.raw)
	if err != nil {
		l.finish(r, Result{}, err)
		return
	}
	tail := l.tail
	pos := start
	var rolled []*segment
	for b := r.raw; len(b) > 0; {
		if l.tail == nil {
			if len(l.spare) == 0 {
				if err := l.prepareSegment(); err != nil {
					l.unwrite(start, pos, tail)
					l.finish(r, Result{}, err)
					return
				}
			}
			if err := l.activate(pos); err != nil {
				l.unwrite(start, pos, tail)
				l.finish(r, Result{}, err)
				return
			}
		}
		segEnd := l.tail.start + l.opts.SegmentBytes
		n := min(int64(len(b)), segEnd-pos)
		l.buf = append(l.buf[:0], b[:n]...)
		if k, err := l.flushBuf(pos); err != nil {
			l.unwrite(start, pos+int64(k), tail)
			l.finish(r, Result{}, err)
			return
		}
		pos += n
		b = b[n:]
		if pos == segEnd {
			rolled = append(rolled, l.tail)
			l.tail = nil
		}
	}
	if l.opts.FlushMode == FlushAsync && len(rolled) > 0 {
		l.syncSegments(rolled)
	}
	l.raw = next
	l.followQueueOffsets()
	l.written.Store(pos)
	l.whole.Store(whole)
	l.grew()
	l.kickFill()
	res := Result{Offset: start, End: pos}
	if l.opts.FlushMode == FlushAsync {
		l.finish(r, res, nil)
		l.opts.OnDurable(l.Durable())
		l.prepareAhead(pos)
		return
	}
	r.res = res
	buf := reqSlicePool.Get().(*[]*request)
	reqs := append((*buf)[:0], r)
	l.waitMu.Lock()
	r.since = l.opts.Clock.Now()
	l.waiting[r] = struct{}{}
	l.waitMu.Unlock()
	l.syncc <- syncJob{end: pos, reqs: reqs, reqsBuf: buf, segs: rolled, tail: l.tail}
	if l.tail != nil {
		l.prepareAhead(pos)
	}
	return true
}

// canStartAt reports whether an empty log may start at off instead of its
// end: a fresh slave copies its master's log from the master's oldest byte,
// a segment start. Writer (wmu).
func (l *Log) canStartAt(off int64) bool {
	l.segMu.RLock()
	empty := len(l.segments) == 0
	l.segMu.RUnlock()
	return empty && l.tail == nil && off > l.written.Load() && off%l.opts.SegmentBytes == 0 &&
		l.whole.Load() == l.written.Load() && len(l.raw.carry) == 0 && l.raw.blankEnd == 0
}

// startAt makes the empty log start at off. Writer (wmu).
func (l *Log) startAt(off int64) {
	l.removeSpare()
	l.log.Info("the log starts at the master's oldest byte", "offset", off)
	l.written.Store(off)
	l.flushed.Store(off)
	l.whole.Store(off)
}

// followQueueOffsets moves the writer's next queue offsets past the
// records scanRaw found whole (rawDone), so that message appends after
// replicated records (a slave that becomes master) go on from the master's
// queue offsets. Writer (wmu).
func (l *Log) followQueueOffsets() {
	for _, d := range l.rawDone {
		if l.queueOffsets[d.key] < d.next {
			l.queueOffsets[d.key] = d.next
		}
	}
	clear(l.rawDone)
	l.rawDone = l.rawDone[:0]
}

// rawRecordDone is a record a raw append completed: its queue and the
// queue offset after it.
type rawRecordDone struct {
	key  queueKey
	next int64
}

// doneRecord notes the whole record rec for followQueueOffsets. Writer.
func (l *Log) doneRecord(rec message.Record) {
	l.rawDone = append(l.rawDone, rawRecordDone{key: queueKey{string(rec.Topic()), rec.QueueID()}, next: rec.QueueOffset() + 1})
}

// scanRaw checks b, the bytes at start, against the records already
// written, and returns the raw state after them and the end of their last
// whole record. It changes nothing. Writer (wmu).
func (l *Log) scanRaw(start int64, b []byte) (rawState, int64, error) {
	st := l.raw
	whole := l.whole.Load()
	clear(l.rawDone)
	l.rawDone = l.rawDone[:0]
	at := start // offset of b[i]
	i := 0
	for {
		if st.blankEnd > 0 {
			k := min(int64(len(b)-i), st.blankEnd-at)
			i += int(k)
			at += k
			if at < st.blankEnd {
				return st, whole, nil
			}
			whole, st.blankEnd = st.blankEnd, 0
		}
		if len(st.carry) > 0 {
			// Complete the cut record: its header first, then the rest.
			fill := func(need int) bool {
				k := min(need-len(st.carry), len(b)-i)
				if k > 0 {
					st.carry = append(st.carry[:len(st.carry):len(st.carry)], b[i:i+k]...)
					i += k
					at += int64(k)
				}
				return len(st.carry) >= need
			}
			if !fill(8) {
				return st, whole, nil
			}
			kind, n, err := l.checkRaw(st.carry, whole)
			if err != nil {
				return st, whole, err
			}
			if kind == rawBlank {
				st.blankEnd = whole + int64(n)
				st.carry = nil
				continue
			}
			if kind == rawShort {
				if !fill(int(int32(binary.BigEndian.Uint32(st.carry)))) {
					// Still cut: refuse now what the bytes in already
					// show to be damaged.
					_, _, err := l.checkRaw(st.carry, whole)
					return st, whole, err
				}
				if kind, n, err = l.checkRaw(st.carry, whole); err != nil {
					return st, whole, err
				}
				if kind != rawRecord {
					return st, whole, fmt.Errorf("%w: the record at %d does not check whole", ErrBadRaw, whole)
				}
			}
			l.doneRecord(message.Record(st.carry[:n]))
			whole += int64(n)
			st.carry = nil
		}
		if i == len(b) {
			return st, whole, nil
		}
		kind, n, err := l.checkRaw(b[i:], at)
		switch {
		case err != nil:
			return st, whole, err
		case kind == rawShort:
			st.carry = append([]byte(nil), b[i:]...)
			return st, whole, nil
		case kind == rawBlank:
			st.blankEnd = at + int64(n)
			continue
		}
		l.doneRecord(message.Record(b[i : i+n]))
		i += n
		at += int64(n)
		whole = at
	}
}

const (
	rawRecord = iota
	rawBlank
	rawShort
)

// checkRaw checks the record at the start of p, which the log would hold
// at off: a whole record (rawRecord and its size), a blank (rawBlank and
// its size, whose bytes after the header may be missing), or the start of
// a record whose rest is missing (rawShort).
func (l *Log) checkRaw(p []byte, off int64) (int, int, error) {
	segEnd := l.SegmentStart(off) + l.opts.SegmentBytes
	if len(p) < 8 {
		return rawShort, 0, nil
	}
	total := int64(int32(binary.BigEndian.Uint32(p)))
	if binary.BigEndian.Uint32(p[4:]) == message.BlankMagic {
		if total < 8 || off+total != segEnd {
			return 0, 0, fmt.Errorf("%w: a segment's blank padding at %d ends at %d, but this log's segment ends at %d (SegmentBytes %d): give every broker of the group the same --segment-bytes", ErrSegmentMismatch, off, off+total, segEnd, l.opts.SegmentBytes)
		}
		return rawBlank, int(total), nil
	}
	if total > int64(l.opts.MaxRecordBytes) {
		return 0, 0, fmt.Errorf("%w: the record at %d is %d bytes, over MaxRecordBytes %d", ErrBadRaw, off, total, l.opts.MaxRecordBytes)
	}
	if off+total+8 > segEnd {
		return 0, 0, fmt.Errorf("%w: the record at %d of %d bytes reaches past this log's segment end %d (SegmentBytes %d) less the blank header: give every broker of the group the same --segment-bytes", ErrSegmentMismatch, off, total, segEnd, l.opts.SegmentBytes)
	}
	n, err := message.Check(p)
	if errors.Is(err, message.ErrShort) {
		return rawShort, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: at %d: %w", ErrBadRaw, off, err)
	}
	if got := message.Record(p[:n]).PhysicalOffset(); got != off {
		return 0, 0, fmt.Errorf("%w: the record at %d names offset %d", ErrBadRaw, off, got)
	}
	return rawRecord, n, nil
}

// ForgetQueueOffsets drops the next queue offsets the writer has learnt
// (from appends and raw appends) since Open: the next append to each queue
// asks Options.NextQueueOffset again. A slave turning master calls it so
// that its queues go on from what its store holds, not from memory.
func (l *Log) ForgetQueueOffsets() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	clear(l.queueOffsets)
}
