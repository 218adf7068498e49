package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/vfs"
)

// A truncation (TruncateTo) drops the tail of the commit log above an
// offset: an old master that rejoins its group as a slave holds records of
// its last epoch that the new master never had, and cuts them before it
// copies the new master's log (replication.md §2.7). A slave that becomes
// master cuts a record a replicated chunk left torn at the end
// (PrepareMaster).

// TruncateMarker is the file, in the data directory, that records a
// truncation in progress.
const TruncateMarker = "truncate-in-progress"

// MaxTruncatedIDs bounds Truncated.MsgIDs.
const MaxTruncatedIDs = 1000

// ErrBelowCommitPoint: TruncateTo was asked to cut below the commit point
// (records a failover may not take away, which consumers may have read);
// nothing was changed.
var ErrBelowCommitPoint = errors.New("store: a truncation may not cut below the commit point")

// ErrTruncateOffset: TruncateTo was given an offset that is neither a
// record boundary nor the log's end.
var ErrTruncateOffset = errors.New("store: a truncation must cut at a record boundary")

// Truncated says what a truncation dropped.
type Truncated struct {
	// From is where the log ends now; Bytes the bytes dropped above it
	// (a torn record at the end included).
	From  int64
	Bytes int64
	// Messages is the number of whole records dropped (blank padding not
	// counted); MsgIDs their message ids (UNIQ_KEY, or the broker-made
	// offset id of a record without one), oldest first, at most
	// MaxTruncatedIDs of them.
	Messages int
	MsgIDs   []string
}

// TruncatedID is the id a truncation reports for rec (Truncated.MsgIDs):
// the client's UNIQ_KEY, or the broker-made offset id.
func TruncatedID(rec message.Record) string {
	if u, ok := rec.Property(message.PropertyUniqKey); ok && len(u) > 0 {
		return string(u)
	}
	return message.OffsetID(rec.StoreHost(), rec.PhysicalOffset())
}

// TruncateTo drops the commit log above off, which must be a record
// boundary (or a segment start, or the log's end) at or above the commit
// point (ErrBelowCommitPoint, ErrTruncateOffset: nothing changed). The
// consume-queue and index entries of the dropped records go with them, and
// the queues' next offsets are recomputed from the consume queues and the
// records left above the dispatch point, so the next record of a queue gets
// the offset after the last one kept. off == Written() changes nothing.
//
// The commit point here is CommitPoint() once it bounds dispatch, else the
// durable end (everything durable is readable then).
//
// Crash safety: TruncateMarker (off and its checksum, synced) is written
// before any file is cut and removed after the last; Open finishes a
// truncation whose marker it finds and drops a torn marker. After a crash
// at any file operation the store opens either as before or as truncated.
//
// Concurrency: as ResetAt, TruncateTo stops the dispatcher, waits for the
// methods in flight and holds new ones off while it cuts; replicated
// appends must have stopped (the slave's fetch loop calls it between
// sessions). On an error after the old files were closed the store serves
// nothing and must be closed.
func (s *Store) TruncateTo(off int64) (Truncated, error) {
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	return s.truncate(off, false)
}

// PrepareMaster readies a slave's store to take message appends as master:
// it cuts a torn record at the end of the log (a replicated chunk may end
// inside one) with TruncateTo's machinery — allowed above the commit point
// only — and recomputes every queue's next offset from its consume queue
// and the records above the dispatch point, read from disk, never from
// what the writer learnt in memory (rocketmq #7689): the next put to a
// queue gets the offset after its last record in the log. cut is where the
// log ends afterwards. Replicated appends must have stopped.
func (s *Store) PrepareMaster() (cut int64, err error) {
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	if cut, ok, err := s.prepareInPlace(); ok || err != nil {
		return cut, err
	}
	res, err := s.truncate(0, true)
	if err != nil {
		return 0, err
	}
	return res.From, nil
}

// prepareInPlace is PrepareMaster for a log with no torn tail, without
// reopening it (reopening every consume queue costs about as much as an
// Open, which a promotion should not wait for): with new puts held off it
// reads the queue offsets of the records above the dispatch point from
// the log and makes the writer ask for every queue's next offset again.
// ok false: there is a torn tail to cut. Holds resetMu.
func (s *Store) prepareInPlace() (cut int64, ok bool, err error) {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return 0, false, ErrClosed
	}
	sc, err := s.scanTail(s.clog.Written())
	if err != nil {
		return 0, false, err
	}
	if sc.whole != s.clog.Written() {
		return 0, false, nil
	}
	if floor := s.truncateFloor(); sc.whole < floor {
		return 0, false, fmt.Errorf("%w: the log ends at %d, the commit point is %d", ErrBelowCommitPoint, sc.whole, floor)
	}
	// followUndispatched reads up to the durable end: the whole log, once
	// the last replicated bytes are synced.
	if s.clog.Durable() != sc.whole {
		return 0, false, nil
	}
	if err := s.followUndispatched(s.disp.Load().Dispatched()); err != nil {
		return 0, false, err
	}
	s.clog.ForgetQueueOffsets()
	return sc.whole, true, nil
}

// truncate is TruncateTo, or with prepare PrepareMaster (off is then the
// end of the last whole record, and the log is reopened even when nothing
// is cut). Holds resetMu.
func (s *Store) truncate(off int64, prepare bool) (Truncated, error) {
	s.gate.RLock()
	if s.closed {
		s.gate.RUnlock()
		return Truncated{}, ErrClosed
	}
	// Checked first with the store serving: a refusal disturbs nothing.
	res, err := s.checkTruncate(off, prepare)
	s.gate.RUnlock()
	if err != nil || res.Bytes == 0 && !prepare {
		return res, err
	}
	// The dispatcher first, outside the gate: its listeners call into the
	// store.
	if d := s.disp.Load(); d != nil {
		if err := d.Close(); err != nil {
			s.log.Warn("dispatcher stopped with an error before the truncation", "err", err)
		}
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return Truncated{}, ErrClosed
	}
	// Again: puts may have come in between (the answer is the same unless
	// the commit point passed off meanwhile).
	res, err = s.checkTruncate(off, prepare)
	var errs []error
	errs = append(errs, s.clog.Close(), s.queues.close(), s.index.idx.Close())
	if cerr := errors.Join(errs...); cerr != nil && !errors.Is(cerr, commitlog.ErrClosed) {
		s.log.Warn("closing the log before the truncation", "err", cerr)
	}
	if err == nil && res.Bytes > 0 {
		if werr := writeMarker(s.cfg.FS, s.cfg.Dir, TruncateMarker, truncateMagic, res.From); werr != nil {
			// Nothing was cut: the log is served as it was. A marker that
			// reached the disk anyway would make the next Open cut.
			err = fmt.Errorf("store: truncate to %d: %w", res.From, werr)
			if rerr := removeMarker(s.cfg.FS, s.cfg.Dir, TruncateMarker); rerr != nil {
				s.log.Warn("cannot remove the marker of a truncation that did not begin; the next open finishes it", "from", res.From, "err", rerr)
			}
		} else if ferr := finishTruncate(s.cfg.FS, s.cfg.Dir, s.cfg.SegmentBytes, res.From); ferr != nil {
			return Truncated{}, fmt.Errorf("store: truncate to %d: %w", res.From, ferr)
		}
	}
	s.undispatchedNext = nil
	if oerr := s.openLog(true); oerr != nil {
		return Truncated{}, errors.Join(err, fmt.Errorf("store: reopen after the truncation to %d: %w", res.From, oerr))
	}
	if err != nil {
		return Truncated{}, err
	}
	if res.Bytes > 0 {
		s.log.Warn("commit log truncated: the records above the cut are gone", "from", res.From, "bytes", res.Bytes,
			"messages", res.Messages, "commit_point", s.CommitPoint())
	}
	return res, nil
}

// truncateFloor is the lowest offset a truncation may cut at: the commit
// point once it bounds dispatch, else the durable end.
func (s *Store) truncateFloor() int64 {
	if s.cpEnabled.Load() {
		return s.commitPoint.Load()
	}
	return s.clog.Durable()
}

// checkTruncate validates a cut at off (with prepare: at the end of the
// last whole record) and says what it drops. Holds gate.
func (s *Store) checkTruncate(off int64, prepare bool) (Truncated, error) {
	written := s.clog.Written()
	if prepare {
		sc, err := s.scanTail(written)
		if err != nil {
			return Truncated{}, err
		}
		off = sc.whole
	}
	if off < 0 || off > written {
		return Truncated{}, fmt.Errorf("%w: %d is outside the log [%d, %d]", ErrTruncateOffset, off, s.clog.MinOffset(), written)
	}
	if floor := s.truncateFloor(); off < floor {
		return Truncated{}, fmt.Errorf("%w: a cut at %d, the commit point is %d", ErrBelowCommitPoint, off, floor)
	}
	if off == written {
		return Truncated{From: off}, nil
	}
	sc, err := s.scanTail(off)
	if err != nil {
		return Truncated{}, err
	}
	if !sc.boundary {
		return Truncated{}, fmt.Errorf("%w: %d lies inside a record", ErrTruncateOffset, off)
	}
	res := sc.res
	res.From, res.Bytes = off, written-off
	return res, nil
}

// tailScan is what scanTail found.
type tailScan struct {
	whole    int64     // the end of the last whole record (a torn one starts there)
	boundary bool      // the offset asked about is a record boundary
	res      Truncated // the whole records at or past it (Messages, MsgIDs)
}

// scanTail reads the records of the log from the dispatch point (a record
// boundary at or below every offset a truncation may cut at) to the
// written end. Holds gate.
func (s *Store) scanTail(off int64) (tailScan, error) {
	written := s.clog.Written()
	pos := max(s.disp.Load().Dispatched(), s.clog.MinOffset())
	sc := tailScan{boundary: pos == off}
	var hdr [8]byte
	var buf []byte
	for pos < written && pos+8 <= written {
		segEnd := s.clog.SegmentStart(pos) + s.cfg.SegmentBytes
		if err := s.clog.ReadAt(hdr[:], pos); err != nil {
			return tailScan{}, fmt.Errorf("store: read the log at %d: %w", pos, err)
		}
		total := int64(binary.BigEndian.Uint32(hdr[0:]))
		if binary.BigEndian.Uint32(hdr[4:]) == message.BlankMagic {
			if pos+total != segEnd {
				return tailScan{}, fmt.Errorf("store: the blank padding at %d does not reach its segment's end %d", pos, segEnd)
			}
			if segEnd > written {
				break // torn padding
			}
			pos = segEnd
		} else {
			if total < message.MinRecordLen || pos+total > segEnd {
				return tailScan{}, fmt.Errorf("store: no record at %d (length %d)", pos, total)
			}
			if pos+total > written {
				break // a torn record
			}
			if int64(cap(buf)) < total {
				buf = make([]byte, total)
			}
			rec := buf[:total]
			if err := s.clog.ReadAt(rec, pos); err != nil {
				return tailScan{}, fmt.Errorf("store: read the log at %d: %w", pos, err)
			}
			if n, err := message.Check(rec); err != nil || int64(n) != total || message.Record(rec).PhysicalOffset() != pos {
				return tailScan{}, fmt.Errorf("store: the record at %d does not check (%v)", pos, err)
			}
			if pos >= off {
				sc.res.Messages++
				if len(sc.res.MsgIDs) < MaxTruncatedIDs {
					sc.res.MsgIDs = append(sc.res.MsgIDs, TruncatedID(message.Record(rec)))
				}
			}
			pos += total
		}
		if pos == off {
			sc.boundary = true
		}
	}
	sc.whole = pos
	return sc, nil
}

// finishTruncate does the file work of a truncation to off whose marker is
// on disk, then removes the marker: each step may be repeated. The
// checkpoint goes no higher than off, the commit log's segments above off
// go and the one holding it is cut there; the consume queues and the index
// are cut by the recovery that follows (Open cuts them back to the
// checkpoint's dispatch point and replays the log from there).
func finishTruncate(fsys vfs.FS, dir string, segBytes, off int64) error {
	cp, err := dispatch.ReadCheckpoint(fsys, dir)
	if err == nil && (cp.Dispatched > off || cp.LogFlushed > off) {
		// A lower dispatch point than the consume queues' (never the case
		// with a commit point at or below off) fails the digest check:
		// recovery then rebuilds them.
		cp.Dispatched, cp.LogFlushed = min(cp.Dispatched, off), min(cp.LogFlushed, off)
		if err := dispatch.WriteCheckpoint(fsys, dir, cp); err != nil {
			return err
		}
	}
	if err := cutSegments(fsys, path.Join(dir, "commitlog"), segBytes, off); err != nil {
		return err
	}
	return removeMarker(fsys, dir, TruncateMarker)
}

// cutSegments makes off the end of the segment files in dir: later
// segments are removed, the one holding off is cut there and extended
// with zeros again (recovery reads them as the log's end).
func cutSegments(fsys vfs.FS, dir string, segBytes, off int64) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	segStart := off - off%segBytes
	removed := false
	for _, name := range names {
		start, err := strconv.ParseInt(name, 10, 64)
		if err != nil || name != commitlog.SegmentName(start) || start <= segStart {
			continue
		}
		if err := fsys.Remove(path.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove segment %s: %w", name, err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("sync %s: %w", dir, err)
		}
	}
	p := path.Join(dir, commitlog.SegmentName(segStart))
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("size of %s: %w", p, err)
	}
	if size <= off-segStart && size >= segBytes {
		return nil
	}
	if err := f.Truncate(off - segStart); err != nil {
		return fmt.Errorf("cut %s at %d: %w", p, off-segStart, err)
	}
	// Preallocated again as the log's segments are; a full disk leaves it
	// short, which opens the same.
	if err := f.Preallocate(segBytes); err != nil && !errors.Is(err, vfs.ErrNoSpace) {
		return fmt.Errorf("re-extend %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// finishTruncateAtOpen completes, at Open, a truncation whose marker is on
// disk, and removes a torn marker (nothing was cut yet when it was
// written).
func (s *Store) finishTruncateAtOpen() error {
	off, ok, err := readMarker(s.cfg.FS, s.cfg.Dir, TruncateMarker, truncateMagic)
	if err != nil || !ok {
		return err
	}
	if off < 0 {
		s.log.Warn("dropping a torn truncation marker: the truncation had not begun")
		return removeMarker(s.cfg.FS, s.cfg.Dir, TruncateMarker)
	}
	s.log.Warn("finishing a commit-log truncation that a crash interrupted", "from", off)
	if err := finishTruncate(s.cfg.FS, s.cfg.Dir, s.cfg.SegmentBytes, off); err != nil {
		return fmt.Errorf("store: finish the truncation to %d: %w", off, err)
	}
	return nil
}
