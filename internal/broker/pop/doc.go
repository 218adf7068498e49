// Package pop is the durable state of pop consumption (RocketMQ 5.x simple
// consumers): for every (consumer group, topic, queue) a cursor — the next
// queue offset never popped — and the in-flight set, the messages
// delivered and not acknowledged, each with the time it becomes visible
// again (Until), its delivery attempt and a generation that identifies the
// delivery. It knows nothing of the broker or the store: the broker reads
// messages and asks this package what to take and records what it took.
//
// # Driving it
//
//	s, _ := pop.Open(fsys, dir, pop.Options{})
//	v := s.Peek(key, now, fifo, max)          // expired entries, cursor, FIFO block
//	// read messages from v.Cursor, DLQ expired ones past their max attempts
//	got, t, err := s.Claim(pop.Claim{Key: key, From: v.Cursor, To: next, New: offs, Again: v.Expired, Until: until})
//	s.Sync(t)                                 // durable before the messages go out
//	h := pop.HandleOf(key, got[0])            // the receipt handle
//	_, t, err = s.Ack(group, topic, h, now); s.Sync(t)
//	h2, _, t, err := s.Change(group, topic, h, newUntil, now); s.Sync(t)
//
// Claim, Ack and Change apply to memory at once (so a concurrent Peek sees
// the claimed messages as taken) and append a record to the log; the
// caller answers its client only after Sync of the returned Ticket. A
// Claim is checked against the state (the cursor it read from, the
// generations of the expired entries it redelivers) and refused with
// ErrConflict if another claim came first; the broker also serialises pops
// of one queue, so conflicts are rare.
//
// Redelivery is in place: an entry whose Until has passed is offered by
// Peek before new messages and redelivered with Attempt+1 and a new
// generation. A handle is refused once its delivery's Until has passed
// (ErrExpired), when a Change replaced it (ErrSuperseded), when the
// message is acknowledged (ErrAcked), never delivered (ErrNotDelivered),
// or when it was issued to another group or topic (ErrOtherGroup,
// ErrOtherTopic). Anything that does not decode is ErrInvalidHandle;
// DecodeHandle never panics (it is fuzzed).
//
// # Receipt handle
//
// 45 bytes, big-endian, as 60 characters of unpadded URL-safe base64:
//
//	 0  1  version   1
//	 1  4  queue     int32   queue id
//	 5  8  offset    int64   queue offset of the message
//	13  8  gen       uint64  generation of the delivery (never 0)
//	21  4  attempt   int32   delivery attempt (from 1)
//	25  8  until     int64   invisible until, unix ms
//	33  4  group     uint32  FNV-1a 32 of the consumer group name
//	37  4  topic     uint32  FNV-1a 32 of the topic name
//	41  4  crc       uint32  CRC-32C of bytes 0..40
//
// The name hashes let a handle used with another group or topic be told
// apart from a damaged one; the state lookup (queue, offset, generation)
// decides the rest.
//
// # Files
//
// A directory holds:
//
//	snapshot              the whole state as of the start of log-<gen> (absent: empty state, gen 1)
//	log-<gen, 20 digits>  the records appended since that snapshot
//	*.tmp                 a snapshot being written; removed by Open
//
// All integers are big-endian; CRC is CRC-32C (Castagnoli); a name is a
// uint16 length and its bytes; a key is group name, topic name, queue id
// int32; an entry is offset int64, until int64 (unix ms), attempt int32,
// gen uint64 (28 bytes).
//
// Log record (one per Claim, Ack or Change, and per queue of a ResetTopic
// or ForgetGroup):
//
//	0  4  length   uint32  payload bytes
//	4  4  crc      uint32  CRC of the payload
//	8  …  payload  key, cursor int64 (-1: unchanged; -2: forget the queue), count uint32 and that many
//	               entries (added or replaced), count uint32 and that many offsets
//	               int64 (removed from the in-flight set)
//
// Snapshot:
//
//	0  8  magic    "PPOPSNP1"
//	8  8  logGen   uint64  the log that follows it
//	16 8  nextGen  uint64  next generation to hand out
//	24 4  queues   uint32  then per queue: key, cursor int64, count uint32, entries
//	…  4  crc      uint32  CRC of all bytes before
//
// # Durability and group commit
//
// Sync(t) returns once the record t is on disk. One caller at a time
// writes: it takes every record buffered so far, writes and fsyncs them
// and wakes the others; records appended meanwhile go out together with
// the next fsync, so many concurrent pops share one. When the log has
// grown past Options.CompactBytes and twice the last snapshot, the writing
// caller writes a snapshot of the whole state instead (which covers every
// buffered record, so they need not be written), as snapshot.tmp, fsync,
// rename, fsync the directory; then creates log-<gen+1>, removes log-<gen>
// and fsyncs the directory. A crash leaves either the old snapshot and its
// log or the new snapshot (Open creates its log if missing). Open loads
// the snapshot, replays its log and cuts a torn tail (the first record
// whose length or CRC does not check, and everything after it: records
// not synced, whose callers were never answered), and removes other log
// and temporary files. A failed write or fsync is sticky
// (ErrWriteFailed): every later change is refused until the broker
// restarts and reloads the state. A change whose sync failed may or may
// not be in the reloaded state; its caller was told it failed.
//
// # Replication
//
// A replicated broker's master turns every change into an op (SetMirror,
// TakeOps) that its slaves apply to their own stores (Mirror); SnapshotOps
// and Clear carry the whole state. Ops set state rather than add to it, so
// replaying them is harmless. See mirror.go.
//
// # Memory
//
// Per queue: the cursor, a map of the in-flight entries, their offsets in
// order (for Low) and a heap by Until (for Peek and NextVisible; a Change
// leaves a stale heap item that is dropped when met, and the heap is
// rebuilt when stale items outnumber live ones). The broker bounds the
// in-flight entries per group.
//
// # Concurrency
//
// All methods are safe for concurrent use. One mutex guards the state and
// the log buffer; it is released during writes and fsyncs.
package pop
