package consumequeue

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/vfs"
)

// EntrySize is the size of one entry on disk.
const EntrySize = 20

// DefaultEntriesPerFile is the number of entries per file when
// Options.EntriesPerFile is 0 (RocketMQ's default).
const DefaultEntriesPerFile = 300_000

// bufEntries is the capacity of the append buffer: the smallest number of
// entries that fills 4 KiB.
const bufEntries = (4096 + EntrySize - 1) / EntrySize

// nameDigits is the length of a file name.
const nameDigits = 20

// Entry is one consume-queue entry: where a message lies in the commit log
// and the hash of its tag (for server-side tag filtering).
type Entry struct {
	Offset  int64 // commit-log offset of the record
	Size    int32 // record size in bytes
	TagHash int64 // hash code of the message's tag
}

// blank reports whether e is the all-zero padding entry.
func (e Entry) blank() bool { return e == Entry{} }

// end is the commit-log offset just past the record.
func (e Entry) end() int64 { return e.Offset + int64(e.Size) }

func (e Entry) String() string {
	return fmt.Sprintf("{offset %d size %d tag %d}", e.Offset, e.Size, e.TagHash)
}

// putEntry encodes e into b[:EntrySize].
func putEntry(b []byte, e Entry) {
	_ = b[EntrySize-1]
	binary.BigEndian.PutUint64(b[0:8], uint64(e.Offset))
	binary.BigEndian.PutUint32(b[8:12], uint32(e.Size))
	binary.BigEndian.PutUint64(b[12:20], uint64(e.TagHash))
}

// getEntry decodes b[:EntrySize].
func getEntry(b []byte) Entry {
	_ = b[EntrySize-1]
	return Entry{
		Offset:  int64(binary.BigEndian.Uint64(b[0:8])),
		Size:    int32(binary.BigEndian.Uint32(b[8:12])),
		TagHash: int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// fileName returns the name of the file whose first logical offset is base.
func fileName(base int64) string {
	s := strconv.FormatInt(base*EntrySize, 10)
	if len(s) >= nameDigits {
		return s
	}
	var b [nameDigits]byte
	n := copy(b[nameDigits-len(s):], s)
	for i := range nameDigits - n {
		b[i] = '0'
	}
	return string(b[:])
}

// parseName returns the first logical offset of a file name, and false for a
// name that is not a queue file (not exactly 20 decimal digits).
func parseName(name string) (byteOff int64, ok bool, err error) {
	if len(name) != nameDigits {
		return 0, false, nil
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return 0, false, nil
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: file name %s out of range", ErrCorrupt, name)
	}
	return v, true, nil
}

// segment is one open queue file.
type segment struct {
	base int64    // logical offset of the first entry; immutable
	path string   // immutable
	f    vfs.File // immutable

	// refs is 1 while the segment is listed in Queue.segs, plus one per
	// reader or flusher using it; the file is closed when it drops to 0.
	// A reference is only taken while the segment is listed (under
	// Queue.mu), so it never comes back from 0.
	refs atomic.Int32

	dirty bool // written since its last Sync; guarded by Queue.wmu
}

func newSegment(base int64, path string, f vfs.File) *segment {
	s := &segment{base: base, path: path, f: f}
	s.refs.Store(1)
	return s
}

func (s *segment) ref() { s.refs.Add(1) }

// unref drops a reference and closes the file with the last one.
func (s *segment) unref() error {
	if n := s.refs.Add(-1); n == 0 {
		if err := s.f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", s.path, err)
		}
	} else if n < 0 {
		panic("consumequeue: segment reference count below zero")
	}
	return nil
}
