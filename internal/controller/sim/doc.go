// Package sim is a deterministic simulation of one broker group under the
// failover controller (replication.md §3 item 2; FAILOVER-API.md part E).
// A run is one goroutine, one seeded math/rand/v2 source and a simulated
// time: an event queue of message deliveries and timers, no real clock, no
// sockets, no files. The same seed gives the same run, so a failing seed is
// its own reproduction:
//
//	go test ./internal/controller/sim -run 'TestSim$' -seed=N -v   # one seed, with its event trace
//	go test ./internal/controller/sim -run 'TestSim$' -soak=1h     # random seeds for an hour
//	go test ./internal/controller/sim -run 'TestSim$' -seeds=20000 # more seeds than the default 2000
//
// # Real code in the loop
//
//   - fsm.State.Apply for every command (Register, AlterISR, Elect), with
//     State.Check and fsm.CheckStep after each one;
//   - fsm.PickMaster for every election and fsm.LeaseSurelyExpired for the
//     lease bound before one;
//   - epoch.DivergencePoint on the master's side of every fetch and
//     epoch.CutPoint on the follower's side of a diverging answer;
//   - track.Tracker, one per master term as the daemon starts it
//     (SyncReplicas 0, SetISR, Restore), fed every master progress, slave
//     ack and heartbeat Tick on a clock.Manual set to the broker's own
//     clock: the commit point and the lag-based in-sync set come from it.
//
// # Modelled (the rules the real code follows, written again here)
//
// Brokers (parts C, D1, D2): a log of records (offset, size, epoch, id,
// queue, queue offset) from an offset above 2^32, a durable prefix (an fsync
// of 1–8 ms per group commit, stalled by fsync-stall faults), an epoch
// history fsynced at once, a persisted commit point and replica id, and a
// clock of its own whose rate differs from every other clock by at most the
// factor 1+Drift. The master admits a send only with a valid lease and at
// least minSlaves = min(1, replicas−2) slaves in the committed in-sync set
// (strict), and answers SEND_OK only when HW covers the record and the lease
// is still valid then (on its own clock, checked at the answer, so a paused
// or disk-stalled master that wakes up late never acks). The tracker's set
// is the committed ISR plus the additions the master proposed (the maximal
// ISR), so HW = min(master durable, the durable end of each of them). The lease runs to the broker's own
// send time of a granted heartbeat + Lease. Promotion only when the view
// names it master at an epoch above its history's last: queue next offsets
// rebuilt from the log, the epoch appended at the LEO, the lease revoked
// until the first grant as master. A view naming another master at a higher
// epoch demotes (lease revoked). Slaves pull with (epoch, LEO, last epoch,
// durable), append the epoch of the bytes before the bytes, ack durability
// after each fsync, keep commit point = min(master HW, durable), and cut at
// the divergence point, never below their commit point. The master checks
// a fetch's prefix before anything else, a follower holding more than it
// included (as ha's master answers Diverging). The master proposes
// (AlterISR, compare-and-set) the set the tracker's lag rules find in sync,
// a slave outside the ISR only once its durable end reached HW and its log
// this epoch's start (replication.md §2.7).
//
// Controller (part B2): one linearizable fsm.State shared by three voters
// (what raft commits survives a leader change), each with its own clock; at
// most one leader; a lost leader is replaced after a raft election of 1–2 s
// and the new one starts with empty soft state. Heartbeats are soft state;
// the lease is granted to the committed master with its current incarnation
// (whatever role its heartbeat claims: the weaker reading). The liveness
// loop runs every Heartbeat on the leader: nothing is declared dead in the
// first SessionTimeout of a leadership; a master is replaced once no
// heartbeat came for SessionTimeout and fsm.LeaseSurelyExpired since its
// last granted one or, when later, the start of the leadership (the
// service's leaseRef); an offline group is re-elected from a live ISR
// member.
//
// Network: one message per request or answer, delayed 0.5–10 ms (5% up to
// 200 ms, 1% up to 1 s, hence reordered), lost 1% (25% in lossy periods),
// duplicated 1% (5%); a cut link (both ways or one way) drops what it
// carries at send and at delivery; a restarted process never sees messages
// sent to its previous incarnation. A paused process gets its messages and
// timers when it resumes, while its clock (and its lease) ran on.
//
// Faults, every 0.3–1.1 s with probability 0.6 for Options.Faults (15 s),
// 60% of them on the master: crash and restart (the log keeps its durable
// prefix), pause (SIGSTOP), node↔controller cuts (often one-way), node↔
// brokers cuts, isolation of a node (sometimes with one slave, #6662), loss
// of the controller leader (30% of the time with a master crash: #7689,
// else 40% of the time with the master cut from the controller: #7017),
// fsync stalls, lossy periods, random one-way links. Then every fault heals
// for Options.Heal (8 s).
//
// # Invariants (checked at the step that can break them)
//
//   - no acked record lost: at SEND_OK the record is committed and durable on
//     every member of the controller's ISR; a new committed master, and every
//     master at its first ack of an epoch, holds every acked record; no
//     truncation removes one; the final master holds all.
//   - replicas identical up to the commit point: what a master's HW covers
//     joins one committed log and never changes; every replica's log below
//     its commit point is that log.
//   - one master at a time: no SEND_OK at an epoch below one the controller
//     already committed; one acking node per epoch; no lease extended while
//     another master's lease is valid at the same true time.
//   - epochs monotonic (fsm.CheckStep and per-node histories and records);
//     no truncation below a commit point; queue offsets dense on every log.
//   - liveness (TestSim only): every run takes a write again after its
//     faults healed.
//
// # Rules the simulation found (beyond the first contract)
//
// Without F1 and F2 the first contract left groups stuck for good
// (Options.Literal, TestLiteralContract: about half the seeds); without the
// others data is lost or logs diverge (their breaks are caught):
//
//   - F1: a master that restarts stays master in a new epoch (fsm Register
//     bumps it). Kept in its old epoch, a broker that promotes only above
//     its own last epoch never writes again, and one that resumes in the old
//     epoch is unsafe: its lost unsynced tail may live on in a slave under
//     the same epoch (the RestartKeepsEpoch break, which takes fsm's bump
//     back, is caught).
//   - F2: a first Register (ID 0) whose answer is lost was retried as a new
//     replica, leaving a phantom one (the master, if it was the group's
//     first). The broker persists a registration token (fsm Replica.Token)
//     before its first Register, and a retry with it gets the same id.
//   - F3: the epoch history is fsynced before the bytes it describes, so at
//     start-up it is cut to the recovered log end (TruncateAfter(Written())):
//     otherwise the next epoch cannot be appended after a crash that lost an
//     epoch's bytes.
//   - The commit point counts the additions a master proposes before the
//     controller commits them (Kafka's maximal ISR); SetISR only on success
//     lets a record be acked that a new ISR member lacks (the
//     ISRAddAfterCommit break is caught). The additions are counted until a
//     view settles them (a higher ISR version), not dropped when the
//     AlterISR call fails: an unanswered call may have committed (the
//     ISRRevertOnError break is caught).
//   - A slave joins the ISR only once its durable end reached HW: the lag
//     rules alone admit one that lacks a record the current set committed
//     (the JoinByLag break is caught).
//
// The breaks RestartKeepsEpoch, ISRRevertOnError and JoinByLag are what
// the first broker role manager did (promote without a new epoch entry
// when the view's epoch equals the history's last; SetISR(committed) on
// any AlterISR error; propose tracker.InSync() as it is); the daemon
// follows the fixed rules.
//
// # Not modelled
//
// Bytes and torn records (a record is whole or absent; store tests cover
// torn tails and PrepareMaster's cut), consume-queue files and dispatch
// (queue offsets are checked on the log), retention and OffsetOutOfRange,
// the raft protocol itself (its linearizability is assumed, as FakeLog does;
// the real library runs in part B1's tests), Transfer/Resign and operator
// elections, unclean elections, async replication and async flush, more
// than one group, clients' retries and routes (a producer sends to a node
// that acts as master, stale ones included), the name server, and the
// remoting/ha wire formats.
package sim
