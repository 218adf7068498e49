package store

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"path"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// resetFixture is a master store with several segments of two queues'
// records and a slave that holds a copy of the master's first segment:
// the master's retention is then said to have removed its first segments.
type resetFixture struct {
	cfg    Config // the slave's
	master *Store
	slave  *Store
	fs     *vfs.MemFS // the slave's
	start  int64      // the master's "first retained byte"
}

func newResetFixture(t *testing.T) *resetFixture {
	t.Helper()
	mcfg := smallConfig(vfs.NewMem(), clock.NewManual(t0))
	master := mustOpen(t, mcfg)
	t.Cleanup(func() { master.Close() })
	for i := 0; master.Written() < 5*mcfg.SegmentBytes; i++ {
		m := newMsg("T", int32(i%2), fmt.Sprintf("m%d-%s", i, string(make([]byte, 200))), fmt.Sprintf("k%d", i))
		if err := master.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	waitVisible(t, master)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	cfg.CommitPoint = true // as on every replicated broker
	slave := mustOpen(t, cfg)
	slave.SetCommitPoint(master.Written())
	shipRaw(t, master, slave, mcfg.SegmentBytes+100, rand.New(rand.NewPCG(1, 2)))
	// Closed and opened again, so that the copy is on disk (a crash in
	// the reset loses nothing written before it).
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	slave = mustOpen(t, cfg)
	t.Cleanup(func() { slave.Close() })
	slave.SetCommitPoint(master.Written())
	waitVisible(t, slave)
	if slave.MaxOffset("T", 0) == 0 {
		t.Fatal("the slave holds no record of T/0 before the reset")
	}
	return &resetFixture{cfg: cfg, master: master, slave: slave, fs: fsys, start: 3 * mcfg.SegmentBytes}
}

// firstQueueOffsets returns, per queue of T, the queue offset of the
// master's first record at or past from.
func firstQueueOffsets(t *testing.T, master *Store, from int64) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for qid := range int32(2) {
		for off := master.MinOffset("T", qid); off < master.MaxOffset("T", qid); off++ {
			m, _ := getOne(t, master, "T", qid, off)
			if m != nil && m.PhysicalOffset >= from {
				out[qid] = off
				break
			}
		}
	}
	return out
}

// checkReset asserts s is empty at start and then takes the master's log
// from start: its queues start at the master's queue offsets and serve the
// master's records; a read below them is OffsetTooSmall.
func checkReset(t *testing.T, s, master *Store, start int64) {
	t.Helper()
	if w, d, m := s.Written(), s.Durable(), s.CommitLogMinOffset(); w != start || d != start || m != start {
		t.Fatalf("after the reset: written %d, durable %d, min offset %d; want all %d", w, d, m, start)
	}
	for qid := range int32(2) {
		if got := s.MaxOffset("T", qid); got != 0 {
			t.Fatalf("queue T/%d still has max offset %d after the reset", qid, got)
		}
	}
	if rs, err := s.QueryByKey("T", "k1", 0, 1<<62, 10); err != nil || len(rs) != 0 {
		t.Fatalf("the index still finds %d records after the reset (err %v)", len(rs), err)
	}
	if _, err := s.ReadMessage(0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadMessage(0) after the reset: %v, want ErrNotFound", err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for from := s.Written(); from < master.Written(); from = s.Written() {
		b, err := master.ReadRaw(from, 1+rnd.IntN(3000))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendRaw(from, b); err != nil {
			t.Fatalf("append at %d after the reset: %v", from, err)
		}
	}
	s.SetCommitPoint(master.Written())
	waitVisible(t, s)
	first := firstQueueOffsets(t, master, start)
	for qid := range int32(2) {
		lo, hi := s.MinOffset("T", qid), s.MaxOffset("T", qid)
		if lo != first[qid] || hi != master.MaxOffset("T", qid) {
			t.Fatalf("queue T/%d is [%d, %d) after the reset, want [%d, %d)", qid, lo, hi, first[qid], master.MaxOffset("T", qid))
		}
		for off := lo; off < hi; off++ {
			got, _ := getOne(t, s, "T", qid, off)
			want, _ := getOne(t, master, "T", qid, off)
			if got == nil || string(got.Body) != string(want.Body) || got.PhysicalOffset != want.PhysicalOffset {
				t.Fatalf("T/%d@%d after the reset: %v, want the master's record at %d", qid, off, got, want.PhysicalOffset)
			}
		}
		res, err := s.GetMessages("T", qid, 0, 1, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != OffsetTooSmall || res.NextOffset != lo {
			t.Fatalf("read of T/%d at 0 after the reset: %v next %d, want OffsetTooSmall next %d", qid, res.Status, res.NextOffset, lo)
		}
		res.Release()
	}
}

// TestResetStartsEmptyAtTheMastersLogStart: ResetAt drops the log, the
// queues, the index and the checkpoint, starts empty at the given segment
// start, tells the reset listeners, takes the master's bytes from there,
// and stays so across a reopen.
func TestResetStartsEmptyAtTheMastersLogStart(t *testing.T) {
	f := newResetFixture(t)
	var heardStart atomic.Int64
	heardStart.Store(-1)
	f.slave.AddResetListener(func(start int64) {
		// The store serves the new log by now.
		if w := f.slave.Written(); w != start {
			t.Errorf("a reset listener sees written %d, want %d", w, start)
		}
		heardStart.Store(start)
	})
	if err := f.slave.ResetAt(f.start + 1); !errors.Is(err, ErrResetOffset) {
		t.Fatalf("ResetAt inside a segment: %v, want ErrResetOffset", err)
	}
	if err := f.slave.ResetAt(f.start); err != nil {
		t.Fatal(err)
	}
	if got := heardStart.Load(); got != f.start {
		t.Fatalf("reset listener heard %d, want %d", got, f.start)
	}
	if cp := f.slave.CommitPoint(); cp < f.start {
		t.Fatalf("commit point %d after the reset, below the log start %d", cp, f.start)
	}
	if _, err := f.fs.Stat(path.Join(f.cfg.Dir, ResetMarker)); err == nil {
		t.Fatal("the reset marker is still there after the reset")
	}
	// Reopened before a byte arrived, the log is still empty at start.
	if err := f.slave.Close(); err != nil {
		t.Fatal(err)
	}
	f.slave = mustOpen(t, f.cfg)
	defer f.slave.Close()
	checkReset(t, f.slave, f.master, f.start)
	checkReset2 := func(s *Store) {
		t.Helper()
		for qid := range int32(2) {
			if got, want := s.MaxOffset("T", qid), f.master.MaxOffset("T", qid); got != want {
				t.Fatalf("T/%d max offset %d, want the master's %d", qid, got, want)
			}
		}
	}
	checkReset2(f.slave)
	if err := f.slave.Close(); err != nil {
		t.Fatal(err)
	}
	f.slave = mustOpen(t, f.cfg)
	checkReset2(f.slave)
}

// TestResetWhileReading: reads and listeners running during ResetAt see
// either the old log or the new one, never an error from a wiped file.
func TestResetWhileReading(t *testing.T) {
	f := newResetFixture(t)
	f.slave.AddListener(func(topic string, qid int32, _ int64) {
		f.slave.MaxOffset(topic, qid) // a listener that calls into the store
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg, started sync.WaitGroup
	for range 3 {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if i == 1 {
					started.Done()
				}
				res, err := f.slave.GetMessages("T", 0, 0, 4, 0, nil)
				if err != nil {
					t.Errorf("read during the reset: %v", err)
					return
				}
				res.Release()
				if _, err := f.slave.QueryByKey("T", "k0", 0, 1<<62, 4); err != nil {
					t.Errorf("query during the reset: %v", err)
					return
				}
				f.slave.Written()
			}
		}()
	}
	started.Wait() // every reader is reading the old log
	err := f.slave.ResetAt(f.start)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	checkReset(t, f.slave, f.master, f.start)
}

// TestResetCrashAtEveryFileOperation: a power loss at any file operation
// of ResetAt leaves a store that opens either as it was before the reset
// or as reset, never in between.
func TestResetCrashAtEveryFileOperation(t *testing.T) {
	sawBefore, sawReset := 0, 0
	for n := 1; ; n++ {
		f := newResetFixture(t)
		before := map[int32]int64{0: f.slave.MaxOffset("T", 0), 1: f.slave.MaxOffset("T", 1)}
		oldWritten := f.slave.Written()
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
		err := f.slave.ResetAt(f.start)
		f.fs.InjectError(nil)
		if err != nil {
			t.Fatalf("op %d: %v", n, err)
		}
		if crashed == nil {
			if n < 10 {
				t.Fatalf("the reset did only %d file operations", n-1)
			}
			t.Logf("crashed at each of %d file operations: %d opened as before, %d as reset", n-1, sawBefore, sawReset)
			if sawBefore == 0 || sawReset == 0 {
				t.Fatalf("no crash opened as before (%d) or none as reset (%d)", sawBefore, sawReset)
			}
			return
		}
		cfg := f.cfg
		cfg.FS = crashed
		s, err := Open(cfg)
		if err != nil {
			t.Fatalf("crash at op %d: open: %v", n, err)
		}
		waitVisible(t, s)
		switch w := s.Written(); w {
		case oldWritten:
			sawBefore++
			for qid, max := range before {
				if got := s.MaxOffset("T", qid); got != max {
					t.Fatalf("crash at op %d: opened as before, but T/%d has max offset %d, want %d", n, qid, got, max)
				}
				for off := range max {
					if m, st := getOne(t, s, "T", qid, off); m == nil {
						t.Fatalf("crash at op %d: opened as before, but T/%d@%d is gone (%v)", n, qid, off, st)
					}
				}
			}
		case f.start:
			sawReset++
			checkReset(t, s, f.master, f.start)
		default:
			t.Fatalf("crash at op %d: the store opens with its log ending at %d: neither %d (before) nor %d (reset)", n, w, oldWritten, f.start)
		}
		if _, err := crashed.Stat(path.Join(cfg.Dir, ResetMarker)); err == nil {
			t.Fatalf("crash at op %d: the reset marker is still there after Open", n)
		}
		s.Close()
	}
}
