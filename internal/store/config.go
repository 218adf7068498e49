package store

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Config configures a Store. DefaultConfig gives every default.
type Config struct {
	// Dir is the data directory.
	Dir string
	// FS does the disk I/O. Default vfs.OS.
	FS vfs.FS
	// FlushMode: commitlog.FlushSync (default) answers a put once it is on
	// disk; FlushAsync once it is written to the OS.
	FlushMode commitlog.FlushMode
	// FlushInterval is the sync period under FlushAsync. Default 500 ms.
	FlushInterval time.Duration
	// SyncFlushTimeout: a put not durable after this long is answered with
	// ErrFlushTimeout (FLUSH_DISK_TIMEOUT). Default 5 s.
	SyncFlushTimeout time.Duration
	// SegmentBytes is the commit-log segment size. Default 1 GiB.
	SegmentBytes int64
	// MaxMessageBytes bounds one stored record. Default 4 MiB.
	MaxMessageBytes int
	// PageCacheBytes is how much of the commit log behind its durable end
	// is left in the OS page cache; older pages are freed once on disk, so
	// the log's cache does not grow without bound (commitlog.Options).
	// Default 1 GiB; negative leaves every page to the OS.
	PageCacheBytes int64
	// ConsumeQueueEntriesPerFile: default 300,000 (20 bytes each).
	ConsumeQueueEntriesPerFile int
	// IndexSlotsPerFile and IndexEntriesPerFile size key-index files.
	// Defaults 1,048,576 and 4,194,304.
	IndexSlotsPerFile   int
	IndexEntriesPerFile int
	// CheckpointInterval between dispatch checkpoints. Default 1 s.
	CheckpointInterval time.Duration
	// FileReservedTime: commit-log segments whose newest record is older
	// than this are deleted. Default 72 h.
	FileReservedTime time.Duration
	// DiskHighWater: above this fraction of the disk in use, the oldest
	// segments are deleted before their reserve time. Default 0.75.
	DiskHighWater float64
	// DiskHardLimit: above this fraction puts are refused with ErrDiskFull
	// until usage falls below it again. Default 0.90.
	DiskHardLimit float64
	// RetentionInterval between retention checks. Default 10 s.
	RetentionInterval time.Duration
	// MemTopicMaxBytes bounds the records kept for each in-memory topic.
	// Default 64 MiB.
	MemTopicMaxBytes int64
	// StoreHost is the address put into STOREHOST of every record (the
	// broker's client-facing address).
	StoreHost netip.AddrPort
	// OffsetFlushInterval: consumer offsets are made durable this often.
	// Default 1 s.
	OffsetFlushInterval time.Duration
	// CommitPoint bounds dispatch by the commit point from Open on (as
	// EnableCommitPoint does after it): consume queues, the index and
	// listeners get nothing at or past it until SetCommitPoint passes it.
	// At Open it starts at what the checkpoint says was dispatched. Set it
	// on every store of a replicated group, so that a restart does not
	// replay records above the commit point. Default false.
	CommitPoint bool
	// OnGroupCommit, when set, is told of every commit-log group commit
	// (commitlog.Options.OnGroupCommit); it must not block. Default nil.
	OnGroupCommit func(commitlog.GroupCommit)
	Clock         clock.Clock
	Logger        *slog.Logger
}

// DefaultConfig returns the defaults for a store in dir.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:                        dir,
		FS:                         vfs.OS,
		FlushMode:                  commitlog.FlushSync,
		FlushInterval:              500 * time.Millisecond,
		SyncFlushTimeout:           5 * time.Second,
		SegmentBytes:               1 << 30,
		MaxMessageBytes:            4 << 20,
		PageCacheBytes:             1 << 30,
		ConsumeQueueEntriesPerFile: 300_000,
		IndexSlotsPerFile:          1 << 20,
		IndexEntriesPerFile:        4 << 20,
		CheckpointInterval:         time.Second,
		FileReservedTime:           72 * time.Hour,
		DiskHighWater:              0.75,
		DiskHardLimit:              0.90,
		RetentionInterval:          10 * time.Second,
		MemTopicMaxBytes:           64 << 20,
		OffsetFlushInterval:        time.Second,
		Clock:                      clock.Real,
		Logger:                     slog.New(slog.DiscardHandler),
	}
}

// WithDefaults returns c with its zero fields set to their defaults, as
// Open fills them in.
func (c Config) WithDefaults() Config {
	c.fill()
	return c
}

// fill sets zero fields to their defaults.
func (c *Config) fill() {
	d := DefaultConfig(c.Dir)
	if c.FS == nil {
		c.FS = d.FS
	}
	setDefault(&c.FlushInterval, d.FlushInterval)
	setDefault(&c.SyncFlushTimeout, d.SyncFlushTimeout)
	setDefault(&c.SegmentBytes, d.SegmentBytes)
	setDefault(&c.MaxMessageBytes, d.MaxMessageBytes)
	setDefault(&c.PageCacheBytes, d.PageCacheBytes)
	setDefault(&c.ConsumeQueueEntriesPerFile, d.ConsumeQueueEntriesPerFile)
	setDefault(&c.IndexSlotsPerFile, d.IndexSlotsPerFile)
	setDefault(&c.IndexEntriesPerFile, d.IndexEntriesPerFile)
	setDefault(&c.CheckpointInterval, d.CheckpointInterval)
	setDefault(&c.FileReservedTime, d.FileReservedTime)
	setDefault(&c.DiskHighWater, d.DiskHighWater)
	setDefault(&c.DiskHardLimit, d.DiskHardLimit)
	setDefault(&c.RetentionInterval, d.RetentionInterval)
	setDefault(&c.MemTopicMaxBytes, d.MemTopicMaxBytes)
	setDefault(&c.OffsetFlushInterval, d.OffsetFlushInterval)
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate names the first bad field and its limit.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("store: Dir is empty; give a data directory")
	case c.SegmentBytes < 4096:
		return fmt.Errorf("store: SegmentBytes %d is below the minimum 4096", c.SegmentBytes)
	case c.MaxMessageBytes < 1024 || int64(c.MaxMessageBytes) > c.SegmentBytes-8:
		return fmt.Errorf("store: MaxMessageBytes %d must lie in 1024..SegmentBytes-8 (%d)", c.MaxMessageBytes, c.SegmentBytes-8)
	case c.DiskHighWater <= 0 || c.DiskHighWater >= 1:
		return fmt.Errorf("store: DiskHighWater %.2f must lie strictly between 0 and 1", c.DiskHighWater)
	case c.DiskHardLimit <= 0 || c.DiskHardLimit > 1:
		return fmt.Errorf("store: DiskHardLimit %.2f must lie in (0, 1]", c.DiskHardLimit)
	case c.FileReservedTime < 0:
		return fmt.Errorf("store: FileReservedTime %v is negative", c.FileReservedTime)
	}
	return nil
}
