package checker

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// The model broker writes the history a correct broker and correct
// workloads would: producers whose sends end ok, fail or in doubt (an
// in-doubt send stored or not at random, sometimes retried under the same
// id), queues with contiguous offsets, clustering groups that deliver every
// stored message at least once (a consumer that crashes rewinds to its
// last committed offset, so duplicates come in runs), broadcast members
// that each see everything, ordered keys sent one at a time to one queue,
// delayed messages that reach their topic at their due time, half
// messages committed or rolled back as their producer intends (by
// END_TRANSACTION or by a check-back), faults interleaved, and after the
// heal a catch-up and a drain of every queue. Check must find it valid
// whatever the seed.

type modelConfig struct {
	Steps     int // producer and consumer steps before the drain
	Queues    int
	Producers int
	Consumers int
}

func defaultModel() modelConfig {
	return modelConfig{Steps: 400, Queues: 3, Producers: 2, Consumers: 2}
}

type stored struct {
	id  string
	sum uint32
}

type mtopic struct {
	name   string
	queues [][]stored
}

func (t *mtopic) put(q int, s stored) (int32, int64) {
	t.queues[q] = append(t.queues[q], s)
	return int32(q), int64(len(t.queues[q]) - 1)
}

// mgroup is a consumer group of one workload: a clustering group (one
// position per queue, each queue owned by one consumer) or broadcast
// members (a position per queue each).
type mgroup struct {
	broadcast bool
	members   []string
	owner     []int     // clustering: queue -> member
	pos       [][]int64 // [member or 0][queue] next offset to deliver
	committed [][]int64
}

type mwork struct {
	name  string
	topic *mtopic
	group *mgroup
	n     []int // per producer: messages sent
}

type timer struct {
	due time.Time
	q   int
	s   stored
}

type half struct {
	q      int
	s      stored
	intent string
	wl     *mwork
}

type model struct {
	r       *rand.Rand
	cfg     modelConfig
	now     time.Time
	ops     []history.Op
	works   []*mwork
	byName  map[string]*mwork
	timers  []timer
	halves  []half
	faults  int // open faults
	runID   string
	ordKeys map[string]int // ordered key -> next seq
}

func newModel(seed uint64, cfg modelConfig) *model {
	m := &model{
		r:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		cfg:     cfg,
		now:     t0,
		byName:  map[string]*mwork{},
		runID:   fmt.Sprintf("%08x", uint32(seed)),
		ordKeys: map[string]int{},
	}
	for _, name := range []string{"queue", "broadcast", "ordered", "delay", "txn"} {
		w := &mwork{name: name, topic: &mtopic{name: "verify-" + m.runID + "-" + name, queues: make([][]stored, cfg.Queues)},
			n: make([]int, cfg.Producers)}
		g := &mgroup{broadcast: name == "broadcast"}
		for c := 0; c < cfg.Consumers; c++ {
			g.members = append(g.members, fmt.Sprintf("%s-c%d", name, c))
		}
		rows := 1
		if g.broadcast {
			rows = cfg.Consumers
		}
		for i := 0; i < rows; i++ {
			g.pos = append(g.pos, make([]int64, cfg.Queues))
			g.committed = append(g.committed, make([]int64, cfg.Queues))
		}
		for q := 0; q < cfg.Queues; q++ {
			g.owner = append(g.owner, q%cfg.Consumers)
		}
		w.group = g
		m.works = append(m.works, w)
		m.byName[name] = w
	}
	return m
}

// emit appends a line at the current time, then lets 0..2 ms pass.
func (m *model) emit(op history.Op) {
	op.Index = int64(len(m.ops))
	op.Time = m.now
	m.ops = append(m.ops, op)
	m.now = m.now.Add(time.Duration(m.r.IntN(3)) * time.Millisecond)
}

func (m *model) phase(v string) {
	op := history.New(history.Info, history.Phase)
	op.Process, op.Value = "lead", v
	m.emit(op)
}

// history runs the model and returns its lines.
func (m *model) history() []history.Op {
	m.phase(history.PhaseWorkload)
	for _, w := range m.works {
		for p := 0; p < m.cfg.Producers; p++ {
			op := history.New(history.Info, history.Start)
			op.Workload, op.Process, op.Role = w.name, fmt.Sprintf("%s-p%d", w.name, p), history.RoleProducer
			m.emit(op)
		}
		for _, c := range w.group.members {
			op := history.New(history.Info, history.Start)
			op.Workload, op.Process, op.Role = w.name, c, history.RoleConsumer
			m.emit(op)
		}
	}
	for i := 0; i < m.cfg.Steps; i++ {
		m.tick()
		switch x := m.r.IntN(100); {
		case x < 40:
			m.send(m.works[m.r.IntN(len(m.works))], m.r.IntN(m.cfg.Producers))
		case x < 85:
			m.consume(m.works[m.r.IntN(len(m.works))])
		case x < 90:
			m.crash(m.works[m.r.IntN(len(m.works))])
		case x < 95:
			m.resolve(false)
		default:
			m.fault()
		}
	}
	for m.faults > 0 {
		m.heal()
	}
	m.phase(history.PhaseHealed)
	m.phase(history.PhaseDrain)
	// Every timer fires and every half is decided before the catch-up.
	for len(m.timers) > 0 {
		m.now = maxTime(m.now, m.timers[0].due)
		m.tick()
	}
	m.resolve(true)
	for _, w := range m.works {
		for row := range w.group.pos {
			for q := range w.topic.queues {
				for m.deliver(w, row, q) {
				}
			}
		}
	}
	for _, w := range m.works {
		for q, msgs := range w.topic.queues {
			for off, s := range msgs {
				op := history.New(history.Info, history.Drain)
				op.Workload, op.Process, op.ID, op.Topic, op.Queue, op.Offset, op.Sum = w.name, w.name+"-drain", s.id, w.topic.name, int32(q), int64(off), s.sum
				m.emit(op)
			}
		}
	}
	m.phase(history.PhaseDone)
	return m.ops
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// tick moves due timers to their topic, and sometimes lets time jump to
// the next due time exactly, so that deliveries at DeliverAt happen.
func (m *model) tick() {
	if len(m.timers) > 0 && m.r.IntN(4) == 0 && m.timers[0].due.After(m.now) {
		m.now = m.timers[0].due
	}
	for len(m.timers) > 0 && !m.timers[0].due.After(m.now) {
		t := m.timers[0]
		m.timers = m.timers[1:]
		m.byName["delay"].topic.put(t.q, t.s)
	}
}

func (m *model) send(w *mwork, p int) {
	w.n[p]++
	id := fmt.Sprintf("%s-%s-p%d-%d", m.runID, w.name, p, w.n[p])
	proc := fmt.Sprintf("%s-p%d", w.name, p)
	s := stored{id: id, sum: crc32.ChecksumIEEE([]byte(id + " body"))}
	inv := history.New(history.Invoke, history.Send)
	inv.Workload, inv.Process, inv.ID, inv.Topic, inv.Sum = w.name, proc, id, w.topic.name, s.sum
	q := m.r.IntN(m.cfg.Queues)
	switch w.name {
	case "ordered":
		// Each producer owns its keys and sends one at a time, so a key's
		// sends never overlap; a key maps to one queue.
		k := m.r.IntN(3)
		inv.Key = fmt.Sprintf("k%d-%d", p, k)
		m.ordKeys[inv.Key]++
		inv.Seq = int64(m.ordKeys[inv.Key])
		q = (p*3 + k) % m.cfg.Queues
	case "delay":
		inv.DeliverAt = m.now.Add(time.Duration(1+m.r.IntN(40)) * time.Millisecond)
	case "txn":
		inv.Txn = []string{history.Commit, history.Rollback, history.CheckCommit, history.CheckRollback}[m.r.IntN(4)]
	}
	for attempt := 0; ; attempt++ {
		m.emit(inv)
		// ok 70%, fail 10%, in doubt 20% (stored half the time).
		x := m.r.IntN(10)
		store := x < 7 || (x >= 8 && m.r.IntN(2) == 0)
		var qid int32 = -1
		var off int64 = -1
		if store {
			qid, off = m.store(w, q, s, inv)
		}
		out := history.New(history.OK, history.Send)
		switch {
		case x < 7:
			out.Queue, out.Offset = qid, off
		case x < 8:
			out.Type, out.Error = history.Fail, "refused"
		default:
			out.Type, out.Error = history.InDoubt, "timeout"
		}
		out.Workload, out.Process, out.ID, out.Latency = w.name, proc, id, time.Millisecond
		m.emit(out)
		if out.Type == history.OK && w.name == "txn" && (inv.Txn == history.Commit || inv.Txn == history.Rollback) {
			end := history.New(history.Invoke, history.EndTxn)
			end.Workload, end.Process, end.ID, end.Txn = w.name, proc, id, inv.Txn
			m.emit(end)
			end.Type = []history.Type{history.OK, history.OK, history.Fail, history.InDoubt}[m.r.IntN(4)]
			m.emit(end)
		}
		// An in-doubt send is retried under the same id now and then.
		if out.Type != history.InDoubt || attempt > 1 || m.r.IntN(2) == 0 {
			return
		}
	}
}

// store puts what a send stored where it goes: its queue, a timer, or a
// pending half.
func (m *model) store(w *mwork, q int, s stored, inv history.Op) (int32, int64) {
	switch w.name {
	case "delay":
		t := timer{due: inv.DeliverAt, q: q, s: s}
		i, _ := slices.BinarySearchFunc(m.timers, t, func(a, b timer) int { return a.due.Compare(b.due) })
		m.timers = slices.Insert(m.timers, i, t)
		return int32(q), -1
	case "txn":
		m.halves = append(m.halves, half{q: q, s: s, intent: inv.Txn, wl: w})
		return int32(q), -1
	}
	return w.topic.put(q, s)
}

// resolve decides pending halves: some of them, or all (the drain).
func (m *model) resolve(all bool) {
	var keep []half
	for _, h := range m.halves {
		if !all && m.r.IntN(2) == 0 {
			keep = append(keep, h)
			continue
		}
		if h.intent == history.CheckCommit || h.intent == history.CheckRollback || m.r.IntN(3) == 0 {
			op := history.New(history.Info, history.CheckTxn)
			op.Workload, op.Process, op.ID, op.Txn = "txn", "txn-p0", h.s.id, h.intent
			m.emit(op)
		}
		if h.intent == history.Commit || h.intent == history.CheckCommit {
			h.wl.topic.put(h.q, h.s)
		}
	}
	m.halves = keep
}

func (m *model) consume(w *mwork) {
	row := 0
	if w.group.broadcast {
		row = m.r.IntN(len(w.group.members))
	}
	q := m.r.IntN(m.cfg.Queues)
	for n := 1 + m.r.IntN(3); n > 0 && m.deliver(w, row, q); n-- {
	}
	if m.r.IntN(3) == 0 {
		w.group.committed[row][q] = w.group.pos[row][q]
	}
}

// deliver hands the next message of queue q to the group's row, if any.
func (m *model) deliver(w *mwork, row, q int) bool {
	g := w.group
	off := g.pos[row][q]
	if off >= int64(len(w.topic.queues[q])) {
		return false
	}
	s := w.topic.queues[q][off]
	proc := g.members[row]
	if !g.broadcast {
		proc = g.members[g.owner[q]]
	}
	op := history.New(history.Info, history.Deliver)
	op.Workload, op.Process, op.ID, op.Topic, op.Queue, op.Offset, op.Sum = w.name, proc, s.id, w.topic.name, int32(q), off, s.sum
	m.emit(op)
	g.pos[row][q]++
	return true
}

// crash makes a consumer restart from its committed offsets (and, in a
// clustering group, a queue move to another consumer).
func (m *model) crash(w *mwork) {
	g := w.group
	row := m.r.IntN(len(g.pos))
	copy(g.pos[row], g.committed[row])
	if !g.broadcast {
		q := m.r.IntN(m.cfg.Queues)
		g.owner[q] = m.r.IntN(len(g.members))
	}
}

func (m *model) fault() {
	if m.faults > 0 && m.r.IntN(2) == 0 {
		m.heal()
		return
	}
	op := history.New(history.Info, history.Fault)
	op.Process, op.Fault, op.Target = "nemesis", []string{"kill", "pause", "partition"}[m.r.IntN(3)], "broker-0"
	m.emit(op)
	m.faults++
}

func (m *model) heal() {
	op := history.New(history.Info, history.Heal)
	op.Process, op.Target = "nemesis", "broker-0"
	m.emit(op)
	m.faults--
}

func modelHistory(seed uint64, cfg modelConfig) []history.Op {
	return newModel(seed, cfg).history()
}
