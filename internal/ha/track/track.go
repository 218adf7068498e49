package track

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Errors returned by Wait and SlaveProgress.
var (
	// ErrNotEnoughReplicas: fewer than Config.SyncReplicas slaves are in
	// sync, so the HW cannot cover the offset now (RocketMQ
	// SLAVE_NOT_AVAILABLE). The send is in doubt, not acknowledged.
	ErrNotEnoughReplicas = errors.New("track: not enough replicas in sync")
	// ErrTimeout: the context ended before the HW covered the offset
	// (RocketMQ FLUSH_SLAVE_TIMEOUT). The send is in doubt.
	ErrTimeout = errors.New("track: replication timed out")
	// ErrBadAck wraps every refused slave ack (above the master's LEO,
	// backwards, durable above written, negative, or a bad id).
	ErrBadAck = errors.New("track: slave ack refused")
	// ErrTooManySlaves: a new slave id beyond Config.MaxSlaves.
	ErrTooManySlaves = errors.New("track: too many slaves")
)

// Defaults of Config.
const (
	DefaultMaxLagBytes = 64 << 20
	DefaultMaxLagTime  = 10 * time.Second
	DefaultMaxSlaves   = 32
)

// Config says how many replicas a record needs and when a slave counts.
type Config struct {
	// SyncReplicas is how many in-sync slaves must hold a record before it
	// is committed (0: none; the HW is the master's own contribution).
	SyncReplicas int
	// MaxLagBytes: a slave whose written end is further than this behind
	// the master's LEO falls out of sync; it comes back within half of it.
	// Default 64 MiB.
	MaxLagBytes int64
	// MaxLagTime: a slave that does not yet hold the LEO the master had this
	// long ago falls out of sync; it comes back within half of it. Default
	// 10 s.
	MaxLagTime time.Duration
	// AsyncFlush makes written ends (LEO) the contributions of master and
	// slaves instead of durable ends: the group does not fsync per write.
	AsyncFlush bool
	// MaxSlaves bounds the slaves tracked at once (a peer picks its id).
	// Default 32.
	MaxSlaves int
	// OnInSync, when set, is called with the ids (ascending, a new slice)
	// of the slaves the local lag rules find in sync after that set
	// changed, outside the tracker's lock, on the goroutine of the call
	// that changed it. Calls never overlap and come in the order of the
	// changes; changes that happen while a call runs are coalesced into
	// the next one, which carries the set as it is then (so the last call
	// always names the current set). It must not block: the caller is a
	// fetch or a Tick. In controller mode the daemon proposes the set to
	// the controller (AlterISR) and hands the committed one to SetISR.
	OnInSync func(inSync []int64)
}

// DefaultConfig is one sync replica, 64 MiB and 10 s of lag, sync flush.
func DefaultConfig() Config {
	return Config{SyncReplicas: 1, MaxLagBytes: DefaultMaxLagBytes, MaxLagTime: DefaultMaxLagTime, MaxSlaves: DefaultMaxSlaves}
}

// withDefaults fills the zero lag bounds and slave limit.
func (c Config) withDefaults() Config {
	if c.MaxLagBytes == 0 {
		c.MaxLagBytes = DefaultMaxLagBytes
	}
	if c.MaxLagTime == 0 {
		c.MaxLagTime = DefaultMaxLagTime
	}
	if c.MaxSlaves == 0 {
		c.MaxSlaves = DefaultMaxSlaves
	}
	return c
}

// Validate names the first bad field and its limit. Zero lag bounds and
// MaxSlaves mean their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.SyncReplicas < 0:
		return fmt.Errorf("track: SyncReplicas %d: must be ≥ 0", c.SyncReplicas)
	case c.MaxLagBytes < 0:
		return fmt.Errorf("track: MaxLagBytes %d: must be > 0", c.MaxLagBytes)
	case c.MaxLagTime < 0:
		return fmt.Errorf("track: MaxLagTime %v: must be > 0", c.MaxLagTime)
	case c.MaxSlaves < 0:
		return fmt.Errorf("track: MaxSlaves %d: must be > 0", c.MaxSlaves)
	case c.SyncReplicas > c.MaxSlaves:
		return fmt.Errorf("track: SyncReplicas %d: must be ≤ MaxSlaves %d", c.SyncReplicas, c.MaxSlaves)
	}
	return nil
}

// SlaveStats is one slave as the master sees it.
type SlaveStats struct {
	ID       int64
	Written  int64         // acked written end (LEO)
	Durable  int64         // acked durable end
	LagBytes int64         // master LEO − Written
	LagTime  time.Duration // how long the master has held bytes this slave lacks (0: caught up)
	InSync   bool
	LastAck  time.Time // when its last accepted ack came
}

// Stats is a snapshot of the tracker.
type Stats struct {
	HW            int64
	MasterLEO     int64
	MasterDurable int64
	SyncReplicas  int
	InSync        int          // slaves in sync now
	Slaves        []SlaveStats // by id
	FallOuts      uint64       // times a slave left the in-sync set (also by SlaveGone)
	CatchUps      uint64       // times a slave joined it
	RefusedAcks   uint64       // SlaveProgress calls refused
	// Explicit: SetISR was called; ISR (ascending, a new slice) and
	// MinSlaves are the set and the bound it gave.
	Explicit  bool
	ISR       []int64
	MinSlaves int
}

type slave struct {
	id         int64
	written    int64
	durable    int64
	inSync     bool
	lastAck    time.Time
	behindFrom time.Time // master first held a byte this slave lacks (zero: caught up)
	behindOff  int64     // the written end behindFrom was computed for
}

// sample says the master's LEO was leo at time at.
type sample struct {
	at  time.Time
	leo int64
}

const ringSize = 64 // ≥ 2×32 granules + 1: always keeps a sample at or before now − MaxLagTime

// Tracker is the commit point and in-sync set of one group's master. Safe
// for concurrent use.
type Tracker struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	granule time.Duration

	mu            sync.Mutex
	masterLEO     int64
	masterDurable int64
	hw            int64
	slaves        []*slave // by id; few
	inSync        int
	fallOuts      uint64
	catchUps      uint64
	refused       uint64
	waiters       waitHeap
	scratch       []int64

	// Explicit in-sync set (SetISR): explicit once set; isr sorted and
	// unique; minSlaves the writes need.
	explicit  bool
	isr       []int64
	minSlaves int

	// OnInSync delivery: notifyMu orders the calls; pending (under mu)
	// says the local set changed since the last call took it.
	notifyMu sync.Mutex
	pending  bool

	ring      [ringSize]sample
	ringHead  int // index of the oldest sample
	ringLen   int
	granuleAt time.Time // when the newest sample's granule began
	baseLEO   int64     // the master's LEO before the oldest sample
}

// New returns a tracker with HW 0 and no slaves. A nil logger discards.
// It panics if cfg does not Validate (a configuration error the caller
// reports before building the tracker).
func New(cfg Config, clk clock.Clock, logger *slog.Logger) *Tracker {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g := cfg.MaxLagTime / 32
	if g <= 0 {
		g = 1
	}
	return &Tracker{cfg: cfg, clk: clk, log: logger.With("component", "ha/track"), granule: g,
		scratch: make([]int64, 0, cfg.MaxSlaves)}
}

// Config returns the configuration in use (defaults filled in).
func (t *Tracker) Config() Config { return t.cfg }

// transition is a change of a slave's in-sync state, logged after unlock.
type transition struct {
	id       int64
	in       bool
	reason   string
	written  int64
	lagBytes int64
	lagTime  time.Duration
	leo      int64
}

type events struct {
	buf [4]transition
	n   int
	all []transition // beyond buf
}

func (e *events) add(tr transition) {
	if e.n < len(e.buf) {
		e.buf[e.n] = tr
		e.n++
		return
	}
	e.all = append(e.all, tr)
}

// emit logs the transitions of e and, when there were any, calls
// Config.OnInSync; t.mu must not be held.
func (t *Tracker) emit(e *events) {
	for i := 0; i < e.n; i++ {
		t.logTransition(e.buf[i])
	}
	for _, tr := range e.all {
		t.logTransition(tr)
	}
	if e.n > 0 && t.cfg.OnInSync != nil {
		t.notify()
	}
}

// notify hands the current local in-sync set to Config.OnInSync unless a
// call since the last change has already carried it. notifyMu keeps the
// calls apart and in order: each takes the set under mu, after every
// earlier call took its own.
func (t *Tracker) notify() {
	t.notifyMu.Lock()
	defer t.notifyMu.Unlock()
	t.mu.Lock()
	if !t.pending {
		t.mu.Unlock()
		return
	}
	t.pending = false
	ids := t.inSyncLocked()
	t.mu.Unlock()
	t.cfg.OnInSync(ids)
}

func (t *Tracker) logTransition(tr transition) {
	if tr.in {
		t.log.Info("slave in sync", "slave_id", tr.id, "written", tr.written, "master_leo", tr.leo)
		return
	}
	t.log.Warn("slave out of sync", "slave_id", tr.id, "reason", tr.reason, "written", tr.written,
		"lag_bytes", tr.lagBytes, "lag_time", tr.lagTime, "master_leo", tr.leo)
}

// MasterProgress records the master's own ends (store Written and
// Durable). Values below the ones already known are ignored (the master's
// log only grows in this phase), and durable is capped at the LEO. The
// first call sets the LEO the master started with: a slave counts as in
// sync by time only once it holds that.
func (t *Tracker) MasterProgress(leo, durable int64) {
	var ev events
	t.mu.Lock()
	now := t.clk.Now()
	if t.ringLen == 0 {
		// The log the master starts with was there before: it counts as
		// held since long ago.
		t.masterLEO = max(0, leo)
		t.baseLEO = t.masterLEO
		t.record(now, t.masterLEO)
	} else if leo > t.masterLEO {
		t.masterLEO = leo
		t.record(now, leo)
	}
	if durable = min(durable, t.masterLEO); durable > t.masterDurable {
		t.masterDurable = durable
	}
	t.evalAll(now, &ev)
	t.advance()
	t.mu.Unlock()
	t.emit(&ev)
}

// SlaveProgress records a slave's acks from a fetch: written (its LEO, the
// fetch offset) and durable. It refuses, with an error wrapping ErrBadAck
// and no change, an ack above the master's LEO, durable above written, a
// negative offset, an id < 1, or a value below the previous ack of the
// same session (see SlaveGone). A new id beyond Config.MaxSlaves is
// refused with ErrTooManySlaves.
func (t *Tracker) SlaveProgress(id int64, written, durable int64) error {
	var ev events
	t.mu.Lock()
	s, err := t.acceptAck(id, written, durable)
	if err != nil {
		t.refused++
		t.mu.Unlock()
		return err
	}
	now := t.clk.Now()
	s.written, s.durable, s.lastAck = written, durable, now
	t.eval(s, now, &ev)
	t.advance()
	t.mu.Unlock()
	t.emit(&ev)
	return nil
}

func (t *Tracker) acceptAck(id, written, durable int64) (*slave, error) {
	switch {
	case id < 1:
		return nil, fmt.Errorf("%w: slave id %d: must be ≥ 1", ErrBadAck, id)
	case written < 0 || durable < 0:
		return nil, fmt.Errorf("%w: slave %d: negative offset (written %d, durable %d)", ErrBadAck, id, written, durable)
	case durable > written:
		return nil, fmt.Errorf("%w: slave %d: durable %d above written %d", ErrBadAck, id, durable, written)
	case written > t.masterLEO:
		return nil, fmt.Errorf("%w: slave %d: written %d above the master's LEO %d", ErrBadAck, id, written, t.masterLEO)
	}
	i, found := t.find(id)
	if found {
		s := t.slaves[i]
		if written < s.written || durable < s.durable {
			return nil, fmt.Errorf("%w: slave %d: ack moved backwards (written %d→%d, durable %d→%d)",
				ErrBadAck, id, s.written, written, s.durable, durable)
		}
		return s, nil
	}
	if len(t.slaves) >= t.cfg.MaxSlaves {
		return nil, fmt.Errorf("%w: slave %d: already tracking MaxSlaves %d", ErrTooManySlaves, id, t.cfg.MaxSlaves)
	}
	s := &slave{id: id}
	t.slaves = slices.Insert(t.slaves, i, s)
	return s, nil
}

func (t *Tracker) find(id int64) (int, bool) {
	return slices.BinarySearchFunc(t.slaves, id, func(s *slave, id int64) int {
		switch {
		case s.id < id:
			return -1
		case s.id > id:
			return 1
		}
		return 0
	})
}

// SlaveGone forgets a slave (its connection ended): it falls out of sync
// at once, and its next SlaveProgress starts a new session.
func (t *Tracker) SlaveGone(id int64) {
	var ev events
	t.mu.Lock()
	i, found := t.find(id)
	if !found {
		t.mu.Unlock()
		return
	}
	s := t.slaves[i]
	t.slaves = slices.Delete(t.slaves, i, i+1)
	if s.inSync {
		t.inSync--
		t.fallOuts++
		t.pending = true
		ev.add(transition{id: id, reason: "gone", written: s.written, lagBytes: t.masterLEO - s.written,
			lagTime: t.lagTime(s, t.clk.Now()), leo: t.masterLEO})
	}
	t.advance()
	t.mu.Unlock()
	t.emit(&ev)
}

// Tick re-evaluates every slave's lag by time. Call it periodically (every
// MaxLagTime/10 or so) from a clock timer.
func (t *Tracker) Tick() {
	var ev events
	t.mu.Lock()
	t.evalAll(t.clk.Now(), &ev)
	t.advance()
	t.mu.Unlock()
	t.emit(&ev)
}

// SetSyncReplicas changes how many in-sync slaves must hold a record (a
// master that was a single broker until its first slave joined). Raising
// it stops the HW until that many slaves are in sync, and answers parked
// waiters ErrNotEnoughReplicas if fewer are; it never lowers the HW.
func (t *Tracker) SetSyncReplicas(n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 0 || n > t.cfg.MaxSlaves {
		return fmt.Errorf("track: SyncReplicas %d: must be in [0, %d]", n, t.cfg.MaxSlaves)
	}
	t.cfg.SyncReplicas = n
	t.advance()
	return nil
}

// SetISR switches the tracker to an explicit in-sync set (controller
// mode: the set the controller committed, ids of slaves, the master not
// among them) and sets how many of them a write needs. From then on the HW
// is min(master contribution, every listed slave's contribution): a listed
// slave that is not connected holds the HW where it is (waits time out),
// and a Wait above the HW fails at once with ErrNotEnoughReplicas while
// len(ids) < minSlaves. The local in-sync detection keeps running and
// reports through Config.OnInSync. SetISR never lowers the HW; call it
// again with each newly committed set. Without SetISR the tracker counts
// (SyncReplicas in-sync slaves), as before.
func (t *Tracker) SetISR(ids []int64, minSlaves int) {
	isr := slices.Compact(slices.Sorted(slices.Values(ids)))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.explicit, t.isr, t.minSlaves = true, isr, max(minSlaves, 0)
	t.advance()
}

// Restore raises the HW to hw, capped at the master's contribution: the
// commit point the group had reached before a restart (the store's
// persisted CommitPoint), so a restarted master neither reports a lower one
// to its slaves nor waits for them to cover what was committed already.
// Call it after the first MasterProgress. It never lowers the HW, and it
// answers the waiters it covers.
func (t *Tracker) Restore(hw int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hw = min(hw, t.contribution(t.masterLEO, t.masterDurable))
	if hw > t.hw {
		t.raise(hw)
	}
}

// HW returns the commit point. It never decreases.
func (t *Tracker) HW() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hw
}

// InSync returns the ids of the slaves the local lag rules find in sync,
// ascending, in a new slice (with SetISR too: the set to propose, not the
// committed one).
func (t *Tracker) InSync() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inSyncLocked()
}

func (t *Tracker) inSyncLocked() []int64 {
	out := make([]int64, 0, t.inSync)
	for _, s := range t.slaves {
		if s.inSync {
			out = append(out, s.id)
		}
	}
	return out
}

// Stats returns a snapshot; Slaves is a new slice.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	st := Stats{HW: t.hw, MasterLEO: t.masterLEO, MasterDurable: t.masterDurable, SyncReplicas: t.cfg.SyncReplicas,
		InSync: t.inSync, FallOuts: t.fallOuts, CatchUps: t.catchUps, RefusedAcks: t.refused,
		Slaves: make([]SlaveStats, 0, len(t.slaves)), Explicit: t.explicit, ISR: slices.Clone(t.isr), MinSlaves: t.minSlaves}
	if st.ISR == nil {
		st.ISR = []int64{}
	}
	for _, s := range t.slaves {
		st.Slaves = append(st.Slaves, SlaveStats{ID: s.id, Written: s.written, Durable: s.durable,
			LagBytes: t.masterLEO - s.written, LagTime: t.lagTime(s, now), InSync: s.inSync, LastAck: s.lastAck})
	}
	return st
}

// Wait returns nil once the HW is at least end. It returns
// ErrNotEnoughReplicas at once when the HW is below end and fewer than
// SyncReplicas slaves are in sync, or later when the in-sync set shrinks
// below that while it waits; ErrTimeout when ctx ends first (callers pass
// a ctx with the replication timeout). A waiter whose ctx ends is removed.
func (t *Tracker) Wait(ctx context.Context, end int64) error {
	t.mu.Lock()
	if t.hw >= end {
		t.mu.Unlock()
		return nil
	}
	if t.tooFew() {
		t.mu.Unlock()
		return ErrNotEnoughReplicas
	}
	if ctx.Err() != nil {
		t.mu.Unlock()
		return ErrTimeout
	}
	w := getWaiter(end)
	heap.Push(&t.waiters, w)
	t.mu.Unlock()

	select {
	case err := <-w.done:
		putWaiter(w)
		return err
	case <-ctx.Done():
	}
	t.mu.Lock()
	if w.idx >= 0 {
		heap.Remove(&t.waiters, w.idx)
		t.mu.Unlock()
		putWaiter(w)
		return ErrTimeout
	}
	t.mu.Unlock()
	// Answered while ctx ended: the answer is in the channel (sent under mu).
	err := <-w.done
	putWaiter(w)
	return err
}

// lagTime is how long the master has held a byte s lacks.
func (t *Tracker) lagTime(s *slave, now time.Time) time.Duration {
	if s.behindFrom.IsZero() {
		return 0
	}
	return now.Sub(s.behindFrom)
}

// evalAll re-evaluates every slave.
func (t *Tracker) evalAll(now time.Time, ev *events) {
	for _, s := range t.slaves {
		t.eval(s, now, ev)
	}
}

// eval updates s's lag and in-sync state at now. "Holds the LEO the
// master had MaxLagTime ago" is the same as "the master first held a byte
// s lacks less than MaxLagTime ago" (lag time < MaxLagTime), or nothing
// lacking at all; a byte that was already there before the oldest sample
// kept (baseLEO > written) was held long ago.
func (t *Tracker) eval(s *slave, now time.Time, ev *events) {
	lagBytes := t.masterLEO - s.written
	if lagBytes <= 0 {
		s.behindFrom = time.Time{}
	} else if s.behindFrom.IsZero() || s.behindOff != s.written {
		// Beyond the ring's history the time is not known exactly; a slave
		// still behind keeps the older time it was known to be behind from.
		if at, exact := t.firstAbove(s.written); exact || s.behindFrom.IsZero() || at.Before(s.behindFrom) {
			s.behindFrom = at
		}
		s.behindOff = s.written
	}
	// Hysteresis: a slave out of sync comes back within half the bounds, so
	// one lagging near a bound does not flap (and log) at every fetch.
	maxBytes, maxTime := t.cfg.MaxLagBytes, t.cfg.MaxLagTime
	if !s.inSync {
		maxBytes, maxTime = maxBytes/2, maxTime/2
	}
	reason := ""
	switch {
	case lagBytes > maxBytes:
		reason = "lag_bytes"
	case lagBytes > 0 && (t.baseLEO > s.written || now.Sub(s.behindFrom) >= maxTime):
		reason = "lag_time"
	}
	in := reason == ""
	if in == s.inSync {
		return
	}
	s.inSync = in
	t.pending = true
	if in {
		t.inSync++
		t.catchUps++
	} else {
		t.inSync--
		t.fallOuts++
	}
	ev.add(transition{id: s.id, in: in, reason: reason, written: s.written, lagBytes: lagBytes,
		lagTime: t.lagTime(s, now), leo: t.masterLEO})
}

// record notes that the master's LEO is leo at now. Samples closer than a
// granule to the newest sample's granule start overwrite it (moving its
// time forward: the time test errs towards staying in sync).
func (t *Tracker) record(now time.Time, leo int64) {
	if t.ringLen > 0 && now.Sub(t.granuleAt) < t.granule {
		t.ring[(t.ringHead+t.ringLen-1)%ringSize] = sample{at: now, leo: leo}
		return
	}
	t.granuleAt = now
	if t.ringLen == ringSize {
		t.baseLEO = t.ring[t.ringHead].leo
		t.ringHead = (t.ringHead + 1) % ringSize
		t.ringLen--
	}
	t.ring[(t.ringHead+t.ringLen)%ringSize] = sample{at: now, leo: leo}
	t.ringLen++
}

// firstAbove is the time of the oldest sample whose LEO is above off; exact
// is false when the LEO was above off already before the oldest sample
// (the true time is earlier).
func (t *Tracker) firstAbove(off int64) (at time.Time, exact bool) {
	for i := 0; i < t.ringLen; i++ {
		s := t.ring[(t.ringHead+i)%ringSize]
		if s.leo > off {
			return s.at, t.baseLEO <= off
		}
	}
	return t.clk.Now(), true
}

// contribution of a replica with these ends.
func (t *Tracker) contribution(written, durable int64) int64 {
	if t.cfg.AsyncFlush {
		return written
	}
	return durable
}

// tooFew reports whether writes cannot be committed now: fewer slaves in
// sync than SyncReplicas, or with SetISR fewer listed than minSlaves.
func (t *Tracker) tooFew() bool {
	if t.explicit {
		return len(t.isr) < t.minSlaves
	}
	return t.inSync < t.cfg.SyncReplicas
}

// advance recomputes the HW and answers the waiters it covers, or fails
// them all when too few slaves are in sync.
func (t *Tracker) advance() {
	if t.tooFew() {
		for t.waiters.Len() > 0 {
			w := heap.Pop(&t.waiters).(*waiter)
			w.done <- ErrNotEnoughReplicas
		}
		return
	}
	hw := t.contribution(t.masterLEO, t.masterDurable)
	if t.explicit {
		// Every listed slave must hold a record; one not connected
		// holds the HW where it is.
		for _, id := range t.isr {
			i, found := t.find(id)
			if !found {
				return
			}
			s := t.slaves[i]
			hw = min(hw, t.contribution(s.written, s.durable))
		}
		if hw > t.hw {
			t.raise(hw)
		}
		return
	}
	k := t.cfg.SyncReplicas
	if k > 0 {
		c := t.scratch[:0]
		for _, s := range t.slaves {
			if s.inSync {
				c = append(c, t.contribution(s.written, s.durable))
			}
		}
		slices.Sort(c)
		hw = min(hw, c[len(c)-k])
		t.scratch = c[:0]
	}
	if hw > t.hw {
		t.raise(hw)
	}
}

// raise sets the HW to hw (above the current one) and answers the waiters
// it covers.
func (t *Tracker) raise(hw int64) {
	t.hw = hw
	for t.waiters.Len() > 0 && t.waiters[0].end <= hw {
		w := heap.Pop(&t.waiters).(*waiter)
		w.done <- nil
	}
}
