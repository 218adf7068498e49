package meta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// File names in the store's directory.
const (
	topicsFileName  = "topics.json"
	groupsFileName  = "groups.json"
	offsetsFileName = "offsets.json"
)

var (
	// ErrClosed is returned by the writing methods after Close.
	ErrClosed = errors.New("meta: store closed")
	// ErrCorrupt is returned (wrapped, with the file's path) by Open when a
	// file does not parse or holds inconsistent entries.
	ErrCorrupt = errors.New("meta: corrupt file")
	// ErrInvalidName is returned (wrapped) for an empty topic or group name.
	ErrInvalidName = errors.New("meta: invalid name")
	// ErrInvalidOptions is returned (wrapped, naming the field) by Open.
	ErrInvalidOptions = errors.New("meta: invalid options")
)

// DefaultOffsetFlushInterval is the default of Options.OffsetFlushInterval.
const DefaultOffsetFlushInterval = time.Second

// Options configures a Store. The zero value gives the defaults.
type Options struct {
	// Clock drives the background offset flush and stamps DataVersions.
	// Default clock.Real.
	Clock clock.Clock
	// OffsetFlushInterval is the time between background FlushOffsets
	// calls. 0 means DefaultOffsetFlushInterval (1s); negative is invalid.
	OffsetFlushInterval time.Duration
	// Logger receives lifecycle messages and background flush failures.
	// Default: discard.
	Logger *slog.Logger
	// LogCompactBytes is the size a table's change log may reach before a
	// change rewrites the table's file instead of appending to the log
	// (the log may also grow as large as the table's file). 0 means
	// DefaultLogCompactBytes (1 MiB); negative is invalid.
	LogCompactBytes int64
}

// Store is the metadata store. All methods are safe for concurrent use.
type Store struct {
	fsys  vfs.FS
	dir   string
	clock clock.Clock
	log   *slog.Logger
	every time.Duration

	topics  configTable[Topic]
	groups  configTable[Group]
	users   configTable[User]
	acls    configTable[Acl]
	offsets offsetTable

	closed    atomic.Bool
	timerMu   sync.Mutex
	timer     clock.Timer    // the armed background flush; guarded by timerMu
	stopped   bool           // Close has begun; guarded by timerMu
	flushing  sync.WaitGroup // a background flush is running
	closeOnce sync.Once
	closeErr  error
}

// Open loads the store kept in dir on fsys, creating dir if needed, and
// starts the background offset flush. Missing files are empty tables;
// leftover temporary files are removed. A file that does not parse makes
// Open fail with an error wrapping ErrCorrupt that names the file.
func Open(fsys vfs.FS, dir string, opts Options) (*Store, error) {
	if opts.OffsetFlushInterval < 0 {
		return nil, fmt.Errorf("%w: OffsetFlushInterval %v is negative", ErrInvalidOptions, opts.OffsetFlushInterval)
	}
	if opts.LogCompactBytes < 0 {
		return nil, fmt.Errorf("%w: LogCompactBytes %d is negative", ErrInvalidOptions, opts.LogCompactBytes)
	}
	if opts.LogCompactBytes == 0 {
		opts.LogCompactBytes = DefaultLogCompactBytes
	}
	if opts.OffsetFlushInterval == 0 {
		opts.OffsetFlushInterval = DefaultOffsetFlushInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	dir = path.Clean(dir)
	s := &Store{
		fsys:  fsys,
		dir:   dir,
		clock: opts.Clock,
		log:   opts.Logger.With("component", "meta"),
		every: opts.OffsetFlushInterval,
	}
	s.topics.init(s, topicsFileName, "topicConfigTable", opts.LogCompactBytes)
	s.groups.init(s, groupsFileName, "subscriptionGroupTable", opts.LogCompactBytes)
	s.users.init(s, usersFileName, "userTable", opts.LogCompactBytes)
	s.users.files.private = true
	s.acls.init(s, aclsFileName, "aclTable", opts.LogCompactBytes)
	s.acls.files.private = true
	s.offsets.init(s)

	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, err
	}
	if err := s.removeTemps(); err != nil {
		return nil, err
	}
	start := s.clock.Now()
	if err := s.topics.open(); err != nil {
		return nil, err
	}
	if err := s.groups.open(); err != nil {
		s.topics.files.close()
		return nil, err
	}
	if err := openPrivate(s, &s.users); err != nil {
		s.topics.files.close()
		s.groups.files.close()
		return nil, err
	}
	if err := openPrivate(s, &s.acls); err != nil {
		s.topics.files.close()
		s.groups.files.close()
		s.users.files.close()
		return nil, err
	}
	p := path.Join(dir, offsetsFileName)
	data, ok, err := vfs.ReadFile(fsys, p)
	if err == nil && ok {
		if err = s.offsets.load(data); err != nil {
			err = fmt.Errorf("%w: %s: %w", ErrCorrupt, p, err)
		}
	} else if err != nil {
		err = fmt.Errorf("meta: %w", err)
	}
	if err != nil {
		s.topics.files.close()
		s.groups.files.close()
		s.users.files.close()
		s.acls.files.close()
		return nil, err
	}
	s.log.Info("meta store opened", "dir", dir,
		"topics", len(s.topics.m), "groups", len(s.groups.m), "offsets", len(s.offsets.m),
		"users", len(s.users.m), "acls", len(s.acls.m),
		"took", s.clock.Now().Sub(start).Round(time.Millisecond))

	s.timerMu.Lock()
	s.timer = s.clock.AfterFunc(s.every, s.backgroundFlush)
	s.timerMu.Unlock()
	return s, nil
}

// openPrivate opens a table that holds secrets after narrowing the mode
// of its existing files.
func openPrivate[T config[T]](s *Store, t *configTable[T]) error {
	if err := restrictExisting(s.fsys, s.dir, t.files.name); err != nil {
		return err
	}
	return t.open()
}

// removeTemps deletes the temporary files a crash may have left.
func (s *Store) removeTemps() error {
	removed := false
	for _, name := range []string{topicsFileName, groupsFileName, offsetsFileName, usersFileName, aclsFileName} {
		p := path.Join(s.dir, name+tmpSuffix)
		if _, err := s.fsys.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := s.fsys.Remove(p); err != nil {
			return fmt.Errorf("meta: remove %s: %w", p, err)
		}
		removed = true
		s.log.Info("removed unfinished meta file", "file", p)
	}
	if removed {
		if err := s.fsys.SyncDir(s.dir); err != nil {
			return fmt.Errorf("meta: sync dir %s: %w", s.dir, err)
		}
	}
	return nil
}

// backgroundFlush runs from the clock's timer: it flushes the offsets and
// re-arms itself unless Close has begun.
func (s *Store) backgroundFlush() {
	s.timerMu.Lock()
	if s.stopped {
		s.timerMu.Unlock()
		return
	}
	s.flushing.Add(1)
	s.timerMu.Unlock()

	if err := s.offsets.w.sync(context.Background(), s.offsets.current()); err != nil {
		// Nobody waits on this flush: the log is where its error goes. The
		// offsets stay dirty and the next flush tries again.
		s.log.Warn("background offset flush failed", "err", err)
	}

	s.timerMu.Lock()
	if !s.stopped {
		s.timer = s.clock.AfterFunc(s.every, s.backgroundFlush)
	}
	s.timerMu.Unlock()
	s.flushing.Done()
}

// Close stops the background flush, waits for a running one, and writes
// whatever is not durable yet: offsets changed since the last flush, and
// topic or group changes whose write failed; it folds the change logs into
// topics.json and groups.json. It returns the write errors (joined); a
// failed fold of changes that were durable in the log is only logged. After Close, PutTopic, DeleteTopic, PutGroup, DeleteGroup,
// FlushOffsets and SyncOffsets return ErrClosed; the readers keep working on
// the in-memory state, and CommitOffset and the offset deletions still change
// it but are no longer persisted. Close is idempotent: later calls wait for
// the first and return its result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	s.closed.Store(true)
	s.timerMu.Lock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerMu.Unlock()
	s.flushing.Wait()

	ctx := context.Background()
	var errs []error
	errs = append(errs, s.topics.closeFiles(), s.groups.closeFiles(), s.users.closeFiles(), s.acls.closeFiles())
	errs = append(errs, s.offsets.w.sync(ctx, s.offsets.current()))
	s.log.Info("meta store closed")
	return errors.Join(errs...)
}
