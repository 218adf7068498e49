// Package ha ships the master's commit log to its slaves, byte for byte,
// over one connection per slave (internal/netx: TCP in production, the
// in-memory network in tests). The frames are package wire's; the commit
// point arithmetic is package track's; the epoch history is package
// epoch's. The stores are reached through the narrow Source (master) and
// Sink (slave) interfaces, which the daemon adapts from internal/store.
//
// # The fetch protocol
//
// The slave dials the master and sends Fetch frames; the master answers
// each with one FetchResp, in order. A slave with Credentials sends a
// signed Auth frame before them; a master with Authenticate (the daemon's
// --auth) refuses, Unauthorized, a connection that does not open with a
// valid one of a super user, and the slave retries after its back-off
// (ErrUnauthorized is not final). The first Fetch of a connection is the
// handshake: a slave that knows a newer epoch than the master's (Epoch) is
// answered NewerEpoch before anything else — this master is stale, and
// MasterConfig.OnStale tells the daemon so it can fence itself; a stale
// master never makes anyone cut their log. The master then checks that the
// slave's log is a prefix of its own (the byte before the slave's end,
// Offset-1, lies in epoch LastEpoch in the master's history too, and
// Offset ≤ the master's LEO), answering Diverging (the shared epoch and
// where to cut: epoch.DivergencePoint) and closing otherwise — NotPrefix
// for a log with bytes but no epoch — and OffsetOutOfRange (with LogStart)
// when Offset is below the master's first retained byte. It then sets the
// connection's cursor to Offset.
//
// The slave keeps at most two fetches in flight. The master reads from the
// connection's cursor, not from Fetch.Offset: a response carries Data =
// [Base, Base+len) with Base = the cursor, and moves the cursor past it; so
// a second, pipelined fetch gets the bytes after the first one's, and a
// long poll is always parked on the master while the slave appends. The
// Offset and Durable of every Fetch are the slave's acks ("written up to",
// "durable up to"); the master applies them when the frame arrives (not when
// it answers it), so an ack moves the commit point at once. An ack above the
// bytes sent on the connection (hence above the master's LEO), below an
// earlier ack, or with Durable > Offset is a protocol violation: the master
// answers an error frame and closes that connection only.
//
// Between fetches the slave may send Ack frames (wire.Ack: its written and
// durable ends, under the same rules as a Fetch's acks), which the master
// applies when they arrive and does not answer: a slave whose store takes
// the next chunk while the previous one's fsync runs (AsyncSink) acks each
// fsync at once, so the commit point does not wait for its next fetch. The
// first frame of a connection must be a Fetch.
//
// A response is sent when the cursor is below the LEO, when the commit point
// moved past the value the connection last carried, or when MaxWait (capped
// by MasterConfig.MaxWait) has passed: a long poll that also pushes commit
// point updates. Data never crosses an epoch boundary; Epoch/EpochStart are
// the epoch of the bytes at Base (of Data, or of the cursor when Data is
// empty), so the slave records in its own history every epoch whose bytes
// it appends, before appending them.
//
// The commit point: the master hands the tracker its own ends
// (MasterProgress) as the log grows (WaitWritten), while the durable end
// trails the written end (every MasterConfig.DurablePoll), on every fetch,
// on every tick and in WaitReplicated; every rise of the tracker's HW is
// passed to MasterConfig.OnCommit (the daemon: Store.SetCommitPoint), from
// one goroutine, strictly increasing, and wakes the parked long polls.
// Master.WaitReplicated is what a sync send waits on (the broker's
// Replicator): nil, track.ErrTimeout or track.ErrNotEnoughReplicas. It
// answers nil only once every connected slave that holds the send's bytes
// has been written a response whose commit point covers them (a waiting
// send ends a long poll's HWPushDelay at once): a master that dies right
// after answering leaves the send readable on such a slave, not held
// there above the commit point it knew.
//
// # The slave
//
// The slave appends Data at Base, which must equal the end of what it
// has appended (otherwise it drops the connection and re-syncs from its
// end); with an AsyncSink it hands the bytes over without waiting for
// their fsync (at most maxPendingAppends chunks unanswered) and sends its
// next fetch at once, and an Ack once each append is durable. A write that
// fails ends nothing at once: the slave reads on until the connection
// fails, so the last commit point a dead master wrote is applied. It applies
// SetCommitPoint(min(HW, Durable())) — never above the master's commit
// point, never backwards. It reconnects with a bounded exponential back-off
// (on the injected clock). NotPrefix and UnknownReplica stop it: Err says
// why, and nothing more is fetched until an operator acts.
//
// Diverging (an old master rejoining its group as a slave, replication.md
// §2.7): a slave whose Sink is a Truncater cuts its log at
// epoch.CutPoint — the master's cut, lower where its own history ends the
// shared epoch earlier — then drops its epoch entries from there (the log
// first: entries a crash leaves above the log's end are dropped by the
// next session), logs "truncated N bytes (M messages) above X diverging
// from the master's epoch E" with the dropped message ids, counts it in
// SlaveStatus.Truncations/TruncatedBytes and fetches again at once. A cut
// below its commit point (the one it applied, or the store's) is refused:
// it stops with ErrBelowCommitPoint, logged at Error, and acks nothing
// more. Without a Truncater, Diverging stops it with ErrNotPrefix. OffsetOutOfRange
// makes it start over from the master's LogStart: at once when its log is
// empty, through Restarter when its store can drop its log (the store's
// ResetAt; the slave logs "the slave's log ends at X, the master's starts
// at Y: starting over from Y", drops its epoch history, which described
// the dropped bytes, counts it in SlaveStatus.Restarts and calls
// SlaveConfig.OnRestart), else it stops with Err. An empty log sends no
// last epoch (the master takes it at its LogStart).
//
// # Bounds
//
// Frames are at most wire.MaxFrame; the master reads at most
// MasterConfig.MaxBytes per response into a per-connection buffer of fixed
// size (RawReaderInto; the log bytes then go out with the header in one
// writev — sendfile(2) would skip that copy, but the frame's CRC needs the
// bytes in user space anyway); a Fetch frame larger than maxFetchFrame is
// refused before it is read. A slave over an AsyncSink holds at most
// maxPendingAppends responses' Data besides its read buffer.
// Idle connections are closed after MasterConfig.IdleTimeout (master) and
// a response that does not come within MaxWait+SlaveConfig.ResponseTimeout
// drops the connection (slave), both on the injected clock, so a partition
// is noticed without the network's help.
package ha
