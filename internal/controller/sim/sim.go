package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Break names a rule the simulation deliberately breaks, to show that its
// invariants catch the bug (TestBrokenRulesAreCaught).
type Break uint8

// The breakable rules.
const (
	// BreakNone: every rule holds.
	BreakNone Break = iota
	// ElectOutsideISR: the controller's election treats every live
	// registered replica as in sync (and commits it as an unclean
	// election).
	ElectOutsideISR
	// AckWithoutLease: the master neither admits nor answers sends by its
	// lease.
	AckWithoutLease
	// SkipLeaseWait: the controller elects once the master's session timed
	// out without LeaseSurelyExpired; it runs with a session timeout below
	// the lease bound (with Validate's T_s ≥ T_l·(1+ρ)+ε the session timeout
	// alone implies the lease wait, which is the point of that rule).
	SkipLeaseWait
	// SkipLeaderWait: a new controller leader declares masters it has not
	// heard from dead at once instead of waiting out its predecessor's
	// lease bound, counting the bound only from its own grants (its soft
	// state is empty, so a predecessor's grants are forgotten).
	SkipLeaderWait
	// HWIgnoresISR: the master's commit point is its own durable end, as if
	// no slave had to hold a record before its ack.
	HWIgnoresISR
	// SkipDivergenceCheck: the master serves a follower's fetch without
	// checking that the follower's log is a prefix of its own.
	SkipDivergenceCheck
	// QueueOffsetsFromMemory: a new master keeps the per-queue next offsets
	// it had in memory instead of rebuilding them from its log.
	QueueOffsetsFromMemory
	// RestartKeepsEpoch: a master that restarted and registered again (fsm
	// keeps it the master of its epoch) takes writes again in that epoch,
	// though its lost unsynced tail may live on in a slave's log under the
	// same epoch.
	RestartKeepsEpoch
	// ISRAddAfterCommit: the master counts a replica it proposes to add to
	// the in-sync set only once the controller committed it (the
	// "maximal ISR" rule skipped): the committed set then holds a replica
	// the commit point did not wait for.
	ISRAddAfterCommit
	// ISRRevertOnError: when an AlterISR gets no answer in time, the master
	// stops counting the additions it proposed, though the proposal may
	// still commit (or have committed).
	ISRRevertOnError
	// JoinByLag: the master proposes to add a slave as soon as the
	// tracker's lag rules find it in sync, without the join rule's durable
	// ≥ HW (replication.md §2.7).
	JoinByLag
	// VoteWithoutSilence: voters vote as soon as the leader is lost (as a
	// restarted voter would without NewRaft's wait), so a successor may
	// start at once, while the new leader still counts ElectionSilence
	// before its start as covered: it replaces a master it has not heard
	// from while that master's lease may still run.
	VoteWithoutSilence
	numBreaks
)

var breakNames = [...]string{"none", "ElectOutsideISR", "AckWithoutLease", "SkipLeaseWait", "SkipLeaderWait",
	"HWIgnoresISR", "SkipDivergenceCheck", "QueueOffsetsFromMemory", "RestartKeepsEpoch", "ISRAddAfterCommit", "ISRRevertOnError", "JoinByLag",
	"VoteWithoutSilence"}

func (b Break) String() string {
	if int(b) < len(breakNames) {
		return breakNames[b]
	}
	return fmt.Sprintf("Break(%d)", uint8(b))
}

// Options configure one run. The zero value of a field takes the default.
type Options struct {
	Seed uint64
	// Replicas in the group: 2 or 3; 0 picks one from the seed.
	Replicas int
	// Faults is how long faults are injected (default 15 s of simulated
	// time); Heal how long the run continues with every fault healed
	// (default 8 s). At the end of Heal the final checks run.
	Faults, Heal time.Duration
	Break        Break
	// Trace keeps the last events in Result.Trace.
	Trace bool
	// Literal models FAILOVER-API.md to the letter where it leaves a group
	// stuck: a master that restarts stays the master of its epoch and the
	// broker (promoting only at a higher epoch) never writes again until
	// another fault moves the master; a first Register whose answer is lost
	// is retried as a new replica, leaving a phantom one (the master, when
	// it was the group's first). By default the model applies the fixes it
	// proposes instead (package doc, "Beyond the contract"); safety holds
	// either way, liveness only with them.
	Literal bool

	// Timing (defaults: FAILOVER-API.md).
	Heartbeat      time.Duration // 500 ms
	Lease          time.Duration // 3 s
	SessionTimeout time.Duration // 4 s
	Drift          float64       // 0.05: any two clocks' rates differ by at most this factor
	Margin         time.Duration // 200 ms
	// ElectionSilence: raft's heartbeat timeout, the least time between a
	// lost leader's last grant and its successor's start (1 s); the
	// successor comes 1–2 of it after the loss.
	ElectionSilence time.Duration
	SyncTimeout     time.Duration // 3 s: a send not acked by then is in doubt
	LagTime         time.Duration // 2 s: a slave not caught up for this long falls out of sync
	SendEvery       time.Duration // 300 ms (150 ms with a Break): the mean time between two sends
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Faults, 15*time.Second)
	def(&o.Heal, 8*time.Second)
	def(&o.Heartbeat, 500*time.Millisecond)
	def(&o.Lease, 3*time.Second)
	def(&o.SessionTimeout, 4*time.Second)
	def(&o.Margin, 200*time.Millisecond)
	def(&o.ElectionSilence, time.Second)
	def(&o.SyncTimeout, 3*time.Second)
	def(&o.LagTime, 2*time.Second)
	if o.Break != BreakNone {
		// Twice the sends: more acks land in the windows the rules guard
		// (and -seed=N -break=X replays what TestBrokenRulesAreCaught ran).
		def(&o.SendEvery, 150*time.Millisecond)
	}
	def(&o.SendEvery, 300*time.Millisecond)
	if o.Drift == 0 {
		o.Drift = 0.05
	}
	if o.Break == SkipLeaseWait {
		o.SessionTimeout = 1500 * time.Millisecond
	}
	return o
}

// Result is what one run did.
type Result struct {
	Seed      uint64
	Replicas  int
	Events    int // events processed
	Sends     int // sends a master admitted
	Acked     int // SEND_OK answers
	InDoubt   int // admitted sends not acked (timeout, lease, crash)
	Elections int // elections the controller committed
	Truncated int // records truncated by followers
	Faults    int
	// AckedAfterHeal: sends acked during the heal phase (0 means writes did
	// not come back once every fault was healed).
	AckedAfterHeal int
	// Err is the first invariant violation (a *Violation), or nil.
	Err error
	// Trace is the run's last events (with Options.Trace).
	Trace []string
}

// Violation is a broken invariant, with the run's recent history.
type Violation struct {
	Seed      uint64
	At        time.Duration // simulated time since the start
	Break     Break
	Invariant string
	Detail    string
	Trace     []string
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: seed %d at %v: %s: %s\nreproduce: go test ./internal/controller/sim -run 'TestSim$' -seed=%d -v",
		v.Seed, v.At, v.Invariant, v.Detail, v.Seed)
	if v.Break != BreakNone {
		fmt.Fprintf(&b, " -break=%v", v.Break)
	}
	if len(v.Trace) > 0 {
		b.WriteString("\nrecent events:")
		for _, l := range v.Trace {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// event is one scheduled step of the world.
type event struct {
	at  int64 // true time, ns
	seq uint64
	fn  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// vclock is a node's own clock: local = base + rate·true, with a rate
// within the drift bound.
type vclock struct {
	base int64
	rate float64
}

func (c vclock) local(t int64) int64 { return c.base + int64(float64(t)*c.rate) }

// trueAt is the true time at which the clock reads l.
func (c vclock) trueAt(l int64) int64 { return int64(float64(l-c.base) / c.rate) }

// world is one simulation: every node, the network and the checker, run by
// one goroutine from one seeded random source.
type world struct {
	o   Options
	rng *rand.Rand
	now int64 // true time, ns
	q   eventQueue
	seq uint64

	brokers []*broker
	ctl     *controller
	net     *network
	chk     *checker

	nextMsgID uint64
	res       Result
	err       *Violation
	trace     [48]string
	traceN    int
	healed    bool
}

// Run runs one simulation and returns what it did; Result.Err is the first
// invariant that broke.
func Run(o Options) Result {
	o = o.withDefaults()
	w := &world{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
	if o.Replicas == 0 {
		o.Replicas = 2 + w.rng.IntN(2)
		w.o.Replicas = o.Replicas
	}
	w.res.Seed, w.res.Replicas = o.Seed, o.Replicas
	w.net = newNetwork(w)
	w.chk = newChecker(w)
	w.ctl = newController(w)
	for i := range o.Replicas {
		w.brokers = append(w.brokers, newBroker(w, i+1))
	}
	for _, b := range w.brokers {
		b.start(int64(w.rng.IntN(300)) * int64(time.Millisecond))
	}
	w.ctl.start()
	w.scheduleProducer()
	w.scheduleFaults()
	end := int64(o.Faults + o.Heal)
	w.at(int64(o.Faults), w.healAll)
	for w.err == nil && len(w.q) > 0 {
		e := heap.Pop(&w.q).(*event)
		if e.at > end {
			break
		}
		w.now = e.at
		w.res.Events++
		e.fn()
	}
	if w.err == nil {
		w.now = end
		w.chk.final()
	}
	if w.err != nil {
		w.res.Err = w.err
	}
	if o.Trace {
		w.res.Trace = w.recent()
	}
	return w.res
}

// at schedules fn at true time t (not before now).
func (w *world) at(t int64, fn func()) {
	if t < w.now {
		t = w.now
	}
	w.seq++
	heap.Push(&w.q, &event{at: t, seq: w.seq, fn: fn})
}

func (w *world) after(d int64, fn func()) { w.at(w.now+d, fn) }

// dur returns a random duration in [lo, hi).
func (w *world) dur(lo, hi time.Duration) int64 {
	if hi <= lo {
		return int64(lo)
	}
	return int64(lo) + w.rng.Int64N(int64(hi-lo))
}

func (w *world) chance(p float64) bool { return w.rng.Float64() < p }

// newClock returns a clock whose rate lies in [1/√(1+ρ), √(1+ρ)], so that
// any two clocks' rates differ by at most the factor 1+ρ the controller
// assumes.
func (w *world) newClock() vclock {
	s := sqrt1p(w.o.Drift)
	lo, hi := 1/s, s
	return vclock{base: w.rng.Int64N(int64(1000 * time.Hour)), rate: lo + (hi-lo)*w.rng.Float64()}
}

func sqrt1p(x float64) float64 {
	// Newton's method for √(1+x): no math import needed for one root.
	v := 1 + x/2
	for range 8 {
		v = (v + (1+x)/v) / 2
	}
	return v
}

// logf records a line of the run's history (kept: the last 48).
func (w *world) logf(format string, args ...any) {
	w.trace[w.traceN%len(w.trace)] = fmt.Sprintf("%8.3fs ", float64(w.now)/1e9) + fmt.Sprintf(format, args...)
	w.traceN++
}

func (w *world) recent() []string {
	n := min(w.traceN, len(w.trace))
	out := make([]string, 0, n)
	for i := w.traceN - n; i < w.traceN; i++ {
		out = append(out, w.trace[i%len(w.trace)])
	}
	return out
}

// fail records the first violation; the run stops after the current event.
func (w *world) fail(invariant, format string, args ...any) {
	if w.err != nil {
		return
	}
	w.err = &Violation{Seed: w.o.Seed, Break: w.o.Break, At: time.Duration(w.now), Invariant: invariant,
		Detail: fmt.Sprintf(format, args...), Trace: w.recent()}
}

// scheduleProducer sends a message every SendEvery (on average) to a node a client would
// pick: usually one that acts as master (stale ones included: the client's
// routes lag), sometimes any node.
func (w *world) scheduleProducer() {
	var tick func()
	tick = func() {
		var masters []*broker
		for _, b := range w.brokers {
			if b.up && b.role == roleMaster {
				masters = append(masters, b)
			}
		}
		var to *broker
		if len(masters) > 0 && w.chance(0.9) {
			to = masters[w.rng.IntN(len(masters))]
		} else {
			to = w.brokers[w.rng.IntN(len(w.brokers))]
		}
		// The client's request reaches the broker after a network delay.
		w.after(w.dur(time.Millisecond, 5*time.Millisecond), func() { to.deliverSend() })
		w.after(w.dur(w.o.SendEvery/3, w.o.SendEvery*5/3), tick)
	}
	w.after(w.dur(0, 100*time.Millisecond), tick)
}

// healAll ends every fault: links, pauses, stalls and crashed nodes come
// back; the controller gets a leader.
func (w *world) healAll() {
	w.healed = true
	w.logf("heal all faults")
	w.net.healAll()
	for _, b := range w.brokers {
		b.stallUntil = 0
		if b.paused {
			b.resume()
		}
		if !b.up {
			b.restart() // a pending restart finds it up and does nothing
		}
		if b.fsyncPending && !b.fsyncRunning {
			b.startFsync()
		}
	}
	if w.ctl.leader < 0 && !w.ctl.electing {
		w.ctl.elect(0)
	}
}

// scheduleFaults injects a random fault every ~0.7 s during the fault phase.
func (w *world) scheduleFaults() {
	var tick func()
	tick = func() {
		if w.now >= int64(w.o.Faults) {
			return
		}
		if w.chance(0.6) {
			w.injectFault()
		}
		w.after(w.dur(300*time.Millisecond, 1100*time.Millisecond), tick)
	}
	w.after(w.dur(2*time.Second, 4*time.Second), tick)
}

func (w *world) master() *broker {
	var m *broker
	if g := w.ctl.group(); g != nil {
		m = w.byID(g.Master)
	}
	return m
}

func (w *world) byID(id int64) *broker {
	for _, b := range w.brokers {
		if b.id == id && id != 0 {
			return b
		}
	}
	return nil
}

func (w *world) injectFault() {
	w.res.Faults++
	m := w.master()
	pick := func() *broker { return w.brokers[w.rng.IntN(len(w.brokers))] }
	target := pick()
	if m != nil && w.chance(0.6) {
		target = m // the interesting faults hit the master
	}
	short := w.dur(500*time.Millisecond, 3*time.Second)
	long := w.dur(2*time.Second, 9*time.Second)
	d := short
	if w.chance(0.5) {
		d = long
	}
	switch k := w.rng.IntN(10); k {
	case 0, 1: // crash + restart
		if target.up {
			w.logf("fault: crash n%d (id %d) for %v", target.idx, target.id, time.Duration(d))
			target.crash()
			target.restartPending = true
			w.after(d, func() { target.restartPending = false; target.restart() })
		}
	case 2: // pause (SIGSTOP): no ticks while time runs
		if target.up && !target.paused {
			w.logf("fault: pause n%d (id %d) for %v", target.idx, target.id, time.Duration(d))
			target.pause()
			w.after(d, func() {
				if target.paused {
					target.resume()
				}
			})
		}
	case 3: // node ↔ controller partition (often one-way)
		dir := w.rng.IntN(3)
		w.logf("fault: cut n%d ↔ controller (dir %d) for %v", target.idx, dir, time.Duration(d))
		w.net.cut(target.idx, ctlNode, dir, d)
	case 4: // node ↔ every other broker
		dir := w.rng.IntN(3)
		w.logf("fault: cut n%d ↔ brokers (dir %d) for %v", target.idx, dir, time.Duration(d))
		for _, o := range w.brokers {
			if o != target {
				w.net.cut(target.idx, o.idx, dir, d)
			}
		}
	case 5: // isolate a node entirely; sometimes with a slave (#6662)
		w.logf("fault: isolate n%d for %v", target.idx, time.Duration(d))
		others := []int{ctlNode}
		var buddy *broker
		if w.chance(0.4) {
			buddy = pick()
			if buddy == target {
				buddy = nil
			}
		}
		for _, o := range w.brokers {
			if o != target && o != buddy {
				others = append(others, o.idx)
			}
		}
		for _, o := range others {
			w.net.cut(target.idx, o, 0, d)
			if buddy != nil {
				w.net.cut(buddy.idx, o, 0, d)
			}
		}
	case 6: // controller leader loss (during a master loss when lucky)
		w.logf("fault: controller leader %d lost", w.ctl.leader)
		w.ctl.loseLeader()
		if w.chance(0.3) && m != nil && m.up {
			w.logf("fault: crash master n%d with it", m.idx)
			m.crash()
			m.restartPending = true
			w.after(long, func() { m.restartPending = false; m.restart() })
		} else if w.chance(0.4) && m != nil && m.up {
			// The split that leaves the master with the old leader, away
			// from the voters that elect the next (#7017): the master lives
			// and keeps its lease, but the new leader never hears it.
			w.logf("fault: cut master n%d ↔ controller with it for %v", m.idx, time.Duration(long))
			w.net.cut(m.idx, ctlNode, 0, long)
		}
	case 7: // fsync stall
		if target.up {
			w.logf("fault: fsync stall on n%d for %v", target.idx, time.Duration(d))
			target.stallUntil = w.now + d
			w.after(d, func() {
				if target.up && target.fsyncPending && !target.fsyncRunning {
					target.startFsync()
				}
			})
		}
	case 8: // a lossy period on every link
		w.logf("fault: lossy network for %v", time.Duration(d))
		w.net.lossyUntil = w.now + d
	case 9: // a random one-way link
		a, b := pick(), pick()
		if a != b {
			w.logf("fault: cut n%d → n%d for %v", a.idx, b.idx, time.Duration(d))
			w.net.cut(a.idx, b.idx, 1, d)
		}
	}
}

// groupName is the one group the simulation runs.
const groupName = "g"
