package timer

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Store is the disk-backed timer wheel. Add, Cancel, Applied, Pending,
// Checkpoint and Close are safe for concurrent use; due entries are passed to
// Options.Fire from the store's own goroutine.
type Store struct {
	fsys   vfs.FS
	dir    string
	opts   Options
	log    *slog.Logger
	clk    clock.Clock
	nslots int64

	mu sync.Mutex
	// Guarded by mu.
	wheel    []uint64 // head ref of the chain of each slot; 0 = empty
	cursor   int64    // next second whose slot is taken
	lateHead uint64   // chain of entries whose slot was already taken
	lateGen  uint32
	slotRun  *run   // the slot being fired (round cursor-1), or nil
	lateRuns []*run // late chains being fired, oldest first (at most maxLateRuns)
	next     int64  // src of the next Add/Cancel to apply
	pending  int64
	tl       *tlog
	dirty    bool // state changed since the last checkpoint capture
	failed   error
	closed   bool
	started  bool
	// The wheel file the last durable checkpoint names.
	hasSnap    bool
	snapEnd    uint64
	snapCursor int64

	applied atomic.Int64 // durable: the applied of the last checkpoint

	ckptMu sync.Mutex // one checkpoint at a time

	quit      chan struct{}
	wake      chan struct{} // kicks the firing goroutine
	settleReq chan chan struct{}
	ckptKick  chan struct{}
	wg        sync.WaitGroup
	ckptTimer clock.Timer // guarded by mu

	// Owned by the firing goroutine.
	timer    clock.Timer
	timerAt  int64
	timerGen uint64
	firedGen atomic.Uint64
	retry    time.Duration
	retryAt  int64
	retryNow atomic.Bool // Retry: drop the back-off
	reader   chainReader
}

// Open opens (or creates) the store in dir. It recovers the state of the last
// checkpoint; the caller then replays every Add and Cancel with
// src >= Applied() and calls Start, which begins firing.
func Open(fsys vfs.FS, dir string, opts Options) (*Store, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, fmt.Errorf("timer: create %s: %w", dir, err)
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("timer: list %s: %w", dir, err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			if err := fsys.Remove(path.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("timer: remove %s: %w", n, err)
			}
		}
	}
	nslots := int64(opts.Span / time.Second)
	now := opts.Clock.Now().UnixMilli()

	data, ok, err := vfs.ReadFile(fsys, path.Join(dir, checkpointName))
	if err != nil {
		return nil, err
	}
	var st ckptState
	fresh := !ok
	if fresh {
		// Nothing was ever checkpointed: files left by a crash before the
		// first checkpoint hold nothing the caller will not replay.
		c := floorDiv(now, 1000)
		st = ckptState{slots: uint32(nslots), per: uint32(opts.EntriesPerFile), cursor: c, lateGen: 1, snapCursor: c}
	} else if st, err = decodeCheckpoint(data); err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path.Join(dir, checkpointName))
	}
	if int64(st.slots) != nslots {
		return nil, fmt.Errorf("%w: Span %v (%d slots), the store in %s has %d slots (Span %v)",
			ErrIncompatible, opts.Span, nslots, dir, st.slots, time.Duration(st.slots)*time.Second)
	}

	wheel := make([]uint64, nslots)
	if st.hasSnap {
		p := path.Join(dir, wheelName(st.snapEnd))
		b, ok, err := vfs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: wheel file %s named by the checkpoint is missing", ErrCorrupt, p)
		}
		if wheel, err = decodeWheel(b, st.slots, st.snapCursor, st.snapEnd); err != nil {
			return nil, fmt.Errorf("%w (file %s)", err, p)
		}
	}
	// Wheel files other than the named one are older or were never named.
	for _, n := range names {
		if end, ok := parseWheelName(n); ok && (!st.hasSnap || end != st.snapEnd) {
			if err := fsys.Remove(path.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("timer: remove %s: %w", n, err)
			}
		}
	}
	tl, err := openLog(fsys, dir, &st, names)
	if err != nil {
		return nil, err
	}
	if err := replay(tl, wheel, st); err != nil {
		tl.close()
		return nil, err
	}

	s := &Store{
		fsys: fsys, dir: dir, opts: opts, log: opts.Logger.With("component", "timer"), clk: opts.Clock, nslots: nslots,
		wheel: wheel, cursor: st.cursor, lateHead: st.lateHead, lateGen: st.lateGen,
		next: st.applied, pending: st.pending, tl: tl,
		hasSnap: st.hasSnap, snapEnd: st.snapEnd, snapCursor: st.snapCursor,
		quit: make(chan struct{}), wake: make(chan struct{}, 1), settleReq: make(chan chan struct{}),
		ckptKick: make(chan struct{}, 1),
	}
	s.applied.Store(st.applied)
	if st.slotRun.present {
		s.slotRun = newRun(false, st.slotRun)
	}
	for _, lr := range st.lateRuns {
		s.lateRuns = append(s.lateRuns, newRun(true, lr))
	}
	s.reader.s = s
	if fresh {
		s.dirty = true
		if err := s.checkpoint(false); err != nil {
			tl.close()
			return nil, err
		}
	}
	s.log.Info("timer store opened", "dir", dir, "pending", st.pending, "applied", st.applied,
		"log_records", st.end, "log_files", len(tl.segs), "replayed", st.end-st.snapEnd)

	s.wg.Add(1)
	go s.checkpointLoop()
	s.mu.Lock()
	s.armCheckpointLocked()
	s.mu.Unlock()
	return s, nil
}

// Start begins firing. The caller calls it once it has replayed every Add
// and Cancel with src >= Applied() (and at once for a new store): firing
// before that could deliver a timer whose Cancel is still to be replayed.
// Until Start nothing fires; Add, Cancel and checkpoints work. Calling it
// again does nothing.
func (s *Store) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return nil
	}
	s.started = true
	s.wg.Add(1)
	go s.fireLoop()
	s.kick()
	return nil
}

// replay brings the wheel of the snapshot (taken at log end st.snapEnd and
// cursor st.snapCursor) up to the checkpoint: it reads the slot records
// appended since, in log order, and makes each the head of its slot unless
// the slot already holds a later round; then it empties the slots whose
// round was taken (round < cursor). Late records and records of runs are
// not wheel state: the checkpoint holds their heads.
func replay(tl *tlog, wheel []uint64, st ckptState) error {
	n := int64(len(wheel))
	rounds := make([]uint32, n) // the round of the chain each slot holds
	for i := range rounds {
		rounds[i] = uint32(st.snapCursor + mod(int64(i)-st.snapCursor, n))
	}
	buf := make([]byte, 4096*recordSize)
	for idx := st.snapEnd; idx < st.end; {
		seg := tl.segFor(idx)
		if seg == nil {
			// A file whose chains were all done, removed: skip to the next.
			next := st.end
			for _, s := range tl.segs {
				if s.start > idx {
					next = s.start
					break
				}
			}
			idx = next
			continue
		}
		want := min(uint64(len(buf)/recordSize), st.end-idx, seg.start+tl.per-idx)
		got, err := readRecords(seg, idx, buf[:want*recordSize])
		if err != nil {
			return err
		}
		if uint64(got) < want {
			return fmt.Errorf("%w: log file %s ends at record %d, the checkpoint has %d", ErrCorrupt, seg.name, idx+uint64(got), st.end)
		}
		for k := range got {
			r, err := decodeRecord(buf[k*recordSize:])
			if err != nil {
				return fmt.Errorf("%w (file %s, record %d)", err, seg.name, idx+uint64(k))
			}
			if r.late() {
				continue
			}
			i := mod(int64(r.chain), n)
			if r.chain >= rounds[i] {
				rounds[i] = r.chain
				wheel[i] = idx + uint64(k) + 1
			}
		}
		idx += uint64(got)
	}
	for i, r := range rounds {
		if int64(r) < st.cursor {
			wheel[i] = 0
		}
	}
	return nil
}

// Add schedules e. src is the caller's position of the timer record (strictly
// increasing); an Add or Cancel with a src below the last one applied is
// ignored, so replaying a little too much is harmless. An entry already due
// is fired promptly. Add only buffers a 48-byte record: it survives a crash
// once a checkpoint covers it (Applied() > src). It fails with ErrTooFar
// (naming the cap) for a DeliverAt beyond now + MaxDelay.
func (s *Store) Add(e Entry, src int64) error {
	now := s.clk.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if src < s.next {
		return nil
	}
	if limit := now + s.opts.MaxDelay.Milliseconds(); e.DeliverAt > limit {
		return fmt.Errorf("%w: deliver at %d is %v from now, the maximum delay is %v",
			ErrTooFar, e.DeliverAt, time.Duration(e.DeliverAt-now)*time.Millisecond, s.opts.MaxDelay)
	}
	r := record{at: e.DeliverAt, off: e.Offset, key: e.Key, size: e.Size, kind: kindAdd}
	sec := floorDiv(e.DeliverAt, 1000)
	var err error
	if sec >= s.cursor {
		err = s.appendSlotLocked(sec, &r)
	} else {
		err = s.appendLateLocked(&r)
		s.kick()
	}
	if err != nil {
		return s.failLocked(err)
	}
	s.pending++
	s.next = src + 1
	s.dirty = true
	return nil
}

// Cancel makes the timers with this key and deliverAt that were added before
// it not fire, if they have not fired yet (one being passed to Fire at that
// moment still is). A cancel is a record at position src like an Add. The
// cancelled timers leave Pending when their turn to fire comes.
func (s *Store) Cancel(key uint64, deliverAt int64, src int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if src < s.next {
		return nil
	}
	if key != 0 {
		if err := s.cancelLocked(key, deliverAt); err != nil {
			return s.failLocked(err)
		}
	}
	s.next = src + 1
	s.dirty = true
	return nil
}

// cancelLocked appends the cancel record to every chain that may hold the
// timer, and marks it in a run's loaded entries.
func (s *Store) cancelLocked(key uint64, at int64) error {
	r := record{at: at, key: key, kind: kindCancel}
	sec := floorDiv(at, 1000)
	if sec >= s.cursor {
		if err := s.appendSlotLocked(sec, &r); err != nil {
			return err
		}
		// A slot run still rolling may hold the timer in its chain, to be
		// copied forward after this record.
		if sr := s.slotRun; sr != nil && sr.rollBelow != 0 && mod(sec, s.nslots) == mod(int64(sr.chain), s.nslots) {
			return s.cancelInRunLocked(sr, key, at)
		}
		return nil
	}
	r2 := r
	if err := s.appendLateLocked(&r2); err != nil {
		return err
	}
	if sr := s.slotRun; sr != nil && sec == int64(sr.chain) {
		if err := s.cancelInRunLocked(sr, key, at); err != nil {
			return err
		}
	}
	for _, lr := range s.lateRuns {
		if err := s.cancelInRunLocked(lr, key, at); err != nil {
			return err
		}
	}
	return nil
}

// appendSlotLocked appends r to the chain of the slot of second sec >= cursor.
func (s *Store) appendSlotLocked(sec int64, r *record) error {
	i := mod(sec, s.nslots)
	r.chain = uint32(s.cursor + mod(sec-s.cursor, s.nslots))
	r.prev = s.wheel[i]
	ref, err := s.tl.append(r)
	if err != nil {
		return err
	}
	s.wheel[i] = ref
	return nil
}

func (s *Store) appendLateLocked(r *record) error {
	r.kind |= kindLate
	r.chain = s.lateGen
	r.prev = s.lateHead
	ref, err := s.tl.append(r)
	if err != nil {
		return err
	}
	s.lateHead = ref
	return nil
}

func (s *Store) usableLocked() error {
	if s.closed {
		return ErrClosed
	}
	return s.failed
}

// failLocked records the first write or sync error; the store is unusable
// from then on.
func (s *Store) failLocked(err error) error {
	if s.failed == nil {
		s.failed = fmt.Errorf("%w: %w", ErrFailed, err)
		s.log.Error("timer store failed; reopen to recover", "err", err)
	}
	return s.failed
}

func (s *Store) fail(err error) {
	s.mu.Lock()
	s.failLocked(err)
	s.mu.Unlock()
}

// Applied returns the position up to which Adds and Cancels are durable:
// every one with src < Applied() survives a crash. After Open the caller
// replays from Applied().
func (s *Store) Applied() int64 { return s.applied.Load() }

// Pending returns the number of timers added and not yet fired or passed
// over as cancelled.
func (s *Store) Pending() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// Checkpoint makes the state durable now: Applied() then covers every Add and
// Cancel that returned before the call. It also runs every
// CheckpointInterval and after each successful Fire.
func (s *Store) Checkpoint() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return s.checkpoint(false)
}

// checkpoint captures the state under mu, makes the log durable up to the
// captured end, writes a wheel file when due (or final), then the checkpoint
// file, and finally removes the log files and wheel file it made useless.
func (s *Store) checkpoint(final bool) error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()

	s.mu.Lock()
	if s.failed != nil {
		err := s.failed
		s.mu.Unlock()
		return err
	}
	if err := s.tl.flush(); err != nil {
		err = s.failLocked(err)
		s.mu.Unlock()
		return err
	}
	snapDue := s.tl.end != s.snapEnd && (final || s.tl.end-s.snapEnd >= uint64(s.opts.SnapshotEvery))
	if !s.dirty && !snapDue {
		s.mu.Unlock()
		return nil
	}
	st := s.captureLocked()
	var heads []uint64
	if snapDue {
		heads = slices.Clone(s.wheel)
		st.hasSnap, st.snapEnd, st.snapCursor = true, st.end, st.cursor
	}
	var toSync []*segment
	for _, seg := range s.tl.segs {
		if seg.dirty {
			seg.dirty = false
			toSync = append(toSync, seg)
		}
	}
	newFiles := s.tl.newFiles
	s.tl.newFiles = false
	s.dirty = false
	oldSnap, hadSnap := s.snapEnd, s.hasSnap
	s.mu.Unlock()

	redirty := func() {
		s.mu.Lock()
		s.dirty = true
		if newFiles {
			s.tl.newFiles = true
		}
		s.mu.Unlock()
	}
	for _, seg := range toSync {
		if err := seg.f.Sync(); err != nil {
			s.fail(fmt.Errorf("sync %s: %w", seg.name, err))
			return s.failed
		}
	}
	if newFiles {
		if err := s.fsys.SyncDir(s.dir); err != nil {
			redirty()
			return fmt.Errorf("timer: sync dir %s: %w", s.dir, err)
		}
	}
	if heads != nil {
		if err := vfs.WriteFileAtomic(s.fsys, s.dir, wheelName(st.snapEnd), encodeWheel(heads, st.snapCursor, st.snapEnd)); err != nil {
			redirty()
			return err
		}
	}
	if err := vfs.WriteFileAtomic(s.fsys, s.dir, checkpointName, st.encode()); err != nil {
		redirty()
		return err
	}
	s.applied.Store(st.applied)

	// Now durable: drop what the checkpoint no longer needs.
	s.mu.Lock()
	s.hasSnap, s.snapEnd, s.snapCursor = st.hasSnap, st.snapEnd, st.snapCursor
	dead := s.deadSegsLocked(&st)
	s.mu.Unlock()
	var removed bool
	if hadSnap && heads != nil && oldSnap != st.snapEnd {
		if err := s.fsys.Remove(path.Join(s.dir, wheelName(oldSnap))); err != nil {
			s.log.Warn("cannot remove old wheel file", "file", wheelName(oldSnap), "err", err)
		}
		removed = true
	}
	for _, seg := range dead {
		_ = seg.f.Close()
		if err := s.fsys.Remove(path.Join(s.dir, seg.name)); err != nil {
			s.log.Warn("cannot remove timer log file", "file", seg.name, "err", err)
		}
		removed = true
	}
	if removed {
		if err := s.fsys.SyncDir(s.dir); err != nil {
			// The removals may come back after a crash; Open removes them.
			s.log.Warn("cannot sync timer dir after removals", "dir", s.dir, "err", err)
		}
	}
	return nil
}

func (s *Store) captureLocked() ckptState {
	st := ckptState{
		slots: uint32(s.nslots), per: uint32(s.tl.per), applied: s.next, cursor: s.cursor, end: s.tl.end,
		pending: s.pending, hasSnap: s.hasSnap, snapEnd: s.snapEnd, snapCursor: s.snapCursor,
		lateHead: s.lateHead, lateGen: s.lateGen,
	}
	if s.slotRun != nil {
		st.slotRun = s.slotRun.state()
	}
	for _, lr := range s.lateRuns {
		st.lateRuns = append(st.lateRuns, lr.state())
	}
	for _, seg := range s.tl.segs {
		st.segs = append(st.segs, segState{start: seg.start, maxRound: seg.maxRound, maxLate: seg.maxLate})
	}
	return st
}

// segDead reports whether a log file is no longer needed by the state st:
// it is full, not the last file, and every chain it holds was taken and
// finished (slot rounds below the running slot run or the cursor, late
// generations below the running late run or the open late chain).
func segDead(st *ckptState, seg segState, per uint64, last bool) bool {
	slotDone := uint32(st.cursor)
	if st.slotRun.present {
		slotDone = st.slotRun.chain
	}
	lateDone := st.lateGen
	if len(st.lateRuns) > 0 {
		lateDone = st.lateRuns[0].chain
	}
	return !last && seg.start+per <= st.end && seg.maxRound < slotDone && seg.maxLate < lateDone
}

// deadSegsLocked takes out of the log the files that the durable state st
// no longer needs, and returns them. It judges the files st lists exactly as
// Open of st does: the last of them stays even if the log has moved on to a
// file created after st was captured (Open of st needs it), and files st
// does not list (created since) stay.
func (s *Store) deadSegsLocked(st *ckptState) []*segment {
	useless := map[uint64]bool{}
	for i, ss := range st.segs {
		if segDead(st, ss, s.tl.per, i == len(st.segs)-1) {
			useless[ss.start] = true
		}
	}
	var dead []*segment
	keep := s.tl.segs[:0]
	for _, seg := range s.tl.segs {
		if useless[seg.start] {
			dead = append(dead, seg)
			continue
		}
		keep = append(keep, seg)
	}
	clear(s.tl.segs[len(keep):])
	s.tl.segs = keep
	if len(dead) > 0 {
		s.dirty = true // the next checkpoint lists the files without them
	}
	return dead
}

func (s *Store) armCheckpointLocked() {
	if s.closed || s.opts.CheckpointInterval <= 0 {
		return
	}
	s.ckptTimer = s.clk.AfterFunc(s.opts.CheckpointInterval, func() {
		select {
		case s.ckptKick <- struct{}{}:
		default:
		}
		s.mu.Lock()
		s.armCheckpointLocked()
		s.mu.Unlock()
	})
}

func (s *Store) checkpointLoop() {
	defer s.wg.Done()
	var lastErr string
	for {
		select {
		case <-s.quit:
			return
		case <-s.ckptKick:
		}
		if err := s.checkpoint(false); err != nil {
			if err.Error() != lastErr && !errors.Is(err, ErrFailed) {
				s.log.Warn("timer checkpoint failed; retrying", "err", err)
			}
			lastErr = err.Error()
		} else {
			lastErr = ""
		}
	}
}

// Close stops firing (waiting for a Fire call in progress), writes a final
// checkpoint with a wheel file, and closes the files. It is idempotent; the
// second call returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.ckptTimer != nil {
		s.ckptTimer.Stop()
	}
	s.mu.Unlock()
	close(s.quit)
	s.wg.Wait()
	if s.timer != nil {
		s.timer.Stop()
	}
	err := s.checkpoint(true)
	s.mu.Lock()
	s.tl.close()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.log.Info("timer store closed", "dir", s.dir)
	return nil
}
