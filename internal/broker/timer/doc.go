// Package timer is Petrel's disk-backed timer store: the one timer wheel
// behind RocketMQ delay levels, retry back-off and 5.x any-time delivery.
//
// It is an index over timer records the broker keeps in the commit log. The
// broker stores a delayed message as a record of a system topic, then calls
// Add with the record's commit-log offset and size, its due time and its
// position src in that topic. When the time comes the store passes the entry
// to Options.Fire, and the broker reads the record and puts the real
// message. Timers live on disk, so the Go heap does not grow with their
// number (10 million pending timers: about 5 MiB of heap, most of it the
// wheel's slot table).
//
// # Driving it
//
//	s, err := timer.Open(fsys, dir, timer.Options{Clock: clk, Fire: deliver})
//	// replay every timer record (Add or Cancel) with src >= s.Applied(), in order
//	s.Start()                   // firing begins
//	s.Add(e, src)               // cheap: a buffered 48-byte append, no fsync
//	s.Cancel(key, deliverAt, src)
//	s.Close()
//
// Start is separate from Open so that nothing fires while the caller is
// still replaying: a timer whose Cancel is in the replayed range must not
// fire. Fire is called from the store's own goroutine with due entries
// (DeliverAt <= Clock.Now(), checked to the millisecond), oldest first, at
// most FireBatch at a time. If it fails, the same entries are offered again
// after a back-off on the Clock (100 ms doubling to 10 s); they are never
// skipped.
//
// # The wheel
//
// The wheel has Span/1s slots, one per second; slot i serves the seconds
// congruent to i modulo the slot count. The cursor is the next second whose
// slot has not been taken yet. Each slot holds one chain: records linked
// backwards from the newest (the slot's head, kept in memory) through each
// record's prev field. A chain belongs to one round, the second at which the
// slot is next taken: the one second in [cursor, cursor+slots) congruent to
// the slot. An Add due at second sec >= cursor is appended to the chain of
// slot sec mod slots; if sec is beyond that round (a delay longer than the
// span) the record is rolled when its slot is taken: copied to the slot's
// next round, again and again until the round is its own second. So
// MaxDelay may be years with a 7-day wheel, and every record is copied or
// done within one span of being written.
//
// An Add due at a second whose slot is already taken (already due, or later
// in the second being fired) goes to the open late chain instead, which the
// firing goroutine takes at once as a late run. Late chains are numbered by
// generation. Another late chain is taken while late runs are active only if
// each of them merely waits for an entry not due yet (late entries are all
// due within a second), up to four at once: so a due entry is never held back
// behind one that is not, and memory stays bounded.
//
// When the clock reaches second cursor, the slot's chain is taken: it
// becomes the slot run, the slot starts a fresh chain for its next round,
// and the cursor moves on. The next slot is taken only when the slot run is
// done, so firing keeps DeliverAt order across slots; the slot run and the
// late runs are merged in key order. A run is read by load
// passes along its chain. The first pass of a slot run rolls the records of
// later rounds (rollBelow marks how far it got, so a pass resumed after a
// crash does not copy a record twice). Every pass keeps the LoadLimit
// smallest keys (DeliverAt, ref) above the run's progress (a bounded heap), so
// a second holding millions of timers is fired in several passes with
// bounded memory. Entries are passed in key order, fired or skipped as
// cancelled, and the progress is the key of the last one passed.
//
// # Cancel
//
// Cancel(key, deliverAt, src) appends a cancel record to the chain that may
// hold the timer: the slot chain of deliverAt's second, or, when that slot
// was already taken, the late chain and the running chains (and it marks
// the timer in a run's loaded entries). A pass reads a chain newest first,
// so it knows every cancel before the timers it hits: a cancel suppresses
// the timers with its Key and DeliverAt that were added before it (a timer
// re-added later fires). A cancelled timer leaves Pending when it is
// passed, not when Cancel returns; cancel records are never rolled.
// The cancels of one chain are held in a map during a pass.
//
// # Files
//
// A directory holds:
//
//	checkpoint                 the state as of the last checkpoint
//	wheel-<end, 20 digits>     a snapshot of the slot heads, named by the log end it was taken at
//	log-<offset, 20 digits>    timer-log files of per records each (Options.EntriesPerFile,
//	                           default 1<<20 = 48 MiB), named by the byte offset of their first
//	                           record in the whole log; the first record of a file is a multiple of per
//	*.tmp                      a checkpoint or wheel file being written; removed by Open
//
// All integers are big-endian. A ref is a record's index in the whole log
// plus one; 0 means none. CRC is CRC-32C (Castagnoli).
//
// Timer-log record, 48 bytes:
//
//	 0  8  prev     uint64  ref of the previous (older) record of the same chain, 0 ends it
//	 8  8  at       int64   DeliverAt, unix milliseconds
//	16  8  offset   int64   Offset of the timer record in the commit log
//	24  8  key      uint64  Key (0: cannot be cancelled)
//	32  4  size     int32   Size of the timer record
//	36  4  chain    uint32  slot chains: the round, a unix second (valid to 2106);
//	                        late chains: the generation
//	40  1  kind     uint8   1 add, 2 cancel; | 0x80 for a record of a late chain
//	41  3  reserved zero
//	44  4  crc      uint32  CRC of bytes 0..43
//
// Cancel records carry at and key only (offset and size zero). A record
// appended to a running chain (a cancel reaching a run) has that run's chain
// id. A rolled copy is a new add record of the next round; the old one is
// left in place and becomes garbage with its chain.
//
// Wheel file, 28 + 8*slots + 4 bytes:
//
//	 0  8  magic    "PTMRWHL1"
//	 8  4  slots    uint32
//	12  8  cursor   int64   the cursor when the snapshot was taken
//	20  8  end      uint64  the log end (records) when it was taken
//	28  8  head     uint64  ref of the head of slot 0, 0 = empty; then slots 1, 2, ...
//	 …  4  crc      uint32  CRC of all bytes before
//
// Checkpoint file, 118 + 37*lateRuns + 4 + 16*files + 4 bytes:
//
//	  0  8  magic       "PTMRCKP1"
//	  8  4  slots       uint32  fixed at creation (Options.Span)
//	 12  4  per         uint32  records per log file, fixed at creation
//	 16  8  applied     int64   every Add/Cancel with src < applied is in the state
//	 24  8  cursor      int64   next second whose slot is taken
//	 32  8  end         uint64  records in the log that the state covers (all synced)
//	 40  8  pending     int64   Pending
//	 48  1  hasWheel    0 or 1  whether a wheel file exists (a new store has none:
//	                            its wheel is empty at wheelCursor, wheelEnd 0)
//	 49  8  wheelEnd    uint64  the wheel file to start from: wheel-<wheelEnd>
//	 57  8  wheelCursor int64   its cursor
//	 65  8  lateHead    uint64  ref of the head of the open late chain
//	 73  4  lateGen     uint32  its generation (from 1)
//	 77 37  slot run    present uint8, chain uint32 (its round = cursor-1), head uint64,
//	                    rollBelow uint64, progAt int64, progRef uint64 (all zero when absent)
//	114  4  lateRuns    uint32  number of late runs (0..4)
//	118 37  late run    the same 37 bytes (present 1, rollBelow 0), once per run, oldest first
//	  …  4  files       uint32  number of log files listed
//	  … 16  file        start uint64 (index of its first record), maxRound uint32,
//	                    maxLate uint32 (highest slot round and late generation it
//	                    holds, 0 = none); once per file, in order
//	  …  4  crc         uint32  CRC of all bytes before
//
// # Crash safety
//
// Nothing is fsynced per Add: the caller replays from Applied() after a
// crash. A checkpoint (every CheckpointInterval, after each successful Fire
// batch, on Checkpoint and on Close) does, in order: capture the state under
// the lock and write the append buffer to its file; fsync the log files
// written since the last checkpoint and the directory if files were created;
// when SnapshotEvery records were appended since the last wheel file (or on
// Close), write wheel-<end> (temp file, fsync, rename, fsync directory);
// write the checkpoint the same atomic way; then delete the wheel file and
// log files it made useless and fsync the directory. A crash at any point
// leaves the previous checkpoint, whose records and wheel file are durable.
//
// Open reads the checkpoint, loads the wheel file it names, opens the log
// files it lists, cuts the file holding end back to end (records after it
// were not checkpointed: the caller replays them) and removes any other log
// or wheel file. It then replays the records [wheelEnd, end) onto the wheel
// snapshot: each record of a slot chain becomes the head of its slot unless
// the slot already holds a later round, and slots whose round is below the
// checkpoint's cursor are emptied (they were taken). Late chains and runs
// need no replay: the checkpoint holds their heads. So Open reads at most
// about SnapshotEvery records plus one wheel file.
//
// A run after a crash is read again from its head: entries with a key at or
// below its progress were passed before, and records at or above rollBelow
// were rolled before. Progress is checkpointed right after each Fire batch
// (the Fire kicks a checkpoint), so a timer may be passed to Fire again
// after a crash only if the crash came before its firing was checkpointed:
// at-least-once, and the broker dedups.
//
// # Reclaiming space
//
// A log file is deleted (after a durable checkpoint) when that checkpoint
// lists it, it is full, it is not the last file the checkpoint lists, and
// every chain with a record in it is done: every slot round it holds is
// below the running slot run's round (or the cursor), and every late
// generation below the oldest running late run's (or the open late
// chain's). The test is the one Open applies to the checkpoint, so Open
// never needs a deleted file: the last listed file stays even when an Add
// has opened a newer file since the state was captured (it goes with the
// next checkpoint). Because long timers are copied forward each span, no
// file outlives its newest record by much more than one span, whatever
// MaxDelay is. A deleted file that a checkpoint still lists is skipped by
// Open.
//
// # Memory
//
// In memory: the slot heads (8 bytes a slot: 4.8 MiB for 7 days), the
// loaded entries of at most five runs (LoadLimit each, default 65536 = 3 MiB),
// a 64 KiB append buffer, a 64 KiB read cache of 16 blocks, the cancels of
// the chain being read, and one small struct per log file. Reads go through
// vfs.File.ReadAt in 4 KiB blocks, so chains written close together (a delay
// level's timers) cost one read per block.
//
// # Slaves
//
// A replicated slave's broker indexes the same timer records but delivers
// nothing: its Fire passes a batch only when a FiredSet says the master
// fired every timer in it, and returns an error wrapping ErrWait
// otherwise (offered again after the back-off; Retry drops the back-off).
// See fired.go for the set and the fired-batch payload.
//
// # Concurrency
//
// Add, Cancel, Applied, Pending, Checkpoint, Start and Close may be called
// from any goroutine. One mutex guards the wheel, the runs and the append
// buffer; it is not held across a Fire call, a chain read or an fsync (a
// full append buffer is written under it: a page-cache write of 64 KiB).
// The firing goroutine and the checkpoint goroutine start with the store and
// Close waits for both (and for a Fire call in progress).
package timer
