package sim

import (
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
)

// quiet is the trackers' logger (their lines would only cost time).
var quiet = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))

// baseOffset is where every log starts: above 2^32, so every offset
// comparison is an int64 one (pitfall 13).
const baseOffset int64 = 1<<32 + 17

// numQueues is the number of consume queues the records go to.
const numQueues = 3

// rec is one commit-log record.
type rec struct {
	off, size int64
	epoch     uint32
	id        uint64
	q         int
	qoff      int64 // its offset in queue q
}

func (r rec) end() int64 { return r.off + r.size }

type role uint8

const (
	roleNone   role = iota // fenced: no writes, no fetching (start-up, offline group)
	roleSlave              // follows the view's master
	roleMaster             // takes writes
)

func (r role) String() string { return [...]string{"none", "slave", "master"}[r] }

// session is one slave connection as the master's fetch server knows it
// (its acks go to the tracker).
type session struct {
	inc     uint64
	written int64
}

type pend struct {
	r        rec
	deadline int64 // local
}

type heldFetch struct {
	req  fetchReq
	from *broker
	seq  uint64
	at   int64 // local time it was parked
}

// broker models one replica process and its disk.
type broker struct {
	w   *world
	idx int // network address

	// Disk: survives a crash (the log only up to durable).
	log     []rec
	durable int64
	epochs  []epoch.Entry // fsynced on every change
	cp      int64         // persisted commit point (≤ durable)
	id      int64         // persisted replica id (0: none yet)
	token   uint64        // persisted registration token (fix F2)

	// Process.
	up, paused, restartPending bool
	gen                        int
	clk                        vclock
	inbox                      []func()
	inc                        uint64
	registered                 bool
	view                       fsm.Group
	hasView                    bool
	role                       role
	roleEpoch                  uint32
	lease                      int64 // local expiry; 0: none
	hbSeq                      uint64
	hbSent                     map[uint64]int64
	stallUntil                 int64 // true time
	fsyncRunning, fsyncPending bool
	qcount                     [numQueues]int64 // records per queue in the log

	// Master.
	sessions    map[int64]*session
	tr          *track.Tracker // the real tracker of this master term
	trISR       []int64        // the set last handed to SetISR
	pendingAdds []int64        // proposed additions to the ISR, counted until a view settles them
	addsBase    uint64         // ISRVersion the additions were proposed against
	alterOut    bool
	hw          int64
	nextQ       [numQueues]int64
	pending     []pend
	held        []heldFetch
	promotedAt  int64

	// Slave.
	fetchSeq    uint64
	fetchOut    bool
	fetchSentAt int64 // local
	lastHW      int64
	stopped     bool // refused a truncation below its commit point: stays out
}

func newBroker(w *world, idx int) *broker {
	return &broker{w: w, idx: idx, clk: w.newClock(), durable: baseOffset, cp: baseOffset}
}

func (b *broker) now() int64 { return b.clk.local(b.w.now) }

func (b *broker) leo() int64 {
	if len(b.log) == 0 {
		return baseOffset
	}
	return b.log[len(b.log)-1].end()
}

func (b *broker) lastEpoch() uint32 {
	if len(b.epochs) == 0 {
		return 0
	}
	return b.epochs[len(b.epochs)-1].Epoch
}

func (b *broker) minSlaves() int { return min(1, b.w.o.Replicas-2) }

func (b *broker) leaseValid() bool { return b.lease != 0 && b.now() < b.lease }

// timer runs fn after d on the broker's own clock, unless the process
// died meanwhile; while it is paused, fn waits for the resume.
func (b *broker) timer(d time.Duration, fn func()) {
	gen := b.gen
	b.w.after(int64(float64(d)/b.clk.rate), func() { b.receive(gen, fn) })
}

// receive runs fn (a message or timer) on the process generation gen.
func (b *broker) receive(gen int, fn func()) {
	if !b.up || gen != b.gen {
		return
	}
	if b.paused {
		b.inbox = append(b.inbox, fn)
		return
	}
	fn()
}

func (b *broker) send(to int, fn func()) { b.w.net.send(b.idx, to, fn) }

func (b *broker) start(delay int64) { b.w.after(delay, b.boot) }

// boot starts the process: the log as the disk holds it, fenced until the
// controller gives it a role.
func (b *broker) boot() {
	b.up, b.paused = true, false
	b.gen++
	b.inbox = nil
	b.inc, b.registered, b.hasView = 0, false, false
	b.view = fsm.Group{}
	b.role, b.roleEpoch, b.lease = roleNone, 0, 0
	b.hbSent = map[uint64]int64{}
	b.fsyncRunning, b.fsyncPending = false, false
	b.resetMaster()
	b.fetchOut, b.lastHW, b.stopped = false, 0, false
	b.recount()
	// F3: the epoch history is fsynced before the bytes it describes, so
	// after a crash it may name epochs whose bytes were lost: cut it to the
	// recovered log (History.TruncateAfter(store.Written())), or the next
	// epoch could not be appended and a later fetch would mislabel bytes.
	n := 0
	for n < len(b.epochs) && b.epochs[n].Start < b.leo() {
		n++
	}
	if n < len(b.epochs) {
		b.epochs = b.epochs[:n]
	}
	b.w.logf("n%d (id %d) starts: leo %d durable %d cp %d epochs %v", b.idx, b.id, b.leo()-baseOffset,
		b.durable-baseOffset, b.cp-baseOffset, b.epochs)
	b.register()
	b.heartbeatLoop()
}

func (b *broker) resetMaster() {
	b.sessions = map[int64]*session{}
	b.tr, b.trISR = nil, nil
	b.pendingAdds, b.addsBase, b.alterOut = nil, 0, false
	b.hw = 0
	b.failPending()
	b.held = nil
}

func (b *broker) failPending() {
	b.w.res.InDoubt += len(b.pending)
	b.pending = nil
}

func (b *broker) recount() {
	b.qcount = [numQueues]int64{}
	for _, r := range b.log {
		b.qcount[r.q]++
	}
}

// crash kills the process: the log keeps only its durable prefix.
func (b *broker) crash() {
	b.up = false
	b.gen++
	b.failPending()
	i := len(b.log)
	for i > 0 && b.log[i-1].end() > b.durable {
		i--
	}
	b.log = b.log[:i]
	b.w.chk.onCrash(b)
}

func (b *broker) restart() {
	if !b.up {
		b.boot()
	}
}

func (b *broker) pause() { b.paused = true }

func (b *broker) resume() {
	b.paused = false
	for len(b.inbox) > 0 && b.up && !b.paused {
		fn := b.inbox[0]
		b.inbox = b.inbox[1:]
		fn()
	}
}

// register retries every second until the controller answers.
func (b *broker) register() {
	if b.registered {
		return
	}
	if b.token == 0 {
		b.token = b.w.rng.Uint64() | 1 // fsynced before the first Register
	}
	req := registerReq{id: b.id, token: b.token, addr: b.idx, lastEpoch: b.lastEpoch()}
	gen := b.gen
	c := b.w.ctl
	b.send(ctlNode, func() {
		resp, ok := c.register(req)
		if !ok {
			return
		}
		c.w.net.send(ctlNode, b.idx, func() { b.onRegistered(gen, resp) })
	})
	b.timer(time.Second, b.register)
}

func (b *broker) onRegistered(gen int, r registerResp) {
	if b.registered || gen != b.gen {
		return
	}
	if b.id != 0 && r.id != b.id {
		b.w.fail("model", "n%d registered as %d but persisted id %d", b.idx, r.id, b.id)
		return
	}
	b.id, b.inc, b.registered = r.id, r.inc, true
	b.w.logf("n%d registered as %d incarnation %d", b.idx, b.id, b.inc)
	b.onView(r.view)
}

func (b *broker) heartbeatLoop() {
	b.timer(b.w.o.Heartbeat, b.heartbeatLoop)
	// The timeouts of sends, long polls and fetches are checked here, at
	// the heartbeat's granularity (one timer per process, not one per
	// request: the simulation's cost is its events).
	now := b.now()
	switch b.role {
	case roleMaster:
		if b.tr != nil {
			b.tr.Tick()
		}
		b.processPending()
		b.expireHeld(now)
		b.checkInSync()
	case roleSlave:
		if b.fetchOut && now-b.fetchSentAt >= int64(time.Second) {
			b.fetchOut = false
			b.fetch()
		}
	}
	if !b.registered {
		return
	}
	b.hbSeq++
	seq := b.hbSeq
	b.hbSent[seq] = b.now()
	delete(b.hbSent, seq-16)
	epochNow := b.view.Epoch
	if b.role == roleMaster {
		epochNow = b.roleEpoch
	}
	req := heartbeatReq{id: b.id, inc: b.inc, master: b.role == roleMaster, epoch: epochNow,
		lastEpoch: b.lastEpoch(), leo: b.leo(), durable: b.durable}
	c := b.w.ctl
	b.send(ctlNode, func() {
		resp := c.heartbeat(req)
		c.w.net.send(ctlNode, b.idx, func() { b.onHeartbeat(req.inc, seq, resp) })
	})
}

func (b *broker) onHeartbeat(inc uint64, seq uint64, r heartbeatResp) {
	if inc != b.inc || !b.registered {
		return
	}
	if !r.registered {
		b.registered = false
		b.register()
		return
	}
	b.onView(r.view)
	if r.lease {
		sent, ok := b.hbSent[seq]
		if ok && sent+int64(b.w.o.Lease) > b.lease {
			b.lease = sent + int64(b.w.o.Lease)
			if b.role == roleMaster {
				b.w.chk.onLease(b)
			}
		}
	}
}

// trueLeaseEnd is the true time at which the lease runs out.
func (b *broker) trueLeaseEnd() int64 { return b.clk.trueAt(b.lease) }

// onView is the role manager (FAILOVER-API.md part D2).
func (b *broker) onView(v fsm.Group) {
	if b.hasView && (v.Epoch < b.view.Epoch || (v.Epoch == b.view.Epoch && v.ISRVersion < b.view.ISRVersion)) {
		return
	}
	b.view, b.hasView = v, true
	if b.role == roleMaster && v.ISRVersion > b.addsBase {
		b.pendingAdds = nil // the proposal against addsBase can no longer commit
		b.syncTracker()
	}
	switch {
	case v.Master == b.id && v.Epoch > b.lastEpoch() && (b.role != roleMaster || v.Epoch > b.roleEpoch):
		b.promote(v.Epoch)
	case v.Master == b.id && b.role == roleNone && v.Epoch == b.lastEpoch() && b.w.o.Break == RestartKeepsEpoch:
		b.w.logf("n%d (id %d) resumes as master of its epoch %d at leo %d", b.idx, b.id, v.Epoch, b.leo()-baseOffset)
		b.resumeMaster(v.Epoch)
	case v.Master == b.id && b.role == roleMaster && v.Epoch == b.roleEpoch:
		b.syncTracker()
		b.recomputeHW()
		b.checkInSync()
	case v.Master != b.id && v.Master != 0:
		if b.role != roleSlave || v.Epoch > b.roleEpoch {
			b.becomeSlave(v.Epoch)
		}
	case v.Master == 0 && b.role == roleMaster:
		b.w.logf("n%d: group offline, stops as master", b.idx)
		b.lease = 0
		b.role = roleNone
		b.resetMaster()
	}
}

// promote: slave → master (part D2; store.PrepareMaster of part C).
func (b *broker) promote(e uint32) {
	b.w.logf("n%d (id %d) becomes master of epoch %d at leo %d (cp %d)", b.idx, b.id, e, b.leo()-baseOffset, b.cp-baseOffset)
	b.fetchOut = false
	b.fetchSeq++
	b.resetMaster()
	b.lease = 0 // writes open with the first lease granted as master
	if b.w.o.Break != QueueOffsetsFromMemory {
		b.nextQ = b.qcount // from the log, never from memory (#7689)
	}
	b.appendEpoch(epoch.Entry{Epoch: e, Start: b.leo()})
	b.role, b.roleEpoch = roleMaster, e
	b.promotedAt = b.now()
	b.startTracker()
	b.w.chk.onPromote(b)
	b.recomputeHW()
}

// startTracker starts the master term's tracker as the daemon does:
// SyncReplicas 0, the committed ISR through SetISR, the store's commit
// point restored (after the first MasterProgress, as Restore asks).
func (b *broker) startTracker() {
	cfg := track.DefaultConfig()
	cfg.SyncReplicas = 0
	cfg.MaxLagTime = b.w.o.LagTime
	b.tr = track.New(cfg, brokerClock{b}, quiet)
	// SetISR before the first MasterProgress: until then the tracker
	// counts SyncReplicas (0), and its HW would be the master's own end.
	b.syncTracker()
	b.tr.MasterProgress(b.leo(), b.durable)
	b.tr.Restore(b.cp)
	b.hw = b.cp // committed before; what the tracker adds is checked
	b.takeHW()
}

// brokerClock is the broker's own clock as a clock.Clock (the tracker's).
type brokerClock struct{ b *broker }

func (c brokerClock) Now() time.Time { return time.Unix(0, c.b.now()) }

// AfterFunc runs f on the simulation's goroutine after d of the broker's
// time (the tracker sets no timers; this keeps any that would be
// deterministic).
func (c brokerClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &simTimer{}
	c.b.timer(d, func() {
		if !t.stopped {
			t.stopped = true
			f()
		}
	})
	return t
}

type simTimer struct{ stopped bool }

func (t *simTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

// syncTracker hands the tracker the set the commit point waits for.
func (b *broker) syncTracker() {
	if b.tr == nil {
		return
	}
	set, ms := b.trackedSlaves(), b.minSlaves()
	if b.w.o.Break == HWIgnoresISR {
		set, ms = nil, 0
	}
	slices.Sort(set)
	if b.trISR != nil && slices.Equal(set, b.trISR) {
		return
	}
	b.trISR = append(make([]int64, 0, len(set)), set...)
	b.tr.SetISR(set, ms)
}

// resumeMaster is the broken rule RestartKeepsEpoch: master again in the
// epoch it last wrote in, without a new epoch entry.
func (b *broker) resumeMaster(e uint32) {
	b.resetMaster()
	b.lease = 0
	b.nextQ = b.qcount
	b.role, b.roleEpoch = roleMaster, e
	b.promotedAt = b.now()
	b.startTracker()
	b.w.chk.onPromote(b)
	b.recomputeHW()
}

func (b *broker) becomeSlave(e uint32) {
	if b.role == roleMaster {
		b.w.logf("n%d (id %d) steps down from epoch %d: master %d at epoch %d", b.idx, b.id, b.roleEpoch, b.view.Master, e)
	}
	b.lease = 0
	b.resetMaster()
	b.role, b.roleEpoch = roleSlave, e
	b.fetchOut = false
	b.fetchSeq++
	b.fetch()
}

func (b *broker) appendEpoch(e epoch.Entry) {
	if n := len(b.epochs); n > 0 {
		last := b.epochs[n-1]
		if e.Epoch <= last.Epoch || e.Start < last.Start {
			b.w.fail("epochs monotonic", "n%d: epoch %+v after %+v", b.idx, e, last)
			return
		}
	}
	b.epochs = append(b.epochs, e)
}

// appendRec appends r to the log, checking that queue offsets stay dense.
func (b *broker) appendRec(r rec) {
	if r.off != b.leo() {
		b.w.fail("model", "n%d: append at %d, log ends at %d", b.idx, r.off, b.leo())
		return
	}
	if r.qoff != b.qcount[r.q] {
		b.w.fail("queue offsets dense", "n%d: record %d of queue %d has queue offset %d, the queue holds %d",
			b.idx, r.id, r.q, r.qoff, b.qcount[r.q])
		return
	}
	if n := len(b.log); n > 0 && r.epoch < b.log[n-1].epoch {
		b.w.fail("epochs monotonic", "n%d: record %d of epoch %d after one of epoch %d", b.idx, r.id, r.epoch, b.log[n-1].epoch)
		return
	}
	b.log = append(b.log, r)
	b.qcount[r.q]++
}

// find returns the index of the record at off.
func (b *broker) find(off int64) (int, bool) {
	i, ok := slices.BinarySearchFunc(b.log, off, func(r rec, off int64) int {
		switch {
		case r.off < off:
			return -1
		case r.off > off:
			return 1
		}
		return 0
	})
	return i, ok
}

// startFsync starts a group-commit fsync of everything written so far.
func (b *broker) startFsync() {
	if b.fsyncRunning || !b.up {
		return
	}
	if b.w.now < b.stallUntil {
		b.fsyncPending = true
		return
	}
	b.fsyncPending = false
	b.fsyncRunning = true
	target := b.leo()
	b.timer(time.Duration(b.w.dur(time.Millisecond, 8*time.Millisecond)), func() {
		b.fsyncRunning = false
		if d := min(target, b.leo()); d > b.durable {
			b.durable = d
			b.onDurable()
		}
		if b.leo() > b.durable {
			b.startFsync()
		}
	})
}

func (b *broker) onDurable() {
	switch b.role {
	case roleMaster:
		b.recomputeHW()
	case roleSlave:
		b.raiseCP()
		if m := b.w.byID(b.view.Master); m != nil {
			ack := fetchReq{id: b.id, inc: b.inc, epoch: b.roleEpoch, offset: b.leo(), durable: b.durable, ackOnly: true}
			b.send(m.idx, func() { m.onFetch(ack, b, 0) })
		}
	}
}

// deliverSend is a producer's send arriving (part D1's admission and ack
// rules).
func (b *broker) deliverSend() {
	b.receive(b.gen, b.admit)
}

func (b *broker) admit() {
	o := b.w.o
	if b.role != roleMaster {
		return // NOT_MASTER / SERVICE_NOT_AVAILABLE
	}
	if o.Break != AckWithoutLease && !b.leaseValid() {
		return // lease expired: refused at admission
	}
	if o.Break != HWIgnoresISR && len(b.trISR) < b.minSlaves() {
		return // strict min ISR: the tracker fails the wait at once (not acked)
	}
	q := b.w.rng.IntN(numQueues)
	b.w.nextMsgID++
	r := rec{off: b.leo(), size: 1 + b.w.rng.Int64N(8), epoch: b.roleEpoch, id: b.w.nextMsgID, q: q, qoff: b.nextQ[q]}
	b.nextQ[q]++
	b.appendRec(r)
	b.w.res.Sends++
	b.pending = append(b.pending, pend{r: r, deadline: b.now() + int64(o.SyncTimeout)})
	b.startFsync()
	b.answerHeld(false)
}

// trackedSlaves is the set the commit point waits for: the committed ISR
// (a shrink counts once committed) plus proposed additions (the maximal
// ISR), without the master.
func (b *broker) trackedSlaves() []int64 {
	var out []int64
	for _, id := range b.view.ISR {
		if id != b.id {
			out = append(out, id)
		}
	}
	for _, id := range b.pendingAdds {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// recomputeHW reports the master's ends to the tracker and takes its HW
// (track.SetISR's rule: min over the master and every listed slave, held
// while a listed slave has no session or fewer are listed than minSlaves,
// never backwards).
func (b *broker) recomputeHW() {
	if b.role != roleMaster || b.tr == nil {
		return
	}
	b.tr.MasterProgress(b.leo(), b.durable)
	b.takeHW()
}

func (b *broker) takeHW() {
	hw := b.tr.HW()
	if hw <= b.hw {
		return
	}
	old := b.hw
	b.hw = hw
	if hw > b.cp {
		b.cp = hw
	}
	b.w.chk.onCommit(b, old, hw)
	b.processPending()
	b.answerHeld(true)
}

// processPending answers the sends the commit point covers (if the lease
// still holds at that moment) and gives up on expired ones.
func (b *broker) processPending() {
	if len(b.pending) == 0 {
		return
	}
	now := b.now()
	keep := b.pending[:0]
	for _, p := range b.pending {
		switch {
		case p.r.end() <= b.hw:
			if b.w.o.Break == AckWithoutLease || b.leaseValid() {
				b.w.res.Acked++
				if b.w.healed {
					b.w.res.AckedAfterHeal++
				}
				b.w.chk.onAck(b, p.r)
			} else {
				b.w.res.InDoubt++ // stored, in doubt, not acked
			}
		case now >= p.deadline:
			b.w.res.InDoubt++
		default:
			keep = append(keep, p)
		}
	}
	b.pending = keep
}

// checkInSync proposes the set the tracker's lag rules find in sync, as
// the daemon's syncISR does (AlterISR, compare-and-set).
func (b *broker) checkInSync() {
	if b.role != roleMaster || b.alterOut || b.w.err != nil || b.tr == nil {
		return
	}
	var want []int64
	var stats []track.SlaveStats
	for _, id := range b.tr.InSync() {
		r, ok := b.view.Replica(id)
		if s := b.sessions[id]; !ok || id == b.id || s == nil || s.inc != r.Incarnation {
			continue
		}
		if !b.view.InISR(id) && b.w.o.Break != JoinByLag {
			// Joining (replication.md §2.7) also needs the commit point
			// durable on the slave and a log that reached this epoch's
			// start: the lag rules alone admit a slave that lacks records
			// the current set already committed.
			if stats == nil {
				stats = b.tr.Stats().Slaves
			}
			i := slices.IndexFunc(stats, func(st track.SlaveStats) bool { return st.ID == id })
			if i < 0 || stats[i].Durable < b.hw || stats[i].Written < b.epochs[len(b.epochs)-1].Start {
				continue
			}
		}
		want = append(want, id)
	}
	var cur []int64
	for _, id := range b.view.ISR {
		if id != b.id {
			cur = append(cur, id)
		}
	}
	slices.Sort(want)
	if slices.Equal(want, cur) {
		return
	}
	isr := append(slices.Clone(want), b.id)
	slices.Sort(isr)
	incs := map[int64]uint64{}
	for _, id := range isr {
		if r, ok := b.view.Replica(id); ok {
			incs[id] = r.Incarnation
		}
	}
	if b.w.o.Break != ISRAddAfterCommit {
		for _, id := range want {
			if !slices.Contains(cur, id) && !slices.Contains(b.pendingAdds, id) {
				b.pendingAdds = append(b.pendingAdds, id)
			}
		}
		b.addsBase = b.view.ISRVersion
		b.syncTracker()
	}
	req := alterReq{master: b.id, epoch: b.roleEpoch, isrVersion: b.view.ISRVersion, isr: isr, incarnations: incs}
	b.alterOut = true
	gen, epochNow := b.gen, b.roleEpoch
	c := b.w.ctl
	b.send(ctlNode, func() {
		v, ok := c.alterISR(req)
		if v.Name == "" {
			return
		}
		c.w.net.send(ctlNode, b.idx, func() {
			if gen != b.gen || b.roleEpoch != epochNow {
				return
			}
			b.alterOut = false
			if ok {
				b.w.logf("n%d: isr now %v (version %d)", b.idx, v.ISR, v.ISRVersion)
			}
			b.onView(v)
		})
	})
	b.timer(time.Second, func() {
		if b.gen == gen && b.roleEpoch == epochNow && b.alterOut {
			b.alterOut = false
			if b.w.o.Break == ISRRevertOnError {
				b.pendingAdds = nil
				b.syncTracker()
			}
		}
	})
}
