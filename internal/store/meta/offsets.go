package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// offsetKey names one consumer offset. A struct of strings as a map key
// makes lookups allocation-free.
type offsetKey struct {
	group, topic string
	queueID      int32
}

type offsetEntry struct {
	key    offsetKey
	offset int64
}

// offsetsFile is the layout of offsets.json: group → topic → queue id →
// next offset to consume.
type offsetsFile struct {
	OffsetTable map[string]map[string]map[int32]int64 `json:"offsetTable"`
}

// offsetMap is the consumer offsets in memory: Store's (whose offsetTable
// also writes them to offsets.json) and Mem's.
type offsetMap struct {
	mu  sync.Mutex
	m   map[offsetKey]int64
	seq uint64 // changes made; Store's file holds changes ≤ w.durable
}

// offsetTable holds the consumer offsets and the writer of offsets.json.
type offsetTable struct {
	offsetMap

	// scratch is reused by snapshots; only the running write uses it.
	scratch []offsetEntry

	w writer
}

func (t *offsetTable) init(s *Store) {
	t.m = make(map[offsetKey]int64)
	t.w = writer{name: offsetsFileName, write: writeWhole(s.fsys, s.dir, offsetsFileName, t.snapshot)}
}

func (t *offsetTable) load(data []byte) error {
	var f offsetsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	if f.OffsetTable == nil {
		return fmt.Errorf("no offsetTable")
	}
	for g, topics := range f.OffsetTable {
		for tp, queues := range topics {
			for q, off := range queues {
				t.m[offsetKey{g, tp, q}] = off
			}
		}
	}
	return nil
}

func (t *offsetTable) snapshot() (uint64, func() ([]byte, error)) {
	t.mu.Lock()
	ents := t.scratch[:0]
	for k, v := range t.m {
		ents = append(ents, offsetEntry{k, v})
	}
	seq := t.seq
	t.mu.Unlock()
	t.scratch = ents
	return seq, func() ([]byte, error) {
		tab := make(map[string]map[string]map[int32]int64)
		for _, e := range ents {
			topics := tab[e.key.group]
			if topics == nil {
				topics = make(map[string]map[int32]int64)
				tab[e.key.group] = topics
			}
			queues := topics[e.key.topic]
			if queues == nil {
				queues = make(map[int32]int64)
				topics[e.key.topic] = queues
			}
			queues[e.key.queueID] = e.offset
		}
		clear(ents) // drop the string references until the next snapshot
		return json.Marshal(offsetsFile{OffsetTable: tab})
	}
}

// CommitOffset sets the next offset to consume of group on a queue of topic.
// It only updates memory and marks the offsets dirty: the change becomes
// durable with the next FlushOffsets (background or explicit), SyncOffsets
// or Close. It does no I/O, and does not allocate when the key exists.
// Safe for concurrent use.
func (s *Store) CommitOffset(group, topic string, queueID int32, offset int64) {
	s.offsets.commit(group, topic, queueID, offset)
}

func (t *offsetMap) commit(group, topic string, queueID int32, offset int64) {
	t.mu.Lock()
	t.m[offsetKey{group, topic, queueID}] = offset
	t.seq++
	t.mu.Unlock()
}

// Offset returns the committed next offset to consume of group on a queue
// of topic, and false if none was committed.
func (s *Store) Offset(group, topic string, queueID int32) (int64, bool) {
	return s.offsets.get(group, topic, queueID)
}

func (t *offsetMap) get(group, topic string, queueID int32) (int64, bool) {
	t.mu.Lock()
	off, ok := t.m[offsetKey{group, topic, queueID}]
	t.mu.Unlock()
	return off, ok
}

// GroupOffsets returns a copy of the offsets of group: topic → queue id →
// offset; an empty map if it has none. The caller owns the result.
func (s *Store) GroupOffsets(group string) map[string]map[int32]int64 {
	return s.offsets.group(group)
}

func (t *offsetMap) group(group string) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64)
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.m {
		if k.group != group {
			continue
		}
		q := out[k.topic]
		if q == nil {
			q = make(map[int32]int64)
			out[k.topic] = q
		}
		q[k.queueID] = v
	}
	return out
}

// OffsetEntry is one committed offset.
type OffsetEntry struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
}

// AllOffsets returns a copy of every committed offset, in no order, taken
// in one pass under the table's lock.
func (s *Store) AllOffsets() []OffsetEntry { return s.offsets.all() }

func (t *offsetMap) all() []OffsetEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]OffsetEntry, 0, len(t.m))
	for k, v := range t.m {
		out = append(out, OffsetEntry{Group: k.group, Topic: k.topic, QueueID: k.queueID, Offset: v})
	}
	return out
}

// DeleteOffsets removes the offsets of group on topic, or on every topic if
// topic is "". Like CommitOffset it changes memory only.
func (s *Store) DeleteOffsets(group, topic string) {
	s.offsets.deleteWhere(func(k offsetKey) bool {
		return k.group == group && (topic == "" || k.topic == topic)
	})
}

// DeleteTopicOffsets removes the offsets of every group on topic. Like
// CommitOffset it changes memory only.
func (s *Store) DeleteTopicOffsets(topic string) {
	s.offsets.deleteWhere(func(k offsetKey) bool { return k.topic == topic })
}

func (t *offsetMap) deleteWhere(match func(offsetKey) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.m)
	for k := range t.m {
		if match(k) {
			delete(t.m, k)
		}
	}
	if len(t.m) != n {
		t.seq++
	}
}

func (t *offsetMap) current() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seq
}

// FlushOffsets writes all offsets durably if anything changed since the
// last successful write, and returns the write's error. It returns ErrClosed
// after Close. Safe for concurrent use; it shares a write in progress.
func (s *Store) FlushOffsets() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.offsets.w.sync(context.Background(), s.offsets.current())
}

// SyncOffsets returns once every offset change made before the call is
// durable, writing offsets.json if needed. Concurrent callers share writes:
// those that call while a write is running are all served by the next one.
// It returns the error of a failed write that covered the caller's changes,
// ctx.Err() if ctx ends while it waits for another caller's write (that
// write goes on), or ErrClosed after Close.
//
// A write copies the whole offset table under the lock CommitOffset takes
// (a few ms per 100,000 offsets) and does the file I/O outside it.
func (s *Store) SyncOffsets(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.offsets.w.sync(ctx, s.offsets.current())
}
