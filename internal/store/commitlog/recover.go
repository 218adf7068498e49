package commitlog

import (
	"errors"
	"fmt"
	"path"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// recover finds the end of the valid log, starting at RecoverFrom, and cuts
// everything after it. It runs before the writer starts.
func (l *Log) recover() (int64, error) {
	segs := l.segments
	if len(segs) == 0 {
		if l.opts.RecoverFrom > 0 {
			// The checkpoint says data existed; keep offsets moving forward so
			// nothing derived from the old log is confused with new records.
			next := l.SegmentStart(l.opts.RecoverFrom) + l.opts.SegmentBytes
			l.log.Error("no commit-log segment found although the checkpoint names durable data; starting a new segment after it", "checkpoint", l.opts.RecoverFrom, "next", next)
			return next, nil
		}
		return 0, nil
	}
	from := l.opts.RecoverFrom
	first, last := segs[0].start, segs[len(segs)-1].start
	if from < first {
		from = first
	}
	if from >= last+l.opts.SegmentBytes {
		l.log.Warn("checkpoint lies past the last segment; scanning the last segment", "checkpoint", from)
		from = last
	}
	i := int((l.SegmentStart(from) - first) / l.opts.SegmentBytes)
	buf := make([]byte, 1<<20)
	pos := from
	for ; i < len(segs); i++ {
		s := segs[i]
		if pos < s.start {
			pos = s.start
		}
		segEnd := s.start + l.opts.SegmentBytes
		size, err := s.f.Size()
		if err != nil {
			return 0, fmt.Errorf("commitlog: size of segment %s: %w", s.name, err)
		}
		fileEnd := s.start + min(size, l.opts.SegmentBytes)
		for pos < segEnd {
			if pos+8 > fileEnd {
				return l.cut(pos, "segment file ends")
			}
			n := min(int64(len(buf)), fileEnd-pos)
			chunk := buf[:n]
			if _, err := s.f.ReadAt(chunk, pos-s.start); err != nil {
				return 0, fmt.Errorf("commitlog: read segment %s at %d: %w", s.name, pos-s.start, err)
			}
			off := 0
			for off < len(chunk) {
				k, err := message.Check(chunk[off:])
				at := pos + int64(off)
				switch {
				case err == nil:
					if message.Record(chunk[off:off+k]).PhysicalOffset() != at {
						// A whole record from an older life of these bytes
						// (or a misplaced one): not part of this log.
						return l.cut(at, "record names another position")
					}
					off += k
					continue
				case errors.Is(err, message.ErrBlank):
					if at+int64(k) != segEnd {
						return l.cut(at, "blank record does not reach the segment end")
					}
					// After kill -9 the page cache may still hold records
					// whose fsync never returned; the log serves them from
					// now on, so make them durable first (cut syncs the
					// last segment).
					if err := s.f.Sync(); err != nil {
						return 0, fmt.Errorf("commitlog: sync segment %s: %w", s.name, err)
					}
					pos = segEnd
				case errors.Is(err, message.ErrShort):
					if at+int64(len(chunk)-off) >= fileEnd {
						return l.cut(at, "torn record at the end")
					}
					if off == 0 {
						// A record larger than the buffer.
						need := int64(len(chunk)) * 2
						if need > int64(l.opts.MaxRecordBytes)+int64(len(buf)) {
							return l.cut(at, "record larger than MaxRecordBytes")
						}
						buf = make([]byte, need)
					}
					pos = at
				default:
					if allZero(chunk[off:min(off+8, len(chunk))]) {
						return l.cut(at, "")
					}
					return l.cut(at, "corrupt record")
				}
				break
			}
			if off == len(chunk) {
				pos += int64(off)
			}
		}
	}
	// The last segment ended with a blank: the next record starts a new
	// segment, created by the writer.
	return pos, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cut makes at the end of the log: zeroes the rest of its segment, removes
// every later segment, and makes that durable.
func (l *Log) cut(at int64, why string) (int64, error) {
	segStart := l.SegmentStart(at)
	keep := l.segments[:0]
	removed := 0
	for _, s := range l.segments {
		if s.start > segStart {
			s.release()
			if err := l.fs.Remove(path.Join(l.dir, s.name)); err != nil {
				return 0, fmt.Errorf("commitlog: remove segment %s after the cut: %w", s.name, err)
			}
			removed++
			continue
		}
		keep = append(keep, s)
	}
	l.segments = keep
	if why != "" || removed > 0 {
		l.log.Warn("cut the commit log after the last valid record", "offset", at, "reason", why, "segments_removed", removed)
	}
	if n := len(l.segments); n > 0 && l.segments[n-1].start == segStart {
		s := l.segments[n-1]
		size, err := s.f.Size()
		if err != nil {
			return 0, fmt.Errorf("commitlog: size of segment %s: %w", s.name, err)
		}
		if size > at-segStart || size < l.opts.SegmentBytes {
			if err := s.f.Truncate(at - segStart); err != nil {
				return 0, fmt.Errorf("commitlog: cut segment %s: %w", s.name, err)
			}
			if err := s.f.Preallocate(l.opts.SegmentBytes); err != nil {
				if !errors.Is(err, vfs.ErrNoSpace) {
					return 0, fmt.Errorf("commitlog: re-extend segment %s: %w", s.name, err)
				}
				// A full disk does not keep the store from opening.
				if at == segStart {
					// Nothing in it: the writer prepares it again when
					// there is space.
					s.release()
					if err := l.fs.Remove(path.Join(l.dir, s.name)); err != nil {
						return 0, fmt.Errorf("commitlog: remove segment %s after the cut: %w", s.name, err)
					}
					l.segments = l.segments[:n-1]
					if err := l.fs.SyncDir(l.dir); err != nil {
						return 0, fmt.Errorf("commitlog: sync dir: %w", err)
					}
					l.log.Warn("no space to re-extend the empty last segment; removed it", "segment", s.name, "err", err)
					return at, nil
				}
				// Writes past its end fail until there is space again.
				l.log.Warn("no space to re-extend the last segment after the cut; appends fail until space is freed", "segment", s.name, "err", err)
			}
			if err := s.f.Sync(); err != nil {
				return 0, fmt.Errorf("commitlog: sync segment %s: %w", s.name, err)
			}
		}
	}
	if removed > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return 0, fmt.Errorf("commitlog: sync dir: %w", err)
		}
	}
	return at, nil
}
