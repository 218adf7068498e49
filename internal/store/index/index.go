package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/vfs"
)

// Errors returned by the index.
var (
	// ErrClosed: the index is closed.
	ErrClosed = errors.New("index: closed")
	// ErrCorrupt (wrapped, with the file name): an index file cannot have
	// been written by this package, or a file that must be complete is not.
	// The index is derived data: the store may remove the directory and
	// rebuild it from the commit log.
	ErrCorrupt = errors.New("index: corrupt file")
	// ErrFailed (wrapped, with the cause): a write or sync failed, so what is
	// on disk is unknown; Add, Flush and Truncate refuse work until the index
	// is reopened. Queries keep working.
	ErrFailed = errors.New("index: a disk write or sync failed; reopen to recover")
	// ErrOutOfOrder: Add was given an offset below the last one added.
	// Nothing was added. After a restart, Truncate back to the replay point
	// before replaying.
	ErrOutOfOrder = errors.New("index: commit-log offset below the last one added")
	// ErrBadOffset: Add was given a negative offset. Nothing was added.
	ErrBadOffset = errors.New("index: negative commit-log offset")
	// ErrTooManyEntries: a file is full (or its time span is used up) and
	// every entry in it has the offset being added, so a new file would take
	// the same name. Only possible when one message has more keys than
	// EntriesPerFile. Nothing was added.
	ErrTooManyEntries = errors.New("index: more entries at one commit-log offset than a file holds")
	// ErrInvalidOptions (wrapped, naming the field): an Options field is out
	// of range.
	ErrInvalidOptions = errors.New("index: invalid options")
)

// Options configure an Index. Zero fields take the defaults given. They
// apply to new files; existing files keep the sizes they were made with.
type Options struct {
	// SlotsPerFile is the number of hash slots of a file. Default 1<<20,
	// at most 1<<28.
	SlotsPerFile int
	// EntriesPerFile is the number of entries a file holds before the next
	// one starts. Default 4<<20, at most 1<<28.
	EntriesPerFile int
}

func (o *Options) setDefaults() error {
	if o.SlotsPerFile == 0 {
		o.SlotsPerFile = 1 << 20
	}
	if o.EntriesPerFile == 0 {
		o.EntriesPerFile = 4 << 20
	}
	if o.SlotsPerFile < 1 || o.SlotsPerFile > maxSlots {
		return fmt.Errorf("%w: SlotsPerFile %d is outside [1, %d]", ErrInvalidOptions, o.SlotsPerFile, maxSlots)
	}
	if o.EntriesPerFile < 1 || o.EntriesPerFile > maxEntries {
		return fmt.Errorf("%w: EntriesPerFile %d is outside [1, %d]", ErrInvalidOptions, o.EntriesPerFile, maxEntries)
	}
	return nil
}

const (
	// bufEntries bounds the entries of the active file kept in memory before
	// they are written (not synced) to the file.
	bufEntries = 1 << 16
	// chunkEntries is how many entries a load reads per ReadAt; the scratch
	// buffer also holds chunkEntries*entryBytes/slotBytes slots when sealing.
	chunkEntries = 4096
)

// segment is one index file. Sealed segments never change (until Truncate
// makes the newest of them active again). Header fields are guarded by
// Index.mu; hdrSeq and hdrSlot belong to the writer.
type segment struct {
	path string
	base int64 // offset of the first entry
	f    vfs.File
	refs int // guarded by Index.mu: 1 while listed, +1 per query using it

	slotCount  uint32
	entryCap   uint32
	count      uint32
	entriesCRC uint32 // sealed segments: CRC of entries 1..count
	baseTime   int64
	minTime    int64
	maxTime    int64
	endPhys    int64

	hdrSeq  uint64 // seq of the newest durable header
	hdrSlot int    // copy holding it; a new file starts at 1 so its first header goes to 0
}

func (s *segment) entriesOff() int64 { return entriesOffset(s.slotCount) }

// Index is a message-key index. Add, Flush, Truncate, DeleteBefore and
// Close are serialised on a writer lock (normally one dispatcher goroutine
// calls them); Query and MaxPhysOffset may be called from any goroutine at
// any time and never wait for disk writes or syncs.
type Index struct {
	fs   vfs.FS
	dir  string
	opts Options

	// wmu serialises the writer operations; it may be held across I/O.
	// Queries never take it.
	wmu sync.Mutex
	// Writer-owned state (wmu).
	crc      uint32 // CRC of the active file's entries 1..act.count
	dirty    bool   // the active file has entries its durable header does not cover
	dirDirty bool   // files were created since the last SyncDir
	failed   error  // sticky ErrFailed
	scratch  []byte
	hdrBuf   []byte

	// mu guards what queries read; it is never held across I/O.
	mu      sync.Mutex
	closed  bool
	gen     uint64     // bumped by Truncate: a query that saw it change retries
	sealed  []*segment // oldest first
	act     *segment   // file being written, nil when none
	slots   []uint32   // hash slots of act
	written uint32     // act's entries 1..written are in the file
	buf     []byte     // act's entries written+1..act.count, encoded

	maxPhys atomic.Int64
}

// Open opens the index in dir, creating dir if needed, and recovers it: the
// newest file's entries are checked against its header CRC and its slots are
// rebuilt from them; a newest file no flush completed on is removed. Open
// returns an error wrapping ErrCorrupt when a file is damaged beyond what a
// crash can leave.
func Open(fsys vfs.FS, dir string, opts Options) (*Index, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, fmt.Errorf("index: create dir %s: %w", dir, err)
	}
	x := &Index{
		fs:      fsys,
		dir:     dir,
		opts:    opts,
		scratch: make([]byte, chunkEntries*entryBytes),
		hdrBuf:  make([]byte, hdrUsedBytes),
		buf:     make([]byte, 0, min(bufEntries, opts.EntriesPerFile)*entryBytes),
	}
	x.maxPhys.Store(-1)
	if err := x.recover(); err != nil {
		for _, s := range x.sealed {
			s.f.Close()
		}
		if x.act != nil {
			x.act.f.Close()
		}
		return nil, err
	}
	return x, nil
}

// MaxPhysOffset returns the offset of the last entry added (or recovered),
// -1 when the index is empty. Safe for concurrent use.
func (x *Index) MaxPhysOffset() int64 { return x.maxPhys.Load() }

// Add indexes key of topic for the record at physOffset stored at
// storeTimestamp (ms). Offsets must not decrease from one call to the next;
// several keys of one record share its offset. Add makes no syscall and no
// allocation except when a file fills (it is sealed and the next one
// created) or every 64Ki entries (they are written, not synced). Entries
// are durable after Flush.
func (x *Index) Add(topic string, key []byte, physOffset int64, storeTimestamp int64) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if x.failed != nil {
		return x.failed
	}
	if physOffset < 0 {
		return ErrBadOffset
	}
	if physOffset < x.maxPhys.Load() {
		return ErrOutOfOrder
	}
	a := x.act
	if a == nil || a.count >= a.entryCap || !deltaFits(storeTimestamp, a.baseTime) {
		if err := x.roll(physOffset, storeTimestamp); err != nil {
			return err
		}
		a = x.act
	}
	h := hashKey(topic, key)

	x.mu.Lock()
	n := a.count + 1
	slot := &x.slots[h%uint32(len(x.slots))]
	at := len(x.buf)
	x.buf = x.buf[:at+entryBytes]
	e := x.buf[at:]
	putEntry(e, entry{hash: h, phys: physOffset, delta: int32(storeTimestamp - a.baseTime), prev: *slot})
	*slot = n
	a.count = n
	a.endPhys = physOffset
	a.minTime = min(a.minTime, storeTimestamp)
	a.maxTime = max(a.maxTime, storeTimestamp)
	x.mu.Unlock()

	x.crc = crc32.Update(x.crc, castagnoli, e)
	x.dirty = true
	x.maxPhys.Store(physOffset)
	if len(x.buf) == cap(x.buf) {
		return x.writeBuffered()
	}
	return nil
}

// Flush makes everything added so far durable: it writes the buffered
// entries and a new header of the active file, syncs it, and syncs the
// directory when files were created. Sealed files were synced when sealed.
func (x *Index) Flush() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return ErrClosed
	}
	return x.flush()
}

func (x *Index) flush() error {
	if x.failed != nil {
		return x.failed
	}
	if x.act != nil && x.dirty {
		if err := x.writeBuffered(); err != nil {
			return err
		}
		if err := x.writeHeader(x.act, headerOf(x.act, false, x.crc)); err != nil {
			return err
		}
		x.dirty = false
	}
	if x.dirDirty {
		if err := x.fs.SyncDir(x.dir); err != nil {
			return x.fail(fmt.Errorf("sync dir %s: %w", x.dir, err))
		}
		x.dirDirty = false
	}
	return nil
}

// Close flushes and closes the index. Queries in flight finish on the files
// they hold; later ones get ErrClosed. Close is idempotent.
func (x *Index) Close() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return nil
	}
	err := x.flush()
	x.mu.Lock()
	x.closed = true
	segs := x.sealed
	if x.act != nil {
		segs = append(segs, x.act)
	}
	x.sealed, x.act, x.slots = nil, nil, nil
	x.mu.Unlock()
	for _, s := range segs {
		x.release(s)
	}
	return err
}

// fail records a failed write or sync; the index refuses writes from now on.
func (x *Index) fail(err error) error {
	x.failed = fmt.Errorf("%w: %w", ErrFailed, err)
	return x.failed
}

// release drops one reference to s and closes its file with the last one.
func (x *Index) release(s *segment) {
	x.mu.Lock()
	s.refs--
	last := s.refs == 0
	x.mu.Unlock()
	if last {
		s.f.Close()
	}
}

// writeBuffered writes the buffered entries of the active file (no sync).
func (x *Index) writeBuffered() error {
	if len(x.buf) == 0 {
		return nil
	}
	a := x.act
	if _, err := a.f.WriteAt(x.buf, a.entriesOff()+int64(x.written)*entryBytes); err != nil {
		return x.fail(fmt.Errorf("write entries of %s: %w", a.path, err))
	}
	x.mu.Lock()
	x.written = a.count
	x.buf = x.buf[:0]
	x.mu.Unlock()
	return nil
}

// headerOf describes s as it is now. Only the writer calls it.
func headerOf(s *segment, sealed bool, entriesCRC uint32) header {
	return header{
		sealed:     sealed,
		slotCount:  s.slotCount,
		entryCap:   s.entryCap,
		count:      s.count,
		entriesCRC: entriesCRC,
		beginPhys:  s.base,
		endPhys:    s.endPhys,
		baseTime:   s.baseTime,
		minTime:    s.minTime,
		maxTime:    s.maxTime,
	}
}

// writeHeader writes h as the next header of s, into the copy that does not
// hold the newest durable one, and syncs the file.
func (x *Index) writeHeader(s *segment, h header) error {
	h.seq = s.hdrSeq + 1
	slot := 1 - s.hdrSlot
	h.encode(x.hdrBuf)
	if _, err := s.f.WriteAt(x.hdrBuf, int64(slot)*hdrCopyBytes); err != nil {
		return x.fail(fmt.Errorf("write header of %s: %w", s.path, err))
	}
	if err := s.f.Sync(); err != nil {
		return x.fail(fmt.Errorf("sync %s: %w", s.path, err))
	}
	s.hdrSeq, s.hdrSlot = h.seq, slot
	return nil
}

// roll seals the active file (if any) and starts a new one whose first
// entry will be at off, stored at ts.
func (x *Index) roll(off, ts int64) error {
	last := x.act
	if last == nil && len(x.sealed) > 0 {
		last = x.sealed[len(x.sealed)-1]
	}
	if last != nil && last.base == off {
		return ErrTooManyEntries
	}
	if x.act != nil {
		if err := x.seal(); err != nil {
			return err
		}
	}
	s := &segment{
		path:      path.Join(x.dir, fileName(off)),
		base:      off,
		refs:      1,
		slotCount: uint32(x.opts.SlotsPerFile),
		entryCap:  uint32(x.opts.EntriesPerFile),
		baseTime:  ts,
		minTime:   ts,
		maxTime:   ts,
		endPhys:   off,
		hdrSlot:   1,
	}
	f, err := x.fs.Create(s.path)
	if err != nil {
		return fmt.Errorf("index: create %s: %w", s.path, err)
	}
	if err := f.Preallocate(fileBytes(s.slotCount, s.entryCap)); err != nil {
		f.Close()
		x.fs.Remove(s.path) // best effort: an unflushed file is removed by Open anyway
		return fmt.Errorf("index: preallocate %s: %w", s.path, err)
	}
	s.f = f
	x.dirDirty = true
	x.crc = 0
	x.dirty = true

	x.mu.Lock()
	if cap(x.slots) >= int(s.slotCount) {
		x.slots = x.slots[:s.slotCount]
		clear(x.slots)
	} else {
		x.slots = make([]uint32, s.slotCount)
	}
	x.act = s
	x.written = 0
	x.buf = x.buf[:0]
	x.mu.Unlock()
	return nil
}

// seal writes the active file's remaining entries, its slot table and a
// sealed header, syncs it and moves it to the sealed list.
func (x *Index) seal() error {
	a := x.act
	if err := x.writeBuffered(); err != nil {
		return err
	}
	// The slots change only under wmu, which we hold: no lock needed to read.
	per := len(x.scratch) / slotBytes
	for i := 0; i < len(x.slots); i += per {
		part := x.slots[i:min(i+per, len(x.slots))]
		b := x.scratch[:len(part)*slotBytes]
		for j, v := range part {
			b[j*slotBytes] = byte(v >> 24)
			b[j*slotBytes+1] = byte(v >> 16)
			b[j*slotBytes+2] = byte(v >> 8)
			b[j*slotBytes+3] = byte(v)
		}
		if _, err := a.f.WriteAt(b, headerBytes+int64(i)*slotBytes); err != nil {
			return x.fail(fmt.Errorf("write slots of %s: %w", a.path, err))
		}
	}
	if err := x.writeHeader(a, headerOf(a, true, x.crc)); err != nil {
		return err
	}
	x.dirty = false
	x.mu.Lock()
	a.entriesCRC = x.crc
	x.sealed = append(x.sealed, a)
	x.act = nil
	x.mu.Unlock()
	return nil
}
