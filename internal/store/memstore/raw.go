package memstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// Replication on the twin, as on the file store (store.Store's AppendRaw,
// ReadRaw, WaitWritten and commit point): the twin's log has no segments,
// so it ships and takes records back to back, and refuses a file store's
// segment padding (store.ErrSegmentMismatch). AppendRaw decodes the bytes
// into records; a record cut at the end of one call is completed by the
// next.

var _ store.Replica = (*Store)(nil)

// AppendRaw appends b, bytes of the master's log from off, as records at
// the same offsets with the master's queue offsets. off must be Written(),
// except on an empty store, which may start at any offset (a fresh slave
// copies from its master's oldest byte). Nothing of b is kept when it is
// refused.
func (s *Store) AppendRaw(off int64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	d := s.d
	written := d.end + int64(len(d.carry))
	if off != written && len(d.log) == 0 && len(d.carry) == 0 && d.end == d.logMin && off > written {
		d.end, d.logMin, d.visEnd = off, off, off
		d.commitPoint = max(d.commitPoint, off)
		written = off
	}
	if off != written {
		return fmt.Errorf("%w: a raw append at %d, but the log ends at %d", store.ErrBadOffset, off, written)
	}
	if len(b) == 0 {
		return nil
	}
	buf := b
	if len(d.carry) > 0 {
		buf = append(slices.Clip(d.carry), b...)
	}
	var recs []logRecord
	pos := d.end
	i := 0
	for i < len(buf) {
		p := buf[i:]
		if len(p) >= 8 {
			if binary.BigEndian.Uint32(p[4:]) == message.BlankMagic {
				return fmt.Errorf("%w: the in-memory store has no segments and cannot hold the blank padding at %d", store.ErrSegmentMismatch, pos)
			}
			if total := int32(binary.BigEndian.Uint32(p)); int(total) > s.cfg.MaxMessageBytes {
				return fmt.Errorf("%w: the record at %d is %d bytes, over MaxMessageBytes %d", store.ErrBadRaw, pos, total, s.cfg.MaxMessageBytes)
			}
		}
		n, err := message.Check(p)
		if errors.Is(err, message.ErrShort) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: at %d: %w", store.ErrBadRaw, pos, err)
		}
		rec := message.Record(slices.Clone(p[:n]))
		if rec.PhysicalOffset() != pos {
			return fmt.Errorf("%w: the record at %d names offset %d", store.ErrBadRaw, pos, rec.PhysicalOffset())
		}
		recs = append(recs, logRecord{off: pos, rec: rec})
		pos += int64(n)
		i += n
	}
	for _, r := range recs {
		d.log = append(d.log, r)
		d.next[queueKey{string(r.rec.Topic()), r.rec.QueueID()}] = r.rec.QueueOffset() + 1
	}
	d.end = pos
	d.carry = slices.Clone(buf[i:])
	if len(d.carry) == 0 {
		d.carry = nil
	}
	s.advance()
	s.grew()
	return nil
}

// ReadRaw returns a copy of the log bytes [off, min(off+limit, Written())),
// records back to back (the twin has no segments); off == Written() gives
// none, an offset below CommitLogMinOffset is store.ErrOffsetOutOfRange.
func (s *Store) ReadRaw(off int64, limit int) ([]byte, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("memstore: raw read of %d bytes", limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.d
	written := d.end + int64(len(d.carry))
	switch {
	case off < d.logMin:
		return nil, fmt.Errorf("%w: %d is below %d", store.ErrOffsetOutOfRange, off, d.logMin)
	case off > written:
		return nil, fmt.Errorf("%w: %d is past the written end %d", store.ErrBadOffset, off, written)
	}
	out := make([]byte, 0, min(int64(limit), written-off))
	i := d.firstAt(off + 1)
	if i > 0 {
		i-- // the record that holds off
	}
	for ; i < len(d.log) && len(out) < cap(out); i++ {
		r := d.log[i]
		if r.off+int64(len(r.rec)) <= off {
			continue
		}
		from := max(0, off-r.off)
		out = append(out, r.rec[from:min(int64(len(r.rec)), from+int64(cap(out)-len(out)))]...)
	}
	if len(out) < cap(out) {
		from := max(0, off-d.end)
		out = append(out, d.carry[from:min(int64(len(d.carry)), from+int64(cap(out)-len(out)))]...)
	}
	return out, nil
}

// grew wakes WaitWritten. Holds mu.
func (s *Store) grew() {
	if s.grown != nil {
		close(s.grown)
		s.grown = nil
	}
}

// WaitWritten returns once Written() > off, or with ctx's error, or
// store.ErrClosed once the store closes.
func (s *Store) WaitWritten(ctx context.Context, off int64) error {
	for {
		s.mu.Lock()
		if s.d.end+int64(len(s.d.carry)) > off {
			s.mu.Unlock()
			return nil
		}
		if s.closed {
			s.mu.Unlock()
			return store.ErrClosed
		}
		if s.grown == nil {
			s.grown = make(chan struct{})
		}
		ch := s.grown
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return store.ErrClosed
		}
	}
}

// EnableCommitPoint bounds what is readable and told to listeners by the
// commit point, from now on; it starts at what was set, or at what is
// readable already.
func (s *Store) EnableCommitPoint() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.commitPoint = max(s.d.commitPoint, s.d.visEnd)
	s.d.cpEnabled = true
}

// SetCommitPoint moves the commit point to off; it never moves back.
func (s *Store) SetCommitPoint(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off <= s.d.commitPoint {
		return
	}
	s.d.commitPoint = off
	if !s.closed {
		s.advance()
	}
}

// CommitPoint is the highest offset SetCommitPoint was given (or where
// EnableCommitPoint started it).
func (s *Store) CommitPoint() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.d.commitPoint
}

// CommitPointEnabled reports whether the commit point bounds reads.
func (s *Store) CommitPointEnabled() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.d.cpEnabled
}

// AddResetListener registers fn, called after every ResetAt that
// succeeded with the offset the log now starts at, on ResetAt's goroutine.
func (s *Store) AddResetListener(fn func(start int64)) {
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	s.resetFns = append(s.resetFns, fn)
}

// ResetAt drops the log, the queues and the key index, and starts the log
// empty at start, as the file store's ResetAt does (the twin has no
// segments, so any start ≥ 0 will do): Written, Durable and
// CommitLogMinOffset are start, every queue is gone, the commit point is at
// least start. The metadata the broker keeps is not the twin's.
func (s *Store) ResetAt(start int64) error {
	if start < 0 {
		return fmt.Errorf("%w: %d", store.ErrResetOffset, start)
	}
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	d := s.d
	d.log = nil
	d.end, d.logMin, d.visEnd = start, start, start
	d.topics = make(map[string]map[int32]*queue)
	d.keys = make(map[string]map[string][]int64)
	d.next = make(map[queueKey]int64)
	d.carry = nil
	d.commitPoint = max(d.commitPoint, start)
	s.mu.Unlock()
	for _, fn := range s.resetFns {
		fn(start)
	}
	return nil
}

// TruncateTo drops the log above off, as the file store's TruncateTo does:
// off must be a record boundary or the end (store.ErrTruncateOffset), at
// or above the commit point — CommitPoint once enabled, else the end of
// what is readable (store.ErrBelowCommitPoint) — and the queues' next
// offsets are recomputed from the queues and the records kept above the
// commit point.
func (s *Store) TruncateTo(off int64) (store.Truncated, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.truncate(off, false)
}

// PrepareMaster drops a record cut at the end and recomputes the queues'
// next offsets from the log, as the file store's PrepareMaster does.
func (s *Store) PrepareMaster() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.truncate(s.d.end, true)
	if err != nil {
		return 0, err
	}
	return res.From, nil
}

// truncate cuts the log at off. Holds mu.
func (s *Store) truncate(off int64, prepare bool) (store.Truncated, error) {
	if s.closed {
		return store.Truncated{}, store.ErrClosed
	}
	d := s.d
	written := d.end + int64(len(d.carry))
	if off < 0 || off > written {
		return store.Truncated{}, fmt.Errorf("%w: %d is outside the log [%d, %d]", store.ErrTruncateOffset, off, d.logMin, written)
	}
	floor := d.visEnd
	if d.cpEnabled {
		floor = d.commitPoint
	}
	if off < floor {
		return store.Truncated{}, fmt.Errorf("%w: a cut at %d, the commit point is %d", store.ErrBelowCommitPoint, off, floor)
	}
	res := store.Truncated{From: off, Bytes: written - off}
	if off == written && !prepare {
		return res, nil
	}
	i := d.firstAt(off)
	if off < d.end && (i == len(d.log) || d.log[i].off != off) || off > d.end && off < written {
		return store.Truncated{}, fmt.Errorf("%w: %d lies inside a record", store.ErrTruncateOffset, off)
	}
	for _, r := range d.log[i:] {
		res.Messages++
		if len(res.MsgIDs) < store.MaxTruncatedIDs {
			res.MsgIDs = append(res.MsgIDs, store.TruncatedID(r.rec))
		}
	}
	d.log = d.log[:i:i]
	d.carry = nil
	if off < d.end {
		d.end = off
	}
	// The next offsets from the queues and the records kept above the
	// commit point, not from what puts and appends left in next.
	d.next = make(map[queueKey]int64)
	for j := d.firstAt(d.visEnd); j < len(d.log); j++ {
		r := d.log[j].rec
		d.next[queueKey{string(r.Topic()), r.QueueID()}] = r.QueueOffset() + 1
	}
	return res, nil
}
