package store

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// retention runs RunRetention every RetentionInterval.
type retention struct {
	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
	running sync.WaitGroup
}

func (r *retention) start(s *Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.running.Add(1)
	r.timer = s.cfg.Clock.AfterFunc(s.cfg.RetentionInterval, func() {
		defer r.running.Done()
		if _, err := s.RunRetention(); err != nil {
			s.log.Error("retention failed", "err", err)
		}
		r.start(s)
	})
}

func (r *retention) stop() {
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil && r.timer.Stop() {
		r.running.Done()
	}
	r.mu.Unlock()
	r.running.Wait()
}

// RetentionReport says what one retention pass did.
type RetentionReport struct {
	SegmentsRemoved int
	UsedFraction    float64
	WritesRefused   bool
	// RemovedUnconsumed counts, per topic and group, the messages this pass
	// removed before their reserve time that the group had not consumed.
	RemovedUnconsumed []RemovedUnconsumed
}

// RunRetention checks disk use and deletes old data: commit-log segments
// whose newest record is older than FileReservedTime, and, while disk use is
// above DiskHighWater, the oldest segments regardless of age; then the
// consume-queue and index files that only pointed into removed segments.
// It never removes the segment being written, nor data not yet durable or
// not yet dispatched. Above DiskHardLimit puts are refused until a later
// pass finds usage below it again.
//
// Each segment removed early is logged at Warn with the messages of each
// topic that each group had not consumed yet (RemovedUnconsumed keeps the
// running totals).
func (s *Store) RunRetention() (RetentionReport, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	var rep RetentionReport
	usage, err := s.cfg.FS.Usage(s.cfg.Dir)
	if err != nil {
		return rep, fmt.Errorf("store: disk usage: %w", err)
	}
	rep.UsedFraction = usage.UsedFraction()
	now := s.cfg.Clock.Now().UnixMilli()
	reserve := s.cfg.FileReservedTime.Milliseconds()
	segs := s.clog.Segments()
	limit := min(s.disp.Load().Dispatched(), s.clog.Flushed())
	cut := int64(-1)
	// Expired by age: segment i's records are all older than the first
	// record of segment i+1.
	for i := 0; i+1 < len(segs); i++ {
		next := segs[i+1].FirstStoreTime
		if next == 0 || now-next < reserve || segs[i].End > limit {
			break
		}
		cut = segs[i].End
	}
	if cut > 0 {
		n, err := s.clog.RemoveSegmentsBefore(cut)
		rep.SegmentsRemoved += n
		if err != nil {
			return rep, err
		}
	}
	// Under disk pressure: oldest first, one at a time, until usage is
	// below the high-water mark or only the tail is left.
	var errs []error
	for rep.UsedFraction >= s.cfg.DiskHighWater {
		segs = s.clog.Segments()
		if len(segs) < 2 || segs[0].End > limit {
			break
		}
		// The queues' min offsets must reflect what is already gone, so
		// that only this segment's messages are counted against it.
		if _, err := s.queues.deleteBefore(s.clog.MinOffset()); err != nil {
			errs = append(errs, err)
		}
		before := s.queues.minOffsets()
		n, err := s.clog.RemoveSegmentsBefore(segs[0].End)
		rep.SegmentsRemoved += n
		if err != nil {
			return rep, errors.Join(append(errs, err)...)
		}
		if n == 0 {
			break
		}
		if _, err := s.queues.deleteBefore(s.clog.MinOffset()); err != nil {
			errs = append(errs, err)
		}
		lost := s.unconsumedSince(before)
		s.lost.add(lost)
		rep.RemovedUnconsumed = mergePairs(rep.RemovedUnconsumed, lost)
		pairs, total := describePairs(lost)
		s.log.Warn("disk above the high-water mark; removed the oldest commit-log segment before its reserve time",
			"used", rep.UsedFraction, "high_water", s.cfg.DiskHighWater,
			"segment_start", segs[0].Start, "segment_end", segs[0].End,
			"unconsumed_messages", total, "unconsumed_by_topic_group", pairs)
		if usage, err = s.cfg.FS.Usage(s.cfg.Dir); err != nil {
			return rep, errors.Join(append(errs, fmt.Errorf("store: disk usage: %w", err))...)
		}
		rep.UsedFraction = usage.UsedFraction()
	}
	minOff := s.clog.MinOffset()
	if _, err := s.queues.deleteBefore(minOff); err != nil {
		errs = append(errs, err)
	}
	if _, err := s.index.idx.DeleteBefore(minOff); err != nil {
		errs = append(errs, fmt.Errorf("store: retention of index: %w", err))
	}
	full := rep.UsedFraction >= s.cfg.DiskHardLimit
	if s.diskFull.Swap(full) != full {
		if full {
			s.log.Error("disk above the hard limit; refusing writes", "used", rep.UsedFraction, "limit", s.cfg.DiskHardLimit)
		} else {
			s.log.Info("disk below the hard limit again; accepting writes", "used", rep.UsedFraction)
		}
	}
	rep.WritesRefused = full
	return rep, errors.Join(errs...)
}

// mergePairs adds b's counts into a (both sorted by topic then group).
func mergePairs(a, b []RemovedUnconsumed) []RemovedUnconsumed {
	if len(a) == 0 {
		return b
	}
	for _, p := range b {
		i, found := slices.BinarySearchFunc(a, p, func(x, y RemovedUnconsumed) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Group, y.Group))
		})
		if found {
			a[i].Messages += p.Messages
		} else {
			a = slices.Insert(a, i, p)
		}
	}
	return a
}

func (s *Store) diskFullError() error {
	return fmt.Errorf("%w: disk use is above %.0f%% (DiskHardLimit); writes resume once it falls below: free space, lower FileReservedTime or add disk", ErrDiskFull, s.cfg.DiskHardLimit*100)
}

// putError turns a commit-log error into the store's.
func (s *Store) putError(err error) error {
	if errors.Is(err, vfs.ErrNoSpace) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}
