package timer

// Fired timers of a master, on its slave.
//
// A slave indexes the timer records it replicates like its master does,
// but it does not deliver them: its master does, and the deliveries reach
// the slave with the rest of the log. The master tells its slaves which
// timers it has passed (delivered, rolled forward or skipped as
// cancelled): the broker's state stream carries, per Fire batch, the
// commit-log offsets of the timer records (EncodeFiredBatch; the offsets
// are the same on master and slave, whose logs are byte-identical). The
// slave keeps them in a FiredSet until its own timer store offers those
// timers: a batch made only of fired timers is passed (so the slave's
// wheel moves on behind its master's), any other batch waits. A slave
// that becomes the master skips the fired timers and delivers only the
// others.
//
// File "fired" in the set's directory: records of
//
//	0  4  count   uint32  offsets in the record (1..maxFiredBatch)
//	4  4  crc     uint32  CRC-32C of the offsets
//	8  …  offsets int64 each, big-endian
//
// appended and fsynced by Add. Open reads them until the first record
// that does not check (a torn tail, cut). Taken offsets stay in the file
// until a compaction rewrites it (temporary file, fsync, rename, fsync
// directory) with the offsets not taken plus those taken since the timer
// store's last checkpoint: a taken timer whose passing a crash undid is
// offered again after a restart and must still be known as fired.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"path"
	"sync"

	"github.com/petrelmq/petrel/internal/vfs"
)

// ErrBadFired: a fired batch does not decode.
var ErrBadFired = errors.New("timer: fired batch does not decode")

const (
	firedVersion = 1
	// maxFiredBatch bounds the offsets of one fired batch (a Fire batch
	// is at most Options.FireBatch, 256 by default).
	maxFiredBatch = 1 << 16
	firedName     = "fired"
	// firedCompactMin: the file is not rewritten below this many offsets.
	firedCompactMin = 4096
)

// EncodeFiredBatch returns the state-stream payload naming the timers a
// master passed: version 1 (u8), count (u32), then the commit-log offsets
// of their timer records (int64 each), all big-endian.
func EncodeFiredBatch(offsets []int64) []byte {
	b := make([]byte, 5, 5+8*len(offsets))
	b[0] = firedVersion
	binary.BigEndian.PutUint32(b[1:], uint32(len(offsets)))
	for _, o := range offsets {
		b = binary.BigEndian.AppendUint64(b, uint64(o))
	}
	return b
}

// DecodeFiredBatch parses EncodeFiredBatch's bytes. It allocates no more
// than the input implies and never panics.
func DecodeFiredBatch(b []byte) ([]int64, error) {
	if len(b) < 5 || b[0] != firedVersion {
		return nil, fmt.Errorf("%w: no header", ErrBadFired)
	}
	n := binary.BigEndian.Uint32(b[1:])
	if n > maxFiredBatch || uint64(len(b)-5) != 8*uint64(n) {
		return nil, fmt.Errorf("%w: %d offsets in %d bytes", ErrBadFired, n, len(b))
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(b[5+8*i:]))
	}
	return out, nil
}

// FiredSet is a slave's durable set of the timers its master has fired and
// its own timer store has not passed yet, by the commit-log offset of the
// timer record. Safe for concurrent use.
type FiredSet struct {
	fsys vfs.FS
	dir  string
	log  *slog.Logger

	mu       sync.Mutex
	live     map[int64]struct{} // fired, not taken
	taken    map[int64]struct{} // taken, still in the file
	file     vfs.File
	size     int64 // bytes of the file
	inFile   int   // offsets in the file
	added    int   // offsets added since the last compaction
	failed   error
	compacts int
}

// OpenFiredSet loads the set kept in dir (created if missing).
func OpenFiredSet(fsys vfs.FS, dir string, log *slog.Logger) (*FiredSet, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FiredSet{fsys: fsys, dir: dir, log: log.With("component", "timer_fired"),
		live: make(map[int64]struct{}), taken: make(map[int64]struct{})}
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		return nil, fmt.Errorf("timer: create %s: %w", dir, err)
	}
	p := path.Join(dir, firedName)
	data, ok, err := vfs.ReadFile(fsys, p)
	if err != nil {
		return nil, fmt.Errorf("timer: read %s: %w", p, err)
	}
	var file vfs.File
	if ok {
		file, err = fsys.Open(p)
	} else {
		file, err = fsys.Create(p)
	}
	if err != nil {
		return nil, fmt.Errorf("timer: open %s: %w", p, err)
	}
	off := 0
	for off < len(data) {
		offs, n := readFiredRecord(data[off:])
		if n == 0 {
			break
		}
		for _, o := range offs {
			f.live[o] = struct{}{}
		}
		f.inFile += len(offs)
		off += n
	}
	if off < len(data) {
		f.log.Warn("cutting a torn tail of the fired-timer file", "at", off, "dropped_bytes", len(data)-off)
		if err := file.Truncate(int64(off)); err == nil {
			err = file.Sync()
		}
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("timer: cut %s: %w", p, err)
		}
	}
	if !ok {
		if err := fsys.SyncDir(dir); err != nil {
			file.Close()
			return nil, fmt.Errorf("timer: sync %s: %w", dir, err)
		}
	}
	f.file, f.size = file, int64(off)
	return f, nil
}

func appendFiredRecord(b []byte, offs []int64) []byte {
	start := len(b)
	b = append(b, make([]byte, 8)...)
	for _, o := range offs {
		b = binary.BigEndian.AppendUint64(b, uint64(o))
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(offs)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+8:], castagnoli))
	return b
}

// readFiredRecord returns the offsets of the record at the start of b and
// its size, or n 0 when b does not start with a whole, intact record.
func readFiredRecord(b []byte) (offs []int64, n int) {
	if len(b) < 8 {
		return nil, 0
	}
	c := binary.BigEndian.Uint32(b)
	if c == 0 || c > maxFiredBatch || uint64(len(b)-8) < 8*uint64(c) {
		return nil, 0
	}
	body := b[8 : 8+8*int(c)]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0
	}
	offs = make([]int64, c)
	for i := range offs {
		offs[i] = int64(binary.BigEndian.Uint64(body[8*i:]))
	}
	return offs, 8 + len(body)
}

// Add records offsets as fired, durably: it returns once they are on
// disk. Offsets already known are skipped. A failed write is sticky (the
// set must be opened again).
func (f *FiredSet) Add(offsets []int64) error {
	if len(offsets) > maxFiredBatch {
		for len(offsets) > 0 {
			n := min(len(offsets), maxFiredBatch)
			if err := f.Add(offsets[:n]); err != nil {
				return err
			}
			offsets = offsets[n:]
		}
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	var fresh []int64
	for _, o := range offsets {
		_, l := f.live[o]
		_, t := f.taken[o]
		if !l && !t {
			fresh = append(fresh, o)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	rec := appendFiredRecord(nil, fresh)
	if _, err := f.file.WriteAt(rec, f.size); err != nil {
		return f.failLocked(err)
	}
	if err := f.file.Sync(); err != nil {
		return f.failLocked(err)
	}
	f.size += int64(len(rec))
	f.inFile += len(fresh)
	f.added += len(fresh)
	for _, o := range fresh {
		f.live[o] = struct{}{}
	}
	return nil
}

func (f *FiredSet) failLocked(err error) error {
	f.failed = fmt.Errorf("%w: fired-timer file: %w", ErrFailed, err)
	f.log.Error("writing the fired-timer file failed; reopen to recover", "err", err)
	return f.failed
}

// TakeAll takes the offsets of due (the timers the store offers) if every
// one of them is fired, and reports whether it did: a slave passes the
// batch then, and waits otherwise.
func (f *FiredSet) TakeAll(due []Entry) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range due {
		if _, ok := f.live[e.Offset]; !ok {
			return false
		}
	}
	for _, e := range due {
		delete(f.live, e.Offset)
		f.taken[e.Offset] = struct{}{}
	}
	return true
}

// TakeFired takes the fired ones of due and returns the others, in order
// (a promoted slave delivers those).
func (f *FiredSet) TakeFired(due []Entry) []Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rest []Entry
	for _, e := range due {
		if _, ok := f.live[e.Offset]; ok {
			delete(f.live, e.Offset)
			f.taken[e.Offset] = struct{}{}
			continue
		}
		rest = append(rest, e)
	}
	return rest
}

// Len is the number of fired timers not taken yet.
func (f *FiredSet) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

// Has reports whether the timer record at offset is fired and not taken.
func (f *FiredSet) Has(offset int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[offset]
	return ok
}

// NeedsCompact reports whether the file is worth rewriting: it holds at
// least firedCompactMin offsets and more than twice those not taken, or
// as many offsets were added since the last compaction as are not taken
// (so that offsets never taken, of timers the slave does not hold, are
// dropped by Compact's floor before they pile up).
func (f *FiredSet) NeedsCompact() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFile >= firedCompactMin && (f.inFile > 2*len(f.live) || f.added >= len(f.live))
}

// Compact rewrites the file without the offsets taken before checkpoint
// ran, and without any offset below floor (the oldest commit-log offset
// still stored: a timer record below it is gone, and its timer is passed
// whether fired or not). checkpoint must make the timer store's passing of
// every timer taken so far durable (Store.Checkpoint). Offsets added or
// taken meanwhile are kept.
func (f *FiredSet) Compact(checkpoint func() error, floor int64) error {
	f.mu.Lock()
	if f.failed != nil {
		f.mu.Unlock()
		return f.failed
	}
	done := make([]int64, 0, len(f.taken))
	for o := range f.taken {
		done = append(done, o)
	}
	f.mu.Unlock()
	if err := checkpoint(); err != nil {
		return fmt.Errorf("timer: checkpoint before compacting the fired-timer file: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	for _, o := range done {
		delete(f.taken, o)
	}
	keep := make([]int64, 0, len(f.live)+len(f.taken))
	for o := range f.live {
		if o < floor {
			delete(f.live, o)
			continue
		}
		keep = append(keep, o)
	}
	for o := range f.taken {
		if o < floor {
			delete(f.taken, o)
			continue
		}
		keep = append(keep, o)
	}
	var data []byte
	for i := 0; i < len(keep); i += maxFiredBatch {
		data = appendFiredRecord(data, keep[i:min(i+maxFiredBatch, len(keep))])
	}
	if err := vfs.WriteFileAtomic(f.fsys, f.dir, firedName, data); err != nil {
		return f.failLocked(err)
	}
	f.file.Close()
	file, err := f.fsys.Open(path.Join(f.dir, firedName))
	if err != nil {
		f.file = nil
		return f.failLocked(err)
	}
	f.file, f.size, f.inFile, f.added = file, int64(len(data)), len(keep), 0
	f.compacts++
	return nil
}

// Close closes the file.
func (f *FiredSet) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.file == nil {
		return nil
	}
	err := f.file.Close()
	f.file = nil
	if f.failed == nil {
		f.failed = fmt.Errorf("%w: fired-timer set closed", ErrClosed)
	}
	return err
}
