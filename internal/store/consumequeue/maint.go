package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// Truncate drops every entry whose commit-log Offset is >= physEnd, for
// recovery after the commit log was cut at physEnd. Since offsets grow in
// append order, those entries are a suffix; it is found by binary search.
// MaxOffset becomes the logical offset of the first dropped entry (blanks in
// front of it stay), MinOffset is lowered to it if needed, and Last is
// recomputed. The cut is durable when Truncate returns nil: the file holding
// the cut point is truncated (and kept, even empty, so MaxOffset survives a
// restart) and synced, later files are removed and the directory synced.
//
// It must be called from the writer goroutine. Readers may run concurrently;
// a Read that overlaps it sees the queue either before or after the cut. On
// error the in-memory queue is already cut but the disk may not be; later
// Flushes fail with ErrFailed until the queue is reopened.
func (q *Queue) Truncate(physEnd int64) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.wmu.Lock()
	defer q.wmu.Unlock()
	q.maintMu.Lock()
	defer q.maintMu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.mu.RLock()
	start := q.startLocked()
	q.mu.RUnlock()
	top := q.max.Load()
	t, err := q.search(start, top, func(e Entry) bool { return !e.blank() && e.Offset >= physEnd })
	if err != nil {
		return err
	}
	if t == top {
		return nil
	}
	lastOff, last, hasLast, err := q.findLast(t)
	if err != nil {
		return err
	}

	var drop []*segment
	var tail *segment
	q.mu.Lock()
	q.gen.Add(1) // readers that overlap the cut read again
	q.storeRange(min(q.min.Load(), t), t)
	q.lastOff, q.last, q.hasLast = lastOff, last, hasLast
	if t < q.written {
		q.written = t
		keep := 0
		for keep < len(q.segs) && q.segs[keep].base <= t {
			keep++
		}
		drop = append(drop, q.segs[keep:]...)
		clear(q.segs[keep:])
		q.segs = q.segs[:keep]
	}
	if n := len(q.segs); n > 0 {
		tail = q.segs[n-1]
	}
	q.mu.Unlock()

	err = q.cutFiles(tail, drop)
	if err == nil && tail == nil && q.written > 0 {
		// No file is left, and only files carry MaxOffset across a restart:
		// leave an empty one where the queue ends (written is a file start
		// here: the queue was restarted there and nothing was written).
		err = q.createMarker()
	}
	if err != nil {
		q.failed = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return err
}

// cutFiles makes the files match the in-memory queue after Truncate: tail is
// cut to the written entries (a no-op unless entries were dropped from it or
// an earlier failed write left bytes behind) and drop is removed. Must hold
// wmu and maintMu.
func (q *Queue) cutFiles(tail *segment, drop []*segment) error {
	var err error
	if tail != nil {
		want := (q.written - tail.base) * EntrySize
		size, e := tail.f.Size()
		switch {
		case e != nil:
			err = fmt.Errorf("consumequeue: size of %s: %w", tail.path, e)
		case size != want:
			if e := tail.f.Truncate(want); e != nil {
				err = fmt.Errorf("consumequeue: truncate %s: %w", tail.path, e)
			} else if e := tail.f.Sync(); e != nil {
				err = fmt.Errorf("consumequeue: sync %s: %w", tail.path, e)
			} else {
				tail.dirty = false
			}
		}
	}
	for _, s := range drop {
		_ = s.unref() // the file is going away; a close error changes nothing
		if e := q.fsys.Remove(s.path); e != nil && !errors.Is(e, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("consumequeue: remove %s: %w", s.path, e)
		}
	}
	if len(drop) > 0 && err == nil {
		if e := q.fsys.SyncDir(q.dir); e != nil {
			err = fmt.Errorf("consumequeue: sync %s: %w", q.dir, e)
		}
	}
	return err
}

// createMarker creates the empty file of an empty queue whose files are all
// gone, durably. Must hold wmu and maintMu.
func (q *Queue) createMarker() error {
	base := q.fileOf(q.written)
	p := path.Join(q.dir, fileName(base))
	f, err := q.fsys.Create(p)
	if err != nil {
		return fmt.Errorf("consumequeue: create %s: %w", p, err)
	}
	q.mu.Lock()
	q.segs = append(q.segs, newSegment(base, p, f))
	q.mu.Unlock()
	if err := q.fsys.SyncDir(q.dir); err != nil {
		return fmt.Errorf("consumequeue: sync %s: %w", q.dir, err)
	}
	return nil
}

// search returns the first logical offset in [lo, hi) whose stored entry
// satisfies pred, or hi; pred must be false up to some point and true from
// there on.
func (q *Queue) search(lo, hi int64, pred func(Entry) bool) (int64, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.entryAt(mid)
		if err != nil {
			return 0, err
		}
		if pred(e) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// DeleteBefore is retention: given the commit log's new minimum offset
// physMin, it removes, from the front, every whole file all of whose entries
// end at or below physMin (Offset+Size <= physMin), stopping at the first
// file that does not qualify and never removing the file that holds the last
// entry, nor the last file created (so MaxOffset survives a restart, even
// when the last entry's file is not written yet). Then it raises MinOffset to the
// first entry with Offset >= physMin (binary search), or to MaxOffset when
// there is none. It returns the number of files removed; their removal is
// durable when it returns nil.
//
// Safe for concurrent use with the writer and with readers; Append is never
// blocked by its I/O. A reader already reading a removed file finishes
// normally (the file is closed after it).
func (q *Queue) DeleteBefore(physMin int64) (removed int, err error) {
	q.maintMu.Lock()
	defer q.maintMu.Unlock()
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return 0, ErrClosed
	}
	var cands []*segment
	if top := q.max.Load(); top > 0 {
		lastFile := q.fileOf(top - 1)
		for i, s := range q.segs {
			// The file of the last entry may still be only in the buffer:
			// then the last file on disk is what carries MaxOffset across
			// a crash, so it stays too.
			if s.base >= lastFile || i == len(q.segs)-1 {
				break
			}
			s.ref()
			cands = append(cands, s)
		}
	}
	q.mu.RUnlock()

	// The candidates precede the file of the last entry, so they are full
	// and written: their last entry is in the file.
	for _, s := range cands {
		var b [EntrySize]byte
		if _, e := s.f.ReadAt(b[:], (q.perFile-1)*EntrySize); e != nil {
			err = fmt.Errorf("consumequeue: read %s: %w", s.path, e)
			break
		}
		if last := getEntry(b[:]); !last.blank() && last.end() > physMin {
			break
		}
		if e := q.fsys.Remove(s.path); e != nil && !errors.Is(e, fs.ErrNotExist) {
			err = fmt.Errorf("consumequeue: remove %s: %w", s.path, e)
			break
		}
		removed++
	}
	for _, s := range cands {
		_ = s.unref()
	}
	if removed > 0 {
		q.mu.Lock()
		gone := append([]*segment(nil), q.segs[:removed]...)
		q.segs = append([]*segment(nil), q.segs[removed:]...)
		if start := q.startLocked(); q.min.Load() < start {
			q.min.Store(start)
		}
		q.mu.Unlock()
		for _, s := range gone {
			_ = s.unref()
		}
		if e := q.fsys.SyncDir(q.dir); e != nil && err == nil {
			err = fmt.Errorf("consumequeue: sync %s: %w", q.dir, e)
		}
	}
	if err != nil {
		return removed, err
	}

	q.mu.RLock()
	lo := max(q.startLocked(), q.min.Load())
	hi := q.max.Load()
	q.mu.RUnlock()
	newMin, err := q.search(lo, hi, func(e Entry) bool { return !e.blank() && e.Offset >= physMin })
	if err != nil {
		return removed, err
	}
	q.mu.Lock()
	if newMin > q.min.Load() {
		q.min.Store(newMin)
	}
	q.mu.Unlock()
	return removed, nil
}

// Search returns the first logical offset in [MinOffset, MaxOffset) whose
// record was stored at or after storeTimestamp, or MaxOffset when there is
// none. storeTime returns the store time of an entry's record (it reads the
// commit log); store times must not decrease along the queue. Its errors are
// returned wrapped. Safe for concurrent use; O(log n) reads and calls.
func (q *Queue) Search(storeTimestamp int64, storeTime func(e Entry) (int64, error)) (int64, error) {
	lo, hi := q.MinOffset(), q.MaxOffset()
	for lo < hi {
		mid := lo + (hi-lo)/2
		var a [1]Entry
		n, err := q.Read(mid, a[:])
		if errors.Is(err, ErrBelowMin) { // retention passed mid meanwhile
			lo = max(mid+1, q.MinOffset())
			hi = max(hi, lo)
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 { // cut by Truncate meanwhile
			hi = mid
			continue
		}
		ts, err := storeTime(a[0])
		if err != nil {
			return 0, fmt.Errorf("consumequeue: store time of entry %d (%v) in %s: %w", mid, a[0], q.dir, err)
		}
		if ts >= storeTimestamp {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}
