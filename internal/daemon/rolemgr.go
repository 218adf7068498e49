package daemon

// The role manager of controller mode: one goroutine that applies the
// latest group view the controller sent, so that promotions, demotions,
// in-sync set changes and transfers never overlap.

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/ha"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/store"
)

func (c *controlMode) manage() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
		}
		c.reconcile()
	}
}

// reconcile brings the replica in line with the latest view.
func (c *controlMode) reconcile() {
	c.mu.Lock()
	v, id, ok := c.view, c.id, c.haveView && c.registered
	role, mine := c.role, c.epoch
	c.mu.Unlock()
	if !ok || id == 0 {
		return
	}
	c.lease.enforced.Store(len(v.Replicas) > 1)
	switch {
	case v.Master == id:
		if role != broker.RoleMaster || v.Epoch > mine {
			if !c.promote(v, id) {
				c.follow(api.GroupView{Epoch: v.Epoch}, id) // a fenced slave of nobody until the next view
				c.startRegistrar()
				return
			}
		}
		c.syncISR(v, id)
		c.maybeTransfer(v, id)
	case role == broker.RoleMaster:
		if v.Epoch < mine || v.Epoch == mine && v.Master != 0 {
			return // a view older than this term (a deposed controller's)
		}
		c.demote(v)
		c.follow(v, id)
	default:
		c.follow(v, id)
	}
	c.startRegistrar()
}

// startRegistrar starts the name-server registrations once the replica's
// identity is known (its first view applied).
func (c *controlMode) startRegistrar() {
	if !c.regStarted {
		c.regStarted = true
		c.d.reg.Start()
	}
}

// setIdentity makes the name servers list this replica as brokerID (0:
// the master) of epoch.
func (c *controlMode) setIdentity(brokerID int64, ep uint32) {
	k := [2]int64{brokerID, int64(ep)}
	if c.identity == k {
		return
	}
	c.identity = k
	c.d.b.SetBrokerID(brokerID)
	c.d.reg.SetIdentity(brokerID, ep)
}

// promote makes the replica the master of v.Epoch: stop fetching, cut a
// torn tail and rebuild the queue offsets from disk (store.PrepareMaster),
// record the epoch, start serving replication with the committed in-sync
// set, open the broker for writes (they are acked once the first heartbeat
// as master brings the lease). False: it stays a fenced slave.
func (c *controlMode) promote(v api.GroupView, id int64) bool {
	log := c.log.With("epoch", v.Epoch, "replica_id", id)
	c.stopSlave()
	if c.epochs != nil {
		last, _ := c.epochs.Last()
		if v.Epoch < last.Epoch {
			log.Error("controller mode: the controller names this replica master of an epoch older than its history's last; staying a fenced slave", "history_epoch", last.Epoch)
			return false
		}
		c.mu.Lock()
		wasMaster := c.role == broker.RoleMaster
		c.mu.Unlock()
		if !wasMaster {
			cut, err := c.st.PrepareMaster()
			if err != nil {
				c.promoteFailed(log, v.Epoch, "controller mode: cannot ready the store to take writes; staying a fenced slave", err)
				return false
			}
			log.Info("store ready to take writes", "leo", cut)
		}
		if last.Epoch < v.Epoch {
			if err := c.epochs.Append(epoch.Entry{Epoch: v.Epoch, Start: c.st.Written()}); err != nil {
				c.promoteFailed(log, v.Epoch, "controller mode: cannot record the new epoch; staying a fenced slave", err)
				return false
			}
		}
		if c.master == nil && !c.startMaster(v, id) {
			return false
		}
	}
	c.st.SetReplica(false) // its own writes from here on
	c.mu.Lock()
	c.role, c.epoch, c.transfering = broker.RoleMaster, v.Epoch, false
	c.mu.Unlock()
	c.d.b.SetRole(broker.RoleMaster)
	c.setIdentity(0, v.Epoch)
	c.heartbeatNow() // the lease: writes are acked from its grant on
	log.Info("controller mode: promoted to master", "leo", c.st.Written(), "isr", v.ISR)
	c.d.masterAuth()
	return true
}

// promoteFailed logs a failed promotion: at Error the first time per
// epoch, then at Debug (it is retried at every heartbeat's view).
func (c *controlMode) promoteFailed(log *slog.Logger, ep uint32, msg string, err error) {
	level := slog.LevelDebug
	if c.failedEpoch != ep+1 {
		c.failedEpoch, level = ep+1, slog.LevelError
	}
	log.Log(context.Background(), level, msg, "err", err)
}

// startMaster starts the replication server of a master term.
func (c *controlMode) startMaster(v api.GroupView, id int64) bool {
	tcfg := track.DefaultConfig()
	tcfg.SyncReplicas = 0
	tcfg.AsyncFlush = c.asyncFlush
	tcfg.OnInSync = func([]int64) {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	tr := track.New(tcfg, c.clk, c.log)
	tr.Restore(c.st.CommitPoint())
	ms := c.minSlaves(len(v.Replicas))
	tr.SetISR(without(v.ISR, id), ms)
	m, err := ha.StartMaster(ha.MasterConfig{
		Group: c.group, Listen: c.ha.Addr().String(), Network: haNetwork{Network: netx.Or(c.network), h: c.ha},
		Tracker: tr, Epochs: c.epochs, OnCommit: c.st.SetCommitPoint, Logger: c.log, Clock: c.clk,
		Linger: c.linger, HWPushDelay: hwPushDelay, OnStale: c.stale, Authenticate: c.haAuthn,
	}, storeSource{c.st})
	if err != nil {
		c.promoteFailed(c.log, v.Epoch, "controller mode: cannot serve replication; staying a fenced slave", err)
		return false
	}
	c.master, c.isrApplied, c.isrTerm, c.isrMin = m, v.ISRVersion+1, v.Epoch, ms
	c.mu.Lock()
	c.tracker = tr
	c.mu.Unlock()
	c.rep.set(m)
	return true
}

// stale: a slave knows a newer epoch than this master's; stop acking at
// once (the next view demotes it).
func (c *controlMode) stale(slaveEpoch uint32) {
	c.mu.Lock()
	c.fenceGen++
	c.lease.Revoke()
	c.mu.Unlock()
	c.log.Warn("controller mode: a slave knows a newer master epoch; this master stops acking sends", "slave_epoch", slaveEpoch)
	c.heartbeatNow()
}

// demote makes a master a fenced slave: no lease, no writes, no
// replication server (waits under way end as FLUSH_SLAVE_TIMEOUT).
func (c *controlMode) demote(v api.GroupView) {
	// First: a local write still in flight (a retried state record, a
	// send admitted before the lease went) must not land among the new
	// master's bytes (found by petrel verify: the replica diverged).
	c.st.SetReplica(true)
	c.mu.Lock()
	old := c.epoch
	c.role, c.transfering, c.tracker = broker.RoleSlave, false, nil
	c.fenceGen++
	c.lease.Revoke()
	c.mu.Unlock()
	c.d.b.SetRole(broker.RoleSlave)
	c.rep.set(nil)
	if c.master != nil {
		c.master.Close()
		c.master = nil
	}
	c.log.Info("controller mode: demoted to slave", "epoch", old, "new_master", v.Master, "new_epoch", v.Epoch)
}

// follow runs the slave term: fetch from the master v names (nothing when
// it names none).
func (c *controlMode) follow(v api.GroupView, id int64) {
	c.setIdentity(id, v.Epoch)
	if c.epochs == nil {
		if v.Master != 0 && !c.noFollowLogged {
			c.noFollowLogged = true
			c.log.Error("controller mode: another replica is the master, but this one has no --ha-listen and cannot replicate; it stays a fenced slave", "master", v.Master)
		}
		return
	}
	addr := ""
	if v.Master != id {
		for _, r := range v.Replicas {
			if r.ID == v.Master {
				addr = r.HAAddr
			}
		}
	}
	if c.slave != nil && c.slaveOf == addr {
		if err := c.slave.Err(); err != nil && !c.slaveErrLogged {
			c.slaveErrLogged = true
			c.log.Error("controller mode: replication from the master stopped for good; this replica stays out of the in-sync set until an operator acts", "master", v.Master, "err", err)
		}
		return
	}
	c.stopSlave()
	if addr == "" {
		return
	}
	s, err := ha.StartSlave(ha.SlaveConfig{Group: c.group, ID: id, Master: func() string { return addr },
		Network: netx.Or(c.network), Epochs: c.epochs, Logger: c.log, Clock: c.clk, Credentials: c.haCreds}, truncSink{c.st})
	if err != nil {
		c.log.Error("controller mode: cannot start replicating from the master", "master", v.Master, "err", err)
		return
	}
	c.slaveOf, c.slaveErrLogged = addr, false
	c.mu.Lock()
	c.slave = s
	c.mu.Unlock()
	c.log.Info("controller mode: replicating from the master", "master", v.Master, "ha_addr", addr, "epoch", v.Epoch)
}

func (c *controlMode) stopSlave() {
	c.mu.Lock()
	s := c.slave
	c.slave = nil
	c.mu.Unlock()
	if s != nil {
		s.Close()
	}
	c.slaveOf = ""
}

// syncISR keeps the tracker on the committed in-sync set and proposes the
// set the local lag rules find (AlterISR, compare-and-set). Until a view
// settles a change the tracker counts the maximal set (the committed one
// plus every addition proposed on it): a record is acked only once every
// replica that may be elected holds it.
func (c *controlMode) syncISR(v api.GroupView, id int64) {
	c.mu.Lock()
	tr := c.tracker
	c.mu.Unlock()
	if tr == nil {
		return
	}
	ms := c.minSlaves(len(v.Replicas))
	committed := without(v.ISR, id)
	if c.isrTerm != v.Epoch || c.isrApplied != v.ISRVersion+1 {
		// A newer view settles every proposal made on an older one: it
		// committed (and is in this view) or it never will (stale).
		c.isrPending = nil
	}
	if c.isrTerm != v.Epoch || c.isrApplied != v.ISRVersion+1 || c.isrMin != ms {
		tr.SetISR(union(committed, c.isrPending), ms)
		c.isrTerm, c.isrApplied, c.isrMin = v.Epoch, v.ISRVersion+1, ms
	}
	incs := map[int64]uint64{}
	for _, r := range v.Replicas {
		incs[r.ID] = r.Incarnation
	}
	// A slave joins only once it holds everything committed (its durable
	// end, or its written end under async flush, at least the commit
	// point): a member of the in-sync set may be elected, and must then
	// hold every acked record (replication.md §2.7).
	st := tr.Stats()
	want := []int64{id}
	for _, s := range tr.InSync() {
		if _, ok := incs[s]; !ok || s == id {
			continue
		}
		if slices.Contains(committed, s) || c.caughtUp(st, s) {
			want = append(want, s)
		}
	}
	slices.Sort(want)
	if slices.Equal(want, v.ISR) {
		return
	}
	// Every addition proposed on this view counts until a newer view
	// settles it, also when the call fails: an unanswered AlterISR may
	// have committed, and its new members may then be elected.
	c.isrPending = union(c.isrPending, without(want, id))
	tr.SetISR(union(committed, c.isrPending), ms)
	req := &api.AlterISRRequest{Group: c.group, Master: id, Epoch: v.Epoch, ISRVersion: v.ISRVersion, ISR: want,
		Incarnations: map[int64]uint64{}}
	for _, s := range want {
		req.Incarnations[s] = incs[s]
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
	resp, err := c.cl.AlterISR(ctx, req)
	cancel()
	if err != nil {
		var se *client.StaleError
		if errors.As(err, &se) {
			c.post(se.Group)
		}
		if c.ctx.Err() == nil {
			c.log.Warn("controller mode: in-sync set change not committed; sends keep waiting for the proposed members until the controller's next view",
				"from", v.ISR, "to", want, "err", err)
		}
		return
	}
	c.isrPending = nil
	tr.SetISR(without(resp.ISR, id), ms)
	c.isrApplied = resp.ISRVersion + 1
	c.log.Info("controller mode: in-sync set changed", "from", v.ISR, "to", resp.ISR, "isr_version", resp.ISRVersion)
	c.post(*resp)
}

// maybeTransfer hands the group over to v.TransferTo (an in-sync slave):
// stop acking (revoke the lease), wait until the target holds the whole
// log, then resign; when the target does not catch up within
// TransferWait, or the resignation fails, take the lease back (the next
// granted heartbeat) and stay master.
func (c *controlMode) maybeTransfer(v api.GroupView, id int64) {
	t := v.TransferTo
	if t == 0 || t == id || !slices.Contains(v.ISR, t) {
		return
	}
	key := [2]int64{int64(v.Epoch), t}
	if c.transferTried == key {
		return
	}
	c.transferTried = key
	c.mu.Lock()
	tr, inc := c.tracker, c.inc
	c.transfering = true
	c.fenceGen++
	c.lease.Revoke()
	c.mu.Unlock()
	if tr == nil {
		c.cancelTransfer()
		return
	}
	leo := c.st.Written()
	log := c.log.With("target", t, "epoch", v.Epoch, "leo", leo)
	log.Info("controller mode: transfer asked: sends are no longer acked until the target holds the log")
	deadline := c.clk.Now().Add(c.cfg.TransferWait)
	for !c.holds(tr, t, leo) {
		if !c.clk.Now().Before(deadline) {
			log.Warn("controller mode: the transfer target did not catch up in time; staying master", "waited", c.cfg.TransferWait)
			c.cancelTransfer()
			return
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
		c.master.Progress()
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
	resp, err := c.cl.Resign(ctx, &api.ResignRequest{Group: c.group, ReplicaID: id, Incarnation: inc, Epoch: v.Epoch, Target: t, LEO: leo})
	cancel()
	if err != nil {
		log.Warn("controller mode: the controller did not take the resignation; staying master", "err", err)
		c.cancelTransfer()
		return
	}
	log.Info("controller mode: resigned", "new_master", resp.Master, "new_epoch", resp.Epoch)
	c.post(*resp)
}

// holds reports whether slave id holds the log up to leo (durably, or
// written under async flush, as the commit point counts it).
func (c *controlMode) holds(tr *track.Tracker, id, leo int64) bool {
	for _, s := range tr.Stats().Slaves {
		if s.ID == id {
			if c.asyncFlush {
				return s.Written >= leo
			}
			return s.Durable >= leo
		}
	}
	return false
}

// caughtUp reports whether slave id holds the commit point and every
// byte below the current epoch's start (the records of older epochs this
// master holds, which its epoch commits).
func (c *controlMode) caughtUp(st track.Stats, id int64) bool {
	for _, s := range st.Slaves {
		if s.ID == id {
			end := s.Durable
			if c.asyncFlush {
				end = s.Written
			}
			start := int64(0)
			if e, ok := c.epochs.Last(); ok {
				start = e.Start
			}
			return end >= st.HW && end >= start
		}
	}
	return false
}

func (c *controlMode) cancelTransfer() {
	c.mu.Lock()
	c.transfering = false
	c.mu.Unlock()
	c.heartbeatNow()
}

// truncSink is the store as a controller-mode slave writes it: with
// TruncateTo in ha's terms, so that a replica whose log diverges from the
// master's (an old master rejoining) cuts its tail and fetches again.
type truncSink struct{ *store.Store }

func (s truncSink) TruncateTo(off int64) (ha.Truncation, error) {
	t, err := s.Store.TruncateTo(off)
	return ha.Truncation{Bytes: t.Bytes, Messages: t.Messages, MsgIDs: t.MsgIDs}, err
}

// union is the sorted set of the members of a and b.
func union(a, b []int64) []int64 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
