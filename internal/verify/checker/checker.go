package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// DefaultMaxItems bounds each list of a Result when Options.MaxItems is 0.
const DefaultMaxItems = 100

// Options tune Check. The zero value is the default.
type Options struct {
	// MaxItems bounds every list of the Result (the counts stay exact):
	// 0 means DefaultMaxItems, a negative value no bound.
	MaxItems int
	// Broadcast names the workloads whose consumers are broadcasting
	// members, each of which must receive every message. Nil means
	// {"broadcast"}; an empty non-nil slice means none.
	Broadcast []string
}

// Counts are the figures of the whole history or of one workload; the
// package doc defines each.
type Counts struct {
	Sent          int `json:"sent"` // ids with a Send line
	Acked         int `json:"acked"`
	InDoubt       int `json:"in_doubt"`
	InDoubtStored int `json:"in_doubt_stored"`
	Failed        int `json:"failed"`

	Lost        int `json:"lost"`
	Undelivered int `json:"undelivered"`
	Unexpected  int `json:"unexpected"`

	Deliveries     int     `json:"deliveries"`
	Delivered      int     `json:"delivered"`
	Duplicated     int     `json:"duplicated"`
	DuplicateRatio float64 `json:"duplicate_ratio"`
	Drained        int     `json:"drained"` // distinct ids on Drain lines

	Reordered           int      `json:"reordered"`
	Early               int      `json:"early"`
	Lateness            Lateness `json:"lateness"`
	RolledBackDelivered int      `json:"rolled_back_delivered"`
	Corrupt             int      `json:"corrupt"`
	Holes               int      `json:"holes"`       // missing offsets
	HoleRanges          int      `json:"hole_ranges"` // runs of them
	// Diverged counts the broker groups whose replicas' logs differ below
	// the commit point (Compare lines with an Error); only in Total.
	Diverged int `json:"diverged"`
}

// Invalid reports whether any anomaly that decides the verdict is non-zero.
func (c Counts) Invalid() bool {
	return c.Lost+c.Undelivered+c.Unexpected+c.Reordered+c.Early+c.RolledBackDelivered+c.Corrupt+c.Holes+c.Diverged > 0
}

// Lateness summarises how late delayed messages were first delivered.
type Lateness struct {
	Count  int           `json:"count"`
	Median time.Duration `json:"median_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Workload is the Counts of one workload.
type Workload struct {
	Name string `json:"name"`
	Counts
}

// Miss is an acked message that a group, or a broadcast Member, never got.
type Miss struct {
	Workload string `json:"workload"`
	ID       string `json:"id"`
	Member   string `json:"member,omitempty"` // broadcast only
}

// Line points at one line of the history about a message.
type Line struct {
	Index    int64  `json:"index"` // the line's Op.Index
	Workload string `json:"workload"`
	Process  string `json:"process,omitempty"`
	ID       string `json:"id,omitempty"`
	// Why says what is wrong with it (corrupt lines: "flag", "no id",
	// "sum"); empty elsewhere.
	Why string `json:"why,omitempty"`
}

// Dup is a message delivered more than once to its group or Member.
type Dup struct {
	Workload   string `json:"workload"`
	ID         string `json:"id"`
	Member     string `json:"member,omitempty"` // broadcast only
	Deliveries int    `json:"deliveries"`
}

// Reorder is a pair of one key: Earlier was acked before Later was sent,
// yet Later was first delivered before Earlier.
type Reorder struct {
	Workload   string `json:"workload"`
	Key        string `json:"key"`
	Earlier    string `json:"earlier"`
	EarlierSeq int64  `json:"earlier_seq"`
	Later      string `json:"later"`
	LaterSeq   int64  `json:"later_seq"`
}

// Early is a delayed message's earliest delivery before its DeliverAt.
type Early struct {
	Line
	DeliverAt time.Time     `json:"deliver_at"`
	By        time.Duration `json:"by_ns"` // DeliverAt - the line's Time
}

// Hole is a run of offsets From..To (inclusive) of a queue that the drain
// did not find between offsets it did find.
type Hole struct {
	Workload string `json:"workload"`
	Topic    string `json:"topic"`
	Queue    int32  `json:"queue"`
	From     int64  `json:"from"`
	To       int64  `json:"to"`
}

// Result is the checker's verdict on a history. Total and each Workload
// carry exact counts; the lists hold at most Options.MaxItems entries
// each, in the order the field says.
type Result struct {
	Valid    bool     `json:"valid"`
	Reasons  []string `json:"reasons,omitempty"`
	Complete bool     `json:"complete"` // a Phase "done" line was seen
	Ops      int      `json:"ops"`      // lines checked

	Total     Counts     `json:"total"`
	Workloads []Workload `json:"workloads"` // by name

	Lost                []Miss    `json:"lost,omitempty"`                  // by first Send line, then member
	Undelivered         []Miss    `json:"undelivered,omitempty"`           // same
	Unexpected          []Line    `json:"unexpected,omitempty"`            // first line of each id
	Duplicated          []Dup     `json:"duplicated,omitempty"`            // by first Send line, then member
	Reordered           []Reorder `json:"reordered,omitempty"`             // by Earlier's first Send line
	Early               []Early   `json:"early,omitempty"`                 // by first Send line
	RolledBackDelivered []Line    `json:"rolled_back_delivered,omitempty"` // first Deliver/Drain line of each id
	Corrupt             []Line    `json:"corrupt,omitempty"`               // lines; for "sum", the first of a kind
	Holes               []Hole    `json:"holes,omitempty"`                 // by topic, queue, offset
	// Diverged are the Compare lines with an Error: a group whose
	// replicas' commit logs differ below its commit point (or could not
	// be compared), in line order.
	Diverged []Divergence `json:"diverged,omitempty"`
}

// Divergence is a broker group whose replicas' logs differ (the end-of-run
// comparison): Why names the replica and the first differing offset.
type Divergence struct {
	Index int64  `json:"index"`
	Group string `json:"group"`
	Why   string `json:"why"`
}

// Workload returns the counts of the named workload.
func (r *Result) Workload(name string) (Counts, bool) {
	i, ok := slices.BinarySearchFunc(r.Workloads, name, func(w Workload, n string) int { return strings.Compare(w.Name, n) })
	if !ok {
		return Counts{}, false
	}
	return r.Workloads[i].Counts, true
}

// slot is the deliveries of one message to one group or broadcast member.
type slot struct {
	wl, member string
	n          int
}

// recv is the Deliver/Drain lines of one message that carried one sum
// (corrupt-flagged lines aside), kept to check the sums once every Send
// line is known.
type recv struct {
	sum   uint32
	wl    string
	n     int
	first int // line position
}

// msg is everything the checker learns about one id.
type msg struct {
	id string
	// send
	sendLines             int
	invokes, fails, doubt int
	oks                   int
	firstSend             int // position of the first Send line, -1
	firstInv, firstOK     int // positions, -1
	wl, topic, key, txn   string
	seq                   int64
	deliverAt             time.Time
	sums                  few[uint32]
	// receive
	slots        few[slot]
	firstDel     int // position of the first Deliver line, -1
	firstDelTime time.Time
	earliest     int // position of the Deliver line with the least Time, -1
	earliestTime time.Time
	drained      int
	firstDrain   int // position of the first Drain line, -1
	firstSeen    int // position of the first Deliver or Drain line, -1
	recvs        few[recv]
}

func (m *msg) delivered() bool { return m.firstDel >= 0 }

func (m *msg) slotOf(wl, member string) *slot {
	for i := range m.slots.n {
		if sl := m.slots.at(i); sl.wl == wl && sl.member == member {
			return sl
		}
	}
	return nil
}

func (m *msg) sentWith(sum uint32) bool {
	for i := range m.sums.n {
		if *m.sums.at(i) == sum {
			return true
		}
	}
	return false
}

// few holds a message's slots, sums or receipts: almost always one, so the
// first is kept inline and only the others allocate.
type few[T any] struct {
	n     int
	first T
	rest  []T
}

func (f *few[T]) at(i int) *T {
	if i == 0 {
		return &f.first
	}
	return &f.rest[i-1]
}

func (f *few[T]) add(v T) {
	if f.n == 0 {
		f.first = v
	} else {
		f.rest = append(f.rest, v)
	}
	f.n++
}

func rolledBack(txn string) bool { return txn == history.Rollback || txn == history.CheckRollback }

type queueKey struct {
	topic string
	queue int32
}

type drainQueue struct {
	wl      string
	offsets []int64
}

type state struct {
	ops       []history.Op
	max       int
	broadcast map[string]bool
	ids       map[string]int32
	msgs      []msg
	members   map[string]map[string]struct{} // broadcast workload -> members
	queues    map[queueKey]*drainQueue
	counts    map[string]*Counts
	res       Result
}

// Check checks a history with the default Options.
func Check(ops []history.Op) Result { return CheckWith(ops, Options{}) }

// CheckWith checks a history. It does not modify ops and keeps no
// reference to it; the Result's slices are its own.
func CheckWith(ops []history.Op, o Options) Result {
	s := &state{
		ops:       ops,
		max:       o.MaxItems,
		broadcast: map[string]bool{},
		// A history has a few lines per message (send, ack, delivery,
		// drain): sized so that neither grows in the common case.
		ids:     make(map[string]int32, len(ops)/3+1),
		msgs:    make([]msg, 0, len(ops)/3+1),
		members: map[string]map[string]struct{}{},
		queues:  map[queueKey]*drainQueue{},
		counts:  map[string]*Counts{},
	}
	if s.max == 0 {
		s.max = DefaultMaxItems
	}
	if o.Broadcast == nil {
		s.broadcast["broadcast"] = true
	}
	for _, w := range o.Broadcast {
		s.broadcast[w] = true
	}
	s.res.Ops = len(ops)
	s.scan()
	s.judge()
	s.holes()
	s.finish()
	return s.res
}

func (s *state) wl(name string) *Counts {
	c := s.counts[name]
	if c == nil {
		c = &Counts{}
		s.counts[name] = c
	}
	return c
}

func (s *state) msg(id string) *msg {
	if i, ok := s.ids[id]; ok {
		return &s.msgs[i]
	}
	s.ids[id] = int32(len(s.msgs))
	s.msgs = append(s.msgs, msg{id: id, firstSend: -1, firstInv: -1, firstOK: -1, firstDel: -1, earliest: -1, firstDrain: -1, firstSeen: -1})
	return &s.msgs[len(s.msgs)-1]
}

func (s *state) member(wl, p string) {
	m := s.members[wl]
	if m == nil {
		m = map[string]struct{}{}
		s.members[wl] = m
	}
	m[p] = struct{}{}
}

func (s *state) line(pos int, why string) Line {
	op := &s.ops[pos]
	return Line{Index: op.Index, Workload: op.Workload, Process: op.Process, ID: op.ID, Why: why}
}

// scan is the pass over the lines: it folds every line into its message.
func (s *state) scan() {
	for pos := range s.ops {
		op := &s.ops[pos]
		switch op.F {
		case history.Send:
			if op.ID == "" {
				continue
			}
			s.send(pos, op)
		case history.Deliver, history.Drain:
			s.receive(pos, op)
		case history.Start:
			if op.Role == history.RoleConsumer && s.broadcast[op.Workload] {
				s.member(op.Workload, op.Process)
			}
		case history.Phase:
			if op.Type == history.Info && op.Value == history.PhaseDone {
				s.res.Complete = true
			}
		case history.Compare:
			if op.Error != "" {
				s.res.Total.Diverged++
				s.res.Diverged = append(s.res.Diverged, Divergence{Index: op.Index, Group: op.Group, Why: op.Error})
			}
		}
	}
}

func (s *state) send(pos int, op *history.Op) {
	m := s.msg(op.ID)
	m.sendLines++
	if m.firstSend < 0 {
		m.firstSend = pos
	}
	switch op.Type {
	case history.Invoke:
		m.invokes++
		if m.firstInv < 0 {
			m.firstInv = pos
			m.wl, m.topic, m.key, m.txn, m.seq, m.deliverAt = op.Workload, op.Topic, op.Key, op.Txn, op.Seq, op.DeliverAt
		}
		if !m.sentWith(op.Sum) {
			m.sums.add(op.Sum)
		}
	case history.OK:
		m.oks++
		if m.firstOK < 0 {
			m.firstOK = pos
		}
	case history.Fail:
		m.fails++
	case history.InDoubt:
		m.doubt++
	}
	if m.firstInv < 0 && m.wl == "" {
		m.wl = op.Workload // outcome lines without an Invoke: best we know
	}
}

func (s *state) receive(pos int, op *history.Op) {
	if op.F == history.Drain && op.Queue >= 0 && op.Offset >= 0 {
		k := queueKey{op.Topic, op.Queue}
		q := s.queues[k]
		if q == nil {
			q = &drainQueue{wl: op.Workload}
			s.queues[k] = q
		}
		q.offsets = append(q.offsets, op.Offset)
	}
	member := ""
	if op.F == history.Deliver && s.broadcast[op.Workload] {
		member = op.Process
		s.member(op.Workload, op.Process)
	}
	if op.ID == "" || op.Corrupt {
		why := "flag"
		if op.ID == "" {
			why = "no id"
		}
		s.wl(op.Workload).Corrupt++
		if s.max < 0 || len(s.res.Corrupt) < s.max {
			s.res.Corrupt = append(s.res.Corrupt, s.line(pos, why))
		}
		if op.ID == "" {
			return
		}
	}
	m := s.msg(op.ID)
	if m.firstSeen < 0 {
		m.firstSeen = pos
	}
	if !op.Corrupt {
		found := false
		for i := range m.recvs.n {
			if r := m.recvs.at(i); r.sum == op.Sum && r.wl == op.Workload {
				r.n++
				found = true
				break
			}
		}
		if !found {
			m.recvs.add(recv{sum: op.Sum, wl: op.Workload, n: 1, first: pos})
		}
	}
	if op.F == history.Drain {
		m.drained++
		if m.firstDrain < 0 {
			m.firstDrain = pos
		}
		return
	}
	if sl := m.slotOf(op.Workload, member); sl != nil {
		sl.n++
	} else {
		m.slots.add(slot{wl: op.Workload, member: member, n: 1})
	}
	if m.firstDel < 0 {
		m.firstDel, m.firstDelTime = pos, op.Time
	}
	if m.earliest < 0 || op.Time.Before(m.earliestTime) {
		m.earliest, m.earliestTime = pos, op.Time
	}
}

// judge is the pass over the messages.
func (s *state) judge() {
	byKey := map[[2]string][]*msg{}
	var lateness = map[string][]time.Duration{}
	var lost, undelivered []missAt
	var dups []dupAt
	var early []earlyAt
	var unexpected, rolled []Line
	for i := range s.msgs {
		m := &s.msgs[i]
		for j := range m.slots.n {
			sl := m.slots.at(j)
			c := s.wl(sl.wl)
			c.Deliveries += sl.n
			c.Delivered++
			if sl.n > 1 {
				c.Duplicated++
				if m.sendLines > 0 {
					dups = append(dups, dupAt{m.firstSend, Dup{Workload: sl.wl, ID: m.id, Member: sl.member, Deliveries: sl.n}})
				} else {
					dups = append(dups, dupAt{m.firstSeen, Dup{Workload: sl.wl, ID: m.id, Member: sl.member, Deliveries: sl.n}})
				}
			}
		}
		if m.drained > 0 {
			s.wl(s.ops[m.firstDrain].Workload).Drained++
		}
		if m.invokes == 0 && m.firstSeen >= 0 {
			s.wl(s.ops[m.firstSeen].Workload).Unexpected++
			unexpected = append(unexpected, s.line(m.firstSeen, ""))
		} else if m.invokes > 0 {
			s.sums(m)
		}
		if m.sendLines == 0 {
			continue
		}
		c := s.wl(m.wl)
		c.Sent++
		stored := m.firstSeen >= 0
		switch {
		case m.oks > 0:
			c.Acked++
		case m.doubt > 0 || m.invokes > m.fails+m.doubt:
			c.InDoubt++
			if stored {
				c.InDoubtStored++
			}
		default:
			c.Failed++
		}
		if rolledBack(m.txn) {
			if stored {
				c.RolledBackDelivered++
				rolled = append(rolled, s.line(m.firstSeen, ""))
			}
		} else if m.oks > 0 {
			s.arrival(m, c, &lost, &undelivered)
		}
		if m.oks > 0 && m.key != "" && m.firstInv >= 0 {
			k := [2]string{m.wl, m.key}
			byKey[k] = append(byKey[k], m)
		}
		if !m.deliverAt.IsZero() && m.delivered() {
			lateness[m.wl] = append(lateness[m.wl], m.firstDelTime.Sub(m.deliverAt))
			if m.earliestTime.Before(m.deliverAt) {
				c.Early++
				early = append(early, earlyAt{m.firstSend, Early{Line: s.line(m.earliest, ""), DeliverAt: m.deliverAt, By: m.deliverAt.Sub(m.earliestTime)}})
			}
		}
	}
	s.res.Lost = sortedMiss(lost, s.max)
	s.res.Undelivered = sortedMiss(undelivered, s.max)
	slices.SortFunc(dups, func(a, b dupAt) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), strings.Compare(a.d.Workload, b.d.Workload), strings.Compare(a.d.Member, b.d.Member))
	})
	for _, d := range bound(dups, s.max) {
		s.res.Duplicated = append(s.res.Duplicated, d.d)
	}
	slices.SortFunc(early, func(a, b earlyAt) int { return cmp.Compare(a.pos, b.pos) })
	for _, e := range bound(early, s.max) {
		s.res.Early = append(s.res.Early, e.e)
	}
	slices.SortFunc(unexpected, compareLines)
	s.res.Unexpected = bound(unexpected, s.max)
	slices.SortFunc(rolled, compareLines)
	s.res.RolledBackDelivered = bound(rolled, s.max)
	s.order(byKey)
	for wl, l := range lateness {
		s.wl(wl).Lateness = summarize(l)
	}
	var all []time.Duration
	for _, l := range lateness {
		all = append(all, l...)
	}
	s.res.Total.Lateness = summarize(all)
}

type missAt struct {
	pos int
	m   Miss
}

type dupAt struct {
	pos int
	d   Dup
}

type earlyAt struct {
	pos int
	e   Early
}

// arrival checks that an acked message reached its group or every member.
func (s *state) arrival(m *msg, c *Counts, lost, undelivered *[]missAt) {
	miss := func(member string) {
		x := missAt{m.firstSend, Miss{Workload: m.wl, ID: m.id, Member: member}}
		if m.drained > 0 {
			c.Undelivered++
			*undelivered = append(*undelivered, x)
		} else {
			c.Lost++
			*lost = append(*lost, x)
		}
	}
	if !s.broadcast[m.wl] {
		if m.slotOf(m.wl, "") == nil {
			miss("")
		}
		return
	}
	members := s.members[m.wl]
	if len(members) == 0 {
		miss("")
		return
	}
	for p := range members {
		if m.slotOf(m.wl, p) == nil {
			miss(p)
		}
	}
}

// sums finds the Deliver/Drain lines whose sum the message was never sent
// with.
func (s *state) sums(m *msg) {
	for i := range m.recvs.n {
		r := m.recvs.at(i)
		if m.sentWith(r.sum) {
			continue
		}
		s.wl(r.wl).Corrupt += r.n
		s.res.Corrupt = append(s.res.Corrupt, s.line(r.first, "sum"))
	}
}

// order runs the reorder check of each key.
func (s *state) order(byKey map[[2]string][]*msg) {
	var pairs []reorderAt
	for k, ms := range byKey {
		// By first Invoke: the b sent after a's ack are a suffix.
		slices.SortFunc(ms, func(a, b *msg) int { return cmp.Compare(a.firstInv, b.firstInv) })
		n := len(ms)
		// sufMin[i]: the message among ms[i:] first delivered (nil if none).
		sufMin := make([]*msg, n+1)
		for i := n - 1; i >= 0; i-- {
			sufMin[i] = sufMin[i+1]
			if ms[i].delivered() && (sufMin[i] == nil || ms[i].firstDel < sufMin[i].firstDel) {
				sufMin[i] = ms[i]
			}
		}
		for _, a := range ms {
			if !a.delivered() {
				continue
			}
			j, _ := slices.BinarySearchFunc(ms, a.firstOK, func(m *msg, ok int) int {
				if m.firstInv > ok {
					return 1
				}
				return -1
			})
			b := sufMin[j]
			if b == nil || b.firstDel >= a.firstDel {
				continue
			}
			s.wl(k[0]).Reordered++
			pairs = append(pairs, reorderAt{a.firstSend, Reorder{Workload: k[0], Key: k[1], Earlier: a.id, EarlierSeq: a.seq, Later: b.id, LaterSeq: b.seq}})
		}
	}
	slices.SortFunc(pairs, func(a, b reorderAt) int { return cmp.Compare(a.pos, b.pos) })
	for _, p := range bound(pairs, s.max) {
		s.res.Reordered = append(s.res.Reordered, p.r)
	}
}

type reorderAt struct {
	pos int
	r   Reorder
}

// holes finds the offsets the drain skipped in each queue.
func (s *state) holes() {
	var holes []Hole
	for k, q := range s.queues {
		slices.Sort(q.offsets)
		q.offsets = slices.Compact(q.offsets)
		c := s.wl(q.wl)
		for i := 1; i < len(q.offsets); i++ {
			prev, cur := q.offsets[i-1], q.offsets[i]
			if cur == prev+1 {
				continue
			}
			// A gap wider than 2^31 offsets is a broken history, not a
			// count to add up (and overflow).
			c.Holes += int(min(cur-prev-1, math.MaxInt32))
			c.HoleRanges++
			holes = append(holes, Hole{Workload: q.wl, Topic: k.topic, Queue: k.queue, From: prev + 1, To: cur - 1})
		}
	}
	slices.SortFunc(holes, func(a, b Hole) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.From, b.From))
	})
	s.res.Holes = bound(holes, s.max)
}

// finish sums the workloads into the total and writes the verdict.
func (s *state) finish() {
	slices.SortFunc(s.res.Corrupt, compareLines)
	s.res.Corrupt = bound(s.res.Corrupt, s.max)
	names := make([]string, 0, len(s.counts))
	for n := range s.counts {
		names = append(names, n)
	}
	slices.Sort(names)
	t := &s.res.Total
	for _, n := range names {
		c := s.counts[n]
		c.DuplicateRatio = ratio(c.Deliveries, c.Delivered)
		s.res.Workloads = append(s.res.Workloads, Workload{Name: n, Counts: *c})
		t.Sent += c.Sent
		t.Acked += c.Acked
		t.InDoubt += c.InDoubt
		t.InDoubtStored += c.InDoubtStored
		t.Failed += c.Failed
		t.Lost += c.Lost
		t.Undelivered += c.Undelivered
		t.Unexpected += c.Unexpected
		t.Deliveries += c.Deliveries
		t.Delivered += c.Delivered
		t.Duplicated += c.Duplicated
		t.Drained += c.Drained
		t.Reordered += c.Reordered
		t.Early += c.Early
		t.RolledBackDelivered += c.RolledBackDelivered
		t.Corrupt += c.Corrupt
		t.Holes += c.Holes
		t.HoleRanges += c.HoleRanges
	}
	t.DuplicateRatio = ratio(t.Deliveries, t.Delivered)
	s.res.Diverged = bound(s.res.Diverged, s.max)
	s.res.Valid = !t.Invalid()
	s.res.Reasons = s.reasons()
}

func (s *state) reasons() []string {
	r := &s.res
	t := r.Total
	var out []string
	add := func(n int, what string, eg []string) {
		if n == 0 {
			return
		}
		msg := fmt.Sprintf("%d %s", n, what)
		if len(eg) > 0 {
			msg += " (e.g. " + strings.Join(eg, ", ") + ")"
		}
		out = append(out, msg)
	}
	const egs = 3
	missIDs := func(ms []Miss) []string {
		var ids []string
		for _, m := range bound(ms, egs) {
			if m.Member != "" {
				ids = append(ids, m.ID+" at "+m.Member)
			} else {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	lineIDs := func(ls []Line) []string {
		var ids []string
		for _, l := range bound(ls, egs) {
			if l.ID != "" {
				ids = append(ids, l.ID)
			} else {
				ids = append(ids, fmt.Sprintf("line %d", l.Index))
			}
		}
		return ids
	}
	add(t.Lost, "lost: acked, never delivered and not in the log", missIDs(r.Lost))
	var dv []string
	for _, d := range bound(r.Diverged, egs) {
		dv = append(dv, d.Why)
	}
	add(t.Diverged, "diverged: replicas' logs differ below the commit point", dv)
	add(t.Undelivered, "undelivered: acked and in the log, never delivered", missIDs(r.Undelivered))
	add(t.Unexpected, "unexpected: delivered or in the log, never sent", lineIDs(r.Unexpected))
	var ro []string
	for _, p := range bound(r.Reordered, egs) {
		ro = append(ro, fmt.Sprintf("key %s: %s after %s", p.Key, p.Earlier, p.Later))
	}
	add(t.Reordered, "reordered: first delivered after a message of its key sent after its ack", ro)
	var ea []string
	for _, e := range bound(r.Early, egs) {
		ea = append(ea, fmt.Sprintf("%s by %s", e.ID, e.By))
	}
	add(t.Early, "early: delivered before their delivery time", ea)
	add(t.RolledBackDelivered, "rolled back, yet delivered or in the log", lineIDs(r.RolledBackDelivered))
	add(t.Corrupt, "corrupt deliveries or log reads", lineIDs(r.Corrupt))
	var ho []string
	for _, h := range bound(r.Holes, egs) {
		ho = append(ho, fmt.Sprintf("%s/%d %d..%d", h.Topic, h.Queue, h.From, h.To))
	}
	add(t.Holes, "offsets missing from the log", ho)
	return out
}

// compareLines orders Lines by Index, and the rest of their fields where
// a history repeats an Index, so that the order never depends on a map's.
func compareLines(a, b Line) int {
	return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.ID, b.ID), strings.Compare(a.Why, b.Why),
		strings.Compare(a.Workload, b.Workload), strings.Compare(a.Process, b.Process))
}

func sortedMiss(ms []missAt, max int) []Miss {
	slices.SortFunc(ms, func(a, b missAt) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), strings.Compare(a.m.Member, b.m.Member))
	})
	var out []Miss
	for _, m := range bound(ms, max) {
		out = append(out, m.m)
	}
	return out
}

// bound cuts s to max entries (no cut when max < 0).
func bound[T any](s []T, max int) []T {
	if max >= 0 && len(s) > max {
		return s[:max:max]
	}
	return s
}

func ratio(deliveries, delivered int) float64 {
	if delivered == 0 {
		return 0
	}
	return float64(deliveries-delivered) / float64(delivered)
}

// summarize returns the nearest-rank median, p99 and the max of l (which
// it sorts).
func summarize(l []time.Duration) Lateness {
	if len(l) == 0 {
		return Lateness{}
	}
	slices.Sort(l)
	rank := func(p float64) time.Duration {
		r := int(math.Ceil(p * float64(len(l))))
		return l[max(r, 1)-1]
	}
	return Lateness{Count: len(l), Median: rank(0.5), P99: rank(0.99), Max: l[len(l)-1]}
}
