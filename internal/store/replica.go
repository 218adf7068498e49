package store

import (
	"context"
	"fmt"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/dispatch"
)

// Replication (replication.md §2.5): a master's log is shipped byte for
// byte to its slaves. The master reads it with ReadRaw and waits for it to
// grow with WaitWritten; a slave appends it with AppendRaw, and its
// dispatcher builds the same consume queues and index from the same
// records (their queue offsets are the master's).
//
// The commit point is the offset below which every record is held by
// enough replicas that no failover can take it away. Once it is enabled
// (Config.CommitPoint, or EnableCommitPoint) the dispatcher feeds consume
// queues, the index and listeners (long polls, timers, transactions) only
// up to min(commit point, durable end), so nothing a consumer reads can be
// lost with the master's disk. Without it nothing changes: records are
// readable once durable.

// ErrOffsetOutOfRange: a raw read names bytes below the oldest commit-log
// byte still stored (retention removed them).
var ErrOffsetOutOfRange = commitlog.ErrBelowRetention

// Errors of replicated appends (AppendRaw).
var (
	// ErrSegmentMismatch: the master's segment size differs from this
	// store's SegmentBytes.
	ErrSegmentMismatch = commitlog.ErrSegmentMismatch
	// ErrBadRaw: the bytes are not records at their offsets.
	ErrBadRaw = commitlog.ErrBadRaw
	// ErrBadOffset: a raw append not at the log's end, or a raw read past
	// it.
	ErrBadOffset = commitlog.ErrBadOffset
)

// ErrReplica: a local write on a store in replica mode (SetReplica).
var ErrReplica = commitlog.ErrReplica

// SetReplica turns replica mode on or off: a replica's commit log takes
// only its master's bytes (AppendRaw) and refuses every local append with
// ErrReplica, also one admitted before the switch, so a demoted master's
// late write (a retried state record) can never land among the replicated
// bytes. A promoted replica turns it off before it takes writes. It holds
// across the log reopens of ResetAt and TruncateTo.
func (s *Store) SetReplica(on bool) {
	s.gate.RLock() // a reset or truncation swaps s.clog under it
	defer s.gate.RUnlock()
	s.replica.Store(on)
	s.clog.SetReplica(on)
}

// AppendRaw appends b, bytes of the master's commit log from offset off,
// byte for byte at the same offsets (segment padding included). off must
// be Written(). It goes through the commit log's single writer: under sync
// flush it returns once the bytes are durable, under async flush once
// written. b may end inside a record: the record is neither durable nor
// dispatched before the AppendRaw that completes it. Bytes that are not
// records at their offsets, or that do not fit this store's segments (the
// master has other SegmentBytes), are refused with nothing written.
func (s *Store) AppendRaw(off int64, b []byte) error {
	if s.diskFull.Load() {
		return s.diskFullError()
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	_, err := s.clog.AppendRaw(off, b)
	if err != nil {
		return fmt.Errorf("store: replicated append at %d: %w", off, err)
	}
	return nil
}

// AppendRawAsync is AppendRaw without the wait: done is called with the
// end of the appended bytes once they are durable under sync flush
// (written under async flush), or with the error, from a store goroutine
// (possibly before AppendRawAsync returns). Calls from one goroutine are
// written in their order. b must not be modified until done runs; done must
// not block.
func (s *Store) AppendRawAsync(off int64, b []byte, done func(end int64, err error)) {
	if s.diskFull.Load() {
		done(0, s.diskFullError())
		return
	}
	s.clog.AppendRawAsync(off, b, func(res commitlog.Result, err error) {
		if err != nil {
			done(0, fmt.Errorf("store: replicated append at %d: %w", off, err))
			return
		}
		done(res.End, nil)
	})
}

// ReadRaw returns a copy of the commit-log bytes [off, min(off+max,
// Written())) that lie in off's segment: bytes a slave appends with
// AppendRaw. They run up to the written end, past the durable end: a
// master ships bytes before its own fsync (replication.md §2.5); the commit
// point decides what is acknowledged and readable. The bytes may end
// inside a record. off == Written() gives no bytes; an offset below the
// oldest stored byte is ErrOffsetOutOfRange.
func (s *Store) ReadRaw(off int64, max int) ([]byte, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	b, err := s.clog.ReadRaw(off, max)
	if err != nil {
		return nil, fmt.Errorf("store: replicated read at %d: %w", off, err)
	}
	return b, nil
}

// ReadRawInto is ReadRaw into p (at most len(p) bytes), returning how many
// bytes it read: the master's fetch server reuses one buffer per slave.
func (s *Store) ReadRawInto(off int64, p []byte) (int, error) {
	n, err := s.clog.ReadRawInto(off, p)
	if err != nil {
		return 0, fmt.Errorf("store: replicated read at %d: %w", off, err)
	}
	return n, nil
}

// WaitWritten returns once Written() > off (the commit log grew past off),
// or with ctx's error, or ErrClosed once the store closes: the long poll of
// a master's fetch server. It does not poll.
func (s *Store) WaitWritten(ctx context.Context, off int64) error {
	s.gate.RLock()
	l := s.clog
	s.gate.RUnlock()
	return l.WaitWritten(ctx, off)
}

// EnableCommitPoint bounds what the dispatcher feeds consume queues, the
// index and listeners by the commit point (SetCommitPoint), from its next
// step on. The commit point starts at what was set before, or at what was
// dispatched already (that is readable anyway). Idempotent.
func (s *Store) EnableCommitPoint() {
	if d := s.disp.Load(); d != nil {
		s.raiseCommitPoint(d.Dispatched())
	}
	s.cpEnabled.Store(true)
}

// SetCommitPoint moves the commit point to off; it never moves back (a
// lower off is ignored). Without EnableCommitPoint it is only recorded.
func (s *Store) SetCommitPoint(off int64) {
	if s.raiseCommitPoint(off) {
		if d := s.disp.Load(); d != nil {
			d.Notify()
		}
	}
}

func (s *Store) raiseCommitPoint(off int64) bool {
	for {
		cur := s.commitPoint.Load()
		if off <= cur {
			return false
		}
		if s.commitPoint.CompareAndSwap(cur, off) {
			return true
		}
	}
}

// CommitPoint is the commit point: the highest offset SetCommitPoint was
// given (or where EnableCommitPoint started it).
func (s *Store) CommitPoint() int64 { return s.commitPoint.Load() }

// CommitPointEnabled reports whether the commit point bounds dispatch.
func (s *Store) CommitPointEnabled() bool { return s.cpEnabled.Load() }

// visibleEnd is the offset below which records may be dispatched and
// read: the durable end, bounded by the commit point once enabled.
func (s *Store) visibleEnd() int64 {
	d := s.clog.Durable()
	if s.cpEnabled.Load() {
		return min(d, s.commitPoint.Load())
	}
	return d
}

// logSource is the commit log as the dispatcher reads it: up to the
// visible end.
type logSource struct{ s *Store }

func (l logSource) ReadAt(p []byte, off int64) error { return l.s.clog.ReadAt(p, off) }
func (l logSource) Durable() int64                   { return l.s.visibleEnd() }
func (l logSource) Flushed() int64                   { return l.s.clog.Flushed() }
func (l logSource) SegmentStart(off int64) int64     { return l.s.clog.SegmentStart(off) }
func (l logSource) MinOffset() int64                 { return l.s.clog.MinOffset() }

// nextQueueOffset is the queue offset the commit-log writer gives the next
// record of a queue it has not written since Open: past the queue's
// entries, and past the records above the commit point its queue does not
// hold yet.
func (s *Store) nextQueueOffset(topic string, qid int32) int64 {
	n := s.queues.maxOffset(topic, qid)
	if v, ok := s.undispatchedNext[queueKey{topic, qid}]; ok && v > n {
		return v
	}
	return n
}

// followUndispatched reads the records of the log from from (where
// dispatching stopped at the commit point) to its durable end, and notes
// each queue's offset after them (nextQueueOffset).
func (s *Store) followUndispatched(from int64) error {
	if from >= s.clog.Durable() {
		return nil
	}
	next := make(map[queueKey]int64)
	d := dispatch.New(s.clog, []dispatch.Sink{nextSink(next)}, from, dispatch.Options{
		SegmentBytes:   s.cfg.SegmentBytes,
		MaxRecordBytes: s.cfg.MaxMessageBytes,
		Clock:          s.cfg.Clock,
		Logger:         s.cfg.Logger,
	})
	if err := d.Replay(); err != nil {
		return fmt.Errorf("store: read the records above the commit point: %w", err)
	}
	s.undispatchedNext = next
	return nil
}

// nextSink notes the queue offset after each record.
type nextSink map[queueKey]int64

func (n nextSink) Dispatch(r message.Record) error {
	k := queueKey{string(r.Topic()), r.QueueID()}
	n[k] = max(n[k], r.QueueOffset()+1)
	return nil
}

func (n nextSink) Flush() error { return nil }
