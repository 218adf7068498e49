package index

import (
	"encoding/binary"
	"fmt"
)

// Query returns the commit-log offsets of up to max entries of topic and
// key whose store time lies in [beginMS, endMS] (ms, both ends included),
// newest (highest offset) first, without duplicates. Files whose time range
// does not overlap are skipped. The offsets are candidates: different keys
// with the same 32-bit hash are not told apart, so the caller reads each
// record and checks its topic, keys and store time. No entry that was added
// and not since truncated or deleted is missed.
//
// Query is safe for concurrent use with everything, never waits for a disk
// write or sync, and returns a new slice the caller owns. A file removed by
// DeleteBefore while a query reads it is still read to the end.
func (x *Index) Query(topic, key string, beginMS, endMS int64, max int) ([]int64, error) {
	if max <= 0 || beginMS > endMS {
		return nil, nil
	}
	q := query{hash: hashKey(topic, key), begin: beginMS, end: endMS, max: max}
	for {
		done, err := x.query(&q)
		if err != nil {
			return nil, err
		}
		if done {
			return q.res, nil
		}
		// Truncate changed files under us: what we read may mix the old and
		// the new contents. Start over.
		q.res = q.res[:0]
	}
}

type query struct {
	hash       uint32
	begin, end int64
	max        int
	res        []int64
	b          []byte
}

// add records a matching offset; it reports whether the result is full.
func (q *query) add(off int64) bool {
	// Chains are walked newest first and offsets never decrease with the
	// entry number, so a duplicate (a key listed twice, or KEYS and
	// UNIQ_KEY equal) is always next to its twin.
	if n := len(q.res); n == 0 || q.res[n-1] != off {
		q.res = append(q.res, off)
	}
	return len(q.res) >= q.max
}

func (q *query) overlaps(minT, maxT int64) bool { return minT <= q.end && maxT >= q.begin }

// walk is one file of a query, with what the query needs of its header as
// it was when the query started.
type walk struct {
	s         *segment
	slotCount uint32
	count     uint32 // entries 1..count are in the file
	baseTime  int64
	start     uint32 // first entry to read; 0: read it from the slot table
}

// query runs q once; it returns false when a Truncate ran meanwhile.
func (x *Index) query(q *query) (bool, error) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return false, ErrClosed
	}
	gen := x.gen
	var walks []walk
	if a := x.act; a != nil && a.count > 0 && q.overlaps(a.minTime, a.maxTime) {
		// Entries not yet written are in x.buf; follow the chain there
		// under the lock, then continue in the file without it.
		n := x.slots[q.hash%uint32(len(x.slots))]
		for n > x.written && n <= a.count {
			e := getEntry(x.buf[(n-1-x.written)*entryBytes:])
			if e.hash == q.hash && x.inRange(q, a.baseTime, e.delta) && q.add(e.phys) {
				x.mu.Unlock()
				return true, nil
			}
			if e.prev >= n {
				n = 0
				break
			}
			n = e.prev
		}
		if n > 0 && n <= x.written {
			a.refs++
			walks = append(walks, walk{s: a, slotCount: a.slotCount, count: x.written, baseTime: a.baseTime, start: n})
		}
	}
	for i := len(x.sealed) - 1; i >= 0; i-- {
		s := x.sealed[i]
		if !q.overlaps(s.minTime, s.maxTime) {
			continue
		}
		s.refs++
		walks = append(walks, walk{s: s, slotCount: s.slotCount, count: s.count, baseTime: s.baseTime})
	}
	x.mu.Unlock()

	var err error
	full := false
	for i := range walks {
		if !full && err == nil {
			full, err = x.walkFile(q, &walks[i])
		}
		x.release(walks[i].s)
	}
	if err != nil {
		return false, err
	}
	x.mu.Lock()
	same := x.gen == gen
	x.mu.Unlock()
	return same, nil
}

func (x *Index) inRange(q *query, baseTime int64, delta int32) bool {
	t := baseTime + int64(delta)
	return t >= q.begin && t <= q.end
}

// walkFile follows the chain of q.hash in a file with ReadAt. The walk is
// bounded: each step must go to a lower entry number, so a damaged file
// ends the walk instead of looping. It reports whether the result is full.
func (x *Index) walkFile(q *query, w *walk) (bool, error) {
	if q.b == nil {
		q.b = make([]byte, entryBytes)
	}
	n := w.start
	if n == 0 {
		b := q.b[:slotBytes]
		if _, err := w.s.f.ReadAt(b, headerBytes+int64(q.hash%w.slotCount)*slotBytes); err != nil {
			return false, fmt.Errorf("index: read slot of %s: %w", w.s.path, err)
		}
		n = binary.BigEndian.Uint32(b)
	}
	off := w.s.entriesOff()
	for n > 0 && n <= w.count {
		b := q.b[:entryBytes]
		if _, err := w.s.f.ReadAt(b, off+int64(n-1)*entryBytes); err != nil {
			return false, fmt.Errorf("index: read entry of %s: %w", w.s.path, err)
		}
		e := getEntry(b)
		if e.hash == q.hash && x.inRange(q, w.baseTime, e.delta) && q.add(e.phys) {
			return true, nil
		}
		if e.prev >= n {
			break
		}
		n = e.prev
	}
	return false, nil
}
