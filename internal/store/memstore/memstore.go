// Package memstore is the in-memory twin of the file store: a
// store.MessageStore with no files and no goroutine but the one that runs
// listeners, for the tests of the packages built on the store (the broker
// and its fronts) that do not test the disk. It passes the same
// conformance suite as the file store (storetest.Run).
//
// Records are kept encoded, as the file store writes them, so reads return
// the same record bytes: a put lays its messages out in a virtual commit
// log (PhysicalOffset is their offset in it, consecutive records back to
// back) and indexes them in their queues and by key. A put is durable, and
// its messages readable, when it returns; listeners hear of them after, on
// the store's listener goroutine, in store order, as the file store's
// dispatcher tells them.
//
// What the twin leaves out: flush modes, disk limits, in-memory topics
// (topic attributes are the metadata store's; every topic is kept whole),
// and retention by time or disk use. RemoveBefore and RemoveLogBefore do
// what retention does to the log and the queues, for tests of the paths
// that read removed data.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// maxScanEntries bounds the entries one filtered read looks at, as in the
// file store.
const maxScanEntries = 16_000

// Store is an in-memory message store. Methods are safe for concurrent use.
type Store struct {
	cfg store.Config

	mu     sync.RWMutex
	d      *data
	closed bool

	notes     notifier
	closeOnce sync.Once
	// resetMu serialises ResetAt and guards resetFns.
	resetMu  sync.Mutex
	resetFns []func(start int64)
	// grown is closed when the log grows (WaitWritten), done at Close.
	grown chan struct{}
	done  chan struct{}
}

var _ store.MessageStore = (*Store)(nil)

// data is what the store holds; Reopen hands it to the next store.
type data struct {
	log    []logRecord // oldest first, offsets ascending, none below logMin
	end    int64       // the next commit-log offset
	logMin int64       // CommitLogMinOffset
	topics map[string]map[int32]*queue
	// next is the next queue offset of each queue written since open; like
	// the file store's writer it outlives DeleteTopic, and a reopen
	// forgets it.
	next map[queueKey]int64
	keys map[string]map[string][]int64 // topic → key → record offsets, ascending

	// visEnd: the records below it are in their queues and the key index
	// and were told to listeners; those at or past it wait for the commit
	// point (raw.go).
	visEnd int64
	// carry holds the bytes of a record a raw append cut, from end on.
	carry       []byte
	cpEnabled   bool
	commitPoint int64
}

type logRecord struct {
	off int64
	rec message.Record
}

type queueKey struct {
	topic string
	qid   int32
}

// queue is a consume queue: entries[i] has queue offset base+i.
type queue struct {
	base    int64
	min     int64 // MinOffset, at least base
	entries []entry
}

type entry struct {
	off     int64
	size    int32
	tagHash int64
}

func (q *queue) maxOffset() int64 { return q.base + int64(len(q.entries)) }

// New returns an empty, open store. cfg's zero fields get the file store's
// defaults; the store uses StoreHost, MaxMessageBytes and Clock, and hands
// the rest back in Config (the broker keeps its timer and pop state in
// Dir on FS).
func New(cfg store.Config) *Store {
	d := &data{topics: make(map[string]map[int32]*queue), keys: make(map[string]map[string][]int64)}
	return open(cfg.WithDefaults(), d)
}

func open(cfg store.Config, d *data) *Store {
	d.next = make(map[queueKey]int64)
	s := &Store{cfg: cfg, d: d, done: make(chan struct{})}
	s.notes.init()
	// The records above the commit point keep their queue offsets.
	for i := d.firstAt(d.visEnd); i < len(d.log); i++ {
		r := d.log[i].rec
		d.next[queueKey{string(r.Topic()), r.QueueID()}] = r.QueueOffset() + 1
	}
	// A record cut at the end goes, as recovery cuts a torn tail.
	d.carry = nil
	d.cpEnabled = cfg.CommitPoint
	d.commitPoint = max(d.commitPoint, d.visEnd)
	s.advance()
	return s
}

// Reopen returns an open store over what the closed store s holds, as the
// file store reopened over its files would be: every message s stored at
// the same commit-log and queue offsets, no listeners. s must be closed.
func (s *Store) Reopen() (*Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		return nil, errors.New("memstore: Reopen of a store that is not closed")
	}
	d := s.d
	s.d = &data{topics: make(map[string]map[int32]*queue), keys: make(map[string]map[string][]int64), next: make(map[queueKey]int64)}
	return open(s.cfg, d), nil
}

// Close refuses further puts with store.ErrClosed, waits until the
// listeners have heard of every message and stops their goroutine.
// Idempotent; returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.mu.Unlock()
		s.notes.stop()
	})
	return nil
}

// Config returns the configuration in force.
func (s *Store) Config() store.Config { return s.cfg }

// AddListener registers l for every message readable from now on.
func (s *Store) AddListener(l store.Listener) { s.notes.add(l) }

// Put stores one message; it is durable and readable when Put returns, with
// QueueOffset, PhysicalOffset, StoreTimestamp and StoreHost set.
func (s *Store) Put(m *message.Message) error {
	return s.put([]*message.Message{m})
}

// PutBatch stores msgs as consecutive records, all or none.
func (s *Store) PutBatch(msgs []*message.Message) error { return s.put(msgs) }

// PutBatches stores each group as PutBatch does and calls done for it, on
// the caller's goroutine, before it returns.
func (s *Store) PutBatches(groups [][]*message.Message, done func(i int, err error)) {
	for i, g := range groups {
		done(i, s.put(g))
	}
}

// NewAppender returns the store itself: its PutBatches already writes on
// the caller's goroutine.
func (s *Store) NewAppender() store.BatchAppender { return s }

func (s *Store) put(msgs []*message.Message) error {
	if len(msgs) == 0 {
		return errors.New("memstore: put of no messages")
	}
	for _, m := range msgs {
		m.StoreHost = s.cfg.StoreHost
		if err := m.Validate(); err != nil {
			return err
		}
		if m.BodyCRC == 0 && len(m.Body) > 0 {
			m.BodyCRC = message.BodyChecksum(m.Body)
		}
		if n := m.EncodedLen(); n > s.cfg.MaxMessageBytes {
			return fmt.Errorf("%w: the record is %d bytes and the limit is %d bytes (MaxMessageBytes); send a smaller message or raise the limit", store.ErrTooLarge, n, s.cfg.MaxMessageBytes)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	d := s.d
	if len(d.carry) > 0 {
		return fmt.Errorf("memstore: the log ends inside a replicated record at %d; its master must send the rest first", d.end)
	}
	now := s.cfg.Clock.Now().UnixMilli()
	for _, m := range msgs {
		k := queueKey{m.Topic, m.QueueID}
		qo, ok := d.next[k]
		if !ok {
			qo = d.queue(k, true).maxOffset()
		}
		d.next[k] = qo + 1
		m.QueueOffset = qo
		m.PhysicalOffset = d.end
		m.StoreTimestamp = now
		rec := message.Record(m.Encode())
		d.log = append(d.log, logRecord{off: d.end, rec: rec})
		d.end += int64(len(rec))
	}
	s.advance()
	s.grew()
	return nil
}

// advance makes the records below the visible bound readable: their queue
// entries, their keys, the listeners' notes. Holds mu.
func (s *Store) advance() {
	d := s.d
	bound := d.end
	if d.cpEnabled {
		bound = min(bound, d.commitPoint)
	}
	for i := d.firstAt(d.visEnd); i < len(d.log); i++ {
		lr := d.log[i]
		if lr.off+int64(len(lr.rec)) > bound {
			break
		}
		d.show(lr.rec)
		d.visEnd = lr.off + int64(len(lr.rec))
		s.notes.queue(string(lr.rec.Topic()), lr.rec.QueueID(), lr.rec.QueueOffset()+1)
	}
	if d.visEnd < d.logMin {
		d.visEnd = d.logMin
	}
}

// show puts rec in its queue and the key index.
func (d *data) show(rec message.Record) {
	topic := string(rec.Topic())
	k := queueKey{topic, rec.QueueID()}
	q := d.queue(k, true)
	if qo := rec.QueueOffset(); qo != q.maxOffset() { // the topic was deleted and its queue started anew
		q.base, q.min, q.entries = qo, qo, nil
	}
	var tagHash int64
	if tags, ok := rec.Property(message.PropertyTags); ok {
		tagHash = message.TagHash(tags)
	}
	q.entries = append(q.entries, entry{off: rec.PhysicalOffset(), size: int32(len(rec)), tagHash: tagHash})
	d.index(topic, rec)
}

// firstAt is the index of the first record of the log at or past off.
func (d *data) firstAt(off int64) int {
	i, _ := slices.BinarySearchFunc(d.log, off, func(r logRecord, off int64) int {
		if r.off < off {
			return -1
		}
		return 1
	})
	return i
}

// queue returns the queue of k, creating it when create is set.
func (d *data) queue(k queueKey, create bool) *queue {
	qs := d.topics[k.topic]
	if qs == nil {
		if !create {
			return nil
		}
		qs = make(map[int32]*queue)
		d.topics[k.topic] = qs
	}
	q := qs[k.qid]
	if q == nil && create {
		q = &queue{}
		qs[k.qid] = q
	}
	return q
}

// index adds rec's UNIQ_KEY (upper-cased: ids are looked up in any case)
// and KEYS to the key index, as the file store's index sink does.
func (d *data) index(topic string, rec message.Record) {
	add := func(key string) {
		m := d.keys[topic]
		if m == nil {
			m = make(map[string][]int64)
			d.keys[topic] = m
		}
		m[key] = append(m[key], rec.PhysicalOffset())
	}
	if uniq, ok := rec.Property(message.PropertyUniqKey); ok && len(uniq) > 0 {
		add(strings.ToUpper(string(uniq)))
	}
	if keys, ok := rec.Property(message.PropertyKeys); ok {
		message.Keys(string(keys), add)
	}
}

// GetMessages reads a queue as the file store does; see
// store.MessageStore.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter store.TagFilter) (*store.GetResult, error) {
	return s.GetMessagesFiltered(topic, queueID, offset, maxCount, maxBytes, filter, nil)
}

// GetMessagesFiltered reads a queue as the file store does; see
// store.MessageStore.
func (s *Store) GetMessagesFiltered(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter store.TagFilter, rec store.RecordFilter) (*store.GetResult, error) {
	if maxCount <= 0 {
		maxCount = 1
	}
	if maxBytes <= 0 {
		maxBytes = 256 << 10
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	res := &store.GetResult{}
	q := s.d.queue(queueKey{topic, queueID}, false)
	if q == nil {
		res.Status = store.NoMessageInQueue
		return res, nil
	}
	res.MinOffset, res.MaxOffset = q.min, q.maxOffset()
	switch {
	case res.MaxOffset == 0:
		res.Status, res.NextOffset = store.NoMessageInQueue, 0
		return res, nil
	case offset < res.MinOffset:
		res.Status, res.NextOffset = store.OffsetTooSmall, res.MinOffset
		return res, nil
	case offset == res.MaxOffset:
		res.Status, res.NextOffset = store.OffsetOverflowOne, offset
		return res, nil
	case offset > res.MaxOffset:
		res.Status, res.NextOffset = store.OffsetOverflowBadly, res.MaxOffset
		if res.MinOffset == 0 {
			res.NextOffset = 0
		}
		return res, nil
	}
	next := offset
	read, bytes, scanned := 0, 0, 0
	missing := false
	for i := offset - q.base; i < int64(len(q.entries)) && read < maxCount && scanned < maxScanEntries; i++ {
		e := q.entries[i]
		if e.off < s.d.logMin {
			missing = true
			next++
			scanned++
			continue
		}
		if filter != nil && !filter(e.tagHash) {
			next++
			scanned++
			continue
		}
		if read > 0 && bytes+int(e.size) > maxBytes {
			break
		}
		r := s.d.record(e.off)
		read++
		bytes += int(e.size)
		next++
		scanned++
		if rec != nil && !rec(r) {
			continue
		}
		res.Body = append(res.Body, r...)
		res.Count++
	}
	res.NextOffset = next
	switch {
	case res.Count > 0:
		res.Status = store.Found
	case missing:
		res.Status = store.OffsetFoundNull
	default:
		res.Status = store.NoMatchedMessage
	}
	return res, nil
}

// record returns the stored record at off (not a copy), or nil.
func (d *data) record(off int64) message.Record {
	i, ok := slices.BinarySearchFunc(d.log, off, func(r logRecord, off int64) int {
		switch {
		case r.off < off:
			return -1
		case r.off > off:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return d.log[i].rec
}

// MinOffset returns the first readable offset of a queue (0 if unknown).
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if q := s.d.queue(queueKey{topic, queueID}, false); q != nil {
		return q.min
	}
	return 0
}

// MaxOffset returns the offset the next message of a queue will get (0 if
// unknown).
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if q := s.d.queue(queueKey{topic, queueID}, false); q != nil {
		return q.maxOffset()
	}
	return 0
}

// OffsetByTime returns the first queue offset whose message was stored at
// or after ts, or the max offset when there is none (0 if unknown).
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := s.d.queue(queueKey{topic, queueID}, false)
	if q == nil {
		return 0, nil
	}
	lo, hi := q.min, q.maxOffset()
	for lo < hi {
		mid := lo + (hi-lo)/2
		e := q.entries[mid-q.base]
		r := s.d.record(e.off)
		if r == nil || e.off < s.d.logMin {
			return 0, fmt.Errorf("%w: store time of queue offset %d: no record at commit-log offset %d", store.ErrNotFound, mid, e.off)
		}
		if r.StoreTimestamp() >= ts {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// ReadMessage returns a copy of the record stored at a commit-log offset.
func (s *Store) ReadMessage(physOffset int64) (message.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if physOffset < s.d.logMin || physOffset >= s.d.visEnd {
		return nil, fmt.Errorf("%w: no message at commit-log offset %d", store.ErrNotFound, physOffset)
	}
	r := s.d.record(physOffset)
	if r == nil {
		return nil, fmt.Errorf("%w: no record starts at commit-log offset %d", store.ErrNotFound, physOffset)
	}
	return slices.Clone(r), nil
}

// QueryByKey returns up to max records of topic matching key (see
// store.RecordHasKey) stored between beginMS and endMS inclusive, newest
// first.
func (s *Store) QueryByKey(topic, key string, beginMS, endMS int64, max int) ([]message.Record, error) {
	if max <= 0 {
		return nil, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	idx := s.d.keys[topic]
	cands := slices.Clone(idx[key])
	if up := strings.ToUpper(key); up != key {
		cands = append(cands, idx[up]...)
		slices.Sort(cands)
		cands = slices.Compact(cands)
	}
	var out []message.Record
	for i := len(cands) - 1; i >= 0 && len(out) < max; i-- {
		if cands[i] < s.d.logMin {
			break
		}
		r := s.d.record(cands[i])
		if r == nil {
			continue
		}
		if ts := r.StoreTimestamp(); ts < beginMS || ts > endMS || !store.RecordHasKey(r, key) {
			continue
		}
		out = append(out, slices.Clone(r))
	}
	return out, nil
}

// QueueIDs lists, sorted, the queue ids of a topic that hold or held
// messages.
func (s *Store) QueueIDs(topic string) []int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []int32
	for id := range s.d.topics[topic] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// DeleteTopic forgets a topic's queues; its records stay in the log (and
// ReadMessage and QueryByKey find them) as in the file store.
func (s *Store) DeleteTopic(topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.d.topics, topic)
	return nil
}

// CommitLogMinOffset is the oldest commit-log offset still stored.
func (s *Store) CommitLogMinOffset() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.d.logMin
}

// Written is the commit-log offset the next record will get (past the
// bytes of a record a raw append cut); everything below it is durable.
func (s *Store) Written() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.d.end + int64(len(s.d.carry))
}

// Durable is the end of the last whole record: a put is durable when it
// returns.
func (s *Store) Durable() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.d.end
}

// WaitDispatched returns once the listeners have heard of every message
// stored before the call (the messages themselves were readable at once),
// or with ctx's error.
func (s *Store) WaitDispatched(ctx context.Context) error { return s.notes.wait(ctx) }

// RemovedUnconsumed is always empty: the twin has no disk to run out of.
func (s *Store) RemovedUnconsumed() []store.RemovedUnconsumed {
	return []store.RemovedUnconsumed{}
}

// RemoveBefore does what the file store's retention does when it removes
// the commit log below off: CommitLogMinOffset moves to the first record at
// or after off, ReadMessage and QueryByKey no longer find the records
// below it, and every queue's min offset moves past its entries that
// pointed at them (reads below it are OffsetTooSmall).
func (s *Store) RemoveBefore(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.removeLog(off)
	for _, qs := range s.d.topics {
		for _, q := range qs {
			i, _ := slices.BinarySearchFunc(q.entries, s.d.logMin, func(e entry, min int64) int {
				if e.off < min {
					return -1
				}
				return 1
			})
			q.min = max(q.min, q.base+int64(i))
			drop := q.min - q.base
			q.entries = slices.Clone(q.entries[drop:])
			q.base = q.min
		}
	}
}

// RemoveLogBefore removes the records below off as RemoveBefore does but
// leaves the queues as they are, as the file store is between removing
// commit-log segments and trimming its consume queues (or after a trim
// failed): reads skip the entries that point at removed records and say
// OffsetFoundNull when they find nothing else.
func (s *Store) RemoveLogBefore(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.removeLog(off)
}

func (d *data) removeLog(off int64) {
	i, _ := slices.BinarySearchFunc(d.log, off, func(r logRecord, off int64) int {
		if r.off < off {
			return -1
		}
		return 1
	})
	d.log = slices.Clone(d.log[i:])
	if len(d.log) > 0 {
		d.logMin = max(d.logMin, d.log[0].off)
	} else {
		d.logMin = d.end
	}
}
