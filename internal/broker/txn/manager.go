package txn

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Manager runs the transactions of one broker's store. All methods are
// safe for concurrent use. See the package doc.
type Manager struct {
	st   store.MessageStore
	meta meta.Tables
	chk  Checker
	cfg  Config
	clk  clock.Clock
	log  *slog.Logger
	host netip.AddrPort

	mu   sync.Mutex
	cond *sync.Cond // signalled when a txn stops being busy
	// Guarded by mu.
	live      map[int64]*half // live halves by queue offset
	txns      map[int64]*txn  // open transactions by origin
	doneAhead map[int64]struct{}
	scanned   int64 // halves below this offset were read by a scan
	opNext    int64 // op records below this offset concern halves below the progress
	opRead    int64 // op records below this offset are in the state (rebuild, followOps)
	started   bool
	closed    bool
	running   bool      // a round is in progress
	wantAt    time.Time // earliest round wanted by a kick during a round
	lastRound time.Time
	timer     clock.Timer
	timerAt   time.Time
	timerGen  uint64

	wg sync.WaitGroup // rounds and End calls in progress

	// The progress offsets last committed to meta; only saveProgress
	// (rounds, and Close after them) touches them.
	savedHalf, savedOp int64
}

// Limits of one read of the system queues.
const (
	readBatch = 256
	readBytes = 1 << 20
	// minRoundGap spaces rounds that are due to many halves falling due
	// one after another; a check may come this much after its due time.
	minRoundGap = 500 * time.Millisecond
)

// New rebuilds the transaction state of st from the half and op topics and
// the progress offsets (kept in md as the offsets of ProgressGroup), and
// returns a Manager that does not check yet (Start). chk is required. The
// stores must stay open until Close returns.
func New(st store.MessageStore, md meta.Tables, chk Checker, cfg Config) (*Manager, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if chk == nil {
		return nil, errors.New("txn: a Checker is required")
	}
	if st == nil || md == nil {
		return nil, errors.New("txn: a message store and a metadata store are required")
	}
	m := &Manager{
		st: st, meta: md, chk: chk, cfg: cfg, clk: cfg.Clock,
		log:       cfg.Logger.With("component", "txn"),
		host:      st.Config().StoreHost,
		live:      make(map[int64]*half),
		txns:      make(map[int64]*txn),
		doneAhead: make(map[int64]struct{}),
	}
	m.cond = sync.NewCond(&m.mu)
	if err := m.rebuild(); err != nil {
		return nil, err
	}
	st.AddListener(m.dispatched)
	m.log.Info("transactions recovered", "open", len(m.txns), "half_offset", m.progressLocked(), "op_offset", m.opNext, "scanned", m.scanned)
	return m, nil
}

// Half rewrites a prepared send, in place, into the half message the
// broker then stores like any message (see IsPrepared): topic HalfTopic,
// queue 0, REAL_TOPIC and REAL_QID set to the original topic and queue,
// the transaction bits of SysFlag cleared (Java stores halves with type
// "not transactional"), __transactionId__ set to the UNIQ_KEY (when it has
// one); every other property stays, PGROUP, TRAN_MSG and UNIQ_KEY
// included. It adds about len(topic)+len(UNIQ_KEY)+45 bytes of
// properties: validate the message after it. It does not need the manager's state.
func (m *Manager) Half(msg *message.Message) { toHalf(msg) }

// Start begins the check rounds: one at once, then as halves fall due and
// at least every CheckInterval. Calling it again does nothing.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	m.armLocked(m.clk.Now(), true)
}

// Kick runs a round now (a slave's manager that just became the master's:
// what fell due while it stood by is acted on at once). Before Start and
// after Close it does nothing.
func (m *Manager) Kick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started || m.closed {
		return
	}
	now := m.clk.Now()
	if m.running {
		m.wantAt = now
		return
	}
	m.armLocked(now, true)
}

// Close stops the rounds, waits for a round or End in progress and records
// the progress offsets (made durable by the store's offset flush or
// Close). End fails with ErrClosed after it. Idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.mu.Unlock()
	m.wg.Wait()
	m.saveProgress()
	return nil
}

// Pending returns the number of open transactions (undecided halves) as
// of the last round: halves stored since are not counted yet.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.txns)
}

// dispatched is the store listener: a new half is due no sooner than
// Timeout from now, so a round then will find and schedule it.
func (m *Manager) dispatched(topic string, _ int32, _ int64) {
	if topic != HalfTopic {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started || m.closed {
		return
	}
	at := m.clk.Now().Add(m.cfg.Timeout)
	if m.running {
		if m.wantAt.IsZero() || at.Before(m.wantAt) {
			m.wantAt = at
		}
		return
	}
	m.armLocked(at, false)
}

// armLocked makes sure a round runs at at or before (rounds are spaced by
// minRoundGap unless now).
func (m *Manager) armLocked(at time.Time, now bool) {
	if !now {
		if gap := min(minRoundGap, m.cfg.CheckInterval); at.Before(m.lastRound.Add(gap)) {
			at = m.lastRound.Add(gap)
		}
	}
	if m.timer != nil {
		if !m.timerAt.After(at) {
			return
		}
		m.timer.Stop()
	}
	m.timerGen++
	gen := m.timerGen
	m.timerAt = at
	m.timer = m.clk.AfterFunc(at.Sub(m.clk.Now()), func() { m.fire(gen) })
}

// fire runs a round; the round's end arms the next one.
func (m *Manager) fire(gen uint64) {
	m.mu.Lock()
	if gen != m.timerGen || m.closed {
		m.mu.Unlock() // a stopped timer that ran anyway
		return
	}
	m.timer = nil
	now := m.clk.Now()
	if m.running {
		// Not expected (no timer is armed during a round), but then the
		// running round must arm the next one at once.
		if m.wantAt.IsZero() || now.Before(m.wantAt) {
			m.wantAt = now
		}
		m.mu.Unlock()
		return
	}
	m.running = true
	m.wantAt = time.Time{}
	m.lastRound = now
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()

	next := m.round(now)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = false
	if m.closed {
		return
	}
	if !m.wantAt.IsZero() && m.wantAt.Before(next) {
		next = m.wantAt
	}
	m.wantAt = time.Time{}
	m.armLocked(next, false)
}

// round reads new halves, acts on the due ones and records the progress.
// It returns when the next round is wanted.
func (m *Manager) round(now time.Time) time.Time {
	if err := m.scan(); err != nil {
		m.log.Warn("reading half messages failed", "err", err)
	}
	if err := m.followOps(); err != nil {
		m.log.Warn("reading op records failed", "err", err)
	}
	next := m.process(now)
	m.saveProgress()
	return next
}

// task is one thing a round does to a half.
type task struct {
	h    *half
	kind taskKind
}

type taskKind int

const (
	taskCheck     taskKind = iota // ask the producer, re-store the half
	taskRoll                      // re-store the half unchanged, to let the progress move
	taskDiscard                   // checked MaxChecks times, or unusable: op record
	taskSupersede                 // an older live copy of a re-stored half: op record
)

// process acts on every half due at now and returns when the next one is
// due (at most CheckInterval away).
func (m *Manager) process(now time.Time) time.Time {
	nowMS := now.UnixMilli()
	interval := m.cfg.CheckInterval.Milliseconds()
	next := nowMS + interval
	if m.cfg.Standby != nil && m.cfg.Standby() {
		return time.UnixMilli(next)
	}
	var work []task
	m.mu.Lock()
	for _, t := range m.txns {
		if t.busy || len(t.halves) == 0 {
			continue
		}
		last := len(t.halves) - 1
		for _, h := range t.halves[:last] {
			work = append(work, task{h, taskSupersede})
		}
		h := t.halves[last]
		switch {
		case h.bad != "":
			work = append(work, task{h, taskDiscard})
		case h.due <= nowMS && h.checks >= m.cfg.MaxChecks:
			work = append(work, task{h, taskDiscard})
		case h.due <= nowMS:
			work = append(work, task{h, taskCheck})
		case h.storeMS+interval <= nowMS:
			// Waiting longer than an interval (a long immunity): move it
			// forward so that the progress offset does not stay behind it.
			work = append(work, task{h, taskRoll})
			next = min(next, h.due)
		default:
			next = min(next, h.due, h.storeMS+interval)
		}
	}
	m.mu.Unlock()
	// Oldest first, as Java walks the queue.
	slices.SortFunc(work, func(a, b task) int { return cmp.Compare(a.h.qo, b.h.qo) })
	for _, tk := range work {
		if m.isClosed() {
			break
		}
		switch tk.kind {
		case taskCheck:
			m.check(tk.h, nowMS)
		case taskRoll:
			m.roll(tk.h)
		case taskDiscard:
			m.drop(tk.h, true)
		case taskSupersede:
			m.drop(tk.h, false)
		}
	}
	return time.UnixMilli(next)
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// check asks the producer about h, then re-stores h with the check
// counted (or not, when no producer was online) and the next check one
// interval away, and marks h done.
func (m *Manager) check(h *half, nowMS int64) {
	rec, ok := m.readHalf(h)
	if !ok {
		return
	}
	checks := h.checks
	if m.chk(h.group, rec, h.qo) {
		checks++
	} else {
		m.log.Debug("no producer online for a transaction check", "group", h.group, "offset", h.qo)
	}
	due := nowMS + m.cfg.CheckInterval.Milliseconds()
	if !m.restore(h, rec, checks, due) {
		// Do not ask again before the interval is over.
		m.mu.Lock()
		h.due = max(h.due, due)
		m.mu.Unlock()
	}
}

// roll re-stores h unchanged.
func (m *Manager) roll(h *half) {
	if rec, ok := m.readHalf(h); ok {
		m.restore(h, rec, h.checks, h.due)
	}
}

// readHalf reads h's record. A record that retention removed is dropped
// from the state (there is nothing left to commit or check).
func (m *Manager) readHalf(h *half) (message.Record, bool) {
	rec, err := m.st.ReadMessage(h.clo)
	if err == nil {
		return rec, true
	}
	if h.clo >= m.st.CommitLogMinOffset() {
		m.log.Warn("reading a half message failed", "offset", h.qo, "commit_log_offset", h.clo, "err", err)
		return nil, false
	}
	t, ok := m.claim(h)
	if !ok {
		return nil, false
	}
	m.log.Warn("half message removed by retention before its transaction ended; forgetting it", "offset", h.qo, "group", h.group)
	m.mu.Lock()
	m.removeLocked(h)
	m.releaseLocked(t)
	m.mu.Unlock()
	return nil, false
}

// restore writes a copy of h (with checks and due) and an op record for
// h, in that order in one append, and swaps h for the copy in the state.
func (m *Manager) restore(h *half, rec message.Record, checks int, due int64) bool {
	cp, err := renewed(rec, h.origin, checks, due)
	if err != nil {
		// Cannot happen for a record the broker stored, unless the added
		// properties push it over the limit: nothing can be done with it.
		m.mu.Lock()
		h.bad = "cannot be re-stored: " + err.Error()
		m.mu.Unlock()
		m.drop(h, true)
		return true
	}
	t, ok := m.claim(h)
	if !ok {
		return true // ended meanwhile
	}
	op := opRecord(h.qo, m.clk.Now().UnixMilli(), m.host)
	err = m.put([]*message.Message{cp, op})
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.releaseLocked(t)
	if err != nil {
		m.log.Warn("re-storing a half message failed", "offset", h.qo, "group", h.group, "err", err)
		return false
	}
	m.removeLocked(h)
	m.addLocked(&half{qo: cp.QueueOffset, clo: cp.PhysicalOffset, storeMS: cp.StoreTimestamp,
		origin: h.origin, checks: checks, due: due, group: h.group})
	return true
}

// drop writes an op record for h and forgets it. discard says it was
// given up (logged at Warn); otherwise it was a superseded copy.
func (m *Manager) drop(h *half, discard bool) {
	t, ok := m.claim(h)
	if !ok {
		return
	}
	err := m.put([]*message.Message{opRecord(h.qo, m.clk.Now().UnixMilli(), m.host)})
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.releaseLocked(t)
	if err != nil {
		m.log.Warn("writing a transaction op record failed", "offset", h.qo, "group", h.group, "err", err)
		return
	}
	m.removeLocked(h)
	if discard {
		reason := h.bad
		if reason == "" {
			reason = fmt.Sprintf("checked %d times without an answer", h.checks)
		}
		m.log.Warn("discarding a transactional half message", "group", h.group, "offset", h.qo,
			"commit_log_offset", h.clo, "origin_offset", h.origin, "checks", h.checks, "reason", reason)
	}
}

// claim waits until h's transaction is not busy and marks it busy; false
// if h is no longer live (ended or re-stored meanwhile).
func (m *Manager) claim(h *half) (*txn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.live[h.qo] != h {
			return nil, false
		}
		if t := h.t; !t.busy {
			t.busy = true
			return t, true
		}
		m.cond.Wait()
	}
}

// releaseLocked ends a claim; an emptied transaction is closed.
func (m *Manager) releaseLocked(t *txn) {
	t.busy = false
	if len(t.halves) == 0 && m.txns[t.origin] == t {
		delete(m.txns, t.origin)
	}
	m.cond.Broadcast()
}

// addLocked makes h live in the transaction of its origin.
func (m *Manager) addLocked(h *half) {
	t := m.txns[h.origin]
	if t == nil {
		t = &txn{origin: h.origin}
		m.txns[h.origin] = t
	}
	h.t = t
	i := len(t.halves)
	for i > 0 && t.halves[i-1].qo > h.qo {
		i--
	}
	t.halves = append(t.halves, nil)
	copy(t.halves[i+1:], t.halves[i:])
	t.halves[i] = h
	m.live[h.qo] = h
}

// removeLocked forgets a live half that got its op record. The
// transaction is left in place (its claimer closes it if empty).
func (m *Manager) removeLocked(h *half) {
	if m.live[h.qo] != h {
		return
	}
	delete(m.live, h.qo)
	t := h.t
	for i, x := range t.halves {
		if x == h {
			t.halves = append(t.halves[:i], t.halves[i+1:]...)
			break
		}
	}
	if h.qo >= m.scanned {
		// Its op record may be read before the scan reaches it.
		m.doneAhead[h.qo] = struct{}{}
	}
}

// put stores records of the transaction topics (or a commit) in one
// append. A flush timeout counts as stored, as in Java: the records are
// written and will be durable (or lost with the rest of the log tail).
func (m *Manager) put(msgs []*message.Message) error {
	var err error
	if len(msgs) == 1 {
		err = m.st.Put(msgs[0])
	} else {
		err = m.st.PutBatch(msgs)
	}
	if errors.Is(err, store.ErrFlushTimeout) {
		m.log.Warn("transaction records not flushed in time; going on", "err", err)
		return nil
	}
	return err
}
