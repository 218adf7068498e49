package store

import (
	"errors"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// truncFixture is an old master's store: 60 records of two queues over
// several segments, the commit point after the 20th (the slaves had only
// those), and the cut planned after the 40th.
type truncFixture struct {
	cfg  Config
	fs   *vfs.MemFS
	s    *Store
	msgs []*message.Message
	cp   int64 // the commit point
	off  int64 // where the test cuts: the 40th record's start
}

func newTruncFixture(t *testing.T) *truncFixture {
	t.Helper()
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	cfg.CommitPoint = true
	s := mustOpen(t, cfg)
	f := &truncFixture{cfg: cfg, fs: fsys, s: s}
	for i := range 60 {
		m := newMsg("T", int32(i%2), fmt.Sprintf("m%02d-%s", i, strings.Repeat("p", 300)), fmt.Sprintf("k%d", i))
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		f.msgs = append(f.msgs, m)
	}
	if s.Written() < 3*cfg.SegmentBytes {
		t.Fatalf("the fixture's log ends at %d: fewer than three segments", s.Written())
	}
	f.cp = f.msgs[20].PhysicalOffset
	s.SetCommitPoint(f.cp)
	waitVisible(t, s)
	// Closed and opened again, so that everything is on disk (a crash in
	// the truncation loses nothing written before it).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f.s = mustOpen(t, cfg)
	t.Cleanup(func() { f.s.Close() })
	f.s.SetCommitPoint(f.cp)
	waitVisible(t, f.s)
	f.off = f.msgs[40].PhysicalOffset
	return f
}

// checkTruncated asserts s holds exactly msgs[:n] (the log ends at the
// n-th record's start), and that the next record of each queue gets the
// queue offset after its last kept one and lands at the log's end.
func checkTruncated(t *testing.T, s *Store, msgs []*message.Message, n int) {
	t.Helper()
	end := msgs[n].PhysicalOffset
	if w := s.Written(); w != end {
		t.Fatalf("the log ends at %d, want %d", w, end)
	}
	for _, m := range msgs[n:] {
		key := m.Property(message.PropertyKeys)
		if key == "" {
			continue
		}
		rs, err := s.QueryByKey("T", key, 0, 1<<62, 10)
		if err != nil || len(rs) != 0 {
			t.Fatalf("a dropped record's key still finds %d records (%v)", len(rs), err)
		}
	}
	s.SetCommitPoint(s.Written())
	waitVisible(t, s)
	for qid := range int32(2) {
		want := int64(0)
		for _, m := range msgs[:n] {
			if m.QueueID == qid {
				want = m.QueueOffset + 1
			}
		}
		if got := s.MaxOffset("T", qid); got != want {
			t.Fatalf("T/%d has max offset %d after the truncation, want %d", qid, got, want)
		}
		for off := range want {
			m, st := getOne(t, s, "T", qid, off)
			if m == nil {
				t.Fatalf("T/%d@%d is gone after the truncation (%v)", qid, off, st)
			}
		}
		nm := newMsg("T", qid, fmt.Sprintf("new-%d", qid), fmt.Sprintf("knew%d", qid))
		if err := s.Put(nm); err != nil {
			t.Fatal(err)
		}
		if nm.QueueOffset != want {
			t.Fatalf("the next put to T/%d got queue offset %d, want %d (dense, no reuse)", qid, nm.QueueOffset, want)
		}
	}
	s.SetCommitPoint(s.Written())
	waitVisible(t, s)
	for qid := range int32(2) {
		rs, err := s.QueryByKey("T", fmt.Sprintf("knew%d", qid), 0, 1<<62, 10)
		if err != nil || len(rs) != 1 {
			t.Fatalf("the new record of T/%d is found %d times by key (%v)", qid, len(rs), err)
		}
	}
}

// TestTruncateTo: a cut below the commit point or off a record boundary is
// refused with nothing changed; a cut at a boundary above it drops the log
// above, reports the dropped records' ids, and the queues go on from their
// last kept record, also across a reopen.
func TestTruncateTo(t *testing.T) {
	f := newTruncFixture(t)
	s := f.s
	w := s.Written()
	for _, tc := range []struct {
		off  int64
		want error
	}{
		{f.msgs[10].PhysicalOffset, ErrBelowCommitPoint},
		{f.cp - 1, ErrBelowCommitPoint},
		{f.msgs[30].PhysicalOffset + 1, ErrTruncateOffset},
		{f.msgs[30].PhysicalOffset - 7, ErrTruncateOffset},
		{w + 1, ErrTruncateOffset},
		{-1, ErrTruncateOffset},
	} {
		if _, err := s.TruncateTo(tc.off); !errors.Is(err, tc.want) {
			t.Fatalf("TruncateTo(%d): %v, want %v", tc.off, err, tc.want)
		}
		if s.Written() != w {
			t.Fatalf("a refused TruncateTo(%d) moved the log's end to %d", tc.off, s.Written())
		}
	}
	if res, err := s.TruncateTo(w); err != nil || res.Bytes != 0 || res.Messages != 0 {
		t.Fatalf("TruncateTo(the end): %+v, %v; want nothing dropped", res, err)
	}
	res, err := s.TruncateTo(f.off)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range f.msgs[40:] {
		ids = append(ids, m.Property(message.PropertyUniqKey))
	}
	if res.From != f.off || res.Bytes != w-f.off || res.Messages != 20 || !slices.Equal(res.MsgIDs, ids) {
		t.Fatalf("TruncateTo(%d) = %+v, want From %d, Bytes %d, 20 messages %v", f.off, res, f.off, w-f.off, ids)
	}
	if _, err := f.fs.Stat(path.Join(f.cfg.Dir, TruncateMarker)); err == nil {
		t.Fatal("the truncation marker is still there")
	}
	if cp := s.CommitPoint(); cp != f.cp {
		t.Fatalf("the commit point moved to %d, want %d", cp, f.cp)
	}
	// Reopened before anything else, it is still cut there.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f.s = mustOpen(t, f.cfg)
	checkTruncated(t, f.s, f.msgs, 40)
}

// TestTruncateAtSegmentStartAndBounds: a cut at a segment start (the
// previous segment ends with blank padding) works, and MsgIDs is bounded.
func TestTruncateAtSegmentStart(t *testing.T) {
	f := newTruncFixture(t)
	n := -1
	for i, m := range f.msgs {
		if i > 21 && m.PhysicalOffset%f.cfg.SegmentBytes == 0 {
			n = i
			break
		}
	}
	if n < 0 {
		t.Fatal("no record of the fixture starts a segment")
	}
	if _, err := f.s.TruncateTo(f.msgs[n].PhysicalOffset); err != nil {
		t.Fatal(err)
	}
	checkTruncated(t, f.s, f.msgs, n)
}

// TestTruncateCrashAtEveryFileOperation: a power loss at any file
// operation of TruncateTo leaves a store that opens either as it was or as
// truncated, never in between, and never with the marker left.
func TestTruncateCrashAtEveryFileOperation(t *testing.T) {
	sawBefore, sawCut := 0, 0
	for n := 1; ; n++ {
		f := newTruncFixture(t)
		oldWritten := f.s.Written()
		var ops atomic.Int32
		var crashed *vfs.MemFS
		rng := mrand.New(mrand.NewSource(int64(n)))
		f.fs.InjectError(func(op vfs.Op, p string) error {
			if ops.Add(1) == int32(n) {
				if n%2 == 0 {
					crashed = f.fs.CrashClone(vfs.CrashOptions{})
				} else {
					crashed = f.fs.CrashClone(vfs.CrashOptions{Rand: rng})
				}
			}
			return nil
		})
		_, err := f.s.TruncateTo(f.off)
		f.fs.InjectError(nil)
		if err != nil {
			t.Fatalf("op %d: %v", n, err)
		}
		if crashed == nil {
			if n < 6 {
				t.Fatalf("the truncation did only %d file operations", n-1)
			}
			t.Logf("crashed at each of %d file operations: %d opened as before, %d as truncated", n-1, sawBefore, sawCut)
			if sawBefore == 0 || sawCut == 0 {
				t.Fatalf("no crash opened as before (%d) or none as truncated (%d)", sawBefore, sawCut)
			}
			return
		}
		cfg := f.cfg
		cfg.FS = crashed
		s, err := Open(cfg)
		if err != nil {
			t.Fatalf("crash at op %d: open: %v", n, err)
		}
		switch w := s.Written(); w {
		case oldWritten:
			sawBefore++
			checkTruncated(t, s, append(slices.Clone(f.msgs), &message.Message{PhysicalOffset: oldWritten}), 60)
		case f.off:
			sawCut++
			checkTruncated(t, s, f.msgs, 40)
		default:
			t.Fatalf("crash at op %d: the store opens with its log ending at %d: neither %d (before) nor %d (truncated)", n, w, oldWritten, f.off)
		}
		if _, err := crashed.Stat(path.Join(cfg.Dir, TruncateMarker)); err == nil {
			t.Fatalf("crash at op %d: the truncation marker is still there after Open", n)
		}
		s.Close()
	}
}

// TestPrepareMaster: a slave holding records above its commit point and a
// torn record at its end (a replicated chunk cut inside it) becomes
// master: PrepareMaster cuts the torn record, and the next put of every
// queue gets the offset after the last record the log holds of it — also
// when the slave restarted first (nothing in memory) and when its commit
// point was enabled at run time rather than by its config.
func TestPrepareMaster(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfgCP   bool // commit point by config (else EnableCommitPoint)
		restart bool
		torn    int64 // bytes of the 46th record the slave got
	}{
		{"config", true, false, 30},
		{"config-restarted", true, true, 30},
		{"enabled-at-run-time", false, false, 30},
		{"no-torn-tail", true, false, 0},
		{"no-torn-tail-enabled-at-run-time", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			master := mustOpen(t, smallConfig(vfs.NewMem(), clk))
			defer master.Close()
			var msgs []*message.Message
			for i := range 50 {
				m := newMsg("T", int32(i%3), fmt.Sprintf("m%02d-%s", i, strings.Repeat("q", 200)), fmt.Sprintf("k%d", i))
				if err := master.Put(m); err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			scfg := smallConfig(vfs.NewMem(), clk)
			scfg.CommitPoint = tc.cfgCP
			slave := mustOpen(t, scfg)
			defer func() { slave.Close() }()
			if !tc.cfgCP {
				slave.EnableCommitPoint()
			}
			// The slave got the first 45 records and part of the 46th; its
			// commit point covers 20.
			torn := msgs[45].PhysicalOffset + tc.torn
			shipRaw(t, master, slave, torn, rand.New(rand.NewPCG(9, 9)))
			slave.SetCommitPoint(msgs[20].PhysicalOffset)
			waitVisible(t, slave)
			if tc.restart {
				// The torn record goes with the restart already; the
				// queues' next offsets come from the log.
				if err := slave.Close(); err != nil {
					t.Fatal(err)
				}
				slave = mustOpen(t, scfg)
			}
			if slave.Written() != torn && !tc.restart {
				t.Fatalf("the slave's log ends at %d, want %d (inside a record)", slave.Written(), torn)
			}
			cut, err := slave.PrepareMaster()
			if err != nil {
				t.Fatal(err)
			}
			if cut != msgs[45].PhysicalOffset || slave.Written() != cut {
				t.Fatalf("PrepareMaster cut at %d (log ends at %d), want %d", cut, slave.Written(), msgs[45].PhysicalOffset)
			}
			for qid := range int32(3) {
				want := int64(0)
				for _, m := range msgs[:45] {
					if m.QueueID == qid {
						want = m.QueueOffset + 1
					}
				}
				nm := newMsg("T", qid, fmt.Sprintf("new-%d", qid), "")
				if err := slave.Put(nm); err != nil {
					t.Fatalf("put after PrepareMaster: %v", err)
				}
				if nm.QueueOffset != want {
					t.Fatalf("T/%d: the first put as master got queue offset %d, want %d", qid, nm.QueueOffset, want)
				}
			}
			slave.SetCommitPoint(slave.Written())
			waitVisible(t, slave)
			for qid := range int32(3) {
				for off := range slave.MaxOffset("T", qid) {
					if m, st := getOne(t, slave, "T", qid, off); m == nil {
						t.Fatalf("T/%d@%d is not readable (%v): queue offsets are not dense", qid, off, st)
					}
				}
			}
		})
	}
}

// TestTruncateMarkerWriteFails: when the truncation marker cannot be made
// durable, nothing is cut: the store goes on serving the whole log, and a
// reopen does not cut it either.
func TestTruncateMarkerWriteFails(t *testing.T) {
	f := newTruncFixture(t)
	w := f.s.Written()
	injected := errors.New("injected: the marker's fsync fails")
	f.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.HasSuffix(p, TruncateMarker) {
			return injected
		}
		return nil
	})
	_, err := f.s.TruncateTo(f.off)
	f.fs.InjectError(nil)
	if !errors.Is(err, injected) {
		t.Fatalf("TruncateTo with a failing marker: %v, want the injected error", err)
	}
	if f.s.Written() != w {
		t.Fatalf("the log ends at %d after the failed truncation, want %d", f.s.Written(), w)
	}
	if _, err := f.fs.Stat(path.Join(f.cfg.Dir, TruncateMarker)); err == nil {
		t.Fatal("the marker of the failed truncation is still there")
	}
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	f.s = mustOpen(t, f.cfg)
	checkTruncated(t, f.s, append(slices.Clone(f.msgs), &message.Message{PhysicalOffset: w}), 60)
}
