package timer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/vfs"
)

const (
	logPrefix = "log-"
	// bufRecords is the append buffer: 1365 records, just under 64 KiB.
	bufRecords = 65536 / recordSize
	// blockRecords is the unit of chain reads: 85 records, just under 4 KiB.
	blockRecords = 4096 / recordSize
)

// segment is one timer-log file: records [start, start+per).
type segment struct {
	start uint64 // index of its first record; a multiple of per
	name  string
	f     vfs.File
	// The highest chain id of slot records and of late records in the
	// file (0: none). The file may go once every chain it holds is done.
	maxRound uint32
	maxLate  uint32
	dirty    bool // written since its last Sync
}

// tlog is the append-only timer log. All fields are guarded by Store.mu;
// a segment's f may be read without it (files are closed only when no chain
// reaches them any more).
type tlog struct {
	fsys     vfs.FS
	dir      string
	per      uint64 // records per file
	segs     []*segment
	end      uint64 // index of the next record
	written  uint64 // records below written are in their files
	buf      []byte // records [written, end), all in the last segment
	newFiles bool   // files created since the last SyncDir
}

func logName(start uint64) string {
	return fmt.Sprintf("%s%020d", logPrefix, start*recordSize)
}

// parseLogName returns the first record index of a log file name.
func parseLogName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, logPrefix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	off, err := strconv.ParseUint(s, 10, 64)
	if err != nil || off%recordSize != 0 {
		return 0, false
	}
	return off / recordSize, true
}

// openLog opens the files the checkpoint st lists and still needs, cuts the
// one holding its end to exactly the checkpointed records and removes every
// other log file (files of chains already done, which may also be missing,
// or files written after the checkpoint).
func openLog(fsys vfs.FS, dir string, ck *ckptState, names []string) (*tlog, error) {
	per, end := uint64(ck.per), ck.end
	tl := &tlog{fsys: fsys, dir: dir, per: per, end: end, written: end, buf: make([]byte, 0, bufRecords*recordSize)}
	listed := map[uint64]bool{}
	var table []segState
	for i, st := range ck.segs {
		if !segDead(ck, st, per, i == len(ck.segs)-1) {
			listed[st.start] = true
			table = append(table, st)
		}
	}
	removed := false
	for _, n := range names {
		start, ok := parseLogName(n)
		if !ok || listed[start] {
			continue
		}
		if err := fsys.Remove(path.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("timer: remove stray log file %s: %w", n, err)
		}
		removed = true
	}
	for _, st := range table {
		seg := &segment{start: st.start, name: logName(st.start), maxRound: st.maxRound, maxLate: st.maxLate}
		p := path.Join(dir, seg.name)
		if st.start%per != 0 || st.start >= end {
			tl.close()
			return nil, fmt.Errorf("%w: checkpoint lists log file %s outside [0, %d) or not on a %d-record boundary", ErrCorrupt, seg.name, end, per)
		}
		f, err := fsys.Open(p)
		if err != nil {
			tl.close()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: log file %s is missing: %w", ErrCorrupt, seg.name, err)
			}
			return nil, fmt.Errorf("timer: open %s: %w", p, err)
		}
		seg.f = f
		tl.segs = append(tl.segs, seg)
		want := int64(min(per, end-st.start)) * recordSize
		size, err := f.Size()
		if err != nil {
			tl.close()
			return nil, fmt.Errorf("timer: size of %s: %w", p, err)
		}
		if size < want {
			tl.close()
			return nil, fmt.Errorf("%w: log file %s has %d bytes, the checkpoint needs %d", ErrCorrupt, seg.name, size, want)
		}
		if size > want {
			// Records written after the checkpoint: the caller replays them.
			if err := f.Truncate(want); err != nil {
				tl.close()
				return nil, fmt.Errorf("timer: cut %s to %d bytes: %w", p, want, err)
			}
			if err := f.Sync(); err != nil {
				tl.close()
				return nil, fmt.Errorf("timer: sync %s: %w", p, err)
			}
		}
	}
	sort.Slice(tl.segs, func(i, j int) bool { return tl.segs[i].start < tl.segs[j].start })
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			tl.close()
			return nil, fmt.Errorf("timer: sync dir %s: %w", dir, err)
		}
	}
	return tl, nil
}

func (tl *tlog) close() {
	for _, s := range tl.segs {
		if s.f != nil {
			_ = s.f.Close()
		}
	}
	tl.segs = nil
}

func (tl *tlog) last() *segment {
	if len(tl.segs) == 0 {
		return nil
	}
	return tl.segs[len(tl.segs)-1]
}

// segFor returns the segment holding record idx, or nil.
func (tl *tlog) segFor(idx uint64) *segment {
	i := sort.Search(len(tl.segs), func(i int) bool { return tl.segs[i].start > idx })
	if i == 0 {
		return nil
	}
	s := tl.segs[i-1]
	if idx >= s.start+tl.per {
		return nil
	}
	return s
}

// append adds r and returns its ref (index + 1).
func (tl *tlog) append(r *record) (uint64, error) {
	idx := tl.end
	seg := tl.last()
	if seg == nil || idx >= seg.start+tl.per {
		if err := tl.flush(); err != nil {
			return 0, err
		}
		start := idx - idx%tl.per
		name := logName(start)
		f, err := tl.fsys.Create(path.Join(tl.dir, name))
		if err != nil {
			return 0, fmt.Errorf("timer: create log file %s: %w", name, err)
		}
		seg = &segment{start: start, name: name, f: f}
		tl.segs = append(tl.segs, seg)
		tl.newFiles = true
	}
	n := len(tl.buf)
	tl.buf = tl.buf[:n+recordSize]
	r.put(tl.buf[n:])
	tl.end++
	if r.late() {
		seg.maxLate = max(seg.maxLate, r.chain)
	} else {
		seg.maxRound = max(seg.maxRound, r.chain)
	}
	if len(tl.buf) == cap(tl.buf) {
		if err := tl.flush(); err != nil {
			return 0, err
		}
	}
	return idx + 1, nil
}

// flush writes the buffered records to their file (no sync).
func (tl *tlog) flush() error {
	if tl.written == tl.end {
		return nil
	}
	seg := tl.last()
	if _, err := seg.f.WriteAt(tl.buf, int64(tl.written-seg.start)*recordSize); err != nil {
		return fmt.Errorf("timer: write %s: %w", seg.name, err)
	}
	tl.written = tl.end
	tl.buf = tl.buf[:0]
	seg.dirty = true
	return nil
}

// readRecords reads records [idx, idx+n) of seg into b, which must hold
// n*recordSize bytes, and returns how many whole records it got.
func readRecords(seg *segment, idx uint64, b []byte) (int, error) {
	got, err := seg.f.ReadAt(b, int64(idx-seg.start)*recordSize)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("timer: read %s: %w", seg.name, err)
	}
	return got / recordSize, nil
}
