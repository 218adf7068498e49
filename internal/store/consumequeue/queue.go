package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/vfs"
)

// Errors returned by a Queue. Callers test for them with errors.Is; the
// returned errors wrap them with the offsets involved.
var (
	// ErrBelowMin: the logical offset is below MinOffset (deleted by
	// retention, or padding in front of the first entry).
	ErrBelowMin = errors.New("consumequeue: offset below the minimum")
	// ErrGap: Append was given a logical offset beyond MaxOffset of a queue
	// that is not empty. Nothing was appended.
	ErrGap = errors.New("consumequeue: offset beyond the end")
	// ErrMismatch: Append replayed a logical offset below MaxOffset with an
	// entry that differs from the stored one. Nothing was changed.
	ErrMismatch = errors.New("consumequeue: entry differs from the stored one")
	// ErrClosed: the queue is closed.
	ErrClosed = errors.New("consumequeue: closed")
	// ErrInvalid: Append was given an entry that cannot be stored: Size <= 0,
	// a negative Offset, or an Offset not above the last entry's.
	ErrInvalid = errors.New("consumequeue: invalid entry")
	// ErrCorrupt: Open found files it cannot interpret: a name that is not a
	// multiple of the file size, or a file longer than EntriesPerFile
	// entries (the queue was written with another EntriesPerFile).
	ErrCorrupt = errors.New("consumequeue: corrupt queue files")
	// ErrFailed: an fsync failed earlier (in Flush or Truncate), so what is
	// on disk is unknown; Flush keeps failing until the queue is reopened.
	ErrFailed = errors.New("consumequeue: a disk sync failed; reopen to recover")
)

// Options configure a Queue. Zero fields take the defaults given.
type Options struct {
	// EntriesPerFile is the number of entries per file. Default 300,000.
	// It must not change for an existing queue (Open fails with ErrCorrupt
	// when the files do not fit it).
	EntriesPerFile int
}

// maxLogical bounds logical offsets so that byte offsets (names) fit int64.
const maxLogical = math.MaxInt64/EntrySize - 1

// Queue is one open consume queue. See the package documentation for the
// concurrency rules; in short, Append and Truncate come from one writer
// goroutine, and everything else is safe from any goroutine.
type Queue struct {
	fsys    vfs.FS
	dir     string
	perFile int64

	// Lock order: flushMu, wmu, maintMu, mu.
	//
	// flushMu serialises Flush, Truncate and Close; it is held across fsync.
	flushMu sync.Mutex
	// wmu serialises the writer side (Append, the write half of Flush,
	// Truncate, Close): the buffer contents, spills, dirty flags. It is held
	// across a spill's WriteAt and a file creation, never across fsync.
	wmu sync.Mutex
	// maintMu serialises the operations that remove files: DeleteBefore,
	// Truncate and the reset done by an Append that restarts an empty queue.
	maintMu sync.Mutex
	// mu guards the fields below it: they change only with mu held for
	// writing, and all but segs and min (which retention changes) also with
	// wmu held, so the writer may read those under wmu alone. Readers hold
	// mu for reading only while copying state, never across I/O.
	mu      sync.RWMutex
	segs    []*segment // open files, contiguous, in order
	written int64      // entries below this are in the files
	buf     []byte     // entries [written, max), at 20*(logical-written)
	min     atomic.Int64
	max     atomic.Int64
	gen     atomic.Uint64 // bumped when stored entries change (Truncate, reset, Close)
	lastOff int64         // logical offset of the last real entry
	last    Entry
	hasLast bool
	closed  bool // set with wmu, maintMu and mu all held

	dirDirty bool       // files created or removed since the last SyncDir; guarded by wmu
	failed   error      // sticky fsync failure; guarded by flushMu
	syncBuf  []*segment // scratch for Flush; guarded by flushMu
	scratch  sync.Pool  // *[scratchBytes]byte for reads
}

// scratchBytes is the read buffer size: whole entries, about 4 KiB.
const scratchBytes = 204 * EntrySize

// Open opens the queue stored in dir, creating dir (durably) if it is
// missing. It loads the files, cuts a torn trailing entry and any files that
// follow a short or missing one (see the package documentation), and sets
// MinOffset to the first real entry and MaxOffset to the number of entries
// stored. It fails with an error wrapping ErrCorrupt when the files do not
// fit opts.EntriesPerFile.
func Open(fsys vfs.FS, dir string, opts Options) (*Queue, error) {
	per := int64(opts.EntriesPerFile)
	if per == 0 {
		per = DefaultEntriesPerFile
	}
	if per < 0 || per > math.MaxInt32/EntrySize {
		return nil, fmt.Errorf("consumequeue: EntriesPerFile %d out of range [1, %d]", per, math.MaxInt32/EntrySize)
	}
	q := &Queue{
		fsys:    fsys,
		dir:     path.Clean(dir),
		perFile: per,
		buf:     make([]byte, bufEntries*EntrySize),
	}
	q.scratch.New = func() any { return new([scratchBytes]byte) }
	if err := vfs.MkdirAllDurable(fsys, q.dir); err != nil {
		return nil, fmt.Errorf("consumequeue: create %s: %w", q.dir, err)
	}
	if err := q.load(); err != nil {
		for _, s := range q.segs {
			_ = s.unref()
		}
		return nil, err
	}
	return q, nil
}

// load reads the directory into q. Called only from Open.
func (q *Queue) load() error {
	names, err := q.fsys.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("consumequeue: list %s: %w", q.dir, err)
	}
	fileBytes := q.perFile * EntrySize
	var bases []int64
	var paths []string
	for _, name := range names {
		off, ok, err := parseName(name)
		if err != nil {
			return fmt.Errorf("%s: %w", q.dir, err)
		}
		if !ok {
			continue
		}
		if off%fileBytes != 0 {
			return fmt.Errorf("%w: file %s is not at a multiple of %d entries (EntriesPerFile changed?)",
				ErrCorrupt, path.Join(q.dir, name), q.perFile)
		}
		bases = append(bases, off/EntrySize)
		paths = append(paths, path.Join(q.dir, name))
	}

	// Open files while they are contiguous and full; the first short file
	// ends the queue.
	end := len(bases)
	var lastSize int64
	for i := range bases {
		if i > 0 && bases[i] != bases[i-1]+q.perFile {
			end = i // a hole: later files are not part of the prefix
			break
		}
		f, err := q.fsys.Open(paths[i])
		if err != nil {
			return fmt.Errorf("consumequeue: open %s: %w", paths[i], err)
		}
		size, err := f.Size()
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("consumequeue: size of %s: %w", paths[i], err)
		}
		if size > fileBytes {
			_ = f.Close()
			return fmt.Errorf("%w: %s holds %d bytes, more than %d entries (EntriesPerFile changed?)",
				ErrCorrupt, paths[i], size, q.perFile)
		}
		q.segs = append(q.segs, newSegment(bases[i], paths[i], f))
		lastSize = size
		if size < fileBytes {
			end = i + 1
			break
		}
	}
	if end < len(bases) {
		for _, p := range paths[end:] {
			if err := q.fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("consumequeue: remove %s after a short file: %w", p, err)
			}
		}
		if err := q.fsys.SyncDir(q.dir); err != nil {
			return fmt.Errorf("consumequeue: sync %s: %w", q.dir, err)
		}
	}
	if len(q.segs) == 0 {
		return nil // empty queue: min = max = written = 0
	}
	tail := q.segs[len(q.segs)-1]
	if cut := lastSize % EntrySize; cut != 0 {
		lastSize -= cut
		if err := tail.f.Truncate(lastSize); err != nil {
			return fmt.Errorf("consumequeue: cut torn entry of %s: %w", tail.path, err)
		}
		if err := tail.f.Sync(); err != nil {
			return fmt.Errorf("consumequeue: sync %s: %w", tail.path, err)
		}
	}
	top := tail.base + lastSize/EntrySize
	q.written = top
	q.max.Store(top)
	q.min.Store(top)

	// MinOffset: the first real entry. Blanks only pad the front, so this
	// scan stops early unless the queue starts deep inside its first file.
	var chunk [64]Entry
	for pos := q.segs[0].base; pos < top; {
		n, err := q.read(pos, chunk[:], false)
		if err != nil {
			return fmt.Errorf("consumequeue: scan %s: %w", q.dir, err)
		}
		if i := firstReal(chunk[:n]); i >= 0 {
			q.min.Store(pos + int64(i))
			break
		}
		pos += int64(n)
	}
	off, e, ok, err := q.findLast(top)
	if err != nil {
		return fmt.Errorf("consumequeue: scan %s: %w", q.dir, err)
	}
	q.lastOff, q.last, q.hasLast = off, e, ok
	return nil
}

func firstReal(es []Entry) int {
	for i, e := range es {
		if !e.blank() {
			return i
		}
	}
	return -1
}

// findLast returns the last real entry below end, scanning back to the first
// stored entry.
func (q *Queue) findLast(end int64) (int64, Entry, bool, error) {
	q.mu.RLock()
	start := q.startLocked()
	q.mu.RUnlock()
	var chunk [64]Entry
	for hi := end; hi > start; {
		lo := max(start, hi-int64(len(chunk)))
		n, err := q.read(lo, chunk[:hi-lo], false)
		if err != nil {
			return 0, Entry{}, false, err
		}
		for i := n - 1; i >= 0; i-- {
			if !chunk[i].blank() {
				return lo + int64(i), chunk[i], true, nil
			}
		}
		hi = lo
	}
	return 0, Entry{}, false, nil
}

// fileOf returns the first logical offset of the file that holds logical.
func (q *Queue) fileOf(logical int64) int64 { return logical - logical%q.perFile }

// startLocked returns the first logical offset still stored. Must hold mu.
func (q *Queue) startLocked() int64 {
	if len(q.segs) > 0 {
		return q.segs[0].base
	}
	return q.written
}

// storeRange sets MinOffset and MaxOffset, in the order that never shows
// lock-free readers a minimum above the maximum. Must hold mu for writing.
func (q *Queue) storeRange(min, max int64) {
	if max >= q.max.Load() {
		q.max.Store(max)
		q.min.Store(min)
	} else {
		q.min.Store(min)
		q.max.Store(max)
	}
}

// MinOffset returns the first logical offset that can be read. It equals
// MaxOffset when the queue holds no readable entry. Safe for concurrent use.
func (q *Queue) MinOffset() int64 { return q.min.Load() }

// MaxOffset returns the logical offset the next Append gets: one past the
// last entry, blanks included. Safe for concurrent use. MinOffset <=
// MaxOffset holds at every moment, but two separate calls may observe
// different moments; only Truncate and a restarting Append lower them.
func (q *Queue) MaxOffset() int64 { return q.max.Load() }

// Last returns the last real (non-blank) entry and its logical offset, and
// false when the queue has none. The entry may lie below MinOffset when
// retention has passed it. Safe for concurrent use.
func (q *Queue) Last() (logical int64, e Entry, ok bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.lastOff, q.last, q.hasLast
}

// Read copies the entries from logical on into dst, up to len(dst) and up to
// MaxOffset, crossing files as needed, and returns how many it copied.
// Buffered (unflushed) entries are included. It returns 0, nil when logical
// >= MaxOffset, an error wrapping ErrBelowMin when logical < MinOffset, and
// ErrClosed after Close. dst belongs to the caller. Safe for concurrent use,
// including with Append, Flush, Truncate and DeleteBefore: the result is a
// consistent view of the queue at some moment during the call.
func (q *Queue) Read(logical int64, dst []Entry) (int, error) {
	return q.read(logical, dst, true)
}

// read is Read; with checkMin false it reads any stored entry, blanks and
// entries below MinOffset included.
func (q *Queue) read(logical int64, dst []Entry, checkMin bool) (int, error) {
	for {
		q.mu.RLock()
		if q.closed {
			q.mu.RUnlock()
			return 0, ErrClosed
		}
		lo := q.startLocked()
		if checkMin {
			lo = q.min.Load()
		}
		if logical < lo {
			q.mu.RUnlock()
			return 0, fmt.Errorf("%w: %d < %d in %s", ErrBelowMin, logical, lo, q.dir)
		}
		top := q.max.Load()
		if logical >= top || len(dst) == 0 {
			q.mu.RUnlock()
			return 0, nil
		}
		n := min(int64(len(dst)), top-logical)
		end := logical + n
		// The buffered part is copied under the lock.
		for i := max(logical, q.written); i < end; i++ {
			dst[i-logical] = getEntry(q.buf[(i-q.written)*EntrySize:])
		}
		diskEnd := min(end, q.written)
		if diskEnd <= logical {
			q.mu.RUnlock()
			return int(n), nil
		}
		// The stored part is read without the lock, holding a reference on
		// each file so retention cannot close it under us.
		gen := q.gen.Load()
		var arr [4]*segment
		segs := arr[:0]
		first := (logical - q.segs[0].base) / q.perFile
		last := (diskEnd - 1 - q.segs[0].base) / q.perFile
		for _, s := range q.segs[first : last+1] {
			s.ref()
			segs = append(segs, s)
		}
		q.mu.RUnlock()
		err := q.readFiles(segs, logical, diskEnd, dst)
		for _, s := range segs {
			_ = s.unref() // a close error of a retired read-only file changes nothing
		}
		if q.gen.Load() != gen {
			continue // Truncate or a reset changed the entries under us: read again
		}
		if err != nil {
			return 0, err
		}
		return int(n), nil
	}
}

// readFiles reads entries [from, to) from segs (which cover them, in order)
// into dst[0:].
func (q *Queue) readFiles(segs []*segment, from, to int64, dst []Entry) error {
	sp := q.scratch.Get().(*[scratchBytes]byte)
	defer q.scratch.Put(sp)
	buf := sp[:]
	pos := from
	for _, s := range segs {
		segEnd := min(to, s.base+q.perFile)
		for pos < segEnd {
			n := min(segEnd-pos, int64(len(buf)/EntrySize))
			b := buf[:n*EntrySize]
			if _, err := s.f.ReadAt(b, (pos-s.base)*EntrySize); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("consumequeue: read %s at entry %d: %w", s.path, pos, err)
			}
			out := dst[pos-from : pos-from+n]
			for i := range out {
				out[i] = getEntry(b[i*EntrySize:])
			}
			pos += n
		}
	}
	return nil
}

// entryAt reads the stored entry at logical, whether or not it is below
// MinOffset.
func (q *Queue) entryAt(logical int64) (Entry, error) {
	var a [1]Entry
	n, err := q.read(logical, a[:], false)
	if err != nil {
		return Entry{}, err
	}
	if n != 1 {
		return Entry{}, fmt.Errorf("consumequeue: entry %d of %s vanished", logical, q.dir)
	}
	return a[0], nil
}

// Append stores e at logical offset logical. It must be called from the
// writer goroutine only (not concurrently with itself or Truncate).
//
//   - logical == MaxOffset: e is appended.
//   - logical < MaxOffset: a replay after recovery. It returns nil when the
//     stored entry equals e, an error wrapping ErrMismatch when it differs,
//     and one wrapping ErrBelowMin when logical < MinOffset. Nothing changes.
//   - logical > MaxOffset: when the queue is empty (MinOffset == MaxOffset)
//     it restarts at logical: blanks pad the file that holds logical up to
//     it and MinOffset becomes logical. The old files, which hold nothing
//     readable, are removed first unless they hold only blanks and logical
//     lies in the file MaxOffset is in. Otherwise it returns an error
//     wrapping ErrGap.
//
// An entry with Size <= 0 or Offset < 0, or whose Offset is not above the
// last entry's, is refused with ErrInvalid.
//
// The entry is buffered in memory and visible to Read at once; it is durable
// after the next successful Flush. Append allocates nothing and does no I/O
// except when the buffer is written (every 205 entries, and at file
// boundaries, one WriteAt into the page cache, plus a file creation at a
// boundary), when a replay reads the entry from its file, and when a restart
// removes old files. An error means e was not appended; the call may be
// retried.
func (q *Queue) Append(logical int64, e Entry) error {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	if q.closed {
		return ErrClosed
	}
	top := q.max.Load()
	if logical < top {
		return q.replay(logical, e)
	}
	if e.Size <= 0 || e.Offset < 0 {
		return fmt.Errorf("%w: %v at %d in %s", ErrInvalid, e, logical, q.dir)
	}
	if logical == top {
		if q.hasLast && e.Offset <= q.last.Offset {
			return fmt.Errorf("%w: %v at %d does not follow %v at %d in %s",
				ErrInvalid, e, logical, q.last, q.lastOff, q.dir)
		}
		return q.appendLocked(e)
	}
	if q.min.Load() != top {
		return fmt.Errorf("%w: %d > %d in %s", ErrGap, logical, top, q.dir)
	}
	if logical > maxLogical {
		return fmt.Errorf("%w: %d is too large", ErrGap, logical)
	}
	return q.restart(logical, e)
}

// replay checks a re-appended entry against the stored one. Must hold wmu.
func (q *Queue) replay(logical int64, e Entry) error {
	if min := q.min.Load(); logical < min {
		return fmt.Errorf("%w: replay of %d < %d in %s", ErrBelowMin, logical, min, q.dir)
	}
	got, err := q.entryAt(logical)
	if err != nil {
		return err
	}
	if got != e {
		return fmt.Errorf("%w: at %d in %s: stored %v, replayed %v", ErrMismatch, logical, q.dir, got, e)
	}
	return nil
}

// appendLocked adds e at MaxOffset. Must hold wmu.
func (q *Queue) appendLocked(e Entry) error {
	top := q.max.Load()
	if n := top - q.written; n == bufEntries || (n > 0 && q.fileOf(top) != q.fileOf(q.written)) {
		if err := q.spill(); err != nil {
			return err
		}
	}
	q.mu.Lock()
	off := (top - q.written) * EntrySize
	putEntry(q.buf[off:off+EntrySize], e)
	// MaxOffset first, so that lock-free readers never see Min > Max.
	q.max.Store(top + 1)
	if e.blank() {
		if q.min.Load() == top {
			q.min.Store(top + 1) // padding keeps an empty queue empty
		}
	} else {
		q.lastOff, q.last, q.hasLast = top, e, true
	}
	q.mu.Unlock()
	return nil
}

// spill writes the buffer to its file, creating the file if needed. Must
// hold wmu. On error the buffer is kept and the next spill writes it again.
func (q *Queue) spill() error {
	n := q.max.Load() - q.written
	if n == 0 {
		return nil
	}
	base := q.fileOf(q.written)
	q.mu.RLock()
	var s *segment
	if k := len(q.segs); k > 0 && q.segs[k-1].base == base {
		s = q.segs[k-1]
	}
	q.mu.RUnlock()
	if s == nil {
		p := path.Join(q.dir, fileName(base))
		f, err := q.fsys.Create(p)
		if err != nil {
			return fmt.Errorf("consumequeue: create %s: %w", p, err)
		}
		s = newSegment(base, p, f)
		q.dirDirty = true
		q.mu.Lock()
		q.segs = append(q.segs, s)
		q.mu.Unlock()
	}
	if _, err := s.f.WriteAt(q.buf[:n*EntrySize], (q.written-base)*EntrySize); err != nil {
		return fmt.Errorf("consumequeue: write %s: %w", s.path, err)
	}
	s.dirty = true
	q.mu.Lock()
	q.written += n
	q.mu.Unlock()
	return nil
}

// restart makes an empty queue start at logical and appends e there. Must
// hold wmu.
func (q *Queue) restart(logical int64, e Entry) error {
	base := q.fileOf(logical)
	// Blanks may only precede real entries (the binary searches rely on
	// it), so a queue that still stores real entries, or whose next file is
	// not the one of logical, starts over in the file of logical.
	if q.hasLast || base != q.fileOf(q.max.Load()) {
		q.maintMu.Lock()
		err := q.reset(base)
		q.maintMu.Unlock()
		if err != nil {
			return err
		}
	}
	// The same file: pad with blanks through the buffer (rare: once per
	// queue).
	for q.max.Load() < logical {
		if err := q.appendLocked(Entry{}); err != nil {
			return err
		}
	}
	return q.appendLocked(e)
}

// reset drops every file of an empty queue and moves it to base. Must hold
// wmu and maintMu. The removals become durable with the next Flush, together
// with the creation of the new file.
func (q *Queue) reset(base int64) error {
	q.mu.RLock()
	old := append([]*segment(nil), q.segs...)
	q.mu.RUnlock()
	// Remove the names first: if that fails the queue is unchanged, and a
	// crash can never leave old files in front of a gap before new ones.
	for _, s := range old {
		if err := q.fsys.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("consumequeue: remove %s: %w", s.path, err)
		}
		q.dirDirty = true
	}
	q.mu.Lock()
	q.gen.Add(1)
	q.segs = nil
	q.written = base
	q.storeRange(base, base)
	q.lastOff, q.last, q.hasLast = 0, Entry{}, false
	q.mu.Unlock()
	var err error
	for _, s := range old {
		if e := s.unref(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Flush writes the buffered entries, fsyncs every file written since the
// last Flush and syncs the directory if files were created or removed. When
// it returns nil, every entry appended before the call is durable. It may be
// called from any goroutine, concurrently with Append (which does not wait
// for the fsync) and with readers. After a failed fsync it returns an error
// wrapping ErrFailed, now and on every later call.
func (q *Queue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	return q.flushLocked()
}

// flushLocked is Flush. Must hold flushMu.
func (q *Queue) flushLocked() error {
	q.wmu.Lock()
	if q.closed {
		q.wmu.Unlock()
		return ErrClosed
	}
	if q.failed != nil {
		q.wmu.Unlock()
		return q.failed
	}
	if err := q.spill(); err != nil {
		q.wmu.Unlock()
		return err
	}
	syncs := q.syncBuf[:0]
	q.mu.RLock()
	for _, s := range q.segs {
		if s.dirty {
			s.dirty = false
			s.ref()
			syncs = append(syncs, s)
		}
	}
	q.mu.RUnlock()
	dirSync := q.dirDirty
	q.dirDirty = false
	q.wmu.Unlock()

	var err error
	for _, s := range syncs {
		if err == nil {
			if e := s.f.Sync(); e != nil {
				err = fmt.Errorf("consumequeue: sync %s: %w", s.path, e)
			}
		}
		_ = s.unref()
	}
	clear(syncs)
	q.syncBuf = syncs[:0]
	if err == nil && dirSync {
		if e := q.fsys.SyncDir(q.dir); e != nil {
			err = fmt.Errorf("consumequeue: sync %s: %w", q.dir, e)
		}
	}
	if err != nil {
		q.failed = fmt.Errorf("%w: %w", ErrFailed, err)
		return q.failed
	}
	return nil
}

// Close flushes the queue and closes it; files still being read are closed
// when their readers finish. Later calls of any method but MinOffset,
// MaxOffset and Last return ErrClosed. Close is idempotent: a second call
// returns nil.
func (q *Queue) Close() error { return q.close(true) }

func (q *Queue) close(flush bool) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.wmu.Lock()
	closed := q.closed
	q.wmu.Unlock()
	if closed {
		return nil
	}
	var err error
	if flush {
		err = q.flushLocked()
	}
	q.wmu.Lock()
	q.maintMu.Lock()
	q.mu.Lock()
	q.closed = true
	q.gen.Add(1)
	segs := q.segs
	q.segs = nil
	q.mu.Unlock()
	q.maintMu.Unlock()
	q.wmu.Unlock()
	for _, s := range segs {
		if e := s.unref(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Remove closes the queue without flushing and deletes its directory and
// every file in it, durably (topic deletion). It may be called on a closed
// queue.
func (q *Queue) Remove() error {
	err := q.close(false)
	if e := q.fsys.RemoveAll(q.dir); e != nil {
		return fmt.Errorf("consumequeue: remove %s: %w", q.dir, e)
	}
	if e := q.fsys.SyncDir(path.Dir(q.dir)); e != nil {
		return fmt.Errorf("consumequeue: sync %s: %w", path.Dir(q.dir), e)
	}
	return err
}
