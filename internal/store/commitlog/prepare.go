package commitlog

import (
	"encoding/binary"
	"fmt"
	"path"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

// Segments are prepared (created, preallocated, their directory entry
// synced) before the writer needs them, and a batch is written only once
// every segment it will roll into exists: a roll-over itself does no I/O
// that can fail for lack of space. So a full disk never leaves half a batch
// in the log, and its queue offsets are never handed out twice.
//
// The writer prepares the segment after the tail once the tail is three
// quarters full (prepareMark). When that fails, appends are refused at
// admission (check) with the cause, which wraps vfs.ErrNoSpace on a full
// disk, until a retry prepares the segment: once every spaceRetry an
// append is admitted as a probe (with those that come while it waits), and
// the writer tries again before it writes them (admitSpace). Appends
// admitted before the failure are still written while they fit the tail; a
// batch that would need the missing segment is refused from its first
// request that needs it, with nothing of those requests written.
//
// A prepared segment is not listed in segments until the writer rolls into
// it: readers, retention and the flusher never see it. Close removes it; one
// left on disk by a crash holds only zeros, and recovery removes it (or,
// when the log ended at a segment end, takes it as the new tail).

// spaceRetry is how often a refused append retries preparing the next
// segment.
const spaceRetry = time.Second

// prepareMark is the log offset past which the writer prepares the segment
// after the one that starts at tailStart.
func (l *Log) prepareMark(tailStart int64) int64 {
	return tailStart + l.opts.SegmentBytes - l.opts.SegmentBytes/4
}

// nextSegStart is the start of the next segment to prepare. Writer (wmu).
func (l *Log) nextSegStart() int64 {
	if n := len(l.spare); n > 0 {
		return l.spare[n-1].start + l.opts.SegmentBytes
	}
	if l.tail != nil {
		return l.tail.start + l.opts.SegmentBytes
	}
	// Without a tail the log ends at a segment start.
	return l.SegmentStart(l.written.Load())
}

// prepareSegment creates the segment after the prepared ones (or after the
// tail). On failure appends are refused until a retry succeeds. Writer
// (wmu).
func (l *Log) prepareSegment() error {
	s, err := l.createSegment(l.nextSegStart())
	if err != nil {
		l.refuseForSpace(err)
		return err
	}
	l.spare = append(l.spare, s)
	l.acceptAgain()
	return nil
}

// acceptAgain ends a refusal for space (a segment is prepared). Writer
// (wmu).
func (l *Log) acceptAgain() {
	l.probe.Store(false)
	if l.noSpace.Swap(nil) != nil {
		l.log.Info("the next commit-log segment is prepared; accepting appends again")
	}
}

// prepareAhead prepares the next segment when the tail is past its mark and
// none is prepared. While appends are refused for space it leaves the
// retries to probes (retryForProbe). Writer (wmu), after a batch is handed
// on.
func (l *Log) prepareAhead(pos int64) {
	if l.noSpace.Load() != nil || len(l.spare) > 0 || l.tail == nil || pos < l.prepareMark(l.tail.start) {
		return
	}
	l.prepareSegment()
}

// retryForProbe tries again to prepare the next segment for the probe
// append admitSpace let through, before the batch that holds it is
// written, so that appends are admitted again by the time the probe is
// answered. Writer (wmu).
func (l *Log) retryForProbe() {
	l.probe.Store(false)
	switch {
	case l.noSpace.Load() == nil:
	case len(l.spare) > 0:
		l.acceptAgain()
	default:
		l.prepareSegment()
	}
}

// refuseForSpace makes appends fail at admission with err until the next
// segment is prepared.
func (l *Log) refuseForSpace(err error) {
	e := fmt.Errorf("%w (appends are refused until the next segment can be made; free space on the disk)", err)
	if l.noSpace.Swap(&e) == nil {
		l.log.Error("cannot prepare the next commit-log segment; refusing appends", "err", err, "retry_every", spaceRetry)
	}
	l.spaceRetryAt.Store(l.opts.Clock.Now().Add(spaceRetry).UnixNano())
	l.probe.Store(false)
}

// admitSpace is the admission check for a log that could not prepare its
// next segment: it fails at once, except that once per spaceRetry it admits
// an append as a probe, and with it every append until the writer has
// tried again. Before the writer writes the batch that holds the probe it
// tries again to prepare the segment (retryForProbe); each request is then
// written whole, or refused whole when it needs the segment that could not
// be made, and appends are admitted again once the segment is made.
func (l *Log) admitSpace() error {
	p := l.noSpace.Load()
	if p == nil || l.probe.Load() {
		// While a probe waits for the writer, appends go with it: the
		// writer tries again before it writes them.
		return nil
	}
	now := l.opts.Clock.Now()
	at := l.spaceRetryAt.Load()
	if now.UnixNano() < at || !l.spaceRetryAt.CompareAndSwap(at, now.Add(spaceRetry).UnixNano()) {
		return *p
	}
	l.probe.Store(true)
	return nil
}

// reserveSegments makes sure that every segment batch will roll into, from
// the log end pos, is prepared before anything of it is written. It returns
// how many leading requests can be written: all, or those before the first
// request that needs a segment that could not be prepared (and the error).
// Writer (wmu).
func (l *Log) reserveSegments(batch []*request, pos int64) (int, error) {
	if l.tail != nil {
		bytes := int64(0)
		for _, r := range batch {
			bytes += int64(r.size)
		}
		if pos+bytes+8 <= l.tail.start+l.opts.SegmentBytes {
			return len(batch), nil // no roll-over: the common case
		}
	}
	used := 0
	need := l.tail == nil
	for i, r := range batch {
		for _, m := range r.msgs {
			n := int64(m.EncodedLen())
			if segEnd := l.SegmentStart(pos) + l.opts.SegmentBytes; pos+n+8 > segEnd {
				pos, need = segEnd, true
			}
			if need {
				if used == len(l.spare) {
					if err := l.prepareSegment(); err != nil {
						return i, err
					}
				}
				used++
				need = false
			}
			pos += n
		}
	}
	return len(batch), nil
}

// activate makes the first prepared segment, which must start at start, the
// tail. Writer (wmu).
func (l *Log) activate(start int64) error {
	if len(l.spare) == 0 || l.spare[0].start != start {
		return fmt.Errorf("commitlog: no prepared segment at %d", start)
	}
	s := l.spare[0]
	copy(l.spare, l.spare[1:])
	l.spare[len(l.spare)-1] = nil
	l.spare = l.spare[:len(l.spare)-1]
	l.segMu.Lock()
	l.segments = append(l.segments, s)
	l.segMu.Unlock()
	l.tail = s
	l.fillInPlace(s)
	return nil
}

// unwrite undoes a batch that failed after writing part of itself: it
// zeroes log range [start, end), makes the zeros durable, and makes tail the
// tail again, putting the segments the batch rolled into back among the
// prepared ones. Nothing of the batch was visible: the written offset moves
// only once the whole batch is written. When the zeros cannot be written or
// synced, what is on disk is unknown and the log fails. Writer (wmu).
func (l *Log) unwrite(start, end int64, tail *segment) {
	l.segMu.Lock()
	var back []*segment
	for n := len(l.segments); n > 0 && l.segments[n-1] != tail && l.segments[n-1].start >= l.SegmentStart(start); n = len(l.segments) {
		back = append(back, l.segments[n-1])
		l.segments[n-1] = nil
		l.segments = l.segments[:n-1]
	}
	l.segMu.Unlock()
	byStart := func(off int64) *segment {
		if tail != nil && tail.start == l.SegmentStart(off) {
			return tail
		}
		for _, s := range back {
			if s.start == l.SegmentStart(off) {
				return s
			}
		}
		return nil
	}
	for p := start; p < end; {
		segEnd := l.SegmentStart(p) + l.opts.SegmentBytes
		to := min(end, segEnd)
		s := byStart(p)
		if s != nil {
			// Nothing was written past the file's end.
			if size, err := s.f.Size(); err == nil {
				to = min(to, max(p, s.start+size))
			}
		}
		if s != nil && to > p {
			zero := make([]byte, to-p)
			if _, err := s.f.WriteAt(zero, p-s.start); err != nil {
				l.markFailed(fmt.Errorf("zero the records of a failed write in segment %s: %w", s.name, err))
			} else if err := s.f.Sync(); err != nil {
				l.markFailed(fmt.Errorf("sync segment %s: %w", s.name, err))
			}
		}
		p = segEnd
	}
	// back is newest first.
	for _, s := range back {
		l.spare = append([]*segment{s}, l.spare...)
	}
	l.tail = tail
	l.fillInPlace(tail)
}

// createSegment creates and preallocates the segment that starts at start
// and makes its directory entry durable.
func (l *Log) createSegment(start int64) (*segment, error) {
	name := SegmentName(start)
	p := path.Join(l.dir, name)
	f, err := l.fs.Create(p)
	if err != nil {
		return nil, fmt.Errorf("commitlog: create segment %s: %w", name, err)
	}
	if err := f.Preallocate(l.opts.SegmentBytes); err != nil {
		f.Close()
		l.fs.Remove(p)
		return nil, fmt.Errorf("commitlog: preallocate segment %s: %w", name, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		f.Close()
		l.fs.Remove(p)
		return nil, fmt.Errorf("commitlog: sync dir for segment %s: %w", name, err)
	}
	s := &segment{start: start, f: f, name: name}
	s.refs.Store(1)
	return s, nil
}

// removeSpare closes and removes the prepared segments (at Close: a clean
// shutdown leaves none for recovery to cut). Writer (wmu), or Close.
func (l *Log) removeSpare() {
	for _, s := range l.spare {
		s.release()
		if err := l.fs.Remove(path.Join(l.dir, s.name)); err != nil {
			l.log.Warn("could not remove a prepared segment; the next open removes it", "segment", s.name, "err", err)
		}
	}
	if len(l.spare) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			l.log.Warn("could not sync the log directory after removing the prepared segments", "err", err)
		}
	}
	clear(l.spare)
	l.spare = l.spare[:0]
}

// queueOffsetField is where a record keeps its queue offset.
const queueOffsetField = 20

// RewriteQueueOffset sets the queue offset of record r, which the log holds
// at r.PhysicalOffset(), to q: in r and in the log. Recovery uses it for a
// record that repeats a queue offset another record already has, which a
// roll-over that failed before roll-overs were made atomic left behind.
// The change is durable after SyncRewrites.
func (l *Log) RewriteQueueOffset(r message.Record, q int64) error {
	off := r.PhysicalOffset()
	if len(r) < queueOffsetField+8 || off < 0 || off+int64(len(r)) > l.written.Load() {
		return fmt.Errorf("%w: rewrite of the record at %d", ErrBadOffset, off)
	}
	s, err := l.acquire(off)
	if err != nil {
		return err
	}
	defer s.release()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(q))
	if _, err := s.f.WriteAt(b[:], off-s.start+queueOffsetField); err != nil {
		return fmt.Errorf("commitlog: rewrite the queue offset at %d: %w", off, err)
	}
	copy(r[queueOffsetField:], b[:])
	l.rewriteMu.Lock()
	if l.rewritten == nil {
		l.rewritten = make(map[*segment]struct{})
	}
	if _, ok := l.rewritten[s]; !ok {
		s.refs.Add(1)
		l.rewritten[s] = struct{}{}
	}
	l.rewriteMu.Unlock()
	return nil
}

// SyncRewrites makes the changes of RewriteQueueOffset durable.
func (l *Log) SyncRewrites() error {
	l.rewriteMu.Lock()
	defer l.rewriteMu.Unlock()
	for s := range l.rewritten {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("commitlog: sync segment %s after rewriting queue offsets: %w", s.name, err)
		}
		delete(l.rewritten, s)
		s.release()
	}
	return nil
}
