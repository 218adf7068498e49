package commitlog

import (
	"fmt"
	"time"
)

// wake sends a token on ch unless one is waiting there already; a nil ch
// (a goroutine the options did not start) takes nothing.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (l *Log) tick() { wake(l.kick) }

// segmentBefore returns, with a reference, the segment holding the byte
// before end (the segment to sync for the bytes below end, those before it
// being synced when the writer rolled past them), or nil. Flusher side.
func (l *Log) segmentBefore(end int64) *segment {
	if end <= 0 {
		return nil
	}
	s, err := l.acquire(end - 1)
	if err != nil {
		return nil
	}
	return s
}

// syncSegments syncs segments that the writer has rolled past.
func (l *Log) syncSegments(segs []*segment) {
	for _, s := range segs {
		if err := s.f.Sync(); err != nil {
			l.markFailed(fmt.Errorf("sync segment %s: %w", s.name, err))
		}
	}
}

func (l *Log) markFailed(err error) {
	if l.failed.CompareAndSwap(false, true) {
		l.log.Error("disk sync failed; refusing writes until restart", "err", err)
	}
}

// syncTo makes [.., end) durable by syncing tail (segments before it were
// synced by syncSegments) and answers reqs.
func (l *Log) syncTo(end int64, reqs []*request, tail *segment) {
	// segmentBefore took a reference for async; the sync path passes the
	// writer's tail, which stays listed while the writer runs.
	var err error
	if tail != nil {
		if l.opts.FlushMode == FlushAsync {
			defer tail.release()
		}
		var t0 time.Time
		if l.opts.OnGroupCommit != nil {
			t0 = l.opts.Clock.Now()
		}
		if e := tail.f.Sync(); e != nil {
			l.markFailed(fmt.Errorf("sync segment %s: %w", tail.name, e))
		}
		if f := l.opts.OnGroupCommit; f != nil {
			f(GroupCommit{Messages: countMessages(reqs), Synced: true, Sync: l.opts.Clock.Now().Sub(t0)})
		}
	}
	if l.failed.Load() {
		err = ErrFailed
	} else if end > l.flushed.Load() {
		l.flushed.Store(end)
		if l.opts.FlushMode == FlushSync {
			l.opts.OnDurable(end)
		}
		wake(l.dropKick)
	}
	if len(reqs) > 0 {
		l.waitMu.Lock()
		for _, r := range reqs {
			delete(l.waiting, r)
		}
		l.waitMu.Unlock()
	}
	for _, r := range reqs {
		l.finish(r, r.res, err)
	}
}

// armSweeper schedules the check that answers appends whose sync takes
// longer than SyncFlushTimeout.
func (l *Log) armSweeper() {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	if l.stopping.Load() {
		return
	}
	l.sweeper = l.opts.Clock.AfterFunc(l.opts.SyncFlushTimeout/4, l.sweep)
}

func (l *Log) sweep() {
	now := l.opts.Clock.Now()
	timeout := fmt.Errorf("%w: not on disk after %v", ErrFlushTimeout, l.opts.SyncFlushTimeout)
	// Answer under waitMu: syncTo removes a request from waiting under the
	// same lock before answering it, so a request is answered here only if
	// the flusher has not answered it — and not after its pooled object was
	// reused for another append.
	l.waitMu.Lock()
	busy := false
	for r := range l.waiting {
		age := now.Sub(r.since)
		if age >= l.opts.SyncFlushTimeout {
			delete(l.waiting, r)
			l.finish(r, r.res, timeout)
		}
		busy = busy || age >= l.opts.BusyAfter
	}
	l.waitMu.Unlock()
	if l.busy.Swap(busy) != busy {
		if busy {
			l.log.Warn("the disk is not keeping up: refusing appends as busy", "waited_over", l.opts.BusyAfter)
		} else {
			l.log.Info("the disk caught up: accepting appends again")
		}
	}
	l.armSweeper()
}

// Close stops accepting appends, writes and syncs what was submitted,
// answers every waiter and closes the files. Idempotent.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.closeMu.Lock()
		// No Appender is half-way through a write (it holds closeMu), none
		// can start one later.
		l.closed = true
		l.closeMu.Unlock()

		l.waitMu.Lock()
		l.stopping.Store(true)
		if l.sweeper != nil {
			l.sweeper.Stop()
		}
		l.waitMu.Unlock()
		close(l.quit)
		l.wg.Wait()
		if err := l.SyncRewrites(); err != nil {
			l.markFailed(err)
		}
		l.wmu.Lock()
		l.removeSpare()
		l.wmu.Unlock()
		l.segMu.Lock()
		l.closeSegments()
		l.segMu.Unlock()
	})
	if l.failed.Load() {
		return ErrFailed
	}
	return nil
}

// IsFailed reports whether a sync has failed.
func (l *Log) IsFailed() bool { return l.failed.Load() }

// countMessages is the number of messages of reqs.
func countMessages(reqs []*request) int {
	n := 0
	for _, r := range reqs {
		n += len(r.msgs)
	}
	return n
}
