package pop

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// Errors. The handle errors are what an acknowledgement or a change of
// invisible time gets for a handle it cannot use.
var (
	// ErrInvalidHandle: the text is not a receipt handle (wrong length,
	// alphabet, version or checksum).
	ErrInvalidHandle = errors.New("pop: invalid receipt handle")
	// ErrOtherGroup, ErrOtherTopic: the handle was issued to another
	// consumer group or for another topic.
	ErrOtherGroup = errors.New("pop: receipt handle of another consumer group")
	ErrOtherTopic = errors.New("pop: receipt handle of another topic")
	// ErrNotDelivered: the handle names a message the group never received.
	ErrNotDelivered = errors.New("pop: receipt handle names a message not delivered to the group")
	// ErrAcked: the message was acknowledged (or moved to the dead-letter
	// queue) already.
	ErrAcked = errors.New("pop: message already acknowledged")
	// ErrSuperseded: a change of invisible time replaced the handle by a
	// newer one.
	ErrSuperseded = errors.New("pop: receipt handle replaced by a newer one")
	// ErrExpired: the delivery's invisible time has passed; the message is
	// visible again or was delivered again.
	ErrExpired = errors.New("pop: receipt handle expired")
	// ErrConflict: a Claim does not match the state (another claim moved
	// the cursor or took an entry); peek again.
	ErrConflict = errors.New("pop: claim conflicts with the current state")
	// ErrWriteFailed: writing or syncing the log or a snapshot failed
	// once; the store refuses every later change (and Sync of changes not
	// yet durable) until it is opened again. Wrapped with the cause.
	ErrWriteFailed = errors.New("pop: writing the state failed; changes are refused until a restart")
	// ErrCorrupt: the snapshot does not parse.
	ErrCorrupt = errors.New("pop: state files corrupt")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("pop: store closed")
)

// Options tune a Store.
type Options struct {
	// CompactBytes: once the log holds this many bytes and more than twice
	// the last snapshot, the next sync writes a snapshot and starts a new
	// log. Default 8 MiB.
	CompactBytes int64
	// Logger receives lifecycle messages. Default: discard.
	Logger *slog.Logger
}

// Ticket names a logged change; Sync(t) waits until it is durable. The
// zero Ticket needs no wait.
type Ticket uint64

// Store is the pop state of a broker. All methods are safe for concurrent
// use. See the package doc.
type Store struct {
	fsys vfs.FS
	dir  string
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a sync ends
	queues  map[Key]*queue
	byTopic map[[2]string][]*queue // (group, topic) → its queues
	groups  map[string]int         // in-flight entries per group
	nextGen uint64

	// Replication (mirror.go): with mirror on, every change is also
	// queued in outbox as an op until TakeOps hands it out; takeMu keeps
	// TakeOps callers in log order.
	mirror bool
	outbox [][]byte
	takeMu sync.Mutex

	// The log. buf holds framed records appended after those in the file;
	// records up to appended were made, those up to synced are durable.
	buf      []byte
	spare    []byte
	appended uint64
	synced   uint64
	syncing  bool
	failed   error
	closed   bool
	file     vfs.File
	logGen   uint64
	logSize  int64
	snapSize int64
}

const (
	snapshotName = "snapshot"
	logPrefix    = "log-"
)

func logName(gen uint64) string { return fmt.Sprintf("%s%020d", logPrefix, gen) }

// Open loads the state in dir (created if missing): the snapshot, then the
// log it names, whose torn tail, if any, is cut.
func Open(fsys vfs.FS, dir string, opts Options) (*Store, error) {
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = 8 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{fsys: fsys, dir: dir, opts: opts, log: opts.Logger.With("component", "pop"),
		queues: make(map[Key]*queue), byTopic: make(map[[2]string][]*queue), groups: make(map[string]int), nextGen: 1, logGen: 1}
	s.cond = sync.NewCond(&s.mu)
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, fmt.Errorf("pop: create %s: %w", dir, err)
	}
	data, ok, err := vfs.ReadFile(fsys, path.Join(dir, snapshotName))
	if err != nil {
		return nil, fmt.Errorf("pop: read snapshot: %w", err)
	}
	if ok {
		snap, err := decodeSnapshot(data)
		if err != nil {
			return nil, err
		}
		s.logGen, s.nextGen, s.snapSize = snap.logGen, snap.nextGen, int64(len(data))
		for _, q := range snap.queues {
			s.addQueue(q)
			s.groups[q.key.Group] += len(q.inflight)
		}
	}
	if err := s.openLog(); err != nil {
		return nil, err
	}
	s.log.Info("pop state loaded", "queues", len(s.queues), "log_bytes", s.logSize)
	return s, nil
}

// openLog replays the current log and removes leftovers.
func (s *Store) openLog() error {
	names, err := s.fsys.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("pop: list %s: %w", s.dir, err)
	}
	cur := logName(s.logGen)
	removed := false
	for _, n := range names {
		if n == cur || n == snapshotName {
			continue
		}
		if strings.HasSuffix(n, vfs.TmpSuffix) || isLogName(n) {
			if err := s.fsys.Remove(path.Join(s.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("pop: remove leftover %s: %w", n, err)
			}
			removed = true
		}
	}
	p := path.Join(s.dir, cur)
	data, ok, err := vfs.ReadFile(s.fsys, p)
	if err != nil {
		return fmt.Errorf("pop: read log: %w", err)
	}
	var f vfs.File
	if ok {
		f, err = s.fsys.Open(p)
	} else {
		f, err = s.fsys.Create(p)
		removed = true // the new entry must be made durable
	}
	if err != nil {
		return fmt.Errorf("pop: open %s: %w", p, err)
	}
	off := 0
	for off < len(data) {
		c, n := readFrame(data[off:])
		if n == 0 {
			break
		}
		s.apply(&c)
		off += n
	}
	if off < len(data) {
		s.log.Warn("cutting a torn tail of the pop log", "file", cur, "at", off, "dropped_bytes", len(data)-off)
		if err := f.Truncate(int64(off)); err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("pop: cut %s to %d bytes: %w", p, off, err)
		}
	}
	if removed {
		if err := s.fsys.SyncDir(s.dir); err != nil {
			f.Close()
			return fmt.Errorf("pop: sync %s: %w", s.dir, err)
		}
	}
	s.file, s.logSize = f, int64(off)
	return nil
}

func isLogName(n string) bool {
	v, ok := strings.CutPrefix(n, logPrefix)
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(v, 10, 64)
	return err == nil
}

func (s *Store) addQueue(q *queue) {
	s.queues[q.key] = q
	gt := [2]string{q.key.Group, q.key.Topic}
	s.byTopic[gt] = append(s.byTopic[gt], q)
	for _, e := range q.inflight {
		s.nextGen = max(s.nextGen, e.Gen+1)
	}
}

// apply changes the in-memory state; s.mu is held (or Open runs).
func (s *Store) apply(c *change) {
	q := s.queues[c.key]
	if c.cursor == cursorForget {
		if q != nil {
			s.dropQueue(q)
		}
		return
	}
	if q == nil {
		q = newQueue(c.key, max(c.cursor, 0))
		s.addQueue(q)
	}
	if c.cursor >= 0 {
		q.cursor = c.cursor
	}
	for _, e := range c.put {
		if q.put(e) {
			s.groups[c.key.Group]++
		}
		s.nextGen = max(s.nextGen, e.Gen+1)
	}
	for _, o := range c.del {
		if q.del(o) {
			s.groups[c.key.Group]--
		}
	}
}

// dropQueue forgets q; s.mu is held (or Open runs).
func (s *Store) dropQueue(q *queue) {
	delete(s.queues, q.key)
	gt := [2]string{q.key.Group, q.key.Topic}
	qs := slices.DeleteFunc(s.byTopic[gt], func(x *queue) bool { return x == q })
	if len(qs) == 0 {
		delete(s.byTopic, gt)
	} else {
		s.byTopic[gt] = qs
	}
	s.groups[q.key.Group] -= len(q.inflight)
	if s.groups[q.key.Group] <= 0 {
		delete(s.groups, q.key.Group)
	}
}

// record applies c and appends it to the log; s.mu is held.
func (s *Store) record(c *change) Ticket {
	t := s.recordLocal(c)
	if s.mirror {
		s.outbox = append(s.outbox, encodeOp(c, s.nextGen))
	}
	return t
}

// recordLocal applies c and appends it to the log, without queueing it
// for replication; s.mu is held.
func (s *Store) recordLocal(c *change) Ticket {
	s.apply(c)
	s.buf = appendFrame(s.buf, c)
	s.appended++
	return Ticket(s.appended)
}

// usable returns the reason the store refuses changes, if any; s.mu is held.
func (s *Store) usable() error {
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("%w: %w", ErrWriteFailed, s.failed)
	}
	return nil
}

// Sync waits until the change t names is durable. Changes logged while a
// sync is running share the next one (group commit).
func (s *Store) Sync(t Ticket) error {
	if t == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < uint64(t) {
		if s.failed != nil {
			return fmt.Errorf("%w: %w", ErrWriteFailed, s.failed)
		}
		if s.syncing {
			s.cond.Wait()
			continue
		}
		if s.file == nil {
			return ErrClosed
		}
		s.syncLocked()
	}
	return nil
}

// syncLocked writes and syncs what is buffered, or writes a snapshot in
// place of the log when it has grown enough; s.mu is held and released
// during the I/O.
func (s *Store) syncLocked() {
	s.syncing = true
	buf, upto := s.buf, s.appended
	s.buf, s.spare = s.spare[:0], nil
	compact := s.logSize+int64(len(buf)) >= s.opts.CompactBytes && s.logSize+int64(len(buf)) > 2*s.snapSize
	var snap []byte
	if compact {
		snap = encodeSnapshot(s.logGen+1, s.nextGen, s.allQueues())
	}
	gen, file, size := s.logGen, s.file, s.logSize
	s.mu.Unlock()

	var err error
	var newFile vfs.File
	if compact {
		newFile, err = s.compact(gen, file, snap)
	} else if len(buf) > 0 {
		if _, err = file.WriteAt(buf, size); err == nil {
			err = file.Sync()
		}
	}

	s.mu.Lock()
	s.syncing = false
	s.spare = buf[:0]
	switch {
	case err != nil:
		s.failed = err
		s.log.Error("writing the pop state failed; pops and acknowledgements are refused until a restart", "err", err)
	case compact:
		s.file, s.logGen, s.logSize, s.snapSize = newFile, gen+1, 0, int64(len(snap))
		s.synced = upto
	default:
		s.logSize += int64(len(buf))
		s.synced = upto
	}
	s.cond.Broadcast()
}

// compact makes snap (the state with every record so far, naming log
// gen+1) durable, starts log gen+1 and removes log gen. A crash at any
// step leaves either the old snapshot and log or the new snapshot (whose
// log Open creates if missing).
func (s *Store) compact(gen uint64, old vfs.File, snap []byte) (vfs.File, error) {
	if err := vfs.WriteFileAtomic(s.fsys, s.dir, snapshotName, snap); err != nil {
		return nil, fmt.Errorf("pop: write snapshot: %w", err)
	}
	p := path.Join(s.dir, logName(gen+1))
	f, err := s.fsys.Create(p)
	if err != nil {
		return nil, fmt.Errorf("pop: create %s: %w", p, err)
	}
	if err := old.Close(); err != nil {
		s.log.Warn("closing the old pop log failed", "err", err)
	}
	if err := s.fsys.Remove(path.Join(s.dir, logName(gen))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("pop: remove old log: %w", err)
	}
	if err := s.fsys.SyncDir(s.dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("pop: sync %s: %w", s.dir, err)
	}
	return f, nil
}

func (s *Store) allQueues() []*queue {
	out := make([]*queue, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, q)
	}
	return out
}

// Close makes every logged change durable and closes the log. Changes are
// refused after it. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.syncing {
		s.cond.Wait()
	}
	if s.closed {
		return nil
	}
	s.closed = true
	if s.synced < s.appended && s.failed == nil {
		s.syncLocked()
	}
	var err error
	if s.file != nil {
		err = s.file.Close()
		s.file = nil
	}
	s.cond.Broadcast()
	if s.failed != nil {
		return fmt.Errorf("%w: %w", ErrWriteFailed, s.failed)
	}
	if err != nil {
		return fmt.Errorf("pop: close the log: %w", err)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }
