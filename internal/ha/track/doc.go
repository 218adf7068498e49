// Package track keeps a replicated group's commit point (HW) and its
// in-sync set on the master, and answers the sends that wait for it.
//
// It is pure bookkeeping: no goroutines, sockets or files. The time comes
// from an injected clock.Clock (clock.Manual in tests). A mutex inside
// makes a Tracker safe for concurrent use; it is never held across I/O
// (log lines are written after it is released) and only one lock orders
// every change of the in-sync set and the HW, so a removal and an ack
// cannot race (replication.md pitfall 10).
//
// # Rules (replication.md §2.5)
//
//   - A replica's contribution is its durable end (the fsynced prefix), or
//     its written end (LEO) when Config.AsyncFlush says the group does not
//     fsync per write (pitfall 6: in sync-flush mode a slave's page-cache
//     offset never counts).
//   - HW = min(master contribution, the SyncReplicas-th highest contribution
//     among the in-sync slaves): a record is committed once the master and
//     SyncReplicas in-sync slaves hold it. With SyncReplicas = 0 the HW is
//     the master's contribution, exactly as a single node.
//   - Strict: while fewer than SyncReplicas slaves are in sync the HW stays
//     where it is, a Wait for an offset above it fails at once with
//     ErrNotEnoughReplicas, and the Waits already parked fail the same way
//     when the set shrinks (pitfall 7: never a silent downgrade to async).
//   - The HW never moves back: a slave that leaves may lower the computed
//     value, but what was committed stays committed.
//   - A slave is in sync while its lag (master LEO − slave written) is at
//     most MaxLagBytes and it holds the LEO the master had MaxLagTime ago,
//     i.e. the master first held a byte the slave lacks less than
//     MaxLagTime ago (its lag time). The master's LEO history is a ring of
//     64 (time, LEO) samples, at most one per MaxLagTime/32, so memory is
//     bounded and the time test errs by at most that granule, towards
//     staying in sync. The log the master started with (its first
//     MasterProgress) counts as held long ago: a slave is in sync only
//     once it holds it. A slave out of sync (a new one too) comes back
//     within half of both bounds, so one lagging near a bound does not flap.
//     Time is re-evaluated on every MasterProgress and Tick. Falling out
//     and catching up are logged ("slave out of sync" at Warn with a
//     reason lag_bytes, lag_time or gone; "slave in sync" at Info) and
//     counted (Stats.FallOuts, Stats.CatchUps).
//   - Wait answers ErrTimeout however its ctx ended (deadline or cancel);
//     a waiter whose ctx ends leaves the tracker, so none leak, and a Wait
//     allocates nothing of its own (waiters are recycled).
//
// Failover (issue 17) note: a committed record is on SyncReplicas in-sync
// slaves, not necessarily on every one, so a new master must be chosen
// among the in-sync slaves by the highest durable end, not just any of them.
//   - Acks are checked (pitfall 5): a slave's written or durable end above
//     the master's LEO, durable above written, or either moving backwards
//     is refused with an error and changes nothing. The check is per
//     connection: SlaveGone ends a slave's session (it falls out at once),
//     and its next SlaveProgress starts a new one from any offset.
//
// # Explicit in-sync set (controller mode, issue 17)
//
// With a controller, the in-sync set that counts is the one the
// controller committed, not the tracker's own view: SetISR(ids,
// minSlaves) switches the tracker to it. Then HW = min(master
// contribution, the contribution of every listed slave) (replication.md
// §2.5: the min over the ISR), a listed slave that is not connected holds
// the HW where it is (its waits time out; the controller, not the
// tracker, removes it), and while fewer than minSlaves are listed a Wait
// above the HW fails at once with ErrNotEnoughReplicas. SyncReplicas no
// longer counts. The lag rules keep running: they decide whom the master
// proposes (Config.OnInSync, called outside the lock on each change of
// the local set), and the daemon calls SetISR again with each set the
// controller commits. The HW still never moves back.
//
// # Driving it
//
//	t := track.New(track.DefaultConfig(), clk, logger)
//	t.MasterProgress(store.Written(), store.Durable()) // at start, and as the log grows
//	// on every fetch of slave 1, after MasterProgress with the ends the fetch read from:
//	if err := t.SlaveProgress(1, fetch.Offset, fetch.Durable); err != nil { /* drop the connection */ }
//	t.SlaveGone(1)                                     // its connection closed
//	err := t.Wait(ctx, end)                            // a sync send: nil, ErrTimeout, ErrNotEnoughReplicas
//	t.Tick()                                           // every second or so: time-based lag
//	store.SetCommitPoint(t.HW())
//
// After a restart, Restore(store.CommitPoint()) right after the first
// MasterProgress keeps the commit point the group had reached.
//
// The master must report its own progress before it hands a slave's acks
// over: an ack above the LEO the tracker knows is refused, so the fetch
// server calls MasterProgress with the source's ends (which only grow)
// before it calls SlaveProgress with bytes it read from that source.
package track
