package epoch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"
	"sync"

	"github.com/petrelmq/petrel/internal/vfs"
)

// EntrySize is the size of one entry in the history file.
const EntrySize = 16

var (
	// ErrCorrupt is returned (wrapped) by Open when the file holds a bad
	// entry before its last one, or whole entries out of order: damage no
	// crash during an Append can cause.
	ErrCorrupt = errors.New("epoch: corrupt history file")
	// ErrBroken is returned (wrapped) by Append and TruncateAfter once a
	// write or sync of the file has failed: the file's content is unknown
	// until it is opened again.
	ErrBroken = errors.New("epoch: history unusable after a failed write; reopen it")
	// ErrOrder is returned (wrapped) by Append for an entry that does not
	// follow the last one: its epoch must be higher, its start no lower.
	ErrOrder = errors.New("epoch: entry out of order")
	// ErrInvalid is returned (wrapped) by Append for an entry that can never
	// be valid: epoch 0 (it means "no epoch") or a negative start.
	ErrInvalid = errors.New("epoch: invalid entry")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry says that master epoch Epoch wrote the commit log from offset Start
// on (up to the next entry's start).
type Entry struct {
	Epoch uint32
	Start int64
}

// History is the epoch history of one log, kept in memory and in its file.
type History struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex
	entries []Entry
	exists  bool  // the file exists (Open found it or Append created it)
	dirSync bool  // the file's directory entry is known durable
	broken  error // the failure that made the file's content unknown
}

// Open reads the history at path on fsys. A missing file is an empty
// history (the file is created by the first Append). A torn last entry, the
// trace of an Append a crash cut short, is cut off the file so that the next
// Append starts at a whole entry. Open then fsyncs the file and its
// directory: the entries it read may be writes of a killed process that
// were never synced, and no later crash may take away an entry it reported.
func Open(fsys vfs.FS, p string) (*History, error) {
	h := &History{fs: fsys, path: p}
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("epoch: open %s: %w", p, err)
	}
	defer f.Close()
	h.exists = true
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("epoch: size of %s: %w", p, err)
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); n != len(data) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("epoch: read %s: %w", p, err)
	}
	entries, good, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrCorrupt, p, err)
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			return nil, fmt.Errorf("epoch: cut torn tail of %s at %d: %w", p, good, err)
		}
	}
	// What was read may be writes a killed process never synced: make it
	// durable, file and directory entry, so that no later crash takes away
	// an entry this History reported.
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("epoch: sync %s: %w", p, err)
	}
	if err := fsys.SyncDir(path.Dir(p)); err != nil {
		return nil, fmt.Errorf("epoch: sync directory of %s: %w", p, err)
	}
	h.dirSync = true
	h.entries = entries
	return h, nil
}

// parse decodes the entries of a history file. good is the length of the
// whole valid entries; the bytes after them are a torn last entry. An error
// describes damage a torn append cannot explain.
func parse(data []byte) (entries []Entry, good int, err error) {
	n := len(data) / EntrySize
	for i := range n {
		e, ok := decodeEntry(data[i*EntrySize : (i+1)*EntrySize])
		if !ok {
			if i == n-1 && len(data)%EntrySize == 0 {
				break // the last slot, whole but torn
			}
			return nil, 0, fmt.Errorf("entry %d (byte %d): checksum mismatch", i, i*EntrySize)
		}
		if err := check(entries, e); err != nil {
			return nil, 0, fmt.Errorf("entry %d (byte %d): %w", i, i*EntrySize, err)
		}
		entries = append(entries, e)
	}
	return entries, len(entries) * EntrySize, nil
}

func encodeEntry(e Entry) [EntrySize]byte {
	var b [EntrySize]byte
	binary.BigEndian.PutUint32(b[0:4], e.Epoch)
	binary.BigEndian.PutUint64(b[4:12], uint64(e.Start))
	binary.BigEndian.PutUint32(b[12:16], crc32.Checksum(b[0:12], castagnoli))
	return b
}

func decodeEntry(b []byte) (Entry, bool) {
	if crc32.Checksum(b[0:12], castagnoli) != binary.BigEndian.Uint32(b[12:16]) {
		return Entry{}, false
	}
	return Entry{Epoch: binary.BigEndian.Uint32(b[0:4]), Start: int64(binary.BigEndian.Uint64(b[4:12]))}, true
}

// check tells whether e may follow entries.
func check(entries []Entry, e Entry) error {
	if e.Epoch == 0 {
		return fmt.Errorf("%w: epoch 0 is reserved for \"no epoch\"", ErrInvalid)
	}
	if e.Start < 0 {
		return fmt.Errorf("%w: epoch %d has negative start offset %d", ErrInvalid, e.Epoch, e.Start)
	}
	if len(entries) == 0 {
		return nil
	}
	last := entries[len(entries)-1]
	if e.Epoch <= last.Epoch {
		return fmt.Errorf("%w: epoch %d is not above the last epoch %d", ErrOrder, e.Epoch, last.Epoch)
	}
	if e.Start < last.Start {
		return fmt.Errorf("%w: epoch %d starts at %d, below the start %d of the last epoch %d",
			ErrOrder, e.Epoch, e.Start, last.Start, last.Epoch)
	}
	return nil
}

// Entries returns a copy of the entries, oldest first.
func (h *History) Entries() []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Entry(nil), h.entries...)
}

// Last returns the newest entry, or false when the history is empty.
func (h *History) Last() (Entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) == 0 {
		return Entry{}, false
	}
	return h.entries[len(h.entries)-1], true
}

// Append adds e after the last entry and makes it durable before it
// returns: e.Epoch must be above the last epoch (ErrOrder), e.Start no lower
// than the last start (ErrOrder; equal starts record an epoch that wrote
// nothing), e.Epoch ≥ 1 and e.Start ≥ 0 (ErrInvalid). On a failed write or
// sync the History is broken (see ErrBroken) and e is not in Entries; after
// a crash, Open may or may not find it.
func (h *History) Append(e Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.broken != nil {
		return fmt.Errorf("%w (append epoch %d): %w", ErrBroken, e.Epoch, h.broken)
	}
	if err := check(h.entries, e); err != nil {
		return err
	}
	if err := h.write(e); err != nil {
		h.broken = err
		return err
	}
	h.entries = append(h.entries, e)
	return nil
}

// write puts e at the end of the file and syncs it (and, when it creates the
// file, its directory). Must hold h.mu.
func (h *History) write(e Entry) error {
	f, err := h.fs.Open(h.path)
	if errors.Is(err, fs.ErrNotExist) && !h.exists {
		if err := vfs.MkdirAllDurable(h.fs, path.Dir(h.path)); err != nil {
			return fmt.Errorf("epoch: create directory of %s: %w", h.path, err)
		}
		f, err = h.fs.Create(h.path)
	}
	if err != nil {
		return fmt.Errorf("epoch: open %s to append epoch %d: %w", h.path, e.Epoch, err)
	}
	h.exists = true
	b := encodeEntry(e)
	off := int64(len(h.entries)) * EntrySize
	if _, err := f.WriteAt(b[:], off); err != nil {
		_ = f.Close()
		return fmt.Errorf("epoch: write epoch %d at byte %d of %s: %w", e.Epoch, off, h.path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("epoch: sync %s after appending epoch %d: %w", h.path, e.Epoch, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("epoch: close %s: %w", h.path, err)
	}
	// The file's directory entry must be durable too, also when Open found
	// the file: a crash may have left a file whose creation was never
	// synced (the Append that created it failed after the create).
	if !h.dirSync {
		if err := h.fs.SyncDir(path.Dir(h.path)); err != nil {
			return fmt.Errorf("epoch: sync directory of %s: %w", h.path, err)
		}
		h.dirSync = true
	}
	return nil
}

// EpochAt returns the epoch whose range holds offset off: that of the last
// entry starting at or before off. The last epoch's range has no end here
// (the History does not know the log's end). It returns false when the
// history is empty or off lies below the first entry's start.
func (h *History) EpochAt(off int64) (uint32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := h.floor(off)
	if i < 0 {
		return 0, false
	}
	return h.entries[i].Epoch, true
}

// floor returns the index of the last entry starting at or before off, or
// -1. Must hold h.mu.
func (h *History) floor(off int64) int {
	lo, hi := 0, len(h.entries) // the answer + 1 is in [lo, hi]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.entries[m].Start <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// EndOf returns where epoch ends: the start of the entry after it, or leo
// (the log's end) when it is the last epoch. It returns false when epoch is
// not in the history, so a caller checking that a peer's log is a prefix of
// this one never mistakes an unknown epoch for a known one.
func (h *History) EndOf(epoch uint32, leo int64) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lo, hi := 0, len(h.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.entries[m].Epoch < epoch {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(h.entries) || h.entries[lo].Epoch != epoch {
		return 0, false
	}
	if lo+1 < len(h.entries) {
		return h.entries[lo+1].Start, true
	}
	return leo, true
}

// TruncateAfter drops the entries starting at or after off, cutting them
// off the file and syncing it before it returns. Nothing to drop changes
// nothing. On a failed cut or sync the History is broken (see ErrBroken) and
// keeps its entries; after a crash, Open finds either the old or the new
// entries.
func (h *History) TruncateAfter(off int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0 // the entries starting below off
	if off > 0 {
		n = h.floor(off-1) + 1
	}
	if n == len(h.entries) {
		return nil
	}
	if h.broken != nil {
		return fmt.Errorf("%w (truncate after %d): %w", ErrBroken, off, h.broken)
	}
	if err := h.cut(n); err != nil {
		h.broken = err
		return err
	}
	h.entries = h.entries[:n:n]
	return nil
}

// cut truncates the file to n entries and syncs it. Must hold h.mu.
func (h *History) cut(n int) error {
	f, err := h.fs.Open(h.path)
	if err != nil {
		return fmt.Errorf("epoch: open %s to drop entries from %d on: %w", h.path, n, err)
	}
	if err := f.Truncate(int64(n) * EntrySize); err != nil {
		_ = f.Close()
		return fmt.Errorf("epoch: cut %s to %d entries: %w", h.path, n, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("epoch: sync %s after cutting it to %d entries: %w", h.path, n, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("epoch: close %s: %w", h.path, err)
	}
	return nil
}

// DivergencePoint is where a follower's log stops being a prefix of the
// leader's, as the leader sees it (Kafka's diverging epoch, RocketMQ's
// consistent point): epoch is the largest epoch in leader (sorted entries)
// that is ≤ followerLastEpoch, the epoch of the follower's last byte (0
// when the leader has none), and end = min(the end of that epoch on the
// leader — the next entry's start, or leaderLEO for the last — and
// followerLEO). With no shared epoch, end is the leader's first entry's
// start (capped at followerLEO): no byte below it is the leader's to vouch
// for; an empty leader history shares nothing (0, 0). The follower cuts
// its log at CutPoint. Pure.
func DivergencePoint(leader []Entry, leaderLEO int64, followerLastEpoch uint32, followerLEO int64) (epoch uint32, end int64) {
	if len(leader) == 0 {
		return 0, 0
	}
	end = leaderLEO
	for _, e := range leader {
		if e.Epoch > followerLastEpoch {
			end = e.Start
			break
		}
		epoch = e.Epoch
	}
	return epoch, max(0, min(end, followerLEO))
}

// CutPoint is where a follower cuts its log on a leader's diverging answer
// (epoch, end from DivergencePoint): min(end, the end of epoch in the
// follower's own history — the start of its first entry above epoch, or
// followerLEO when there is none). Bytes of a later follower epoch below
// the leader's end of epoch are not the leader's, so the cut goes below
// them too (Kafka's follower takes the same minimum). Pure.
func CutPoint(follower []Entry, followerLEO int64, epoch uint32, end int64) int64 {
	own := followerLEO
	for _, e := range follower {
		if e.Epoch > epoch {
			own = e.Start
			break
		}
	}
	return max(0, min(end, own))
}
