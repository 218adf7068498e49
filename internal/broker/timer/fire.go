package timer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// run is a chain taken for firing: the chain of slot cursor-1 (a slot run)
// or a late chain. Its due entries are loaded in key order (DeliverAt, ref),
// at most LoadLimit at a time, and passed (fired, or skipped as cancelled)
// in that order; progress is the key of the last one passed. Guarded by
// Store.mu, except that a load pass reads the chain without it.
type run struct {
	late      bool
	chain     uint32
	head      uint64
	rollBelow uint64
	progAt    int64
	progRef   uint64

	buf       []item // loaded entries, sorted by key
	next      int    // buf[:next] are passed
	inflight  int    // buf[next:next+inflight] are in the current Fire call
	loaded    bool   // buf holds the result of a pass
	exhausted bool   // no entry of the chain is beyond buf
	loading   bool   // a pass is reading the chain
	// cancels made while a pass reads the chain (it started before them).
	passCancels []cancelKey
}

type item struct {
	e    Entry
	ref  uint64
	dead bool // cancelled: passed without firing
}

type cancelKey struct {
	key uint64
	at  int64
}

func newRun(late bool, st runState) *run {
	return &run{late: late, chain: st.chain, head: st.head, rollBelow: st.rollBelow, progAt: st.progAt, progRef: st.progRef}
}

func (r *run) state() runState {
	return runState{present: true, chain: r.chain, head: r.head, rollBelow: r.rollBelow, progAt: r.progAt, progRef: r.progRef}
}

func keyLess(at1 int64, ref1 uint64, at2 int64, ref2 uint64) bool {
	return at1 < at2 || at1 == at2 && ref1 < ref2
}

// cancelInRunLocked appends a cancel record to the chain of run r (so that a
// pass after a crash sees it) and applies it to the loaded entries.
func (s *Store) cancelInRunLocked(r *run, key uint64, at int64) error {
	rec := record{prev: r.head, at: at, key: key, chain: r.chain, kind: kindCancel}
	if r.late {
		rec.kind |= kindLate
	}
	ref, err := s.tl.append(&rec)
	if err != nil {
		return err
	}
	r.head = ref
	if r.loading {
		r.passCancels = append(r.passCancels, cancelKey{key, at})
	} else if r.loaded {
		r.markDead(cancelKey{key, at}, r.next+r.inflight)
	}
	return nil
}

// markDead marks the entries of buf[from:] with this key as cancelled.
func (r *run) markDead(c cancelKey, from int) {
	rest := r.buf[from:]
	i, _ := slices.BinarySearchFunc(rest, c.at, func(it item, at int64) int {
		switch {
		case it.e.DeliverAt < at:
			return -1
		case it.e.DeliverAt > at:
			return 1
		}
		return 0
	})
	for ; i < len(rest) && rest[i].e.DeliverAt == c.at; i++ {
		if rest[i].e.Key == c.key {
			rest[i].dead = true
		}
	}
}

func (s *Store) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Retry drops the back-off of a failed Fire: what is due is offered again
// at once (a slave's store whose broker just became the master).
func (s *Store) Retry() {
	s.retryNow.Store(true)
	s.kick()
}

// fireLoop is the store's goroutine: it takes due chains, loads them and
// calls Fire.
func (s *Store) fireLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
			s.work()
		case done := <-s.settleReq:
			s.work()
			close(done)
		}
	}
}

// settle returns once the firing goroutine has done all the work that is due
// now (tests use it after moving a manual clock).
func (s *Store) settle() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return
	}
	done := make(chan struct{})
	select {
	case s.settleReq <- done:
		<-done
	case <-s.quit:
	}
}

// arm makes the clock wake the goroutine at unix millisecond at.
func (s *Store) arm(at int64) {
	if at == math.MaxInt64 {
		return
	}
	if s.timer != nil && s.timerAt == at && s.firedGen.Load() != s.timerGen {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerGen++
	gen := s.timerGen
	s.timerAt = at
	s.timer = s.clk.AfterFunc(time.UnixMilli(at).Sub(s.clk.Now()), func() {
		s.firedGen.Store(gen)
		s.kick()
	})
	// The clock may have moved between reading it and arming (a manual
	// clock advanced by another goroutine), leaving the timer set too
	// late: if at has passed by now, wake at once.
	if s.clk.Now().UnixMilli() >= at {
		s.firedGen.Store(gen)
		s.kick()
	}
}

func (s *Store) quitting() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// work does everything due now: take chains, load them, fire due entries
// in batches. It returns when nothing more is due (after arming the clock for
// the next thing), on a Fire error (after arming the retry), or on Close.
func (s *Store) work() {
	for !s.quitting() {
		if s.retryNow.Swap(false) {
			s.retry, s.retryAt = 0, 0
		}
		now := s.clk.Now().UnixMilli()
		if now < s.retryAt {
			s.arm(s.retryAt)
			return
		}
		s.mu.Lock()
		if s.failed != nil {
			s.mu.Unlock()
			return
		}
		load := s.prepareLocked(now)
		if load != nil {
			s.mu.Unlock()
			if err := s.loadPass(load); err != nil {
				s.fail(err)
				return
			}
			continue
		}
		batch, live := s.collectLocked(now)
		if len(batch) == 0 {
			at := s.nextWakeLocked()
			s.mu.Unlock()
			s.arm(at)
			return
		}
		s.mu.Unlock()
		if len(live) > 0 {
			if err := s.opts.Fire(live); err != nil {
				s.mu.Lock()
				for _, r := range batch {
					r.inflight = 0
				}
				s.mu.Unlock()
				s.retry = min(max(2*s.retry, retryMin), retryMax)
				s.retryAt = s.clk.Now().Add(s.retry).UnixMilli()
				if errors.Is(err, ErrWait) {
					s.log.Debug("timer fire deferred", "entries", len(live), "retry_in", s.retry, "reason", err)
				} else {
					s.log.Warn("timer fire failed; will retry", "entries", len(live), "retry_in", s.retry, "err", err)
				}
				s.arm(s.retryAt)
				return
			}
			s.retry = 0
		}
		s.mu.Lock()
		for _, r := range batch {
			for ; r.inflight > 0; r.inflight-- {
				it := &r.buf[r.next]
				r.progAt, r.progRef = it.e.DeliverAt, it.ref
				r.next++
				s.pending--
			}
		}
		s.dirty = true
		s.mu.Unlock()
		if len(live) > 0 {
			select {
			case s.ckptKick <- struct{}{}:
			default:
			}
		}
	}
}

// prepareLocked takes due chains and finishes runs that are done, and
// returns a run that needs a load pass, if any.
func (s *Store) prepareLocked(now int64) *run {
	for {
		if s.lateHead != 0 && s.lateRunsWaitLocked(now) {
			s.lateRuns = append(s.lateRuns, &run{late: true, chain: s.lateGen, head: s.lateHead, progAt: math.MinInt64})
			s.lateHead = 0
			s.lateGen++
			s.dirty = true
		}
		for s.slotRun == nil && s.cursor*1000 <= now {
			i := mod(s.cursor, s.nslots)
			if h := s.wheel[i]; h != 0 {
				s.slotRun = &run{chain: uint32(s.cursor), head: h, rollBelow: h + 1, progAt: math.MinInt64}
				s.wheel[i] = 0
				s.dirty = true
			}
			s.cursor++
		}
		finished := false
		for _, r := range s.runsLocked() {
			if !r.loaded || r.next < len(r.buf) || r.inflight > 0 {
				continue
			}
			if !r.exhausted {
				r.loaded = false
				continue
			}
			if r == s.slotRun {
				s.slotRun = nil
			} else {
				s.lateRuns = slices.DeleteFunc(s.lateRuns, func(x *run) bool { return x == r })
			}
			s.dirty = true
			finished = true
		}
		if finished {
			continue
		}
		for _, r := range s.runsLocked() {
			if !r.loaded {
				return r
			}
		}
		return nil
	}
}

// runsLocked returns the active runs.
func (s *Store) runsLocked() []*run {
	rs := make([]*run, 0, len(s.lateRuns)+1)
	rs = append(rs, s.lateRuns...)
	if s.slotRun != nil {
		rs = append(rs, s.slotRun)
	}
	return rs
}

// lateRunsWaitLocked reports whether the open late chain may be taken as
// one more late run: there is room, and every late run is loaded and only
// waits for entries not yet due (late entries are due within a second, but
// one not due yet must not hold back an already due one added after it).
func (s *Store) lateRunsWaitLocked(now int64) bool {
	if len(s.lateRuns) >= maxLateRuns {
		return false
	}
	for _, r := range s.lateRuns {
		if !r.loaded || r.next >= len(r.buf) {
			return false
		}
		if it := r.buf[r.next]; it.dead || it.e.DeliverAt <= now {
			return false
		}
	}
	return true
}

// collectLocked picks the next batch: due entries of the runs merged in key
// order, up to FireBatch live ones, with the cancelled ones met on the way.
// It stops where a run's loaded entries end before its chain does, since
// the next key of that run is unknown until its next pass.
func (s *Store) collectLocked(now int64) (batch []*run, live []Entry) {
	rs := s.runsLocked()
	for len(live) < s.opts.FireBatch {
		var best *run
		var bi *item
		stop := false
		for _, r := range rs {
			j := r.next + r.inflight
			if j >= len(r.buf) {
				stop = stop || !r.exhausted
				continue
			}
			if it := &r.buf[j]; bi == nil || keyLess(it.e.DeliverAt, it.ref, bi.e.DeliverAt, bi.ref) {
				best, bi = r, it
			}
		}
		if stop || best == nil || (!bi.dead && bi.e.DeliverAt > now) {
			break
		}
		if best.inflight == 0 {
			batch = append(batch, best)
		}
		best.inflight++
		if !bi.dead {
			live = append(live, bi.e)
		}
	}
	return batch, live
}

// nextWakeLocked returns when work is next due: the first loaded entry, or
// the start of the next slot when no slot run is active.
func (s *Store) nextWakeLocked() int64 {
	at := int64(math.MaxInt64)
	for _, r := range s.runsLocked() {
		if r.next < len(r.buf) {
			at = min(at, r.buf[r.next].e.DeliverAt)
		}
	}
	if s.slotRun == nil {
		at = min(at, s.cursor*1000)
	}
	return at
}

// loadPass reads r's chain from its head: it collects the cancels (newer
// records come first, so a cancel is known before the timers it hits),
// rolls forward the timers of later rounds (slot runs, first pass only:
// those with ref < rollBelow), and keeps the LoadLimit smallest keys above
// the progress. Reads go through ReadAt in blocks; the lock is taken only
// to append a rolled record and to install the result.
func (s *Store) loadPass(r *run) error {
	s.mu.Lock()
	if err := s.tl.flush(); err != nil {
		s.mu.Unlock()
		return err
	}
	head, progAt, progRef, rolling := r.head, r.progAt, r.progRef, r.rollBelow != 0
	r.loading, r.passCancels = true, nil
	s.mu.Unlock()

	limit := s.opts.LoadLimit
	cancels := map[cancelKey]struct{}{}
	var sel []item
	candidates := 0
	heaped := false
	for ref := head; ref != 0; {
		rec, err := s.reader.read(ref)
		if err != nil {
			return err
		}
		if rec.chain != r.chain || rec.late() != r.late || rec.prev >= ref {
			return fmt.Errorf("%w: record %d (chain %d late %v prev %d) in chain %d late %v",
				ErrCorrupt, ref-1, rec.chain, rec.late(), rec.prev, r.chain, r.late)
		}
		ck := cancelKey{rec.key, rec.at}
		switch {
		case rec.isCancel():
			cancels[ck] = struct{}{}
		case !r.late && floorDiv(rec.at, 1000) > int64(r.chain):
			if rolling {
				_, dead := cancels[ck]
				if err := s.roll(r, ref, &rec, dead && rec.key != 0); err != nil {
					return err
				}
			}
		case !keyLess(progAt, progRef, rec.at, ref):
			// passed before
		default:
			_, dead := cancels[ck]
			it := item{e: rec.entry(), ref: ref, dead: dead && rec.key != 0}
			candidates++
			switch {
			case len(sel) < limit:
				sel = append(sel, it)
			case !heaped:
				heapInit(sel)
				heaped = true
				fallthrough
			default:
				if keyLess(it.e.DeliverAt, it.ref, sel[0].e.DeliverAt, sel[0].ref) {
					sel[0] = it
					heapDown(sel, 0)
				}
			}
		}
		ref = rec.prev
	}
	slices.SortFunc(sel, func(a, b item) int {
		if keyLess(a.e.DeliverAt, a.ref, b.e.DeliverAt, b.ref) {
			return -1
		}
		return 1
	})

	s.mu.Lock()
	defer s.mu.Unlock()
	r.buf, r.next, r.inflight = sel, 0, 0
	for _, c := range r.passCancels {
		r.markDead(c, 0)
	}
	r.loading, r.passCancels = false, nil
	r.loaded, r.exhausted = true, candidates <= limit
	if rolling {
		r.rollBelow = 0
		s.dirty = true
	}
	return nil
}

// roll copies a timer of a later round forward to its slot's next round (or
// drops it if cancelled), and records that records down to ref are rolled.
func (s *Store) roll(r *run, ref uint64, rec *record, dead bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref >= r.rollBelow {
		return nil
	}
	if !dead {
		for _, c := range r.passCancels {
			if c.key == rec.key && c.at == rec.at {
				dead = true
				break
			}
		}
	}
	if dead {
		s.pending--
	} else {
		cp := record{at: rec.at, off: rec.off, key: rec.key, size: rec.size, kind: kindAdd}
		if err := s.appendSlotLocked(floorDiv(rec.at, 1000), &cp); err != nil {
			return err
		}
	}
	r.rollBelow = ref
	s.dirty = true
	return nil
}

// heapInit and heapDown keep h as a max-heap on key (the largest kept key
// on top, to be replaced by a smaller one).
func heapInit(h []item) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

func heapDown(h []item, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && keyLess(h[l].e.DeliverAt, h[l].ref, h[r].e.DeliverAt, h[r].ref) {
			c = r
		}
		if !keyLess(h[i].e.DeliverAt, h[i].ref, h[c].e.DeliverAt, h[c].ref) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// chainReader reads records through a small cache of 4 KiB blocks, so a
// chain whose records were appended close together costs one ReadAt per
// block, not per record. Used by the firing goroutine only.
type chainReader struct {
	s      *Store
	blocks [16]struct {
		id   uint64 // block number + 1; 0 = empty
		n    int    // records held
		data []byte
	}
}

func (c *chainReader) read(ref uint64) (record, error) {
	idx := ref - 1
	per := c.s.tl.per // fixed after Open
	blocksPerFile := (per + blockRecords - 1) / blockRecords
	fileNo, local := idx/per, idx%per
	id := fileNo*blocksPerFile + local/blockRecords + 1
	b := &c.blocks[id%uint64(len(c.blocks))]
	first := fileNo*per + local/blockRecords*blockRecords
	if b.id != id || idx-first >= uint64(b.n) {
		c.s.mu.Lock()
		seg := c.s.tl.segFor(idx)
		written := c.s.tl.written
		c.s.mu.Unlock()
		if seg == nil {
			return record{}, fmt.Errorf("%w: record %d is in no log file", ErrCorrupt, idx)
		}
		if b.data == nil {
			b.data = make([]byte, blockRecords*recordSize)
		}
		// Only records below written are complete in the file: later ones
		// may be half written by a concurrent flush.
		want := min(uint64(blockRecords), seg.start+per-first, written-min(written, first))
		n, err := readRecords(seg, first, b.data[:want*recordSize])
		if err != nil {
			b.id = 0
			return record{}, err
		}
		b.id, b.n = id, n
		if idx-first >= uint64(n) {
			b.id = 0
			return record{}, fmt.Errorf("%w: record %d is beyond the end of %s", ErrCorrupt, idx, seg.name)
		}
	}
	rec, err := decodeRecord(b.data[(idx-first)*recordSize:])
	if err != nil {
		return record{}, fmt.Errorf("%w (record %d)", err, idx)
	}
	return rec, nil
}
