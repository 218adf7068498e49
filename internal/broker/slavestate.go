package broker

// The state of pops, timers, dedup and transactions on the slaves of a
// replicated group (issue 16 item 4). With state replication on
// (Config.StateReplication), the master writes what the log does not
// already say into the state stream (state.go), and a slave applies it:
//
//   - Pop (KindPop): every change of the pop store (claims with their
//     cursor moves, acks, changes of invisible time, resets, a group's
//     removal) is an op (pop.Store.TakeOps) emitted in the order the
//     changes were made; a slave mirrors each to its own pop store
//     (pop.Store.Mirror, durable before the applier moves on). Ops set
//     state and carry the master's generations, so a replay is harmless
//     and the master's receipt handles work on a promoted slave. The
//     kind's snapshot is the whole pop state; its reset clears it.
//   - Timers (KindTimerFired): a slave indexes the replicated timer
//     records as the master does. After each Fire batch the master emits
//     the commit-log offsets of the timers it passed (delivered, rolled
//     forward or skipped); a slave keeps them in a durable set
//     (timer.FiredSet) and its timer store passes a batch only when every
//     timer in it is in the set, so it moves on behind the master's. A
//     promoted slave skips the fired timers and fires only the others. The
//     set is not a table the master owns (it shrinks as the slave's own
//     store catches up), so the kind has no snapshot and no reset.
//   - Dedup window: rebuilt from the log when a slave is promoted, before
//     it takes a send (the same Rebuild a restart does). A slave takes no
//     sends, so feeding the window at dispatch would cost every replicated
//     message a hash insert for nothing, while the rebuild reads only the
//     window's span once; the messages it reads are those the dispatcher
//     made readable, at most the commit point, i.e. everything the master
//     acknowledged under sync replication.
//   - Transactions: halves and op records are commit-log topics, so a
//     slave's transaction manager follows them; it stands by
//     (txn.Config.Standby) while the broker is a slave — no check-backs,
//     no re-stored halves, no discards — and runs a round at once when
//     promoted, knowing which halves were committed or rolled back.
//
// Without state replication nothing is queued or emitted and a slave's
// timers wait as before.

import (
	"fmt"
	"path"
	"slices"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/broker/timer"
)

// registerSlaveState registers the pop and timer kinds (New, after the
// pop and timer stores are open, before startState).
func (b *Broker) registerSlaveState() {
	if !b.stateOn() {
		return
	}
	ps := b.pops.st
	ps.SetMirror(true)
	b.registerStateKind(staterec.KindPop, stateKind{
		apply: func(p []byte) error {
			t, err := ps.Mirror(p)
			if err != nil {
				return err
			}
			return ps.Sync(t)
		},
		snapshot: func(emit func([]byte)) { ps.SnapshotOps(emit) },
		reset: func() error {
			t, err := ps.Clear()
			if err != nil {
				return err
			}
			return ps.Sync(t)
		},
	})
	b.registerStateKind(staterec.KindTimerFired, stateKind{apply: b.applyTimersFired})
}

// emitPopOps emits the pop store's changes made so far, in order. Called
// after each change of the pop store, before its caller is answered.
func (b *Broker) emitPopOps() {
	if !b.stateOn() {
		return
	}
	b.pops.st.TakeOps(func(op []byte) { b.emitState(staterec.KindPop, op) })
}

// openFiredTimers opens the set of timers the master fired (openTimers,
// before the timer store starts firing).
func (b *Broker) openFiredTimers() (*timer.FiredSet, error) {
	if !b.stateOn() {
		return nil, nil
	}
	sc := b.st.Config()
	return timer.OpenFiredSet(sc.FS, path.Join(sc.Dir, "timer-fired"), b.log)
}

// applyTimersFired (slave) records the timers the master passed and lets
// the slave's timer store pass them too.
func (b *Broker) applyTimersFired(p []byte) error {
	offs, err := timer.DecodeFiredBatch(p)
	if err != nil {
		return err
	}
	t := b.timers
	if t == nil || t.fired == nil {
		return nil
	}
	if err := t.fired.Add(offs); err != nil {
		return err
	}
	if t.fired.NeedsCompact() {
		if err := t.fired.Compact(t.ts.Checkpoint, b.st.CommitLogMinOffset()); err != nil {
			b.log.Warn("compacting the fired-timer set failed", "err", err)
		}
	}
	t.ts.Retry()
	return nil
}

// firedOnSlave decides a Fire batch on a slave: passed when the master
// fired all of it, deferred otherwise. A timer whose record retention
// removed counts as fired: nobody can deliver it (the master skips it too).
func (b *Broker) firedOnSlave(due []timer.Entry) error {
	floor := b.st.CommitLogMinOffset()
	live := due
	if slices.ContainsFunc(due, func(e timer.Entry) bool { return e.Offset < floor }) {
		live = slices.DeleteFunc(slices.Clone(due), func(e timer.Entry) bool { return e.Offset < floor })
	}
	if t := b.timers; t != nil && t.fired != nil && t.fired.TakeAll(live) {
		return nil
	}
	return fmt.Errorf("%w: %w", timer.ErrWait, b.errSlave(KindServiceUnavailable, "timer deliveries"))
}

// unfired drops from due the timers the old master fired (a promoted
// slave's Fire).
func (b *Broker) unfired(due []timer.Entry) []timer.Entry {
	if t := b.timers; t != nil && t.fired != nil {
		return t.fired.TakeFired(due)
	}
	return due
}

// emitTimersFired (master) tells the slaves which timers a Fire batch
// passed, once it is stored.
func (b *Broker) emitTimersFired(due []timer.Entry) {
	if !b.stateOn() || len(due) == 0 {
		return
	}
	offs := make([]int64, len(due))
	for i, e := range due {
		offs[i] = e.Offset
	}
	b.emitState(staterec.KindTimerFired, timer.EncodeFiredBatch(offs))
}

// roleChanging runs in SetRole before the role changes: a slave about to
// take sends rebuilds its dedup window from what it replicated.
func (b *Broker) roleChanging(from, to Role) {
	if from == RoleSlave && to == RoleMaster && b.dedup != nil {
		if n := b.rebuildDedup(); n > 0 {
			b.log.Info("dedup window rebuilt on promotion", "ids", n)
		}
	}
}

// roleChanged runs in SetRole after the role changed: a promoted slave
// acts at once on what fell due while it stood by (transaction checks,
// timers the old master did not fire).
func (b *Broker) roleChanged(from, to Role) {
	if from != RoleSlave || to != RoleMaster {
		return
	}
	if b.txns.m != nil {
		b.txns.m.Kick()
	}
	if t := b.timers; t != nil {
		t.ts.Retry()
	}
}
