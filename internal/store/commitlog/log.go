package commitlog

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// FlushMode says when an append is answered.
type FlushMode int

const (
	// FlushSync answers an append once its record is on disk (fsync).
	FlushSync FlushMode = iota
	// FlushAsync answers once the record is written to the OS; a flusher
	// syncs every FlushInterval.
	FlushAsync
)

func (m FlushMode) String() string {
	if m == FlushAsync {
		return "async"
	}
	return "sync"
}

// ParseFlushMode parses "sync" or "async".
func ParseFlushMode(s string) (FlushMode, error) {
	switch s {
	case "sync":
		return FlushSync, nil
	case "async":
		return FlushAsync, nil
	}
	return 0, fmt.Errorf("flush mode %q: want sync or async", s)
}

// Errors returned by the log.
var (
	// ErrTooLarge: a record is over MaxRecordBytes. Nothing was written.
	ErrTooLarge = errors.New("commitlog: record too large")
	// ErrClosed: the log is closed.
	ErrClosed = errors.New("commitlog: closed")
	// ErrFailed: an fsync failed earlier, so what is on disk is unknown; the
	// log refuses writes until it is reopened (which recovers it).
	ErrFailed = errors.New("commitlog: a disk sync failed; restart to recover")
	// ErrFlushTimeout: the record was written but not yet known durable when
	// SyncFlushTimeout passed. It may still become durable.
	ErrFlushTimeout = errors.New("commitlog: flush timed out")
	// ErrBadOffset: a read names bytes outside the written log.
	ErrBadOffset = errors.New("commitlog: offset out of range")
	// ErrBusy: under FlushSync, appends have been waiting for the disk for
	// over BusyAfter; new appends are refused until the disk catches up
	// (RocketMQ's SYSTEM_BUSY, which producers retry elsewhere).
	ErrBusy = errors.New("commitlog: busy")
)

// Options configure a Log. Zero fields take the defaults given.
type Options struct {
	// SegmentBytes is the size of each segment file. Default 1 GiB.
	SegmentBytes int64
	// MaxRecordBytes bounds one encoded record. Default 4 MiB; at most
	// SegmentBytes-8.
	MaxRecordBytes int
	// FlushMode, default FlushSync.
	FlushMode FlushMode
	// FlushInterval is the sync period under FlushAsync. Default 500 ms.
	FlushInterval time.Duration
	// SyncFlushTimeout: under FlushSync, an append not durable after this
	// long is answered with ErrFlushTimeout. Default 5 s.
	SyncFlushTimeout time.Duration
	// BusyAfter: under FlushSync, while an append has been waiting for its
	// sync this long, new appends fail with ErrBusy at once instead of
	// queueing behind a stalled disk. Checked every SyncFlushTimeout/4.
	// Default 1 s.
	BusyAfter time.Duration
	// MaxBatchBytes bounds one group write. Default 4 MiB (and at least
	// MaxRecordBytes).
	MaxBatchBytes int
	// QueueDepth bounds appends waiting for the writer. Default 4096.
	QueueDepth int
	// RecoverFrom is a record boundary known to be durable (from a
	// checkpoint) where the recovery scan starts; -1 scans every segment.
	RecoverFrom int64
	// NextQueueOffset tells the writer the next queue offset of a queue it
	// has not seen since Open (normally the consume queue's max offset).
	// Default: every queue starts at 0.
	NextQueueOffset func(topic string, queueID int32) int64
	// PageCacheBytes, when positive, is how much of the log behind the
	// durable end is left in the OS page cache: older pages are freed once
	// they are on disk (see cache.go). 0 leaves every page to the OS.
	PageCacheBytes int64
	// OnDurable is called with the new durable offset each time it grows,
	// from the writer or flusher goroutine (under FlushAsync also from the
	// goroutine of an Appender), one call at a time. It must not block.
	OnDurable func(durable int64)
	// OnGroupCommit, when set, is called once per group commit (never per
	// message) from the writer or flusher goroutine (under FlushAsync also
	// from the goroutine of an Appender); it must not block.
	// See GroupCommit. Metrics hang their histograms here.
	OnGroupCommit func(GroupCommit)
	Clock         clock.Clock
	Logger        *slog.Logger
}

func (o *Options) setDefaults() error {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = 1 << 30
	}
	if o.MaxRecordBytes == 0 {
		o.MaxRecordBytes = 4 << 20
	}
	if o.SegmentBytes < message.MinRecordLen+8 {
		return fmt.Errorf("commitlog: SegmentBytes %d is below the minimum %d", o.SegmentBytes, message.MinRecordLen+8)
	}
	if int64(o.MaxRecordBytes) > o.SegmentBytes-8 {
		o.MaxRecordBytes = int(o.SegmentBytes - 8)
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 500 * time.Millisecond
	}
	if o.SyncFlushTimeout == 0 {
		o.SyncFlushTimeout = 5 * time.Second
	}
	if o.BusyAfter == 0 {
		o.BusyAfter = time.Second
	}
	if o.MaxBatchBytes < o.MaxRecordBytes {
		o.MaxBatchBytes = max(4<<20, o.MaxRecordBytes)
	}
	if o.QueueDepth == 0 {
		o.QueueDepth = 4096
	}
	if o.NextQueueOffset == nil {
		o.NextQueueOffset = func(string, int32) int64 { return 0 }
	}
	if o.OnDurable == nil {
		o.OnDurable = func(int64) {}
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// GroupCommit describes one group commit for Options.OnGroupCommit.
// Under FlushSync it is one fsync that answered Messages appends' messages
// (Synced set, Sync its duration). Under FlushAsync appends are answered
// once written: each group write reports its Messages with Synced unset,
// and each periodic fsync reports Synced and Sync with Messages 0.
type GroupCommit struct {
	Messages int
	Synced   bool
	Sync     time.Duration
}

// Result describes a finished append.
type Result struct {
	// Offset is the commit-log offset of the first record; the messages
	// themselves carry their offsets after the append.
	Offset int64
	// End is the offset just past the last record.
	End int64
}

// Log is an open commit log. All methods are safe for concurrent use.
type Log struct {
	fs   vfs.FS
	dir  string
	opts Options
	log  *slog.Logger

	segMu    sync.RWMutex
	segments []*segment // sorted by start

	written atomic.Int64 // end of the bytes handed to the OS
	flushed atomic.Int64 // end of the bytes known durable
	// whole is the end of the last whole record below written: written
	// itself, except after a raw append that ended inside a record
	// (raw.go). Durable and Flushed never pass it.
	whole atomic.Int64
	// wsig wakes WaitWritten (raw.go).
	wsig   writtenSignal
	failed atomic.Bool
	busy   atomic.Bool // a waiter is older than BusyAfter (sweeper)

	appendc    chan []*request // the requests of one submission
	syncc      chan syncJob    // writer -> flusher, FlushSync only
	kick       chan struct{}
	quit       chan struct{}
	writerDone chan struct{}
	wg         sync.WaitGroup

	closeOnce sync.Once
	stopping  atomic.Bool
	closeMu   sync.RWMutex // held for reading while submitting and flushing; Close takes it to stop both
	closed    bool

	// flushIdle holds a token while the flusher waits for work (FlushSync).
	flushIdle chan struct{}
	// In-place zero-filling of segments ahead of the writer (FlushSync),
	// fill.go.
	fill     filler
	fillKick chan struct{}
	// dropKick wakes the page-cache dropper (PageCacheBytes), cache.go.
	dropKick chan struct{}

	// submissions counts the request lists handed to the writer or
	// written by an Appender (Submissions).
	submissions atomic.Int64

	// wmu is held while a batch is written: by the writer goroutine, or
	// under FlushAsync by an Appender writing on its caller's goroutine.
	wmu sync.Mutex
	// Writer-owned state (guarded by wmu).
	queueOffsets map[queueKey]int64
	buf          []byte
	raw          rawState    // a replicated tail cut inside a record (raw.go)
	replica      atomic.Bool // local appends refused (SetReplica)
	rawDone      []rawRecordDone
	tail         *segment
	undo         []undoEntry
	// spare holds the prepared segments after the tail, in order
	// (prepare.go).
	spare []*segment

	// noSpace, when set, is the error appends are refused with because the
	// next segment could not be prepared; spaceRetryAt (Unix ns) is when an
	// append may try again (prepare.go).
	noSpace      atomic.Pointer[error]
	spaceRetryAt atomic.Int64
	probe        atomic.Bool // an append was admitted to retry (admitSpace)

	// Segments whose records' queue offsets recovery rewrote, to sync.
	rewriteMu sync.Mutex
	rewritten map[*segment]struct{}

	// Flush-timeout sweeping of waiters (FlushSync).
	waitMu  sync.Mutex
	waiting map[*request]struct{}
	sweeper clock.Timer
}

type queueKey struct {
	topic   string
	queueID int32
}

type undoEntry struct {
	key  queueKey
	prev int64
	had  bool
}

type segment struct {
	start int64
	f     vfs.File
	refs  atomic.Int32 // 1 while listed, +1 per reader
	name  string
}

func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.f.Close()
	}
}

// request is one append. Requests of single synchronous appends are pooled.
type request struct {
	msgs []*message.Message
	one  [1]*message.Message
	// raw, when set, makes the request a raw append of these bytes at
	// rawOff (AppendRaw) instead of msgs.
	raw    []byte
	rawOff int64
	self   [1]*request // self[0] is the request: a submission of it alone
	size   int
	done   chan struct{}
	cb     func(Result, error)
	// many and idx: AppendMany's callback and the group's index in it.
	many   func(int, Result, error)
	idx    int
	res    Result
	err    error
	since  time.Time
	answer atomic.Bool // set by whoever answers first (completion or timeout)
}

// reqSlicePool recycles the request lists the writer hands the flusher.
var reqSlicePool = sync.Pool{New: func() any { s := make([]*request, 0, 64); return &s }}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

type syncJob struct {
	end     int64
	reqs    []*request
	reqsBuf *[]*request // reqs' pooled backing, returned by the flusher
	segs    []*segment  // segments to sync before tail (rolled-over ones)
	tail    *segment
}

// SegmentName returns the file name of the segment that starts at offset.
func SegmentName(start int64) string { return fmt.Sprintf("%020d", start) }

// Open opens (creating if needed) the log in dir and recovers its tail.
func Open(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	l := &Log{
		fs:           fsys,
		dir:          dir,
		opts:         opts,
		log:          opts.Logger.With("component", "commitlog"),
		appendc:      make(chan []*request, opts.QueueDepth),
		kick:         make(chan struct{}, 1),
		quit:         make(chan struct{}),
		writerDone:   make(chan struct{}),
		queueOffsets: make(map[queueKey]int64),
		waiting:      make(map[*request]struct{}),
	}
	if opts.FlushMode == FlushSync {
		l.syncc = make(chan syncJob, 64)
		l.flushIdle = make(chan struct{}, 1)
		l.flushIdle <- struct{}{}
		l.fillKick = make(chan struct{}, 1)
	}
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, fmt.Errorf("commitlog: create dir %s: %w", dir, err)
	}
	if err := l.loadSegments(); err != nil {
		l.closeSegments()
		return nil, err
	}
	end, err := l.recover()
	if err != nil {
		l.closeSegments()
		return nil, err
	}
	l.written.Store(end)
	l.flushed.Store(end)
	l.whole.Store(end)
	if n := len(l.segments); n > 0 && l.segments[n-1].start <= end && end < l.segments[n-1].start+opts.SegmentBytes {
		l.tail = l.segments[n-1]
	}
	l.wg.Add(2)
	go l.writer()
	go l.flusher()
	if l.fillKick != nil {
		l.wg.Add(1)
		l.fill.writing.Store(end)
		go l.fillLoop()
		if l.tail != nil {
			// How far the tail was filled before a restart is not known.
			l.fillInPlace(l.tail)
		}
	}
	if opts.PageCacheBytes > 0 {
		l.dropKick = make(chan struct{}, 1)
		l.wg.Add(1)
		go l.dropper(max(l.MinOffset(), end-opts.PageCacheBytes))
	}
	if opts.FlushMode == FlushSync {
		l.armSweeper()
	}
	return l, nil
}

func (l *Log) loadSegments() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("commitlog: list %s: %w", l.dir, err)
	}
	removeLeftovers(l.fs, l.dir, names)
	for _, name := range names {
		if len(name) != 20 {
			continue
		}
		start, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		if start%l.opts.SegmentBytes != 0 {
			return fmt.Errorf("commitlog: segment %s does not start at a multiple of the segment size %d; was the log written with another SegmentBytes?", name, l.opts.SegmentBytes)
		}
		if n := len(l.segments); n > 0 && l.segments[n-1].start+l.opts.SegmentBytes != start {
			// A hole: everything after it cannot be trusted to follow on.
			l.log.Warn("segment sequence has a gap; ignoring later segments", "after", l.segments[n-1].name, "segment", name)
			break
		}
		f, err := l.fs.Open(path.Join(l.dir, name))
		if err != nil {
			return fmt.Errorf("commitlog: open segment %s: %w", name, err)
		}
		s := &segment{start: start, f: f, name: name}
		s.refs.Store(1)
		l.segments = append(l.segments, s)
	}
	return nil
}

func (l *Log) closeSegments() {
	for _, s := range l.segments {
		s.release()
	}
	l.segments = nil
}

// Options returns the options in force (defaults applied).
func (l *Log) Options() Options { return l.opts }

// Written returns the end of the bytes written to the OS.
func (l *Log) Written() int64 { return l.written.Load() }

// Flushed returns the end of the whole records known durable (a raw
// append may have made durable part of a record after it).
func (l *Log) Flushed() int64 { return min(l.flushed.Load(), l.whole.Load()) }

// Durable returns the offset below which records may be served: Flushed
// under FlushSync, Written under FlushAsync — both only up to the end of
// the last whole record.
func (l *Log) Durable() int64 {
	w := l.whole.Load()
	if l.opts.FlushMode == FlushAsync {
		return min(l.written.Load(), w)
	}
	return min(l.flushed.Load(), w)
}

// MinOffset returns the start of the oldest segment (the end of the log when
// there is none).
func (l *Log) MinOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if len(l.segments) == 0 {
		return l.written.Load()
	}
	return l.segments[0].start
}

// SegmentStart returns the start of the segment that holds offset.
func (l *Log) SegmentStart(off int64) int64 { return off - off%l.opts.SegmentBytes }

// Append appends one message and waits until it is durable under the flush
// mode. On success the message's QueueOffset, PhysicalOffset and
// StoreTimestamp are set. The message must not be modified until Append
// returns. Steady-state Append does not allocate.
func (l *Log) Append(m *message.Message) (Result, error) {
	r := requestPool.Get().(*request)
	r.one[0] = m
	r.msgs = r.one[:]
	res, err := l.wait(r)
	r.one[0] = nil
	r.msgs = nil
	if !errors.Is(err, ErrFlushTimeout) {
		// After a timeout the writer may still hold r; let it go.
		requestPool.Put(r)
	}
	return res, err
}

// AppendBatch appends several messages as consecutive records and waits as
// Append does. Each message gets its own queue offset and log offset.
func (l *Log) AppendBatch(msgs []*message.Message) (Result, error) {
	r := &request{msgs: msgs, done: make(chan struct{}, 1)}
	return l.wait(r)
}

// AppendAsync appends msgs and calls cb once they are durable under the
// flush mode, or with the error. cb runs on a log goroutine and must not
// block. The messages must not be modified until cb runs.
func (l *Log) AppendAsync(msgs []*message.Message, cb func(Result, error)) {
	r := &request{msgs: msgs, cb: cb}
	if err := l.submit(r); err != nil {
		cb(Result{}, err)
	}
}

func (l *Log) wait(r *request) (Result, error) {
	r.cb = nil
	r.res, r.err = Result{}, nil
	r.answer.Store(false)
	if err := l.submit(r); err != nil {
		return Result{}, err
	}
	<-r.done
	return r.res, r.err
}

func (l *Log) submit(r *request) error {
	if err := l.check(r); err != nil {
		return err
	}
	r.self[0] = r
	return l.submitList(r.self[:])
}

// submitList hands reqs, checked, to the writer as one submission: the
// writer takes them into one group.
func (l *Log) submitList(reqs []*request) error {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	l.submissions.Add(1)
	l.appendc <- reqs
	return nil
}

// AppendMany appends each of groups as an append of its own (its messages
// consecutive records, answered together) and hands them all to the writer
// as one submission, so that they are written as one group: one write and,
// under FlushSync, one fsync (the writer splits a submission only where it
// exceeds MaxBatchBytes, between groups). done(i, res, err) is called once
// per group i: when it is durable under the flush mode, from a log
// goroutine, or with the error that refused it, possibly from AppendMany
// itself. A group refused at admission (too large, invalid) fails alone.
// done must not block; the messages must not be modified until their done
// runs.
func (l *Log) AppendMany(groups [][]*message.Message, done func(i int, res Result, err error)) {
	_, list := l.admitMany(nil, nil, groups, done)
	if len(list) == 0 {
		return
	}
	if err := l.submitList(list); err != nil {
		failAll(list, err)
	}
}

// admitMany makes the requests of AppendMany in reqs and list (reused when
// large enough) and returns them, list holding those that pass check; the
// others are answered.
func (l *Log) admitMany(reqs []request, list []*request, groups [][]*message.Message, done func(int, Result, error)) ([]request, []*request) {
	if cap(reqs) < len(groups) {
		reqs = make([]request, len(groups))
	}
	reqs = reqs[:len(groups)]
	list = list[:0]
	for i, g := range groups {
		r := &reqs[i]
		*r = request{msgs: g, idx: i, many: done}
		if err := l.check(r); err != nil {
			done(i, Result{}, err)
			continue
		}
		list = append(list, r)
	}
	return reqs, list
}

// failAll answers every request of reqs with err.
func failAll(reqs []*request, err error) {
	for _, r := range reqs {
		if r.many != nil {
			r.many(r.idx, Result{}, err)
		} else {
			r.cb(Result{}, err)
		}
	}
}

// Submissions is the number of request lists handed to the writer (one per
// Append, AppendBatch, AppendAsync or AppendMany call that was admitted)
// or written by an Appender. For tests and diagnostics: a batch of sends
// that became one submission was written as one group.
func (l *Log) Submissions() int64 { return l.submissions.Load() }

// check validates r, computes its size and checksums, and refuses it when
// the log has failed or is busy.
func (l *Log) check(r *request) error {
	size := 0
	for _, m := range r.msgs {
		if err := m.Validate(); err != nil {
			return err
		}
		if m.BodyCRC == 0 && len(m.Body) > 0 {
			// Checksum on the appender's goroutine, not the single writer's.
			m.BodyCRC = message.BodyChecksum(m.Body)
		}
		n := m.EncodedLen()
		if n > l.opts.MaxRecordBytes {
			return fmt.Errorf("%w: the record is %d bytes and the limit is %d bytes (MaxRecordBytes); send a smaller message or raise the limit", ErrTooLarge, n, l.opts.MaxRecordBytes)
		}
		size += n
	}
	if len(r.msgs) == 0 {
		return errors.New("commitlog: append of no messages")
	}
	if l.failed.Load() {
		return ErrFailed
	}
	if l.replica.Load() {
		return ErrReplica
	}
	if l.busy.Load() {
		return fmt.Errorf("%w: appends have waited over %v for the disk to sync; retry later or on another broker", ErrBusy, l.opts.BusyAfter)
	}
	if l.noSpace.Load() != nil {
		if err := l.admitSpace(); err != nil {
			return err
		}
	}
	r.size = size
	return nil
}

// finish answers a request once.
func (l *Log) finish(r *request, res Result, err error) {
	if !r.answer.CompareAndSwap(false, true) {
		return
	}
	r.res, r.err = res, err
	if r.many != nil {
		r.many(r.idx, res, err)
		return
	}
	if r.cb != nil {
		r.cb(res, err)
		return
	}
	r.done <- struct{}{}
}

// writer is the one goroutine that writes the tail.
func (l *Log) writer() {
	defer l.wg.Done()
	defer close(l.writerDone)
	defer func() {
		if l.syncc != nil {
			close(l.syncc)
		}
	}()
	var batch []*request
	token := false // the flusher's idle token is held
	for {
		var first []*request
		select {
		case first = <-l.appendc:
		case <-l.quit:
			// Drain what was submitted before Close stopped submissions.
			for {
				select {
				case rs := <-l.appendc:
					l.wmu.Lock()
					l.writeGroups(rs)
					l.wmu.Unlock()
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first...)
		bytes := listBytes(first)
		// Under FlushSync there is no point writing while an fsync runs:
		// the bytes would wait for the next one anyway. Keep gathering
		// until the flusher is idle (or the batch is full), so one write
		// and one fsync serve everything that arrived meanwhile.
		if l.flushIdle == nil {
		drain:
			for bytes < l.opts.MaxBatchBytes {
				select {
				case rs := <-l.appendc:
					batch = append(batch, rs...)
					bytes += listBytes(rs)
				default:
					break drain
				}
			}
		} else {
			token = false
		gather:
			for bytes < l.opts.MaxBatchBytes {
				select {
				case rs := <-l.appendc:
					batch = append(batch, rs...)
					bytes += listBytes(rs)
				case <-l.flushIdle:
					token = true
					// Appenders the last sync answered are about to
					// submit again: let them, so this write covers them
					// (BenchmarkGroupCommit/yields=0 shows what it buys).
					for range gatherYields {
						runtime.Gosched()
						n := len(l.appendc)
						if n == 0 {
							break
						}
						for range n {
							rs := <-l.appendc
							batch = append(batch, rs...)
							bytes += listBytes(rs)
						}
					}
					break gather
				case <-l.quit:
					break gather
				}
			}
		}
		l.wmu.Lock()
		synced := l.writeGroups(batch)
		l.wmu.Unlock()
		if !synced && token {
			// No sync job went to the flusher, so it stays idle.
			l.flushIdle <- struct{}{}
		}
		clear(batch)
	}
}

// gatherYields is how many times the writer under FlushSync yields, once
// the flusher is idle, to let the appenders the last sync answered submit
// again before it writes. A variable for BenchmarkGroupCommit.
var gatherYields = 16

func listBytes(reqs []*request) int {
	n := 0
	for _, r := range reqs {
		n += r.size
	}
	return n
}

// writeGroups writes batch in groups of up to MaxBatchBytes (a request
// larger than that alone), and reports whether it handed the flusher a
// sync job. The caller holds wmu.
func (l *Log) writeGroups(batch []*request) (synced bool) {
	for len(batch) > 0 {
		if batch[0].raw != nil {
			if l.writeRaw(batch[0]) {
				synced = true
			}
			batch = batch[1:]
			continue
		}
		n, bytes := 0, 0
		for n < len(batch) && batch[n].raw == nil && (n == 0 || bytes+batch[n].size <= l.opts.MaxBatchBytes) {
			bytes += batch[n].size
			n++
		}
		if l.writeBatch(batch[:n]) {
			synced = true
		}
		batch = batch[n:]
	}
	return synced
}

// writeBatch places, encodes and writes one group of requests. It reports
// whether it handed a sync job to the flusher. A request is either written
// whole and answered once durable under the flush mode, or refused with
// nothing of it left in the log: every segment the batch rolls into is
// prepared first (reserveSegments), the written offset moves only once the
// whole batch is written, and a failed write is undone (unwrite).
func (l *Log) writeBatch(batch []*request) (synced bool) {
	if l.failed.Load() {
		for _, r := range batch {
			l.finish(r, Result{}, ErrFailed)
		}
		return
	}
	if l.replica.Load() {
		for _, r := range batch {
			l.finish(r, Result{}, ErrReplica)
		}
		return
	}
	if l.whole.Load() != l.written.Load() {
		err := fmt.Errorf("%w at %d; its master must send the rest first", ErrPartialTail, l.whole.Load())
		for _, r := range batch {
			l.finish(r, Result{}, err)
		}
		return
	}
	if l.probe.Load() {
		l.retryForProbe()
	}
	start := l.written.Load()
	if k, err := l.reserveSegments(batch, start); err != nil {
		for _, r := range batch[k:] {
			l.finish(r, Result{}, err)
		}
		if batch = batch[:k]; k == 0 {
			return
		}
	}
	now := l.opts.Clock.Now().UnixMilli()
	pos := start
	bufStart := pos
	l.buf = l.buf[:0]
	l.undo = l.undo[:0]
	tail := l.tail
	var rolled []*segment
	// fail refuses the batch after its bytes before end were written.
	fail := func(err error, end int64) {
		// Newest first, so that a queue ends at its offset before the batch.
		for i := len(l.undo) - 1; i >= 0; i-- {
			u := l.undo[i]
			if u.had {
				l.queueOffsets[u.key] = u.prev
			} else {
				delete(l.queueOffsets, u.key)
			}
		}
		l.buf = l.buf[:0]
		l.unwrite(start, end, tail)
		for _, r := range batch {
			l.finish(r, Result{}, err)
		}
	}
	for _, r := range batch {
		first := int64(-1)
		for _, m := range r.msgs {
			n := m.EncodedLen()
			segEnd := l.SegmentStart(pos) + l.opts.SegmentBytes
			if pos+int64(n)+8 > segEnd {
				// Fill the segment with a blank record and roll over.
				blank := int(segEnd - pos)
				l.buf = grow(l.buf, blank)
				message.EncodeBlank(l.buf[len(l.buf)-blank:], blank)
				pos = segEnd
				if n, err := l.flushBuf(bufStart); err != nil {
					fail(err, bufStart+int64(n))
					return
				}
				rolled = append(rolled, l.tail)
				l.tail = nil
				bufStart = pos
			}
			if l.tail == nil {
				if err := l.activate(pos); err != nil {
					fail(err, bufStart)
					return
				}
			}
			key := queueKey{m.Topic, m.QueueID}
			q, ok := l.queueOffsets[key]
			if !ok {
				q = l.opts.NextQueueOffset(m.Topic, m.QueueID)
			}
			l.undo = append(l.undo, undoEntry{key: key, prev: q, had: ok})
			l.queueOffsets[key] = q + 1
			m.QueueOffset = q
			m.PhysicalOffset = pos
			m.StoreTimestamp = now
			l.buf = grow(l.buf, n)
			m.EncodeTo(l.buf[len(l.buf)-n:])
			if first < 0 {
				first = pos
			}
			pos += int64(n)
		}
		r.res = Result{Offset: first, End: pos}
	}
	if n, err := l.flushBuf(bufStart); err != nil {
		fail(err, bufStart+int64(n))
		return
	}
	if l.opts.FlushMode == FlushAsync && len(rolled) > 0 {
		// Before the new end is published: the flusher syncs only the
		// segment the end lies in.
		l.syncSegments(rolled)
	}
	l.written.Store(pos)
	l.whole.Store(pos)
	l.grew()
	l.kickFill()
	if l.opts.FlushMode == FlushAsync {
		if f := l.opts.OnGroupCommit; f != nil {
			f(GroupCommit{Messages: countMessages(batch)})
		}
		for _, r := range batch {
			l.finish(r, r.res, nil)
		}
		l.opts.OnDurable(pos)
		l.prepareAhead(pos)
		return
	}
	// The writer reuses batch at once; the flusher gets its own copy, from a
	// pool it returns the copy to.
	buf := reqSlicePool.Get().(*[]*request)
	reqs := append((*buf)[:0], batch...)
	now2 := l.opts.Clock.Now()
	l.waitMu.Lock()
	for _, r := range reqs {
		r.since = now2
		l.waiting[r] = struct{}{}
	}
	l.waitMu.Unlock()
	l.syncc <- syncJob{end: pos, reqs: reqs, reqsBuf: buf, segs: rolled, tail: l.tail}
	// Prepared while the flusher syncs.
	l.prepareAhead(pos)
	return true
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// pageSize is the page size flushBuf rounds writes up to.
const pageSize = 4096

// flushBuf writes l.buf, which starts at log offset at, into the tail. On
// failure it returns how many bytes it wrote.
func (l *Log) flushBuf(at int64) (int, error) {
	if len(l.buf) == 0 {
		return 0, nil
	}
	s := l.tail
	if s == nil {
		return 0, fmt.Errorf("commitlog: no segment for offset %d", at)
	}
	// Write whole pages: the bytes after the records are zeros on disk
	// already, and a write that ends mid-page into a block that is written
	// on disk (zero-filled ahead) makes the kernel read that block first.
	n := len(l.buf)
	end := at - s.start + int64(n)
	pad := int((pageSize - end%pageSize) % pageSize)
	pad = int(min(int64(pad), l.opts.SegmentBytes-end))
	l.buf = grow(l.buf, pad)
	clear(l.buf[n:])
	l.waitFill(at, at+int64(len(l.buf)))
	if n, err := s.f.WriteAt(l.buf, at-s.start); err != nil {
		// The caller undoes the write (unwrite), so that no part of it is
		// left for a later scan.
		l.buf = l.buf[:0]
		return n, fmt.Errorf("commitlog: write segment %s: %w", s.name, err)
	}
	l.buf = l.buf[:0]
	return 0, nil
}

// flusher makes written bytes durable: under FlushSync it serves the
// writer's sync jobs, coalescing those that queue up behind a running
// fsync; under FlushAsync it syncs every FlushInterval.
func (l *Log) flusher() {
	defer l.wg.Done()
	if l.opts.FlushMode == FlushAsync {
		t := l.opts.Clock.AfterFunc(l.opts.FlushInterval, l.tick)
		for {
			select {
			case <-l.kick:
				end := l.written.Load()
				l.syncTo(end, nil, l.segmentBefore(end))
				t = l.opts.Clock.AfterFunc(l.opts.FlushInterval, l.tick)
			case <-l.writerDone:
				t.Stop()
				end := l.written.Load()
				l.syncTo(end, nil, l.segmentBefore(end))
				return
			}
		}
	}
	var jobs []syncJob
	var segs []*segment
	var reqs []*request
	for job := range l.syncc {
		jobs = append(jobs[:0], job)
	more:
		for {
			select {
			case j, ok := <-l.syncc:
				if !ok {
					break more
				}
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		segs = segs[:0]
		reqs = reqs[:0]
		end := int64(0)
		var tail *segment
		for _, j := range jobs {
			segs = append(segs, j.segs...)
			reqs = append(reqs, j.reqs...)
			if j.reqsBuf != nil {
				clear(j.reqs)
				*j.reqsBuf = j.reqs[:0]
				reqSlicePool.Put(j.reqsBuf)
			}
			if j.tail != nil {
				tail = j.tail
			}
			end = max(end, j.end)
		}
		l.syncSegments(segs)
		l.syncTo(end, reqs, tail)
		clear(reqs)
		if len(l.syncc) == 0 {
			wake(l.flushIdle)
		}
	}
}
