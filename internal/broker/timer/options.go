package timer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Sentinel errors. Callers test for them with errors.Is.
var (
	// ErrTooFar is returned by Add for a DeliverAt beyond now + MaxDelay; the
	// message names the cap.
	ErrTooFar = errors.New("timer: deliver time beyond the maximum delay")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("timer: store closed")
	// ErrCorrupt is returned (wrapped, naming the file) by Open, and by the
	// firing goroutine through the log, when a file fails its checks.
	ErrCorrupt = errors.New("timer: corrupt store")
	// ErrIncompatible is returned by Open when Options.Span differs from the
	// span the store was created with.
	ErrIncompatible = errors.New("timer: store was created with other options")
	// ErrWait, wrapped in a Fire error, says the entries are not to be
	// delivered yet (a slave waits for its master): they are offered again
	// after the usual back-off, logged at Debug instead of Warn.
	ErrWait = errors.New("timer: fire deferred")
	// ErrFailed wraps the first write or sync error of the timer log. After
	// it, what reached the disk is unknown: Add, Cancel and Checkpoint fail
	// until the store is reopened, which recovers from the last checkpoint.
	ErrFailed = errors.New("timer: store failed")
)

// Options configures a Store. Zero fields take the documented defaults.
type Options struct {
	// Clock gives the time and runs the store's timers. Required.
	Clock clock.Clock
	// Span is the time the wheel covers, one slot per second. Default 7 days.
	// Timers due further out roll: they are re-inserted each time their slot
	// comes round until they are due. Fixed when the store is created; Open
	// fails with ErrIncompatible if it changes. Whole seconds, at least 1 s.
	Span time.Duration
	// MaxDelay is the furthest ahead of now an Add may ask for; further
	// fails with ErrTooFar. Default 7 days. May be years (see Span).
	MaxDelay time.Duration
	// Fire delivers due entries. It is called from the store's own goroutine
	// with entries whose DeliverAt <= Clock.Now(), oldest first, at most
	// FireBatch at a time, and returns nil once they are delivered durably.
	// On error the same entries are offered again after a back-off (100 ms
	// doubling up to 10 s on the Clock); they are never skipped. Fire must
	// not keep the slice after it returns and must not call Close. Required.
	Fire func(due []Entry) error
	// FireBatch is the largest number of entries passed to one Fire call.
	// Default 256.
	FireBatch int
	// Logger receives lifecycle and error lines. Default: discard.
	Logger *slog.Logger

	// CheckpointInterval is how often state is made durable in the
	// background (Checkpoint). Default 1 s.
	CheckpointInterval time.Duration
	// EntriesPerFile is the number of 48-byte records per timer-log file
	// for a new store (an existing store keeps its own). Default 1<<20
	// (48 MiB files).
	EntriesPerFile int
	// LoadLimit bounds the records of one chain held in memory at once: a
	// slot with more due timers is fired in several passes over its chain.
	// Default 65536.
	LoadLimit int
	// SnapshotEvery is the number of records appended between two
	// snapshots of the wheel; Open replays at most about this many records.
	// Default 1<<20.
	SnapshotEvery int
}

const (
	defaultSpan           = 7 * 24 * time.Hour
	defaultFireBatch      = 256
	defaultCkptInterval   = time.Second
	defaultEntriesPerFile = 1 << 20
	defaultLoadLimit      = 1 << 16
	defaultSnapshotEvery  = 1 << 20

	retryMin = 100 * time.Millisecond
	retryMax = 10 * time.Second

	// maxLateRuns bounds the late chains fired at once.
	maxLateRuns = 4

	// maxSlots bounds the wheel: 2^26 seconds is about two years.
	maxSlots = 1 << 26
)

func (o *Options) setDefaults() error {
	if o.Clock == nil {
		return errors.New("timer: Options.Clock is required")
	}
	if o.Fire == nil {
		return errors.New("timer: Options.Fire is required")
	}
	if o.Span == 0 {
		o.Span = defaultSpan
	}
	if o.Span < time.Second || o.Span%time.Second != 0 || o.Span/time.Second > maxSlots {
		return fmt.Errorf("timer: Options.Span %v must be whole seconds in [1s, %v]", o.Span, maxSlots*time.Second)
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = defaultSpan
	}
	if o.MaxDelay < 0 {
		return fmt.Errorf("timer: Options.MaxDelay %v is negative", o.MaxDelay)
	}
	if o.FireBatch == 0 {
		o.FireBatch = defaultFireBatch
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = defaultCkptInterval
	}
	if o.EntriesPerFile == 0 {
		o.EntriesPerFile = defaultEntriesPerFile
	}
	if o.LoadLimit == 0 {
		o.LoadLimit = defaultLoadLimit
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = defaultSnapshotEvery
	}
	if o.FireBatch < 1 || o.CheckpointInterval < 0 || o.EntriesPerFile < 1 || o.EntriesPerFile > 1<<30 ||
		o.LoadLimit < 1 || o.SnapshotEvery < 1 {
		return fmt.Errorf("timer: bad Options: FireBatch %d (>= 1), CheckpointInterval %v (>= 0), EntriesPerFile %d (1..2^30), LoadLimit %d (>= 1), SnapshotEvery %d (>= 1)",
			o.FireBatch, o.CheckpointInterval, o.EntriesPerFile, o.LoadLimit, o.SnapshotEvery)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
