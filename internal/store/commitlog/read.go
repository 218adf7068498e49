package commitlog

import (
	"encoding/binary"
	"fmt"
	"path"

	"github.com/petrelmq/petrel/internal/message"
)

// acquire returns the segment holding off with a reference the caller must
// release.
func (l *Log) acquire(off int64) (*segment, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if len(l.segments) == 0 || off < l.segments[0].start {
		return nil, fmt.Errorf("%w: %d is below the oldest segment", ErrBadOffset, off)
	}
	i := (off - l.segments[0].start) / l.opts.SegmentBytes
	if i >= int64(len(l.segments)) {
		return nil, fmt.Errorf("%w: %d is past the last segment", ErrBadOffset, off)
	}
	s := l.segments[i]
	s.refs.Add(1)
	return s, nil
}

// ReadAt fills p with the log bytes at off. The range must lie inside one
// segment and below Written. Safe for concurrent use; the bytes are copied
// into p (pread), so p is the caller's.
func (l *Log) ReadAt(p []byte, off int64) error {
	end := off + int64(len(p))
	if off < 0 || end > l.written.Load() {
		return fmt.Errorf("%w: [%d, %d) is past the written end %d", ErrBadOffset, off, end, l.written.Load())
	}
	if l.SegmentStart(off) != l.SegmentStart(end-1) && len(p) > 0 {
		return fmt.Errorf("%w: [%d, %d) crosses a segment boundary", ErrBadOffset, off, end)
	}
	s, err := l.acquire(off)
	if err != nil {
		return err
	}
	defer s.release()
	if _, err := s.f.ReadAt(p, off-s.start); err != nil {
		return fmt.Errorf("commitlog: read segment %s at %d: %w", s.name, off-s.start, err)
	}
	return nil
}

// ReadRecord reads the record of size bytes at off into buf (grown when too
// small) and returns it after checking it.
func (l *Log) ReadRecord(off int64, size int32, buf []byte) (message.Record, error) {
	if size < message.MinRecordLen {
		return nil, fmt.Errorf("%w: record size %d", ErrBadOffset, size)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if err := l.ReadAt(buf, off); err != nil {
		return nil, err
	}
	if _, err := message.Check(buf); err != nil {
		return nil, fmt.Errorf("commitlog: record at %d: %w", off, err)
	}
	return message.Record(buf), nil
}

// SegmentInfo describes one segment for retention.
type SegmentInfo struct {
	Start int64
	End   int64 // Start + SegmentBytes
	// FirstStoreTime is the store time (ms) of the segment's first record,
	// 0 when it has none yet.
	FirstStoreTime int64
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.segMu.RLock()
	segs := make([]*segment, len(l.segments))
	copy(segs, l.segments)
	for _, s := range segs {
		s.refs.Add(1)
	}
	l.segMu.RUnlock()
	out := make([]SegmentInfo, 0, len(segs))
	written := l.written.Load()
	for _, s := range segs {
		info := SegmentInfo{Start: s.start, End: s.start + l.opts.SegmentBytes}
		if s.start+message.MinRecordLen <= written {
			var hdr [message.MinRecordLen]byte
			if _, err := s.f.ReadAt(hdr[:], 0); err == nil && binary.BigEndian.Uint32(hdr[4:]) == message.Magic {
				info.FirstStoreTime = message.Record(hdr[:]).StoreTimestamp()
			}
		}
		out = append(out, info)
		s.release()
	}
	return out
}

// RemoveSegmentsBefore deletes the segments that end at or before off,
// except the tail segment and any segment holding bytes not yet durable.
// It returns how many it removed. Readers still using a removed segment
// finish their read; the file is closed after them.
func (l *Log) RemoveSegmentsBefore(off int64) (int, error) {
	flushed := l.flushed.Load()
	l.segMu.Lock()
	var gone []*segment
	for len(l.segments) > 1 {
		s := l.segments[0]
		end := s.start + l.opts.SegmentBytes
		if end > off || end > flushed {
			break
		}
		gone = append(gone, s)
		l.segments = l.segments[1:]
	}
	l.segMu.Unlock()
	for _, s := range gone {
		if err := l.fs.Remove(path.Join(l.dir, s.name)); err != nil {
			return 0, fmt.Errorf("commitlog: remove segment %s: %w", s.name, err)
		}
		s.release()
	}
	if len(gone) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return len(gone), fmt.Errorf("commitlog: sync dir: %w", err)
		}
		l.log.Info("removed old segments", "count", len(gone), "min_offset", gone[len(gone)-1].start+l.opts.SegmentBytes)
	}
	return len(gone), nil
}
