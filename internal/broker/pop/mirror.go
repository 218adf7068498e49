package pop

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Replication of the pop state. A master's broker replicates its pop
// store to its slaves through the broker's state stream: every change
// (Claim, Ack, Change, ForgetGroup, ResetTopic, ResetQueue; a Claim's
// cursor move is part of it) becomes an op, which the broker takes with
// TakeOps, in the order the changes were made, and emits; a slave's broker
// hands each op to Mirror on its own store. SnapshotOps gives the whole
// state as ops and Clear empties a store before a snapshot is applied.
//
// An op is the change's log record payload with a header:
//
//	0  1  version  1
//	1  8  nextGen  uint64  the master's next generation after the change
//	9  …  change   key, cursor, entries put, offsets removed (as a log record)
//
// Every op sets state — the queue's cursor, the entry at an offset (put
// or removed), or the whole queue (forget) — to a value, and carries the
// generations the master gave out; it never adds to or derives from what
// was there. So applying ops in log order gives the master's state, and
// applying again a suffix of ops already applied (a slave that restarts
// re-applies from its last persisted position) changes nothing.

// ErrBadOp: a replicated op does not decode.
var ErrBadOp = errors.New("pop: replicated op does not decode")

const (
	opVersion = 1
	opHeader  = 9
	// snapshotChunk bounds the entries of one snapshot op (28 bytes
	// each: 56 KiB), so that a queue with many in flight is several ops.
	snapshotChunk = 2048
)

// encodeOp returns c as an op, with the generation counter after it.
func encodeOp(c *change, nextGen uint64) []byte {
	e := enc{b: make([]byte, 0, opHeader+64+entryBytes*len(c.put)+8*len(c.del))}
	e.b = append(e.b, opVersion)
	e.u64(nextGen)
	e.change(c)
	return e.b
}

// decodeOp parses an op. It never allocates more than the input implies
// (counts are checked against the bytes left) and never panics.
func decodeOp(b []byte) (change, uint64, error) {
	if len(b) < opHeader {
		return change{}, 0, fmt.Errorf("%w: %d bytes", ErrBadOp, len(b))
	}
	if b[0] != opVersion {
		return change{}, 0, fmt.Errorf("%w: version %d", ErrBadOp, b[0])
	}
	c, ok := decodeChange(b[opHeader:])
	if !ok {
		return change{}, 0, fmt.Errorf("%w: body does not parse", ErrBadOp)
	}
	return c, binary.BigEndian.Uint64(b[1:]), nil
}

// SetMirror turns the queueing of ops for TakeOps on or off (off: changes
// are only logged, as on a broker that is not replicated; the queue is
// dropped).
func (s *Store) SetMirror(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mirror = on
	if !on {
		s.outbox = nil
	}
}

// TakeOps hands the ops queued since the last call to fn, oldest first,
// outside the store's lock (fn may block). Concurrent callers are
// serialised, so ops reach fn in the order of their changes whoever takes
// them.
func (s *Store) TakeOps(fn func(op []byte)) {
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	s.mu.Lock()
	ops := s.outbox
	s.outbox = nil
	s.mu.Unlock()
	for _, op := range ops {
		fn(op)
	}
}

// Mirror applies an op a master's store gave out (TakeOps, SnapshotOps)
// and logs it; the returned Ticket is durable after Sync. Applying ops in
// their order gives the master's state; applying an op again, or a run of
// ops again in order, changes nothing. An op that does not decode is
// ErrBadOp and changes nothing. Mirrored changes are not queued as ops.
func (s *Store) Mirror(op []byte) (Ticket, error) {
	c, gen, err := decodeOp(op)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	s.nextGen = max(s.nextGen, gen)
	return s.recordLocal(&c), nil
}

// SnapshotOps gives the whole state as ops to fn: per queue its cursor
// and in-flight entries (at most snapshotChunk entries an op). Applied
// with Mirror to an empty store (Clear), they rebuild this state. fn runs
// under the store's lock: it must not block or call the store.
func (s *Store) SnapshotOps(fn func(op []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.allQueues()
	slices.SortFunc(qs, func(a, b *queue) int { return compareKeys(a.key, b.key) })
	for _, q := range qs {
		es := q.entries()
		c := change{key: q.key, cursor: q.cursor}
		for {
			n := min(len(es), snapshotChunk)
			c.put = es[:n]
			fn(encodeOp(&c, s.nextGen))
			es = es[n:]
			if len(es) == 0 {
				break
			}
			c.cursor = -1
		}
	}
}

// Clear forgets every queue's state (a slave about to receive a
// snapshot). The returned Ticket is durable after Sync; 0 when the store
// was empty. Not queued as ops.
func (s *Store) Clear() (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	var t Ticket
	for _, q := range s.allQueues() {
		t = s.recordLocal(&change{key: q.key, cursor: cursorForget})
	}
	return t, nil
}

// QueueState is the state of one queue: its cursor and in-flight
// entries, ascending by offset.
type QueueState struct {
	Key      Key
	Cursor   int64
	InFlight []Entry
}

// Queues returns the state of every queue, sorted by key (to compare two
// stores, e.g. a master's and its slave's).
func (s *Store) Queues() []QueueState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]QueueState, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, QueueState{Key: q.key, Cursor: q.cursor, InFlight: q.entries()})
	}
	slices.SortFunc(out, func(a, b QueueState) int { return compareKeys(a.Key, b.Key) })
	return out
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
}
