package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/consumequeue"
)

// GetStatus says what a GetMessages call found.
type GetStatus int

// Statuses, after RocketMQ's GetMessageStatus.
const (
	// Found: at least one message is in the result.
	Found GetStatus = iota
	// NoMatchedMessage: entries were scanned but none passed the filter;
	// NextOffset skips them.
	NoMatchedMessage
	// NoMessageInQueue: the queue is empty or does not exist.
	NoMessageInQueue
	// OffsetTooSmall: the offset is below the queue's min offset.
	OffsetTooSmall
	// OffsetOverflowOne: the offset equals the max offset (nothing new yet).
	OffsetOverflowOne
	// OffsetOverflowBadly: the offset is past the max offset.
	OffsetOverflowBadly
	// OffsetFoundNull: the entries point at commit-log data that retention
	// removed.
	OffsetFoundNull
)

var statusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "NO_MESSAGE_IN_QUEUE", "OFFSET_TOO_SMALL",
	"OFFSET_OVERFLOW_ONE", "OFFSET_OVERFLOW_BADLY", "OFFSET_FOUND_NULL"}

func (s GetStatus) String() string { return statusNames[s] }

// Limits of one GetMessages call.
const (
	// maxScanEntries bounds the entries a filtered read looks at.
	maxScanEntries = 16_000
	entryBatch     = 64
)

// GetResult is what GetMessages returns. Body holds the stored records,
// concatenated exactly as a pull response carries them. Call Release when
// done with Body.
type GetResult struct {
	Status     GetStatus
	NextOffset int64 // offset the consumer asks for next
	MinOffset  int64
	MaxOffset  int64
	Count      int    // records in Body
	Body       []byte // records back to back
	buf        *[]byte
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// Release returns Body's memory to the pool; Body must not be used after.
func (r *GetResult) Release() {
	if r.buf != nil {
		*r.buf = r.Body[:0]
		bodyPool.Put(r.buf)
		r.buf, r.Body = nil, nil
	}
}

// keep drops the records of Body[from:] that rec rejects.
func (r *GetResult) keep(from int, rec RecordFilter) {
	in, out := from, from
	for in < len(r.Body) {
		n, err := message.Check(r.Body[in:])
		if err != nil || n <= 0 {
			break // cannot happen: the store reads whole records
		}
		if rec(message.Record(r.Body[in : in+n])) {
			copy(r.Body[out:], r.Body[in:in+n])
			out += n
		} else {
			r.Count--
		}
		in += n
	}
	r.Body = r.Body[:out]
}

// Records calls fn for each record of the body.
func (r *GetResult) Records(fn func(message.Record)) {
	b := r.Body
	for len(b) > 0 {
		n, err := message.Check(b)
		if err != nil {
			return
		}
		fn(message.Record(b[:n]))
		b = b[n:]
	}
}

// TagFilter says whether an entry's tag hash can match; nil matches all.
type TagFilter func(tagHash int64) bool

// RecordFilter says whether a stored record matches (SQL92 property
// filters); it sees only records the TagFilter let through. It must not
// keep the record, whose memory is reused. nil matches all.
type RecordFilter func(message.Record) bool

// GetMessages reads up to maxCount messages (and about maxBytes, always at
// least one whole record) of a queue from offset, skipping entries the
// filter rejects. Only records that are durable are ever returned.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter TagFilter) (*GetResult, error) {
	return s.GetMessagesFiltered(topic, queueID, offset, maxCount, maxBytes, filter, nil)
}

// GetMessagesFiltered is GetMessages that also drops the records rec
// rejects. maxCount and maxBytes bound the records read, so a result may
// hold fewer than maxCount records though more matching ones follow
// (NextOffset says where to go on); when every record read was dropped the
// status is NoMatchedMessage.
func (s *Store) GetMessagesFiltered(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter TagFilter, rec RecordFilter) (*GetResult, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if maxCount <= 0 {
		maxCount = 1
	}
	if maxBytes <= 0 {
		maxBytes = 256 << 10
	}
	if mq := s.mem.queue(topic, queueID); mq != nil {
		return mq.get(offset, maxCount, maxBytes, filter, rec), nil
	}
	res := &GetResult{}
	q := s.queues.get(topic, queueID)
	if q != nil {
		res.MinOffset, res.MaxOffset = q.MinOffset(), q.MaxOffset()
	}
	if offset > res.MaxOffset && offset <= s.nextQueueOffset(topic, queueID) {
		// The log holds the queue's records up to offset, above the
		// commit point: a restart resumed from its last checkpoint, below
		// where the commit point had been, and a consumer read them
		// before. They become visible again once the commit point passes
		// them; until then the offset is the queue's end, not past it
		// (which would send the consumer back to the first message).
		res.Status, res.NextOffset = OffsetOverflowOne, offset
		return res, nil
	}
	if q == nil {
		res.Status = NoMessageInQueue
		return res, nil
	}
	switch {
	case res.MaxOffset == 0 || res.MinOffset == res.MaxOffset && offset == res.MaxOffset:
		if res.MaxOffset == 0 {
			res.Status = NoMessageInQueue
			res.NextOffset = 0
		} else {
			res.Status = OffsetOverflowOne
			res.NextOffset = offset
		}
		return res, nil
	case offset < res.MinOffset:
		res.Status = OffsetTooSmall
		res.NextOffset = res.MinOffset
		return res, nil
	case offset == res.MaxOffset:
		res.Status = OffsetOverflowOne
		res.NextOffset = offset
		return res, nil
	case offset > res.MaxOffset:
		res.Status = OffsetOverflowBadly
		res.NextOffset = res.MaxOffset
		if res.MinOffset == 0 {
			res.NextOffset = res.MinOffset
		}
		return res, nil
	}
	err := s.readQueue(q, res, offset, maxCount, maxBytes, filter, rec)
	return res, err
}

func (s *Store) readQueue(q *consumequeue.Queue, res *GetResult, offset int64, maxCount, maxBytes int, filter TagFilter, rec RecordFilter) error {
	var entries [entryBatch]consumequeue.Entry
	logMin := s.clog.MinOffset()
	durable := s.clog.Durable()
	next := offset
	scanned := 0
	missing := false
	// Runs of entries whose records are contiguous in the log are read with
	// one pread.
	runStart, runEnd := int64(-1), int64(-1)
	flush := func() error {
		if runStart < 0 {
			return nil
		}
		if res.buf == nil {
			res.buf = bodyPool.Get().(*[]byte)
			res.Body = (*res.buf)[:0]
		}
		n := int(runEnd - runStart)
		at := len(res.Body)
		res.Body = slices.Grow(res.Body, n)[:at+n]
		if err := s.clog.ReadAt(res.Body[at:], runStart); err != nil {
			res.Body = res.Body[:at]
			return err
		}
		runStart, runEnd = -1, -1
		if rec != nil {
			res.keep(at, rec)
		}
		return nil
	}
	bytes := 0
scan:
	for res.Count < maxCount && scanned < maxScanEntries {
		n, err := q.Read(next, entries[:])
		if errors.Is(err, consumequeue.ErrBelowMin) {
			// Retention moved the queue's start under us.
			res.Release()
			*res = GetResult{Status: OffsetTooSmall, NextOffset: q.MinOffset(), MinOffset: q.MinOffset(), MaxOffset: res.MaxOffset}
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: read consume queue: %w", err)
		}
		if n == 0 {
			break
		}
		for _, e := range entries[:n] {
			if res.Count >= maxCount {
				break scan
			}
			if e.Size == 0 { // blank padding
				next++
				scanned++
				continue
			}
			if e.Offset < logMin {
				missing = true
				next++
				scanned++
				continue
			}
			if e.Offset+int64(e.Size) > durable {
				break scan // cannot happen: queues hold dispatched records only
			}
			if filter != nil && !filter(e.TagHash) {
				next++
				scanned++
				continue
			}
			if res.Count > 0 && bytes+int(e.Size) > maxBytes {
				break scan
			}
			// Extend the run when contiguous and inside one segment.
			if runStart >= 0 && (e.Offset != runEnd || s.clog.SegmentStart(e.Offset) != s.clog.SegmentStart(runStart)) {
				if err := flush(); err != nil {
					return err
				}
			}
			if runStart < 0 {
				runStart = e.Offset
			}
			runEnd = e.Offset + int64(e.Size)
			bytes += int(e.Size)
			res.Count++
			next++
			scanned++
		}
	}
	if err := flush(); err != nil {
		res.Release()
		return err
	}
	res.NextOffset = next
	switch {
	case res.Count > 0:
		res.Status = Found
	case missing:
		res.Status = OffsetFoundNull
	default:
		res.Status = NoMatchedMessage
	}
	return nil
}

// MinOffset returns the first readable offset of a queue (0 if unknown).
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if mq := s.mem.queue(topic, queueID); mq != nil {
		lo, _ := mq.bounds()
		return lo
	}
	if q := s.queues.get(topic, queueID); q != nil {
		return q.MinOffset()
	}
	return 0
}

// MaxOffset returns the offset the next message of a queue will get, as
// far as consumers can see (0 if unknown).
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if mq := s.mem.queue(topic, queueID); mq != nil {
		_, hi := mq.bounds()
		return hi
	}
	if q := s.queues.get(topic, queueID); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// OffsetByTime returns the first queue offset whose message was stored at
// or after ts (ms since the epoch), or the max offset when there is none.
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64) (int64, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if mq := s.mem.queue(topic, queueID); mq != nil {
		return mq.offsetByTime(ts), nil
	}
	q := s.queues.get(topic, queueID)
	if q == nil {
		return 0, nil
	}
	var hdr [128]byte
	return q.Search(ts, func(e consumequeue.Entry) (int64, error) {
		n := min(int(e.Size), len(hdr))
		if err := s.clog.ReadAt(hdr[:n], e.Offset); err != nil {
			return 0, err
		}
		return message.Record(hdr[:n]).StoreTimestamp(), nil
	})
}

// ReadMessage returns the record stored at a commit-log offset (the offset
// inside an offset message id). The record is the caller's.
func (s *Store) ReadMessage(physOffset int64) (message.Record, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	return s.readMessage(physOffset)
}

// readMessage is ReadMessage; the caller holds the gate.
func (s *Store) readMessage(physOffset int64) (message.Record, error) {
	if r, ok := s.mem.byOffset(physOffset); ok {
		return r, nil
	}
	if physOffset < s.clog.MinOffset() || physOffset+message.MinRecordLen > s.visibleEnd() {
		return nil, fmt.Errorf("%w: no message at commit-log offset %d", ErrNotFound, physOffset)
	}
	var hdr [4]byte
	if err := s.clog.ReadAt(hdr[:], physOffset); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	size := message.Record(hdr[:]).TotalSize()
	if size < message.MinRecordLen || int(size) > s.cfg.MaxMessageBytes || physOffset+int64(size) > s.visibleEnd() {
		return nil, fmt.Errorf("%w: no record starts at commit-log offset %d", ErrNotFound, physOffset)
	}
	r, err := s.clog.ReadRecord(physOffset, size, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: no record at commit-log offset %d: %w", ErrNotFound, physOffset, err)
	}
	return r, nil
}

// QueryByKey returns up to max messages of topic whose KEYS contain key or
// whose UNIQ_KEY is key (compared case-insensitively), stored between
// beginMS and endMS inclusive, newest first.
func (s *Store) QueryByKey(topic, key string, beginMS, endMS int64, max int) ([]message.Record, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if max <= 0 {
		return nil, nil
	}
	cands, err := s.index.idx.Query(topic, key, beginMS, endMS, max*4)
	if err != nil {
		return nil, fmt.Errorf("store: query index: %w", err)
	}
	if up := strings.ToUpper(key); up != key {
		more, err := s.index.idx.Query(topic, up, beginMS, endMS, max*4)
		if err != nil {
			return nil, fmt.Errorf("store: query index: %w", err)
		}
		cands = append(cands, more...)
		slices.Sort(cands)
		cands = slices.Compact(cands)
		slices.Reverse(cands)
	}
	var out []message.Record
	for _, off := range cands {
		if len(out) >= max {
			break
		}
		r, err := s.readMessage(off)
		if err != nil {
			continue // removed by retention or beyond a cut
		}
		if string(r.Topic()) != topic || r.StoreTimestamp() < beginMS || r.StoreTimestamp() > endMS {
			continue
		}
		if !RecordHasKey(r, key) {
			continue
		}
		out = append(out, r)
	}
	out = append(out, s.mem.queryByKey(topic, key, beginMS, endMS, max-len(out))...)
	return out, nil
}

// RecordHasKey says whether r matches a QueryByKey for key: one of its
// KEYS is key, or its UNIQ_KEY is key compared case-insensitively.
func RecordHasKey(r message.Record, key string) bool {
	if u, ok := r.Property(message.PropertyUniqKey); ok && equalFold(u, key) {
		return true
	}
	found := false
	if keys, ok := r.Property(message.PropertyKeys); ok {
		message.Keys(keys, func(k []byte) {
			if string(k) == key {
				found = true
			}
		})
	}
	return found
}

func equalFold(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// DeleteTopic removes a topic's consume queues (its records stay in the
// commit log until retention removes them) and its in-memory queues.
func (s *Store) DeleteTopic(topic string) error {
	s.gate.RLock()
	defer s.gate.RUnlock()
	s.mem.deleteTopic(topic)
	return s.queues.removeTopic(topic)
}

// QueueIDs lists the queue ids of a topic that hold or held messages.
func (s *Store) QueueIDs(topic string) []int32 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	ids := s.queues.topicQueues(topic)
	ids = append(ids, s.mem.queueIDs(topic)...)
	slices.Sort(ids)
	return slices.Compact(ids)
}
