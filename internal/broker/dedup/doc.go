// Package dedup is the broker's deduplication window. A producer that
// times out or hears "broker busy" sends the same message again, with the
// same UNIQ_KEY property (message.PropertyUniqKey, 32 hex digits). The
// broker remembers the (topic, UNIQ_KEY) of every message it stored for a
// window (DefaultWindow, 10 minutes) and answers a resend inside the
// window with the original send's Result, storing nothing.
//
// # Semantics
//
//   - An id is the pair (topic, UNIQ_KEY): the same key in two topics is
//     two ids. An empty key is never remembered and never hits.
//   - The first stored result wins: remembering an id already remembered
//     within the window changes nothing, and does not extend its window.
//   - The window counts from when the id was remembered: the Clock's time
//     at Remember or Commit, the record's StoredAt for Rebuild. An id
//     remembered at t hits while now − t < Window (to the millisecond).
//   - At most MaxEntries ids are held (DefaultMaxEntries, 4 million); when
//     full, the oldest is dropped first, even inside its window
//     (Stats.CapDrops counts those: a rising count means the cap is below
//     the traffic times the window). Dropping an id early can only let a
//     duplicate through; it never loses a message.
//   - Window 0 disables everything: no hit, nothing held, no claim waits.
//
// # Memory: about 65 bytes per id
//
// No key string is kept. An id is its 128-bit hash: two 64-bit maphash
// sums of (len(topic), topic, key) under two random seeds made by New. A
// false hit (two ids with one hash) would answer a new message as a
// resend and lose it; with n ids held and m lookups its chance is about
// n·m/2^128 — for 4 million ids and 10^15 lookups, 10^-17. The seeds are
// random per process, so colliding keys cannot be prepared offline, and
// nothing hashed is ever persisted: Rebuild hashes afresh.
//
// The ids live in a ring, in the order they were remembered, of 48-byte
// entries in chunks of 1024 (48 KiB):
//
//	entry (48 bytes)
//	 0  h[0]      uint64   hash, first half (its low 31 bits: tag)
//	 8  h[1]      uint64   hash, second half
//	16  clOffset  int64    Result.CommitLogOffset
//	24  qOffset   int64    Result.QueueOffset
//	32  storedAt  int64    Result.StoredAt, unix ms
//	40  queueID   int32    Result.QueueID
//	44  atDelta   int32    remembered-at − storedAt, ms (saturated)
//
// Result.Topic is not stored: Lookup's caller names it. Chunks are taken
// at the tail and given back at the head (two kept spare), so memory
// follows the ids held and a steady flow allocates nothing.
//
// An open-addressing table (linear probing, backward-shift deletion, no
// tombstones, power-of-two size) maps a hash to its ring position. A slot
// is 8 bytes, 0 when empty:
//
//	bits 63..32  tag: 1<<31 | low 31 bits of h[0]; tag & (size−1) is the home slot
//	bits 31..0   low 32 bits of the ring sequence number
//
// The ring spans fewer than 2^31 sequence numbers (MaxEntries ≤ 2^30), so
// the low 32 bits name an entry; the tag rejects almost every foreign slot
// without reading the ring, and lets the table be resized from its slots
// alone. The table doubles above 3/4 load and halves below 1/8, so its
// load stays within 3/8..3/4 while it grows: 11 to 21 bytes per id. With
// the 48-byte entry that makes 59 to 70 bytes per id; TestBytesPerEntry
// measures 64.8 (runtime.MemStats, one million ids), and BytesPerEntry
// reports the live figure. 4 million ids take about 260 MB.
//
// # Expiry and cost
//
// No goroutine: every Lookup, Remember and Acquire first drops up to 16
// expired ids from the ring's head, more than the one id a call adds, so
// expiry keeps pace in O(1) per call. Expire drops all that are due (in
// steps that let other calls in); the broker may call it from a periodic
// job so that memory is given back when traffic stops. Resizing rehashes
// the table under the lock: O(size), once per doubling or halving. The
// largest step, to the 64 MB table of 4 million ids (at 3.1 million),
// stalls the window's callers for about 65 ms; the halvings on the way
// down cost the same once traffic falls to an eighth.
//
// On a 2-core AMD EPYC VM a new message's Lookup + Remember costs about
// 150 ns with 16 thousand ids held and 350 ns with a million (the table
// and ring then miss the caches); a hit costs about 75 ns. None of them
// allocates.
//
// # Concurrency and claims
//
// A Window is safe for concurrent use; one mutex guards it, held for well
// under a microsecond per call (except a resize). Lookup then Remember
// leaves a gap: a resend that arrives while the first send is still being
// stored would miss and be stored twice. Claims close it. Acquire returns
// a Claim that is either Dup (answer Claim.Result) or held; a second
// Acquire of a held id waits until the holder Commits (it then gets Dup)
// or Releases (it then holds the id and stores the message itself).
// AcquireBatch takes a batch's claims all at once and waits holding none,
// so sends cannot wait for each other in a cycle. TryAcquire and
// TryAcquireBatch never wait.
//
// # The broker's send path
//
// Single send (Broker.Send), after validation and routing, before the store:
//
//	c := win.Acquire(req.Topic, uniqKey)        // uniqKey: the message's UNIQ_KEY, "" if none
//	if c.Dup {
//		return answer(c.Result)                 // msgId from Result.CommitLogOffset; store nothing
//	}
//	defer c.Release()                           // store failed or panicked: a waiting resend takes over
//	err := store.Put(msg)
//	if err == nil || errors.Is(err, store.ErrFlushTimeout) {
//		c.Commit(dedup.Result{Topic: req.Topic, QueueID: msg.QueueID, QueueOffset: msg.QueueOffset,
//			CommitLogOffset: msg.PhysicalOffset, StoredAt: msg.StoreTimestamp})
//	}
//
// SendBatch must not block: it uses TryAcquire and, when the id is held by
// a send still being stored, finishes that send on a goroutine of the
// broker's that calls Acquire (as for a topic that must be created). The
// store's done callback Commits or Releases; both are O(1) and do not
// block.
//
// Batch send: the broker takes the items' keys in order, then
//
//	cs := win.AcquireBatch(req.Topic, keys, nil)
//	defer win.ReleaseAll(cs)
//	// store, as one batch, only the items whose claim is not Dup;
//	// Commit each stored item's claim with its own Result;
//	// answer every item in request order: a Dup item with its original
//	// offset msgId, a stored item with its new one; QueueID and QueueOffset
//	// of the answer are those of the first item (original or new).
//	// If every item is Dup, store nothing.
//
// Deduplication is per message, as RocketMQ defines it: a resent batch
// whose items are all known is answered entirely from the window; a batch
// in which only some ids are known (an item sent before on its own, or a
// batch partly dropped by the cap) stores the new items and answers the
// known ones with their original ids, so the producer gets one id per
// message in its order and the consumer sees each message once. An id
// repeated inside one batch is not a resend: both copies are stored.
//
// # After a restart
//
// The window is memory only. At start the broker feeds Rebuild every
// message stored since Horizon() (commit log or index by store time),
// oldest first, each with the Result the broker answered for it; ids
// older than the window are skipped.
//
// # Notes for the broker
//
//   - Use the topic the producer sent to, before routing: a delayed or
//     transactional message is stored under a system topic, but its
//     resend names the real topic. Rebuild must use the same topic (the
//     REAL_TOPIC property) and the same Result the send answered.
//   - Consumer send-back (a failed message returned for retry) and a
//     client's fallback send to %RETRY%<group> carry the original
//     UNIQ_KEY each time the message is retried; they are not resends and
//     must bypass the window (or make the reconsume count part of the
//     key), else the second retry of a message would be swallowed.
//   - A send answered FLUSH_DISK_TIMEOUT is in the log: Commit it. A resend
//     can be answered SEND_OK once the store's flushed offset is past
//     Result.CommitLogOffset, FLUSH_DISK_TIMEOUT before.
//   - Every held claim must end in Commit or Release: a waiting resend
//     waits as long as the holder's store call.
package dedup
