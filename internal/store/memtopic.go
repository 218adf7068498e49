package store

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// AttrPersistent is the topic attribute that, set to "false", keeps a
// topic's messages in memory only.
const AttrPersistent = "persistent"

// memOffsetBase starts the synthetic "commit-log offsets" of in-memory
// records, far above any real log offset, so message ids stay unique and
// ReadMessage can tell the two apart.
const memOffsetBase = int64(1) << 62

// memTopics keeps the records of non-persistent topics.
type memTopics struct {
	maxBytes int64
	host     netip.AddrPort
	clock    clock.Clock

	mu     sync.RWMutex
	topics map[string]*memTopic
	byOff  map[int64]*memRecord
	seq    int64
}

type memTopic struct {
	bytes  int64
	queues map[int32]*memQueue
	fifo   []*memRecord // every record of the topic, oldest first
}

type memQueue struct {
	recs []*memRecord // recs[i] has queue offset base+i
	base int64
}

type memRecord struct {
	rec     message.Record
	queueID int32
	tagHash int64
}

func newMemTopics(maxBytes int64, host netip.AddrPort, clk clock.Clock) *memTopics {
	return &memTopics{maxBytes: maxBytes, host: host, clock: clk,
		topics: make(map[string]*memTopic), byOff: make(map[int64]*memRecord)}
}

func (mt *memTopics) isMemTopic(ms *meta.Store, topic string) bool {
	t, ok := ms.Topic(topic)
	return ok && t.Attributes[AttrPersistent] == "false"
}

// put stores msgs in memory; they are readable at once.
func (mt *memTopics) put(s *Store, msgs []*message.Message) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return err
		}
		if n := m.EncodedLen(); n > s.cfg.MaxMessageBytes {
			return fmt.Errorf("%w: the record is %d bytes and the limit is %d bytes (MaxMessageBytes)", ErrTooLarge, n, s.cfg.MaxMessageBytes)
		}
	}
	now := mt.clock.Now().UnixMilli()
	type note struct {
		topic string
		qid   int32
		max   int64
	}
	notes := make([]note, 0, len(msgs))
	mt.mu.Lock()
	for _, m := range msgs {
		t := mt.topics[m.Topic]
		if t == nil {
			t = &memTopic{queues: make(map[int32]*memQueue)}
			mt.topics[m.Topic] = t
		}
		q := t.queues[m.QueueID]
		if q == nil {
			q = &memQueue{}
			t.queues[m.QueueID] = q
		}
		mt.seq++
		m.StoreHost = mt.host
		m.StoreTimestamp = now
		m.QueueOffset = q.base + int64(len(q.recs))
		m.PhysicalOffset = memOffsetBase + mt.seq
		r := &memRecord{rec: m.Encode(), queueID: m.QueueID, tagHash: message.TagHash(m.Tags())}
		q.recs = append(q.recs, r)
		t.fifo = append(t.fifo, r)
		t.bytes += int64(len(r.rec))
		mt.byOff[m.PhysicalOffset] = r
		for t.bytes > mt.maxBytes && len(t.fifo) > 1 {
			old := t.fifo[0]
			t.fifo[0] = nil
			t.fifo = t.fifo[1:]
			t.bytes -= int64(len(old.rec))
			delete(mt.byOff, old.rec.PhysicalOffset())
			oq := t.queues[old.queueID]
			oq.recs[0] = nil
			oq.recs = oq.recs[1:]
			oq.base++
		}
		notes = append(notes, note{m.Topic, m.QueueID, m.QueueOffset + 1})
	}
	mt.mu.Unlock()
	s.listenMu.RLock()
	for _, n := range notes {
		for _, l := range s.listeners {
			l(n.topic, n.qid, n.max)
		}
	}
	s.listenMu.RUnlock()
	return nil
}

// memQueueRef is a handle on one in-memory queue.
type memQueueRef struct {
	mt    *memTopics
	topic string
	qid   int32
}

// queue returns a handle when topic is an in-memory topic holding queueID.
func (mt *memTopics) queue(topic string, qid int32) *memQueueRef {
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	if t := mt.topics[topic]; t != nil && t.queues[qid] != nil {
		return &memQueueRef{mt, topic, qid}
	}
	return nil
}

func (r *memQueueRef) bounds() (int64, int64) {
	r.mt.mu.RLock()
	defer r.mt.mu.RUnlock()
	q := r.mt.topics[r.topic].queues[r.qid]
	return q.base, q.base + int64(len(q.recs))
}

func (r *memQueueRef) get(offset int64, maxCount, maxBytes int, filter TagFilter, recFilter RecordFilter) *GetResult {
	r.mt.mu.RLock()
	defer r.mt.mu.RUnlock()
	res := &GetResult{}
	t := r.mt.topics[r.topic]
	if t == nil || t.queues[r.qid] == nil {
		res.Status = NoMessageInQueue
		return res
	}
	q := t.queues[r.qid]
	res.MinOffset, res.MaxOffset = q.base, q.base+int64(len(q.recs))
	switch {
	case offset < res.MinOffset:
		res.Status, res.NextOffset = OffsetTooSmall, res.MinOffset
		return res
	case offset == res.MaxOffset:
		res.Status, res.NextOffset = OffsetOverflowOne, offset
		return res
	case offset > res.MaxOffset:
		res.Status, res.NextOffset = OffsetOverflowBadly, res.MaxOffset
		return res
	}
	next := offset
	bytes := 0
	for i := offset - q.base; i < int64(len(q.recs)) && res.Count < maxCount; i++ {
		rec := q.recs[i]
		if filter != nil && !filter(rec.tagHash) || recFilter != nil && !recFilter(message.Record(rec.rec)) {
			next++
			continue
		}
		if res.Count > 0 && bytes+len(rec.rec) > maxBytes {
			break
		}
		if res.buf == nil {
			res.buf = bodyPool.Get().(*[]byte)
			res.Body = (*res.buf)[:0]
		}
		res.Body = append(res.Body, rec.rec...)
		bytes += len(rec.rec)
		res.Count++
		next++
	}
	res.NextOffset = next
	if res.Count > 0 {
		res.Status = Found
	} else {
		res.Status = NoMatchedMessage
	}
	return res
}

func (r *memQueueRef) offsetByTime(ts int64) int64 {
	r.mt.mu.RLock()
	defer r.mt.mu.RUnlock()
	q := r.mt.topics[r.topic].queues[r.qid]
	i, _ := slices.BinarySearchFunc(q.recs, ts, func(m *memRecord, ts int64) int {
		if m.rec.StoreTimestamp() < ts {
			return -1
		}
		return 1
	})
	return q.base + int64(i)
}

func (mt *memTopics) byOffset(off int64) (message.Record, bool) {
	if off < memOffsetBase {
		return nil, false
	}
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	r, ok := mt.byOff[off]
	if !ok {
		return nil, false
	}
	return append(message.Record(nil), r.rec...), true
}

func (mt *memTopics) queryByKey(topic, key string, beginMS, endMS int64, max int) []message.Record {
	if max <= 0 {
		return nil
	}
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	t := mt.topics[topic]
	if t == nil {
		return nil
	}
	var out []message.Record
	for i := len(t.fifo) - 1; i >= 0 && len(out) < max; i-- {
		r := t.fifo[i].rec
		if ts := r.StoreTimestamp(); ts >= beginMS && ts <= endMS && RecordHasKey(r, key) {
			out = append(out, append(message.Record(nil), r...))
		}
	}
	return out
}

func (mt *memTopics) deleteTopic(topic string) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if t := mt.topics[topic]; t != nil {
		for _, r := range t.fifo {
			delete(mt.byOff, r.rec.PhysicalOffset())
		}
		delete(mt.topics, topic)
	}
}

func (mt *memTopics) queueIDs(topic string) []int32 {
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	var out []int32
	if t := mt.topics[topic]; t != nil {
		for id := range t.queues {
			out = append(out, id)
		}
	}
	return out
}
