package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/verify/cluster"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/nemesis"
	"github.com/petrelmq/petrel/internal/verify/proxy"
)

// The faults and the end-of-run check of replicated topologies, and of
// topologies with controllers in particular, where the controller decides
// which replica is a group's master: a master fault there names a group
// and finds its master when it strikes.

// controllerQuery bounds one question to the controller during a fault.
const controllerQuery = 5 * time.Second

// FailoverWait bounds how long the heal of a master kill on a topology
// with controllers waits for the controller to elect another master
// before it starts the old one again (the controller's session timeout,
// a new controller leader's own wait of one session timeout, the lease
// bound, and the election, with room).
var FailoverWait = 20 * time.Second

// failoverPoll is how often awaitFailover asks the controller.
var failoverPoll = 100 * time.Millisecond

// awaitFailover waits until group's master is no longer old (at a higher
// epoch than t.epoch), at most FailoverWait, and says what it saw.
func (t *target) awaitFailover(ctx context.Context, group, old string) string {
	start := time.Now()
	deadline := start.Add(FailoverWait)
	last := "no answer"
	for {
		qctx, cancel := context.WithTimeout(ctx, controllerQuery)
		m, epoch, err := t.r.cl.Master(qctx, group)
		cancel()
		switch {
		case err == nil && m != old && epoch > t.epoch:
			return fmt.Sprintf("the controller elected %s at epoch %d %s after the kill", m, epoch, time.Since(start).Round(time.Millisecond))
		case err == nil:
			last = fmt.Sprintf("master %s at epoch %d", m, epoch)
		default:
			last = err.Error()
		}
		if !time.Now().Before(deadline) {
			return fmt.Sprintf("no other master within %v (last: %s)", FailoverWait, last)
		}
		tm := time.NewTimer(failoverPoll)
		select {
		case <-ctx.Done():
			tm.Stop()
			return "interrupted while waiting for another master: " + ctx.Err().Error()
		case <-tm.C:
		}
	}
}

// annotate sets the Group of each master fault of plan (the group whose
// master it hits: the target itself with controllers, else the target
// process's group) and, with controllers, holds pause-master and
// partition-master-controller at least Config.MasterFaultHold.
func (r *run) annotate(plan []nemesis.Event) []nemesis.Event {
	out := append([]nemesis.Event(nil), plan...)
	if r.cl == nil {
		return out // an existing cluster: client partitions only
	}
	top := r.cl.Topology()
	groupOf := map[string]string{}
	for _, p := range r.cl.Processes() {
		groupOf[p.Name] = p.Group
	}
	for i, e := range out {
		if e.Kind.Aim() != nemesis.Masters {
			continue
		}
		if top.Controllers > 0 {
			out[i].Group = e.Target
		} else {
			out[i].Group = groupOf[e.Target]
		}
	}
	if top.Controllers == 0 {
		return out
	}
	return nemesis.MinHold(out, func(k nemesis.Kind) time.Duration {
		if k == nemesis.PauseMaster || k == nemesis.PartitionMasterController {
			return r.cfg.MasterFaultHold
		}
		return 0
	})
}

// injectGroup injects a master or slave fault aimed at a group on a
// topology with controllers: it asks the controller for the group's master
// (and slaves, and its own leader) and hits those processes.
func (t *target) injectGroup(ctx context.Context, e nemesis.Event) (string, error) {
	cl := t.r.cl
	t.hit, t.cut = nil, nil
	qctx, cancel := context.WithTimeout(ctx, controllerQuery)
	defer cancel()
	master, epoch, err := cl.Master(qctx, e.Target)
	if err != nil {
		return "", err
	}
	t.epoch = epoch
	switch e.Kind {
	case nemesis.KillMaster:
		t.hit = []string{master}
		return fmt.Sprintf("SIGKILL of the master %s (epoch %d)", master, epoch), cl.Kill(master)
	case nemesis.PauseMaster:
		t.hit = []string{master}
		return fmt.Sprintf("SIGSTOP of the master %s (epoch %d) for %s", master, epoch, e.Hold), cl.Pause(master)
	case nemesis.KillSlave:
		slaves, err := cl.Slaves(qctx, e.Target)
		if err != nil {
			return "", err
		}
		if len(slaves) == 0 {
			return "", fmt.Errorf("group %s has no slave", e.Target)
		}
		// The plan's time picks which one, so a replay hits the same.
		s := slaves[int(e.At/time.Millisecond)%len(slaves)]
		t.hit = []string{s}
		return fmt.Sprintf("SIGKILL of the slave %s (master %s, epoch %d)", s, master, epoch), cl.Kill(s)
	case nemesis.PartitionMasterController:
		voters := cl.ControllerAddrs()
		t.cut = func(from, to string) bool { return from == master && slices.Contains(voters, to) }
		links := t.r.net.Set(t.cut, proxy.Fault{Mode: proxy.Blackhole})
		return fmt.Sprintf("blackhole of the links from the master %s (epoch %d) to the controllers for %s (%d links)", master, epoch, e.Hold, len(links)), nil
	case nemesis.KillControllerLeader:
		leader, err := cl.ControllerLeader(qctx)
		if err != nil {
			return "", err
		}
		// The master first, so that the failover time counts from its
		// loss; the controller leader right after, before anyone could
		// notice the master is gone.
		t.hit = []string{leader, master}
		if err := cl.Kill(master); err != nil {
			t.hit = t.hit[:0]
			return fmt.Sprintf("SIGKILL of the master %s", master), err
		}
		return fmt.Sprintf("SIGKILL of the master %s (epoch %d), then of the controller leader %s", master, epoch, leader), cl.Kill(leader)
	}
	return "", fmt.Errorf("fault %q does not aim at a group", e.Kind)
}

// healGroup ends a fault injectGroup started and says which master the
// group has now.
func (t *target) healGroup(ctx context.Context, e nemesis.Event) (string, error) {
	cl := t.r.cl
	var did []string
	var errs []error
	switch e.Kind {
	case nemesis.PauseMaster:
		for _, n := range t.hit {
			did = append(did, "SIGCONT "+n)
			errs = append(errs, cl.Resume(n))
		}
	case nemesis.PartitionMasterController:
		if t.cut != nil {
			t.r.net.Set(t.cut, proxy.Fault{})
			did = append(did, "the links pass again")
		}
	default: // the kills
		// A killed master restarted at once registers again before the
		// controller declares it dead, and stays the master: start
		// everything else first, and the old master once the group has
		// another (or FailoverWait has passed).
		var master string
		if e.Kind == nemesis.KillMaster || e.Kind == nemesis.KillControllerLeader {
			master = t.hit[len(t.hit)-1]
		}
		for _, n := range t.hit {
			if n == master {
				continue
			}
			did = append(did, n+" started again on the same data directory")
			errs = append(errs, cl.Start(ctx, n))
		}
		if master != "" {
			did = append(did, t.awaitFailover(ctx, e.Target, master))
			did = append(did, master+" started again on the same data directory")
			errs = append(errs, cl.Start(ctx, master))
		}
	}
	qctx, cancel := context.WithTimeout(ctx, controllerQuery)
	defer cancel()
	if m, epoch, err := cl.Master(qctx, e.Target); err == nil {
		did = append(did, fmt.Sprintf("master now %s at epoch %d (was epoch %d)", m, epoch, t.epoch))
		if epoch == t.epoch && e.Kind == nemesis.PartitionMasterController {
			// The controller client follows the leader's own address
			// (the ExtLeader hint), which no fault-proxy link fronts: a
			// master that learned it kept heartbeating past the cut.
			did = append(did, "no failover: the master's heartbeats still reached the controller leader (a connection to the leader's advertised address, past the proxy)")
		}
	} else {
		did = append(did, "master now unknown: "+err.Error())
	}
	t.hit, t.cut = nil, nil
	return strings.Join(did, "; "), errors.Join(errs...)
}

// compareLogs is the end-of-run comparison: after the drain, every group
// of two or more replicas is stopped gracefully (its slaves first) and
// its replicas' commit logs compared byte for byte up to the group's
// commit point (cluster.CompareLogs); each group gets a Compare line, with
// an Error when they differ. With controllers it first waits until every
// replica is back in the in-sync set, and a replica that does not hold
// every byte up to the commit point is a difference too.
func (r *run) compareLogs(ctx context.Context) error {
	top := r.cl.Topology()
	strict := top.Controllers > 0
	byGroup := map[string][]*cluster.Process{}
	for _, p := range r.cl.Processes() {
		if p.Group != "" {
			byGroup[p.Group] = append(byGroup[p.Group], p)
		}
	}
	for _, g := range top.Groups {
		procs := byGroup[g.Name]
		if len(procs) < 2 {
			continue
		}
		line := history.New(history.Info, history.Compare)
		line.Process, line.Group = "verify", g.Name
		var why []string
		if strict {
			wctx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
			if err := r.cl.WaitInSync(wctx, g.Name); err != nil {
				why = append(why, fmt.Sprintf("not every replica was in the in-sync set before the stop: %v", err))
			}
			cancel()
		}
		for _, name := range r.stopOrder(ctx, g.Name, procs) {
			if err := r.cl.Stop(name); err != nil {
				// The process is gone either way; its checkpoint may be
				// older, which only lowers what it is compared up to.
				r.log.Warn("verify: graceful stop before the log comparison", "process", name, "err", err)
			}
		}
		var reps []cluster.ReplicaLog
		for _, p := range procs {
			reps = append(reps, cluster.ReplicaLog{Name: p.Name, Dir: p.DataDir})
		}
		res, err := cluster.CompareLogs(g.Name, reps, strict)
		switch {
		case err != nil:
			why = append(why, "the logs could not be compared: "+err.Error())
		case !res.OK():
			why = append(why, res.String())
		}
		line.Value = res.String()
		line.Error = strings.Join(why, "; ")
		if line.Error != "" {
			r.log.Error("verify: replica logs differ", "group", g.Name, "why", line.Error)
		}
		if _, err := r.hist.Append(line); err != nil {
			return setupErr("%v", err)
		}
	}
	return nil
}

// stopOrder is the order the replicas of group are stopped in: the slaves
// first, the master last (so no slave is cut off from a master that still
// has something to ship).
func (r *run) stopOrder(ctx context.Context, group string, procs []*cluster.Process) []string {
	master := ""
	if r.cl.HasControllers() {
		qctx, cancel := context.WithTimeout(ctx, controllerQuery)
		master, _, _ = r.cl.Master(qctx, group)
		cancel()
	}
	var out []string
	var last []string
	for _, p := range procs {
		if p.Name == master || p.Role == cluster.RoleMaster {
			last = append(last, p.Name)
		} else {
			out = append(out, p.Name)
		}
	}
	return append(out, last...)
}
