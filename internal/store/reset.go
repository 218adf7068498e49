package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"

	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/vfs"
)

// A reset (ResetAt) drops a slave's whole log and starts it empty at the
// master's first retained byte: a slave whose log ends below its master's
// retention cannot fetch the bytes in between, so it copies the master
// again from there (replication.md §2.5).
//
// What goes: the commit log, the consume queues, the key index and the
// dispatch checkpoint (everything derived from the log). What stays: the
// metadata store (topics, groups, consumer offsets), in-memory topics, the
// replication state beside the store (the epoch history is the caller's,
// internal/ha) and whatever the broker keeps in the data directory (timer
// and pop state): those are not derived from this log's bytes; the
// master's state stream replaces them (the reset listeners are where a
// broker starts that over).
//
// Crash safety: the reset first writes ResetMarker (the start offset and
// its checksum, synced, its directory synced), then removes the files, then
// creates the empty first segment at the start, and last removes the
// marker. Open finishes a reset whose marker it finds whole and drops a
// torn one (written before anything was removed). So after a crash at any
// file operation the store opens either as before the reset or as reset.
//
// Concurrency: ResetAt may run while other goroutines use the store. It
// first stops the dispatcher (so no listener runs during the reset), then
// waits for the methods in flight and holds every new one off while it
// swaps the files; a read that starts after ResetAt returns sees the new,
// empty log. Callers must still, after ResetAt returns (a reset listener is
// the place):
//   - answer the pulls parked on the old queues: they wait for queue
//     offsets that the master's records may never reach again here, and
//     re-reading tells their consumers the queues' new min offsets (the
//     master's queue offsets, a read below them is OffsetTooSmall);
//   - rebuild what they derived from the old log (the broker's timers,
//     pop state, dedup window, and the state applier's cursor): the master's
//     state stream in the new log carries a full snapshot;
//   - re-read Written, Durable and the queues' bounds rather than trust
//     copies taken before.
// Only a slave resets: a master's log is the source of its slaves'.

// ResetMarker is the file, in the data directory, that records a reset in
// progress.
const ResetMarker = "reset-in-progress"

// ErrResetOffset: ResetAt was given an offset that cannot start a log (not
// a segment start, or negative).
var ErrResetOffset = errors.New("store: a reset must start at a segment start")

// AddResetListener registers fn, called after every ResetAt that
// succeeded with the offset the log now starts at, on ResetAt's goroutine,
// once the store serves the new log.
func (s *Store) AddResetListener(fn func(start int64)) {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	s.resetListeners = append(s.resetListeners, fn)
}

// ResetAt drops the commit log, the consume queues, the key index and the
// checkpoint, and starts the log empty at start (a multiple of
// SegmentBytes: the master's first retained byte, a segment start of the
// master's, whose segments are this store's). Afterwards Written,
// Durable and CommitLogMinOffset are start, every queue is gone (the next
// record of a queue starts it at the record's queue offset), and the commit
// point is at least start. See the notes above for what callers must do.
// On an error after the old files were closed, the store serves nothing
// and must be closed; Open finishes the reset if its marker is on disk.
func (s *Store) ResetAt(start int64) error {
	if start < 0 || start%s.cfg.SegmentBytes != 0 {
		return fmt.Errorf("%w: %d (SegmentBytes %d)", ErrResetOffset, start, s.cfg.SegmentBytes)
	}
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	s.gate.RLock()
	closed := s.closed
	s.gate.RUnlock()
	if closed {
		return ErrClosed
	}
	old := s.Written()
	// The dispatcher first, outside the gate: its listeners call into the
	// store.
	if d := s.disp.Load(); d != nil {
		if err := d.Close(); err != nil {
			s.log.Warn("dispatcher stopped with an error before the reset", "err", err)
		}
	}
	if err := s.resetLocked(start); err != nil {
		return err
	}
	s.log.Warn("commit log reset: the old records, consume queues and index are gone; the log starts empty",
		"old_end", old, "start", start)
	s.listenMu.RLock()
	fns := append([]func(int64){}, s.resetListeners...)
	s.listenMu.RUnlock()
	for _, fn := range fns {
		fn(start)
	}
	return nil
}

func (s *Store) resetLocked(start int64) error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return ErrClosed
	}
	var errs []error
	errs = append(errs, s.clog.Close(), s.queues.close(), s.index.idx.Close())
	if err := errors.Join(errs...); err != nil && !errors.Is(err, commitlog.ErrClosed) {
		s.log.Warn("closing the old log before the reset", "err", err)
	}
	if err := writeMarker(s.cfg.FS, s.cfg.Dir, ResetMarker, resetMagic, start); err != nil {
		return fmt.Errorf("store: reset to %d: %w", start, err)
	}
	if err := wipeForReset(s.cfg.FS, s.cfg.Dir, s.cfg.SegmentBytes, start); err != nil {
		return fmt.Errorf("store: reset to %d: %w", start, err)
	}
	s.undispatchedNext = nil
	if err := s.openLog(true); err != nil {
		return fmt.Errorf("store: reopen after the reset to %d: %w", start, err)
	}
	return nil
}

// finishReset completes, at Open, a reset whose marker is on disk, and
// removes a torn marker (nothing was removed yet when it was written).
func (s *Store) finishReset() error {
	start, ok, err := readMarker(s.cfg.FS, s.cfg.Dir, ResetMarker, resetMagic)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if start < 0 {
		s.log.Warn("dropping a torn reset marker: the reset had not begun")
		return removeMarker(s.cfg.FS, s.cfg.Dir, ResetMarker)
	}
	s.log.Warn("finishing a commit-log reset that a crash interrupted", "start", start)
	if err := wipeForReset(s.cfg.FS, s.cfg.Dir, s.cfg.SegmentBytes, start); err != nil {
		return fmt.Errorf("store: finish the reset to %d: %w", start, err)
	}
	return nil
}

// A marker records an operation in progress (a reset, a truncation): its
// magic, an offset and the checksum of both, synced with its directory.
const (
	resetMagic    = "PRST"
	truncateMagic = "PTRC"
	markerLen     = 16 // magic, offset (u64 BE), crc32 of both
)

func writeMarker(fsys vfs.FS, dir, name, magic string, off int64) error {
	var b [markerLen]byte
	copy(b[:], magic)
	binary.BigEndian.PutUint64(b[4:], uint64(off))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[:12]))
	p := path.Join(dir, name)
	f, err := fsys.Create(p)
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	if _, err := f.WriteAt(b[:], 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// readMarker returns the offset a marker records (ok), -1 for a torn
// marker, or ok false when there is none.
func readMarker(fsys vfs.FS, dir, name, magic string) (int64, bool, error) {
	p := path.Join(dir, name)
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: open %s: %w", p, err)
	}
	defer f.Close()
	var b [markerLen]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("store: read %s: %w", p, err)
	}
	if n < markerLen || string(b[:4]) != magic || binary.BigEndian.Uint32(b[12:]) != crc32.ChecksumIEEE(b[:12]) {
		return -1, true, nil
	}
	return int64(binary.BigEndian.Uint64(b[4:])), true, nil
}

func removeMarker(fsys vfs.FS, dir, name string) error {
	if err := fsys.Remove(path.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", name, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// wipeForReset removes what a reset drops, creates the empty segment the
// log starts at, and removes the marker: each step may be repeated.
func wipeForReset(fsys vfs.FS, dir string, segBytes, start int64) error {
	for _, sub := range []string{"commitlog", "consumequeue", "index"} {
		if err := fsys.RemoveAll(path.Join(dir, sub)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", sub, err)
		}
	}
	if err := fsys.Remove(path.Join(dir, dispatch.CheckpointFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the checkpoint: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if start > 0 {
		// An empty segment at start: the log opens empty there.
		cl := path.Join(dir, "commitlog")
		if err := vfs.MkdirAllDurable(fsys, cl); err != nil {
			return fmt.Errorf("create %s: %w", cl, err)
		}
		p := path.Join(cl, commitlog.SegmentName(start))
		f, err := fsys.Create(p)
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		// Preallocated as the log's own segments are (recovery reads the
		// zeros as the log's end); a short disk leaves it empty, which
		// opens the same.
		if err := f.Preallocate(segBytes); err != nil && !errors.Is(err, vfs.ErrNoSpace) {
			f.Close()
			return fmt.Errorf("preallocate %s: %w", p, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", p, err)
		}
		if err := fsys.SyncDir(cl); err != nil {
			return fmt.Errorf("sync %s: %w", cl, err)
		}
	}
	return removeMarker(fsys, dir, ResetMarker)
}
