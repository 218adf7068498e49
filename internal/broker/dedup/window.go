package dedup

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Defaults the broker's configuration should use.
const (
	// DefaultWindow is how long a stored id is remembered.
	DefaultWindow = 10 * time.Minute
	// DefaultMaxEntries caps the remembered ids: about 260 MB at
	// BytesPerEntry, enough for 6,600 messages a second over DefaultWindow.
	DefaultMaxEntries = 4_000_000
)

// expireBudget is how many expired entries one Lookup or Remember drops at
// most: more than the one entry a call can add, so expiry keeps pace, and
// few enough that no call stalls the others.
const expireBudget = 16

// Result is what a send answered; Lookup hands it back for a resend.
type Result struct {
	Topic       string
	QueueID     int32
	QueueOffset int64
	// CommitLogOffset is the stored record's position; the broker derives
	// the offset message id from it.
	CommitLogOffset int64
	// StoredAt is the record's store time, unix ms.
	StoredAt int64
}

// Options configure a Window.
type Options struct {
	// Window is how long an id is remembered after it was stored;
	// DefaultWindow is the broker default. 0 (or less) disables the
	// window: Lookup never hits, Remember stores nothing and Acquire holds
	// nothing. It is kept to the millisecond, rounded up.
	Window time.Duration
	// MaxEntries caps the ids held (the ring, counting ids replaced but
	// not yet expired); beyond it the oldest are dropped first. ≤ 0 means
	// DefaultMaxEntries; at most 2^30.
	MaxEntries int
	// Clock tells the time; required.
	Clock clock.Clock
}

// Window remembers the (topic, UNIQ_KEY) of every stored message for a
// while and answers a resend with the original Result. It is safe for
// concurrent use. See the package documentation.
type Window struct {
	windowMs   int64 // 0: disabled
	maxEntries int
	clock      clock.Clock
	seeds      [2]maphash.Seed

	mu   sync.Mutex
	cond sync.Cond // on mu: signalled when a waited-for claim is released
	x    index
	// inflight holds the ids claimed by sends being stored.
	inflight map[key]flight
	gen      uint64 // last claim generation handed out
	waiting  int    // goroutines blocked in Acquire / AcquireBatch

	hits, capDrops, waits uint64
}

// flight is one claimed id.
type flight struct {
	gen     uint64 // the claim's generation: a stale Release does nothing
	waiters int    // > 0: someone waits for its release
}

// New returns an empty Window. It panics without a Clock.
func New(opts Options) *Window {
	if opts.Clock == nil {
		panic("dedup: Options.Clock is required")
	}
	w := &Window{
		clock:      opts.Clock,
		maxEntries: opts.MaxEntries,
		seeds:      [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
	if opts.Window > 0 {
		w.windowMs = int64((opts.Window + time.Millisecond - 1) / time.Millisecond)
	}
	if w.maxEntries <= 0 {
		w.maxEntries = DefaultMaxEntries
	}
	w.maxEntries = min(w.maxEntries, maxEntriesLimit)
	w.cond.L = &w.mu
	if w.windowMs > 0 {
		w.x.slots = make([]uint64, minSlots)
		w.x.mask = minSlots - 1
		w.inflight = make(map[key]flight)
	}
	return w
}

// Enabled reports whether the window remembers anything (Window > 0).
func (w *Window) Enabled() bool { return w.windowMs > 0 }

// Horizon is the oldest store time still inside the window: Rebuild
// needs the messages stored since then. Zero when disabled.
func (w *Window) Horizon() time.Time {
	if w.windowMs == 0 {
		return time.Time{}
	}
	return time.UnixMilli(w.nowMs() - w.windowMs + 1)
}

func (w *Window) nowMs() int64 { return w.clock.Now().UnixMilli() }

// hash returns the 128-bit hash of (topic, uniqKey): two 64-bit maphash
// sums under independent random seeds over topic's length, topic and
// uniqKey, so that no two (topic, uniqKey) pairs are the same input.
func (w *Window) hash(topic, uniqKey string) key {
	var buf [192]byte // fits a topic of 127 characters and a 32-digit key
	n := 4 + len(topic) + len(uniqKey)
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(topic)))
	b = append(b, topic...)
	b = append(b, uniqKey...)
	return key{maphash.Bytes(w.seeds[0], b), maphash.Bytes(w.seeds[1], b)}
}

// live reports whether e is still inside the window at now. A clock that
// went backwards keeps an entry live.
func (w *Window) live(e *entry, now int64) bool { return now-e.at() < w.windowMs }

func (e *entry) result(topic string) Result {
	return Result{Topic: topic, QueueID: e.queueID, QueueOffset: e.qOffset,
		CommitLogOffset: e.clOffset, StoredAt: e.storedAt}
}

// Lookup returns the Result remembered for uniqKey in topic if it was
// remembered within the window. An empty uniqKey never hits. Lookup drops
// a few expired ids as it goes.
func (w *Window) Lookup(topic, uniqKey string) (Result, bool) {
	if w.windowMs == 0 || uniqKey == "" {
		return Result{}, false
	}
	h := w.hash(topic, uniqKey)
	now := w.nowMs()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expireLocked(now, expireBudget)
	if e, ok := w.x.get(h); ok && w.live(e, now) {
		w.hits++
		return e.result(topic), true
	}
	return Result{}, false
}

// Remember records that the message uniqKey of r.Topic was stored with
// result r; the window counts from now. Call it once the store has
// acknowledged the message (also on a flush timeout: the record is in the
// log). If the id is already remembered within the window the first
// result stays. An empty uniqKey is ignored.
//
// r.StoredAt must be the store time (within 24 days of the Clock's time,
// else the id is remembered shorter or longer than the window).
func (w *Window) Remember(uniqKey string, r Result) {
	if w.windowMs == 0 || uniqKey == "" {
		return
	}
	h := w.hash(r.Topic, uniqKey)
	now := w.nowMs()
	w.mu.Lock()
	w.putLocked(h, r, now, now)
	w.mu.Unlock()
}

// putLocked remembers h with result r, learned at unix ms at; now is the
// current time.
func (w *Window) putLocked(h key, r Result, at, now int64) {
	w.expireLocked(now, expireBudget)
	if i, ok := w.x.find(h); ok {
		if w.live(w.x.entryAt(w.x.seqOf(w.x.slots[i])), now) {
			return
		}
		// Expired but not dropped yet: the new copy replaces it; the old
		// ring entry stays unmapped until it reaches the head.
		w.x.deleteAt(i)
	}
	if w.x.ringLen() >= w.maxEntries {
		if w.live(w.x.entryAt(w.x.head), now) {
			w.capDrops++
		}
		w.x.pop()
	}
	d := at - r.StoredAt
	d = max(math.MinInt32, min(d, math.MaxInt32))
	seq := w.x.push(entry{h: h, clOffset: r.CommitLogOffset, qOffset: r.QueueOffset,
		storedAt: r.StoredAt, queueID: r.QueueID, atDelta: int32(d)})
	w.x.insert(h, seq)
}

// expireLocked drops up to budget expired entries from the head of the
// ring and reports how many it dropped.
func (w *Window) expireLocked(now int64, budget int) int {
	n := 0
	for n < budget && w.x.head != w.x.tail && !w.live(w.x.entryAt(w.x.head), now) {
		w.x.pop()
		n++
	}
	return n
}

// Expire drops every expired id now, in steps that let other calls in,
// and reports how many it dropped. Lookup and Remember expire as they go;
// the broker may call Expire from a periodic job so that the memory of a
// burst is given back when traffic stops.
func (w *Window) Expire() int {
	if w.windowMs == 0 {
		return 0
	}
	const step = 4096
	total := 0
	for {
		now := w.nowMs()
		w.mu.Lock()
		n := w.expireLocked(now, step)
		w.mu.Unlock()
		total += n
		if n < step {
			return total
		}
	}
}

// Len expires what is due (see Expire) and reports how many ids are
// remembered.
func (w *Window) Len() int {
	w.Expire()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.x.count
}

// Bytes reports the heap the remembered ids take: ring chunks and table.
func (w *Window) Bytes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.x.bytes()
}

// NominalBytesPerEntry is the design figure of BytesPerEntry: a 48-byte
// ring entry plus 8-byte table slots at half load (the table's load stays
// between 3/8 and 3/4 while it grows).
const NominalBytesPerEntry = entryBytes + 2*slotBytes

// BytesPerEntry reports Bytes divided by the ids remembered, or
// NominalBytesPerEntry (64) when the window is empty. A full window
// measures 60 to 70 bytes per id.
func (w *Window) BytesPerEntry() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.x.count == 0 {
		return NominalBytesPerEntry
	}
	return w.x.bytes() / w.x.count
}

// Stats are counters for metrics.
type Stats struct {
	Entries int    // ids held, including expired ones not dropped yet
	Bytes   int    // as Bytes
	Hits    uint64 // Lookup and Acquire answers that found a stored id
	Waits   uint64 // times a claim had to wait for another send of its id
	// CapDrops counts ids dropped before their window ended because
	// MaxEntries was reached: a non-zero rate means the cap is too low for
	// the traffic.
	CapDrops uint64
}

// Stats returns the counters.
func (w *Window) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Stats{Entries: w.x.count, Bytes: w.x.bytes(), Hits: w.hits, Waits: w.waits, CapDrops: w.capDrops}
}

// Rebuild refills the window after a restart from the messages stored
// during the last Window, each given as its UNIQ_KEY and the Result the
// broker answered for it, oldest first (store order). Entries whose
// StoredAt is outside the window, or with an empty key, are skipped; the
// window counts from StoredAt. The first result of an id wins, as in
// Remember. Rebuild reports how many entries it added. It takes the lock
// per entry, so seq may do I/O; it may run while sends are served.
func (w *Window) Rebuild(seq iter.Seq2[string, Result]) int {
	if w.windowMs == 0 {
		return 0
	}
	n := 0
	for uniqKey, r := range seq {
		if uniqKey == "" {
			continue
		}
		h := w.hash(r.Topic, uniqKey)
		now := w.nowMs()
		if now-r.StoredAt >= w.windowMs {
			continue
		}
		w.mu.Lock()
		before := w.x.tail
		w.putLocked(h, r, r.StoredAt, now)
		if w.x.tail != before {
			n++
		}
		w.mu.Unlock()
	}
	return n
}
