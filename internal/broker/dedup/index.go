package dedup

import "unsafe"

// key is the 128-bit hash of (topic, UNIQ_KEY) that stands for an id.
type key [2]uint64

// entry is one remembered id in the ring: 48 bytes.
type entry struct {
	h        key
	clOffset int64 // Result.CommitLogOffset
	qOffset  int64 // Result.QueueOffset
	storedAt int64 // Result.StoredAt, unix ms
	queueID  int32 // Result.QueueID
	// atDelta is when the window learned the id (the window counts from
	// then) minus storedAt, in ms, saturated to the int32 range.
	atDelta int32
}

// at is when the window learned the id, unix ms.
func (e *entry) at() int64 { return e.storedAt + int64(e.atDelta) }

const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits
	// minSlots is the smallest table; it never shrinks below.
	minSlots = 256
	// maxEntriesLimit keeps every table index below 2^31 (the table never
	// needs more than 2^31 slots for 2^30 ids), so an index fits the 31
	// low bits of a slot's tag; and keeps the ring span below 2^32, so a
	// sequence number fits a slot's low 32 bits.
	maxEntriesLimit = 1 << 30
	// tagBit marks a slot in use; the rest of the tag is the low 31 bits
	// of h[0], whose low bits are also the slot's home index.
	tagBit = 1 << 31
)

type chunk [chunkLen]entry

const (
	entryBytes = int(unsafe.Sizeof(entry{}))
	chunkBytes = int(unsafe.Sizeof(chunk{}))
	slotBytes  = 8
)

// index is the time-ordered ring of entries plus an open-addressing table
// from key to ring sequence number. It is not safe for concurrent use.
//
// The ring is a deque of fixed-size chunks: entry seq lives in chunk
// seq>>chunkBits at position seq&(chunkLen-1); live sequence numbers are
// [head, tail). Chunks are taken at the tail and given back at the head, so
// memory follows the number of live entries and nothing is ever copied.
//
// The table uses linear probing with backward-shift deletion (no
// tombstones). A slot is tag<<32 | uint32(seq), 0 when empty, where tag =
// tagBit | low 31 bits of h[0]. The slot's home index is tag&mask, so the
// table can be resized from the slots alone; the tag also filters probes,
// so the ring is read only for a slot whose tag matches.
type index struct {
	chunks []*chunk // chunks[first:] are live; chunks[first] holds head
	first  int
	// spare holds up to two retired chunks for reuse, so that a steady
	// flow (the head and the tail each cross a chunk boundary every
	// chunkLen ids, in either order) allocates nothing.
	spare [2]*chunk

	head, tail uint64

	slots []uint64
	mask  uint64
	count int // ids mapped by the table
}

func tagOf(h key) uint32 { return uint32(h[0]) | tagBit }

func (x *index) home(tag uint32) uint64 { return uint64(tag) & x.mask }

func (x *index) ringLen() int { return int(x.tail - x.head) }

// entryAt returns the ring entry for seq, which must be in [head, tail).
func (x *index) entryAt(seq uint64) *entry {
	ci := x.first + int(seq>>chunkBits-x.head>>chunkBits)
	return &x.chunks[ci][seq&(chunkLen-1)]
}

// seqOf rebuilds the full sequence number of a slot: every mapped seq is
// in [head, head+2^31).
func (x *index) seqOf(slot uint64) uint64 {
	return x.head + uint64(uint32(slot)-uint32(x.head))
}

// find returns the table position of h and true, or false with the
// position where h would be inserted.
func (x *index) find(h key) (uint64, bool) {
	tag := tagOf(h)
	i := x.home(tag)
	for {
		s := x.slots[i]
		if s == 0 {
			return i, false
		}
		if uint32(s>>32) == tag && x.entryAt(x.seqOf(s)).h == h {
			return i, true
		}
		i = (i + 1) & x.mask
	}
}

// get returns the entry h maps to.
func (x *index) get(h key) (*entry, bool) {
	if i, ok := x.find(h); ok {
		return x.entryAt(x.seqOf(x.slots[i])), true
	}
	return nil, false
}

// insert makes h (not in the table) map to seq, growing the table first if
// it would pass 3/4 load.
func (x *index) insert(h key, seq uint64) {
	if (x.count+1)*4 > len(x.slots)*3 {
		x.resize(len(x.slots) * 2)
	}
	i, ok := x.find(h)
	if ok {
		panic("dedup: insert of a key already mapped")
	}
	x.slots[i] = uint64(tagOf(h))<<32 | uint64(uint32(seq))
	x.count++
}

// deleteAt empties table position i and shifts back the entries after it
// that would otherwise become unreachable.
func (x *index) deleteAt(i uint64) {
	j := i
	for {
		j = (j + 1) & x.mask
		s := x.slots[j]
		if s == 0 {
			break
		}
		k := x.home(uint32(s >> 32))
		// The entry at j stays when its home lies cyclically in (i, j].
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		x.slots[i] = s
		i = j
	}
	x.slots[i] = 0
	x.count--
	if len(x.slots) > minSlots && x.count*8 < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
}

// unmapSeq removes the table slot that maps seq (key h), if any: an entry
// replaced by a newer copy of its id is no longer mapped.
func (x *index) unmapSeq(h key, seq uint64) {
	want := uint64(tagOf(h))<<32 | uint64(uint32(seq))
	i := x.home(tagOf(h))
	for {
		s := x.slots[i]
		if s == 0 {
			return
		}
		if s == want {
			x.deleteAt(i)
			return
		}
		i = (i + 1) & x.mask
	}
}

func (x *index) resize(n int) {
	old := x.slots
	x.slots = make([]uint64, n)
	x.mask = uint64(n - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := x.home(uint32(s >> 32))
		for x.slots[i] != 0 {
			i = (i + 1) & x.mask
		}
		x.slots[i] = s
	}
}

// push appends e at the tail and returns its sequence number.
func (x *index) push(e entry) uint64 {
	ci := int(x.tail>>chunkBits - x.head>>chunkBits)
	if ci == len(x.chunks)-x.first {
		var c *chunk
		switch {
		case x.spare[1] != nil:
			c, x.spare[1] = x.spare[1], nil
		case x.spare[0] != nil:
			c, x.spare[0] = x.spare[0], nil
		default:
			c = new(chunk)
		}
		x.chunks = append(x.chunks, c)
	}
	seq := x.tail
	x.chunks[x.first+ci][seq&(chunkLen-1)] = e
	x.tail++
	return seq
}

// pop drops the head entry (and its mapping, if it still has one).
func (x *index) pop() {
	e := x.entryAt(x.head)
	x.unmapSeq(e.h, x.head)
	x.head++
	if x.head&(chunkLen-1) != 0 {
		return
	}
	// The head left its chunk: retire it.
	switch {
	case x.spare[0] == nil:
		x.spare[0] = x.chunks[x.first]
	case x.spare[1] == nil:
		x.spare[1] = x.chunks[x.first]
	}
	x.chunks[x.first] = nil
	x.first++
	switch {
	case x.first == len(x.chunks):
		x.chunks, x.first = x.chunks[:0], 0
	case x.first >= 16 && x.first*2 >= len(x.chunks):
		n := copy(x.chunks, x.chunks[x.first:])
		clear(x.chunks[n:])
		x.chunks, x.first = x.chunks[:n], 0
	}
}

// bytes is the heap the index holds.
func (x *index) bytes() int {
	n := (len(x.chunks)-x.first)*chunkBytes + len(x.slots)*slotBytes + cap(x.chunks)*8
	for _, c := range x.spare {
		if c != nil {
			n += chunkBytes
		}
	}
	return n
}
