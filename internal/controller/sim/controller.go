package sim

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// soft is the active controller's soft state of one replica (never in
// raft; a new leader starts without any).
type soft struct {
	hb      int64 // local time of the last heartbeat
	prog    fsm.Progress
	grant   int64 // receive time of the last granted heartbeat
	granted bool
}

// controller models the controller quorum: one linearizable fsm.State (what
// raft commits survives a leader change), three voters with their own
// clocks, at most one leader at a time, a raft election delay of 1–2 s
// after a leader is lost, and the service rules of FAILOVER-API.md part B2
// on the leader: heartbeats as soft state, leases granted to the committed
// master, and the liveness loop (wait one session timeout after becoming
// leader; a master is replaced only once its session timed out and
// fsm.LeaseSurelyExpired).
type controller struct {
	w        *world
	st       *fsm.State
	clocks   [3]vclock
	leader   int // -1: none
	electing bool
	term     int
	since    int64 // local time at which the leader started leading
	soft     map[int64]*soft
}

func newController(w *world) *controller {
	c := &controller{w: w, st: fsm.NewState(), leader: -1}
	for i := range c.clocks {
		c.clocks[i] = w.newClock()
	}
	return c
}

func (c *controller) start() { c.elect(c.w.dur(0, 200*time.Millisecond)) }

func (c *controller) now() int64 { return c.clocks[c.leader].local(c.w.now) }

// elect makes a random voter leader after delay.
func (c *controller) elect(delay int64) {
	c.electing = true
	c.w.after(delay, func() {
		c.electing = false
		if c.leader >= 0 {
			return
		}
		c.leader = c.w.rng.IntN(len(c.clocks))
		c.term++
		c.since = c.now() // after Barrier: the state is the committed one
		c.soft = map[int64]*soft{}
		c.w.logf("controller voter %d leads (term %d)", c.leader, c.term)
		c.scheduleTick(c.term)
	})
}

// loseLeader deposes the leader (it stops answering at once: every grant
// waits for a VerifyLeader it could no longer pass) and a new one is
// elected 1–2 s later.
func (c *controller) loseLeader() {
	if c.leader < 0 {
		return
	}
	c.leader = -1
	c.term++
	c.soft = nil
	// raft: no voter votes within a heartbeat timeout (ElectionSilence) of
	// its last contact with the leader, and the pre-vote and vote rounds
	// follow a randomized timer of up to twice that.
	least := c.w.o.ElectionSilence
	if c.w.o.Break == VoteWithoutSilence {
		least = 0 // the broken rule: a voter that votes at once
	}
	c.elect(c.w.dur(least, 2*c.w.o.ElectionSilence))
}

// receive runs a request on the leader; without one it is dropped (the
// broker's client gets no answer and retries).
func (c *controller) receive(fn func()) {
	if c.leader >= 0 {
		fn()
	}
}

func (c *controller) group() *fsm.Group { return c.st.Groups[groupName] }

// apply is Log.Apply: the real fsm, with its own invariants (Check,
// CheckStep) verified after every command.
func (c *controller) apply(cmd fsm.Command) (fsm.Result, error) {
	prev := c.st.Clone()
	res, err := c.st.Apply(cmd)
	if e := c.st.Check(); e != nil {
		c.w.fail("fsm state invariant", "after %+v: %v", cmd, e)
	}
	if e := fsm.CheckStep(prev, c.st, cmd); e != nil {
		c.w.fail("fsm step invariant (epochs monotonic, master from the ISR)", "after %+v: %v", cmd, e)
	}
	pg, g := prev.Groups[groupName], c.group()
	if pg != nil && g != nil && g.Epoch < pg.Epoch {
		c.w.fail("epochs monotonic", "the controller's epoch went from %d to %d", pg.Epoch, g.Epoch)
	}
	if err == nil && cmd.Kind == fsm.KindElect {
		c.w.res.Elections++
		c.w.logf("controller: elected %d at epoch %d (%s, unclean %v), isr %v", g.Master, g.Epoch, cmd.Reason, cmd.Unclean, g.ISR)
		c.w.chk.onElect(g.Master, g.Epoch)
	}
	return res, err
}

func cloneGroup(g *fsm.Group) fsm.Group {
	out := *g
	out.ISR = slices.Clone(g.ISR)
	out.Replicas = slices.Clone(g.Replicas)
	return out
}

type registerReq struct {
	id        int64
	token     uint64 // persisted before the first Register (fix F2)
	addr      int
	lastEpoch uint32
}

type registerResp struct {
	id   int64
	inc  uint64
	view fsm.Group
}

func (c *controller) register(r registerReq) (registerResp, bool) {
	addr := strconv.Itoa(r.addr)
	token := "" // the contract to the letter had none
	if !c.w.o.Literal {
		token = strconv.FormatUint(r.token, 10) // F2, now fsm's rule
	}
	prev := c.group()
	restartedMaster := prev != nil && prev.Master != 0 && prev.Master == r.id
	res, err := c.apply(fsm.Command{Kind: fsm.KindRegister, Cluster: "c", Group: groupName,
		Replica: fsm.Replica{ID: r.id, Addr: addr, HAAddr: addr, Token: token}, LastEpoch: r.lastEpoch})
	if err != nil {
		c.w.logf("controller: register of %d refused: %v", r.id, err)
		return registerResp{}, false
	}
	g := c.group()
	if restartedMaster {
		if c.w.o.Literal || c.w.o.Break == RestartKeepsEpoch {
			// The rule before F1: a restarted master kept its epoch. fsm now
			// gives it a new one; the model takes it back to show why not.
			g.Epoch--
		} else {
			// F1, fsm's rule: a restarted master gets a new epoch, so that
			// what it writes from now on is never confused with the unsynced
			// tail it lost (which a slave may hold under the old epoch).
			c.w.logf("controller: restarted master %d gets epoch %d", g.Master, g.Epoch)
			c.w.chk.onElect(g.Master, g.Epoch)
		}
		if e := c.st.Check(); e != nil {
			c.w.fail("fsm state invariant", "after the restarted master's register: %v", e)
		}
	}
	c.w.logf("controller: registered n%d (asked id %d) as %d incarnation %d", r.addr, r.id, res.ReplicaID, res.Incarnation)
	return registerResp{id: res.ReplicaID, inc: res.Incarnation, view: cloneGroup(g)}, true
}

type heartbeatReq struct {
	id        int64
	inc       uint64
	master    bool
	epoch     uint32
	lastEpoch uint32
	leo       int64
	durable   int64
}

type heartbeatResp struct {
	view       fsm.Group
	lease      bool
	registered bool
}

// heartbeat records soft state and grants the lease to the committed
// master with its current incarnation (api.HeartbeatResponse).
func (c *controller) heartbeat(r heartbeatReq) heartbeatResp {
	g := c.group()
	if g == nil {
		return heartbeatResp{}
	}
	rep, ok := g.Replica(r.id)
	if !ok || rep.Incarnation != r.inc {
		return heartbeatResp{view: cloneGroup(g)}
	}
	now := c.now()
	s := c.soft[r.id]
	if s == nil {
		s = &soft{}
		c.soft[r.id] = s
	}
	s.hb = now
	s.prog = fsm.Progress{Incarnation: r.inc, LastEpoch: r.lastEpoch, LEO: r.leo, Durable: r.durable}
	lease := g.Master == r.id
	if lease {
		s.grant, s.granted = now, true
	}
	return heartbeatResp{view: cloneGroup(g), lease: lease, registered: true}
}

type alterReq struct {
	master       int64
	epoch        uint32
	isrVersion   uint64
	isr          []int64
	incarnations map[int64]uint64
}

func (c *controller) alterISR(r alterReq) (fsm.Group, bool) {
	_, err := c.apply(fsm.Command{Kind: fsm.KindAlterISR, Cluster: "c", Group: groupName, Master: r.master,
		Epoch: r.epoch, ISRVersion: r.isrVersion, ISR: r.isr, Incarnations: r.incarnations})
	g := c.group()
	if g == nil {
		return fsm.Group{}, false
	}
	if err != nil && !errors.Is(err, fsm.ErrStale) {
		c.w.logf("controller: alter-isr %v refused: %v", r.isr, err)
	}
	return cloneGroup(g), err == nil
}

func (c *controller) scheduleTick(term int) {
	d := int64(float64(c.w.o.Heartbeat) / c.clocks[c.leader].rate)
	c.w.after(d, func() {
		if c.term != term || c.leader < 0 {
			return
		}
		c.tick()
		c.scheduleTick(term)
	})
}

func asTime(ns int64) time.Time { return time.Unix(0, ns) }

// tick is one pass of the liveness loop.
func (c *controller) tick() {
	o := c.w.o
	now := c.now()
	g := c.group()
	if g == nil {
		return
	}
	live := map[int64]fsm.Progress{}
	for id, s := range c.soft {
		if now-s.hb < int64(o.SessionTimeout) {
			live[id] = s.prog
		}
	}
	if g.Master == 0 {
		if now-c.since < int64(o.SessionTimeout) {
			return // an offline group waits for every live replica's report
		}
		for id := range live {
			if g.InISR(id) || o.Break == ElectOutsideISR {
				c.electFrom(g, live, fsm.ReasonOffline)
				return
			}
		}
		return
	}
	s := c.soft[g.Master]
	// A master heard in this leadership is dead after a silent session;
	// one never heard once every lease a predecessor granted has surely
	// run out (the service's decide).
	dead := s == nil || now-s.hb >= int64(o.SessionTimeout)
	// The lease bound counts from the last grant this leader made or, when
	// later, from ElectionSilence·(1−2·Drift) before the start of its
	// leadership (covering a predecessor's grants), as the service's
	// leaseRef.
	ref, known := c.since-int64(float64(o.ElectionSilence)*(1-2*o.Drift)), true
	if s != nil && s.granted && s.grant > ref {
		ref = s.grant
	}
	if o.Break == SkipLeaderWait && (s == nil || !s.granted) {
		known = false // the broken rule: nothing granted here, nothing to wait for
	}
	leaseOver := !known || fsm.LeaseSurelyExpired(asTime(ref), asTime(now), o.Lease, o.Drift, o.Margin)
	if o.Break == SkipLeaseWait {
		leaseOver = true
	}
	if dead && leaseOver {
		c.electFrom(g, live, fsm.ReasonMasterLost)
	}
}

func (c *controller) electFrom(g *fsm.Group, live map[int64]fsm.Progress, reason string) {
	pick := g
	if c.w.o.Break == ElectOutsideISR {
		all := cloneGroup(g)
		all.ISR = nil
		for _, r := range g.Replicas {
			all.ISR = append(all.ISR, r.ID)
		}
		pick = &all
	}
	id, unclean, ok := fsm.PickMaster(pick, live, false)
	if !ok {
		return
	}
	if c.w.o.Break == ElectOutsideISR && !g.InISR(id) {
		unclean = true
	}
	_, err := c.apply(fsm.Command{Kind: fsm.KindElect, Cluster: "c", Group: groupName, Epoch: g.Epoch,
		ISRVersion: g.ISRVersion, NewMaster: id, Unclean: unclean, Reason: reason})
	if err != nil {
		c.w.logf("controller: elect %d refused: %v", id, err)
	}
}
