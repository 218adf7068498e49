package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/consumequeue"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/store/index"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Errors a put can return besides the commit log's.
var (
	// ErrDiskFull: disk use is above DiskHardLimit; nothing was written.
	ErrDiskFull = errors.New("store: disk full")
	// ErrFlushTimeout: the message was written but not on disk within
	// SyncFlushTimeout (RocketMQ's FLUSH_DISK_TIMEOUT). It may still land.
	ErrFlushTimeout = commitlog.ErrFlushTimeout
	// ErrBusy: the disk has not kept up with syncs for a while; the put was
	// refused without writing (SYSTEM_BUSY to producers).
	ErrBusy = commitlog.ErrBusy
	// ErrTooLarge: the message is over MaxMessageBytes.
	ErrTooLarge = commitlog.ErrTooLarge
	// ErrClosed: the store is closed.
	ErrClosed = commitlog.ErrClosed
	// ErrNotFound: no message at that offset or with that key.
	ErrNotFound = errors.New("store: message not found")
)

// Listener learns of each stored message once consumers can read it: the
// topic, queue and the queue's new max offset (the record's queue offset
// plus one). It runs on the dispatcher goroutine and must not block.
type Listener func(topic string, queueID int32, maxOffset int64)

// Store is an open store. Methods are safe for concurrent use.
type Store struct {
	cfg    Config
	log    *slog.Logger
	clog   *commitlog.Log
	queues *queueSet
	index  *indexSink
	meta   *meta.Store
	mem    *memTopics
	disp   atomic.Pointer[dispatch.Dispatcher]
	lock   func() error

	// gate is held shared by every method that uses the commit log, the
	// consume queues or the index (clog, queues, index), and exclusively
	// by ResetAt while it replaces them and by Close (reset.go).
	gate   sync.RWMutex
	closed bool // under gate
	// resetMu serialises ResetAt calls.
	resetMu sync.Mutex

	listenMu       sync.RWMutex
	listeners      []Listener
	resetListeners []func(start int64)

	diskFull atomic.Bool
	// The commit point (replica.go): once cpEnabled, nothing at or past
	// commitPoint is dispatched.
	cpEnabled   atomic.Bool
	replica     atomic.Bool // SetReplica: the commit log takes only raw appends
	commitPoint atomic.Int64
	// undispatchedNext is, per queue, the queue offset after the records
	// the log held past the commit point at Open (set before Open
	// returns, and by PrepareMaster with the gate held exclusively; the
	// writer reads it for the appends that come after).
	undispatchedNext map[queueKey]int64
	retention        retention
	lost             lostCounts

	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates the store in cfg.Dir and recovers it.
func Open(cfg Config) (*Store, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger.With("component", "store")}
	if err := vfs.MkdirAllDurable(cfg.FS, cfg.Dir); err != nil {
		return nil, fmt.Errorf("store: create data dir %s: %w", cfg.Dir, err)
	}
	unlock, err := lockDir(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, err
	}
	s.lock = unlock
	if err := s.open(); err != nil {
		s.closeParts()
		unlock()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	cfg := s.cfg
	var err error
	s.meta, err = meta.Open(cfg.FS, path.Join(cfg.Dir, "meta"), meta.Options{
		Clock: cfg.Clock, OffsetFlushInterval: cfg.OffsetFlushInterval, Logger: cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("store: open metadata: %w", err)
	}
	s.mem = newMemTopics(cfg.MemTopicMaxBytes, cfg.StoreHost, cfg.Clock)
	if err := s.finishReset(); err != nil {
		return err
	}
	if err := s.finishTruncateAtOpen(); err != nil {
		return err
	}
	if err := s.openLog(false); err != nil {
		return err
	}
	s.retention.start(s)
	return nil
}

// openLog opens the commit log, the consume queues and the index, brings
// the derived data up to the log and starts the dispatcher. After a reset
// (afterReset) the commit point is only raised, never set back to the
// checkpoint's (also when a truncation reopens the log).
func (s *Store) openLog(afterReset bool) error {
	cfg := s.cfg
	var err error
	cp, cpErr := dispatch.ReadCheckpoint(cfg.FS, cfg.Dir)
	// Without a checkpoint the derived data is rebuilt from the log; for a
	// new store that is instant.
	rebuild := cpErr != nil
	if cpErr != nil && !errors.Is(cpErr, dispatch.ErrNoCheckpoint) {
		s.log.Warn("checkpoint unreadable; rebuilding consume queues and index from the commit log", "err", cpErr)
	}
	recoverFrom := int64(-1)
	if !rebuild {
		recoverFrom = min(cp.Dispatched, cp.LogFlushed)
	}
	if cfg.CommitPoint && !afterReset {
		// What was dispatched before was below the commit point then;
		// the rest waits for the commit point to pass it again.
		s.commitPoint.Store(cp.Dispatched)
		s.cpEnabled.Store(true)
	}
	if s.queues, err = openQueueSet(cfg); err != nil {
		return err
	}
	if s.index, err = openIndexSink(cfg); err != nil {
		return err
	}
	s.clog, err = commitlog.Open(cfg.FS, path.Join(cfg.Dir, "commitlog"), commitlog.Options{
		SegmentBytes:     cfg.SegmentBytes,
		MaxRecordBytes:   cfg.MaxMessageBytes,
		FlushMode:        cfg.FlushMode,
		FlushInterval:    cfg.FlushInterval,
		SyncFlushTimeout: cfg.SyncFlushTimeout,
		PageCacheBytes:   max(cfg.PageCacheBytes, 0),
		RecoverFrom:      recoverFrom,
		NextQueueOffset:  s.nextQueueOffset,
		OnDurable: func(int64) {
			if d := s.disp.Load(); d != nil {
				d.Notify()
			}
		},
		OnGroupCommit: cfg.OnGroupCommit,
		Clock:         cfg.Clock,
		Logger:        cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("store: open commit log: %w", err)
	}
	s.clog.SetReplica(s.replica.Load()) // a reset or truncation reopens the log
	s.queues.clog = s.clog
	// No byte lies below the log's first one: a commit point there
	// covers nothing (a log reset to start empty at the master's first
	// retained byte).
	s.raiseCommitPoint(s.clog.MinOffset())
	end := s.clog.Written()
	from := max(min(cp.Dispatched, end), s.clog.MinOffset())
	if !rebuild {
		if err := s.truncateDerived(from); err != nil {
			return err
		}
		if from == cp.Dispatched && s.queues.digest() != cp.Digest {
			err = fmt.Errorf("consume queues hold %d entries, the checkpoint says %d", s.queues.digest(), cp.Digest)
		} else {
			err = s.replay(from)
		}
		if err != nil {
			s.log.Warn("consume queues or index disagree with the commit log; rebuilding them", "err", err)
			rebuild = true
		}
	}
	if rebuild {
		if err := s.rebuildDerived(); err != nil {
			return err
		}
		if err := s.replay(s.clog.MinOffset()); err != nil {
			return fmt.Errorf("store: rebuild from the commit log: %w", err)
		}
	}
	// Queues do not store their min offset: raise it past what retention
	// removed before the restart.
	if _, err := s.queues.deleteBefore(s.clog.MinOffset()); err != nil {
		return err
	}
	d := s.disp.Load()
	if cfg.CommitPoint || s.cpEnabled.Load() {
		// Enabled by the config or at run time (a log reopened by a
		// truncation): the records above the dispatch point keep their
		// queue offsets.
		if err := s.followUndispatched(d.Dispatched()); err != nil {
			return err
		}
	}
	if err := d.Checkpoint(); err != nil {
		return fmt.Errorf("store: checkpoint after recovery: %w", err)
	}
	d.Start()
	s.log.Info("store open", "dir", cfg.Dir, "flush", cfg.FlushMode.String(), "min_offset", s.clog.MinOffset(), "max_offset", end, "replayed_from", from, "rebuilt", rebuild && end > 0)
	return nil
}

// replay makes a dispatcher that starts at from and runs it to the end of
// the log synchronously.
func (s *Store) replay(from int64) error {
	d := dispatch.New(logSource{s}, []dispatch.Sink{s.queues, s.index}, from, dispatch.Options{
		FS:                 s.cfg.FS,
		Dir:                s.cfg.Dir,
		SegmentBytes:       s.cfg.SegmentBytes,
		MaxRecordBytes:     s.cfg.MaxMessageBytes,
		CheckpointInterval: s.cfg.CheckpointInterval,
		Digest:             s.queues.digest,
		Bounded:            s.cpEnabled.Load,
		Clock:              s.cfg.Clock,
		Logger:             s.cfg.Logger,
	})
	d.AddListener(s.notifyListeners)
	s.disp.Store(d)
	return d.Replay()
}

// truncateDerived cuts consume queues and the index back to from.
func (s *Store) truncateDerived(from int64) error {
	if err := s.queues.truncate(from); err != nil {
		return err
	}
	if err := s.index.idx.Truncate(from); err != nil {
		return fmt.Errorf("store: truncate index: %w", err)
	}
	return nil
}

// rebuildDerived deletes consume queues and the index.
func (s *Store) rebuildDerived() error {
	if err := s.queues.removeAll(); err != nil {
		return err
	}
	if err := s.index.reset(); err != nil {
		return err
	}
	return nil
}

func (s *Store) notifyListeners(r message.Record) {
	s.listenMu.RLock()
	defer s.listenMu.RUnlock()
	if len(s.listeners) == 0 {
		return
	}
	topic := s.index.intern(r.Topic())
	for _, l := range s.listeners {
		l(topic, r.QueueID(), r.QueueOffset()+1)
	}
}

// AddListener registers l for every message that becomes readable from now
// on, persistent or in-memory.
func (s *Store) AddListener(l Listener) {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	s.listeners = append(s.listeners, l)
}

// Meta returns the metadata store (topics, groups, consumer offsets).
func (s *Store) Meta() *meta.Store { return s.meta }

// Config returns the configuration in force.
func (s *Store) Config() Config { return s.cfg }

// Put stores one message and returns once it is durable under the flush
// mode. On success m's QueueOffset, PhysicalOffset and StoreTimestamp are
// set. The message must not be modified until Put returns.
func (s *Store) Put(m *message.Message) error {
	if s.mem.isMemTopic(s.meta, m.Topic) {
		return s.mem.put(s, []*message.Message{m})
	}
	if s.diskFull.Load() {
		return s.diskFullError()
	}
	m.StoreHost = s.cfg.StoreHost
	s.gate.RLock()
	defer s.gate.RUnlock()
	_, err := s.clog.Append(m)
	return s.putError(err)
}

// PutBatch stores messages as consecutive records, all of one queue or not,
// and waits like Put.
func (s *Store) PutBatch(msgs []*message.Message) error {
	if len(msgs) > 0 && s.mem.isMemTopic(s.meta, msgs[0].Topic) {
		return s.mem.put(s, msgs)
	}
	if s.diskFull.Load() {
		return s.diskFullError()
	}
	for _, m := range msgs {
		m.StoreHost = s.cfg.StoreHost
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	_, err := s.clog.AppendBatch(msgs)
	return s.putError(err)
}

// PutAsync stores msgs and calls done once they are durable under the flush
// mode, or with the error: PutBatches of one group. done runs on a store
// goroutine or the caller's and must not block.
func (s *Store) PutAsync(msgs []*message.Message, done func(error)) {
	s.PutBatches([][]*message.Message{msgs}, func(_ int, err error) { done(err) })
}

// PutBatches stores each of groups as PutBatch would (a group's messages
// consecutive records, all or none) and hands every group for the commit
// log to its writer as one submission, so that they are written as one group commit
// (commitlog.Log.AppendMany). done(i, err) is called once per group i, on
// a store goroutine or on the caller's (in-memory topics, refusals); it
// must not block. The messages must not be modified until their done runs.
func (s *Store) PutBatches(groups [][]*message.Message, done func(i int, err error)) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	s.putBatches(groups, done, s.clog.AppendMany)
}

// An Appender is one caller's handle for PutBatches (a remoting
// connection's reader has one): under async flush it writes on the
// caller's goroutine and has answered every group when PutBatches returns
// (see commitlog.Appender). It serves one call at a time.
type Appender struct {
	s    *Store
	clog *commitlog.Log // the log app appends to (a reset replaces it)
	app  *commitlog.Appender
}

// NewAppender returns an Appender for one caller.
func (s *Store) NewAppender() BatchAppender {
	s.gate.RLock()
	defer s.gate.RUnlock()
	return &Appender{s: s, clog: s.clog, app: s.clog.NewAppender()}
}

// PutBatches is Store.PutBatches through the appender.
func (a *Appender) PutBatches(groups [][]*message.Message, done func(i int, err error)) {
	a.s.gate.RLock()
	defer a.s.gate.RUnlock()
	if a.clog != a.s.clog {
		a.clog, a.app = a.s.clog, a.s.clog.NewAppender()
	}
	a.s.putBatches(groups, done, a.app.AppendMany)
}

func (s *Store) putBatches(groups [][]*message.Message, done func(int, error), appendMany func([][]*message.Message, func(int, commitlog.Result, error))) {
	disk := groups
	var idx []int // disk[k] is groups[idx[k]], when some groups are not for the log
	for i, g := range groups {
		var err error
		switch {
		case len(g) > 0 && s.mem.isMemTopic(s.meta, g[0].Topic):
			err = s.mem.put(s, g)
		case s.diskFull.Load():
			err = s.diskFullError()
		default:
			for _, m := range g {
				m.StoreHost = s.cfg.StoreHost
			}
			if idx != nil {
				disk = append(disk, g)
				idx = append(idx, i)
			}
			continue
		}
		if idx == nil {
			// From here on only the groups for the log are passed on.
			disk = append([][]*message.Message(nil), groups[:i]...)
			idx = make([]int, i, len(groups))
			for k := range idx {
				idx[k] = k
			}
		}
		done(i, err)
	}
	if len(disk) == 0 {
		return
	}
	appendMany(disk, func(k int, _ commitlog.Result, err error) {
		if idx != nil {
			k = idx[k]
		}
		done(k, s.putError(err))
	})
}

// Durable is the commit-log offset below which messages are readable.
func (s *Store) Durable() int64 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	return s.clog.Durable()
}

// Written is the commit-log offset below which records were handed to the
// OS, durable or not: under sync flush it runs ahead of Durable while a
// group's fsync is in flight, and on a slave it may end inside a record a
// raw append cut. It is the log end replication ships up to and appends
// at (ReadRaw, AppendRaw); nothing between Durable and Written may be
// served to consumers.
func (s *Store) Written() int64 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	return s.clog.Written()
}

// Dispatched is the commit-log offset below which messages are in their
// consume queues and the index.
func (s *Store) Dispatched() int64 { return s.disp.Load().Dispatched() }

// WaitDispatched returns once every message durable now (and below the
// commit point, when it is enabled) is in its consume queue and the index
// (so lookups find it), or with ctx's error.
func (s *Store) WaitDispatched(ctx context.Context) error {
	s.gate.RLock()
	d, end := s.disp.Load(), s.visibleEnd()
	s.gate.RUnlock()
	return d.WaitDispatched(ctx, end)
}

// CommitLogMinOffset is the oldest commit-log offset still stored.
func (s *Store) CommitLogMinOffset() int64 {
	s.gate.RLock()
	defer s.gate.RUnlock()
	return s.clog.MinOffset()
}

// Close stops the store: puts in flight finish, everything durable is
// dispatched and checkpointed, files are closed. Idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.retention.stop()
		s.resetMu.Lock()
		defer s.resetMu.Unlock()
		// The dispatcher stops before the gate is taken: its listeners
		// may call into the store.
		var derr error
		if d := s.disp.Load(); d != nil {
			derr = d.Close()
		}
		s.gate.Lock()
		defer s.gate.Unlock()
		s.closed = true
		s.closeErr = errors.Join(derr, s.closeParts())
		if s.lock != nil {
			s.lock()
		}
	})
	return s.closeErr
}

func (s *Store) closeParts() error {
	var errs []error
	// The dispatcher goes first, while the log files are still open; what is
	// appended after it stops is replayed at the next Open.
	if d := s.disp.Load(); d != nil {
		errs = append(errs, d.Close())
	}
	if s.clog != nil {
		errs = append(errs, s.clog.Close())
	}
	if s.queues != nil {
		errs = append(errs, s.queues.close())
	}
	if s.index != nil {
		errs = append(errs, s.index.idx.Close())
	}
	if s.meta != nil {
		errs = append(errs, s.meta.Close())
	}
	return errors.Join(errs...)
}

// consumequeue options derived from the config.
func (c Config) cqOptions() consumequeue.Options {
	return consumequeue.Options{EntriesPerFile: c.ConsumeQueueEntriesPerFile}
}

func (c Config) indexOptions() index.Options {
	return index.Options{SlotsPerFile: c.IndexSlotsPerFile, EntriesPerFile: c.IndexEntriesPerFile}
}
