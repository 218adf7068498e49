package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"sync"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/consumequeue"
	"github.com/petrelmq/petrel/internal/vfs"
)

// queueSet holds the open consume queues and is the dispatcher's sink for
// them. Readers look queues up under the read lock; the dispatcher appends
// under it too, so a topic deletion (write lock) never races an append.
type queueSet struct {
	cfg  Config
	root string

	mu     sync.RWMutex
	topics map[string]map[int32]*consumequeue.Queue

	// dirty is owned by the dispatcher goroutine.
	dirty map[*consumequeue.Queue]struct{}

	// clog rewrites the queue offsets of records that repeat one
	// (renumber); set once the log is open.
	clog *commitlog.Log
	// renumbered counts the records renumbered per queue (dispatcher).
	renumbered map[*consumequeue.Queue]int
	rewrote    bool // the log has rewrites to sync at the next Flush
}

func openQueueSet(cfg Config) (*queueSet, error) {
	qs := &queueSet{
		cfg:    cfg,
		root:   path.Join(cfg.Dir, "consumequeue"),
		topics: make(map[string]map[int32]*consumequeue.Queue),
		dirty:  make(map[*consumequeue.Queue]struct{}),
	}
	if err := vfs.MkdirAllDurable(cfg.FS, qs.root); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", qs.root, err)
	}
	topics, err := cfg.FS.ReadDir(qs.root)
	if err != nil {
		return nil, fmt.Errorf("store: list consume queues: %w", err)
	}
	for _, topic := range topics {
		if !message.ValidTopic(topic) {
			continue
		}
		ids, err := cfg.FS.ReadDir(path.Join(qs.root, topic))
		if err != nil {
			return nil, fmt.Errorf("store: list queues of %s: %w", topic, err)
		}
		for _, id := range ids {
			qid, err := strconv.ParseInt(id, 10, 32)
			if err != nil {
				continue
			}
			if _, err := qs.open(topic, int32(qid)); err != nil {
				qs.close()
				return nil, err
			}
		}
	}
	return qs, nil
}

func (qs *queueSet) dir(topic string, qid int32) string {
	return path.Join(qs.root, topic, strconv.Itoa(int(qid)))
}

// open opens a queue and lists it; the caller holds mu or runs alone.
func (qs *queueSet) open(topic string, qid int32) (*consumequeue.Queue, error) {
	q, err := consumequeue.Open(qs.cfg.FS, qs.dir(topic, qid), qs.cfg.cqOptions())
	if err != nil {
		return nil, fmt.Errorf("store: open consume queue %s/%d: %w", topic, qid, err)
	}
	m := qs.topics[topic]
	if m == nil {
		m = make(map[int32]*consumequeue.Queue)
		qs.topics[topic] = m
	}
	m[qid] = q
	return q, nil
}

// get returns a queue or nil; it never creates one.
func (qs *queueSet) get(topic string, qid int32) *consumequeue.Queue {
	qs.mu.RLock()
	defer qs.mu.RUnlock()
	return qs.topics[topic][qid]
}

// maxOffset is the commit log's source of first queue offsets.
func (qs *queueSet) maxOffset(topic string, qid int32) int64 {
	if q := qs.get(topic, qid); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// Dispatch appends the record's entry to its queue.
func (qs *queueSet) Dispatch(r message.Record) error {
	topic := r.Topic()
	qid := r.QueueID()
	var tagHash int64
	if tags, ok := r.Property(message.PropertyTags); ok {
		tagHash = message.TagHash(tags)
	}
	e := consumequeue.Entry{Offset: r.PhysicalOffset(), Size: r.TotalSize(), TagHash: tagHash}
	qs.mu.RLock()
	q := qs.topics[string(topic)][qid]
	if q != nil {
		err := q.Append(r.QueueOffset(), e)
		if errors.Is(err, consumequeue.ErrMismatch) || errors.Is(err, consumequeue.ErrGap) {
			err = qs.renumber(q, r, e, err)
		}
		qs.mu.RUnlock()
		qs.dirty[q] = struct{}{}
		return err
	}
	qs.mu.RUnlock()
	qs.mu.Lock()
	q = qs.topics[string(topic)][qid]
	var err error
	if q == nil {
		q, err = qs.open(string(topic), qid)
	}
	if err == nil {
		err = q.Append(r.QueueOffset(), e)
	}
	qs.mu.Unlock()
	if err != nil {
		return err
	}
	qs.dirty[q] = struct{}{}
	return nil
}

// renumber stores a record whose queue offset an earlier record of its
// queue already has, or one past the queue's end (a gap). The writer never
// hands out an offset twice or skips one, but a roll-over that failed
// before roll-overs were made atomic left refused records in the log and
// gave their offsets to the next ones, and a failed write could leave its
// queue's next offset past the end. Such a record
// goes to the end of its queue, like any new one, and its queue offset is
// rewritten in the log to match, so that what consumers are served agrees
// with the queue; the earlier record keeps its place (consumers may have
// seen it). Replaying the rewritten log puts every record where this did.
// A record the queue already holds further on, or one not past the queue's
// last entry, is a real disagreement: cause is returned.
func (qs *queueSet) renumber(q *consumequeue.Queue, r message.Record, e consumequeue.Entry, cause error) error {
	if qs.clog == nil {
		return cause
	}
	if _, last, ok := q.Last(); ok && e.Offset <= last.Offset {
		return cause
	}
	from, to := r.QueueOffset(), q.MaxOffset()
	if err := qs.clog.RewriteQueueOffset(r, to); err != nil {
		return fmt.Errorf("store: renumber the record at %d: %w (after %w)", r.PhysicalOffset(), err, cause)
	}
	qs.rewrote = true
	if err := q.Append(to, e); err != nil {
		return err
	}
	if qs.renumbered == nil {
		qs.renumbered = make(map[*consumequeue.Queue]int)
	}
	if qs.renumbered[q]++; qs.renumbered[q] == 1 {
		qs.cfg.Logger.Warn("a record repeats a queue offset another record has, or skips offsets (left by a failed write of an older version); appending it at the end of the queue and rewriting its offset",
			"topic", r.Topic(), "queue_id", r.QueueID(), "record_offset", from, "new_offset", to, "physical_offset", r.PhysicalOffset())
	}
	return nil
}

// Flush makes every queue appended since the last Flush durable (and
// before them the queue offsets renumber rewrote in the log).
func (qs *queueSet) Flush() error {
	if qs.rewrote {
		if err := qs.clog.SyncRewrites(); err != nil {
			return err
		}
		qs.rewrote = false
	}
	var errs []error
	for q := range qs.dirty {
		if err := q.Flush(); err != nil && !errors.Is(err, consumequeue.ErrClosed) {
			errs = append(errs, err)
			continue
		}
		delete(qs.dirty, q)
	}
	return errors.Join(errs...)
}

func (qs *queueSet) all() []*consumequeue.Queue {
	qs.mu.RLock()
	defer qs.mu.RUnlock()
	var out []*consumequeue.Queue
	for _, m := range qs.topics {
		for _, q := range m {
			out = append(out, q)
		}
	}
	return out
}

// truncate drops entries at or past the commit-log offset from (recovery).
func (qs *queueSet) truncate(from int64) error {
	for _, q := range qs.all() {
		if err := q.Truncate(from); err != nil {
			return fmt.Errorf("store: truncate consume queue: %w", err)
		}
	}
	return nil
}

// deleteBefore drops files wholly below the commit log's min offset.
func (qs *queueSet) deleteBefore(minOffset int64) (int, error) {
	n := 0
	for _, q := range qs.all() {
		k, err := q.DeleteBefore(minOffset)
		n += k
		if err != nil && !errors.Is(err, consumequeue.ErrClosed) {
			return n, fmt.Errorf("store: retention of consume queue: %w", err)
		}
	}
	return n, nil
}

// removeTopic deletes every queue of a topic.
func (qs *queueSet) removeTopic(topic string) error {
	qs.mu.Lock()
	m := qs.topics[topic]
	delete(qs.topics, topic)
	qs.mu.Unlock()
	var errs []error
	for _, q := range m {
		errs = append(errs, q.Remove())
	}
	if err := qs.cfg.FS.RemoveAll(path.Join(qs.root, topic)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	errs = append(errs, qs.cfg.FS.SyncDir(qs.root))
	return errors.Join(errs...)
}

// removeAll deletes every consume queue (before a rebuild).
func (qs *queueSet) removeAll() error {
	qs.mu.Lock()
	topics := qs.topics
	qs.topics = make(map[string]map[int32]*consumequeue.Queue)
	qs.dirty = make(map[*consumequeue.Queue]struct{})
	qs.mu.Unlock()
	for _, m := range topics {
		for _, q := range m {
			q.Close()
		}
	}
	if err := qs.cfg.FS.RemoveAll(qs.root); err != nil {
		return fmt.Errorf("store: remove consume queues: %w", err)
	}
	if err := vfs.MkdirAllDurable(qs.cfg.FS, qs.root); err != nil {
		return fmt.Errorf("store: create %s: %w", qs.root, err)
	}
	return qs.cfg.FS.SyncDir(qs.cfg.Dir)
}

// topicQueues lists the queue ids of a topic.
func (qs *queueSet) topicQueues(topic string) []int32 {
	qs.mu.RLock()
	defer qs.mu.RUnlock()
	var out []int32
	for id := range qs.topics[topic] {
		out = append(out, id)
	}
	return out
}

func (qs *queueSet) close() error {
	var errs []error
	for _, q := range qs.all() {
		errs = append(errs, q.Close())
	}
	return errors.Join(errs...)
}

// digest is the sum of every queue's max offset: a checkpoint records it so
// that recovery notices a queue that lost entries the checkpoint covered.
func (qs *queueSet) digest() int64 {
	var sum int64
	for _, q := range qs.all() {
		sum += q.MaxOffset()
	}
	return sum
}
