package timer

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
	"github.com/petrelmq/petrel/internal/vfs/vfstest"
)

func TestFiredBatchRoundTrip(t *testing.T) {
	for _, offs := range [][]int64{{}, {0}, {1 << 40, 7, 3}} {
		got, err := DecodeFiredBatch(EncodeFiredBatch(offs))
		if err != nil || !slices.Equal(got, offs) {
			t.Fatalf("%v decodes to %v, %v", offs, got, err)
		}
	}
	good := EncodeFiredBatch([]int64{5, 6})
	for _, bad := range [][]byte{nil, good[:4], good[:len(good)-1], append(slices.Clone(good), 0), append([]byte{2}, good[1:]...),
		{1, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := DecodeFiredBatch(bad); !errors.Is(err, ErrBadFired) {
			t.Fatalf("%x: %v, want ErrBadFired", bad, err)
		}
	}
}

// FuzzDecodeFiredBatch: the decoders of fired batches and of the set's
// file records never panic, allocate no more than the input implies, and
// what they accept encodes back to the same bytes.
func FuzzDecodeFiredBatch(f *testing.F) {
	f.Add(EncodeFiredBatch([]int64{1, 2, 3}))
	f.Add(appendFiredRecord(nil, []int64{1 << 33}))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		if offs, err := DecodeFiredBatch(b); err == nil {
			if 8*len(offs) > len(b) || string(EncodeFiredBatch(offs)) != string(b) {
				t.Fatalf("%x: decoded %d offsets that do not encode back", b, len(offs))
			}
		}
		if offs, n := readFiredRecord(b); n > 0 {
			if 8*len(offs) > len(b) || string(appendFiredRecord(nil, offs)) != string(b[:n]) {
				t.Fatalf("%x: record of %d offsets does not encode back", b, len(offs))
			}
		}
	})
}

func openFired(t *testing.T, fsys vfs.FS) *FiredSet {
	t.Helper()
	f, err := OpenFiredSet(fsys, "/fired", testLogger(t))
	if err != nil {
		t.Fatalf("open the fired set: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func firedEntries(offs ...int64) []Entry {
	var out []Entry
	for _, o := range offs {
		out = append(out, Entry{Offset: o})
	}
	return out
}

func TestFiredSetTakesAndSurvivesRestarts(t *testing.T) {
	fsys := vfs.NewMem()
	f := openFired(t, fsys)
	if err := f.Add([]int64{10, 20, 30}); err != nil {
		t.Fatal(err)
	}
	if f.TakeAll(firedEntries(10, 40)) {
		t.Fatal("a batch with a timer not fired was taken")
	}
	if !f.Has(10) || !f.TakeAll(firedEntries(10, 20)) || f.Has(10) || f.Len() != 1 {
		t.Fatalf("after taking 10 and 20: len %d", f.Len())
	}
	if rest := f.TakeFired(firedEntries(30, 50)); len(rest) != 1 || rest[0].Offset != 50 || f.Len() != 0 {
		t.Fatalf("TakeFired left %v, len %d", rest, f.Len())
	}
	if err := f.Add([]int64{60, 10}); err != nil { // 10 was taken: not fired again
		t.Fatal(err)
	}
	f.Close()
	r := openFired(t, fsys)
	// Taken ones stay known until a compaction after a checkpoint.
	for _, o := range []int64{10, 20, 30, 60} {
		if !r.Has(o) {
			t.Fatalf("offset %d lost in a restart", o)
		}
	}
	r.TakeFired(firedEntries(10, 20, 30))
	checkpoints := 0
	if err := r.Compact(func() error { checkpoints++; return nil }, 0); err != nil || checkpoints != 1 {
		t.Fatalf("compact: %v (%d checkpoints)", err, checkpoints)
	}
	if err := r.Compact(func() error { return errors.New("no") }, 0); err == nil {
		t.Fatal("a compaction whose checkpoint failed succeeded")
	}
	r.Close()
	r2 := openFired(t, fsys)
	if r2.Len() != 1 || !r2.Has(60) {
		t.Fatalf("after the compaction and a restart: len %d", r2.Len())
	}
	// Offsets below the floor (records retention removed) go.
	if err := r2.Add([]int64{70, 80}); err != nil {
		t.Fatal(err)
	}
	if err := r2.Compact(func() error { return nil }, 75); err != nil || r2.Len() != 1 || !r2.Has(80) {
		t.Fatalf("compaction with floor 75: %v, len %d", err, r2.Len())
	}
}

// TestFiredSetCrashAtEveryStep crashes the disk at each file operation of
// adds, takes and compactions: the reopened set holds every offset whose
// Add returned, except those taken before a compaction's checkpoint
// returned, and nothing that was never added.
func TestFiredSetCrashAtEveryStep(t *testing.T) {
	script := func(f *FiredSet, added func([]int64), compacted func(taken []int64)) {
		var taken []int64
		for i := range 12 {
			batch := []int64{int64(100 * i), int64(100*i + 1), int64(100*i + 2)}
			if f.Add(batch) != nil {
				return
			}
			added(batch)
			for _, e := range f.TakeFired(firedEntries(int64(100*i), int64(100*(i-1)+2))) {
				_ = e
			}
			taken = append(taken, int64(100*i), int64(100*(i-1)+2))
			if i%4 == 3 {
				// Once the checkpoint returned, the taken ones may go.
				before := slices.Clone(taken)
				if f.Compact(func() error { compacted(before); return nil }, 0) != nil {
					return
				}
			}
		}
	}
	fsys := vfs.NewMem()
	var total atomic.Int64
	fsys.InjectError(func(vfs.Op, string) error { total.Add(1); return nil })
	dry := openFired(t, fsys)
	script(dry, func([]int64) {}, func([]int64) {})
	fsys.InjectError(nil)
	for target := int64(1); target <= total.Load(); target++ {
		fsys := vfs.NewMem()
		crashed := vfstest.CrashAt(fsys, target)
		f, err := OpenFiredSet(fsys, "/fired", nil)
		if err != nil {
			if crashed() == nil {
				t.Fatalf("operation %d: open: %v", target, err)
			}
		} else {
			must := map[int64]bool{}
			may := map[int64]bool{}
			script(f, func(b []int64) {
				for _, o := range b {
					must[o], may[o] = true, true
				}
			}, func(taken []int64) {
				for _, o := range taken {
					delete(must, o)
				}
			})
			f.Close()
			// The add under way may have reached the disk.
			for i := range 12 {
				for j := range 3 {
					may[int64(100*i+j)] = true
				}
			}
			if crashed() == nil {
				t.Fatalf("operation %d: no crash", target)
			}
			r, err := OpenFiredSet(crashed(), "/fired", nil)
			if err != nil {
				t.Fatalf("crash at operation %d: reopen: %v", target, err)
			}
			for o := range must {
				if !r.Has(o) {
					t.Fatalf("crash at operation %d: offset %d lost", target, o)
				}
			}
			r.mu.Lock()
			for o := range r.live {
				if !may[o] {
					t.Errorf("crash at operation %d: offset %d never added", target, o)
				}
			}
			r.mu.Unlock()
			if err := r.Add([]int64{99999}); err != nil {
				t.Fatalf("crash at operation %d: add after reopen: %v", target, err)
			}
			r.Close()
		}
		fsys.InjectError(nil)
	}
}

// TestSlaveTimersFollowTheMaster: a slave's timer store holds the same
// timers as its master's. While it is a slave it passes only batches of
// timers its master fired (so it waits for the master's fired batches,
// which come later than its own clock), and once promoted it fires
// exactly the timers the master had not fired: none twice, none lost.
func TestSlaveTimersFollowTheMaster(t *testing.T) {
	var entries []Entry
	for i := range 60 {
		entries = append(entries, Entry{DeliverAt: ms(t0) + int64(i)*500 + 250, Offset: int64(4096 + 100*i), Size: 100, Key: uint64(i + 1)})
	}
	var mu sync.Mutex
	var masterFired, slaveFired []int64
	var stream [][]byte // fired batches the master emitted, not yet applied
	master := newFixture(t, func(o *Options) {
		o.Fire = func(due []Entry) error {
			mu.Lock()
			defer mu.Unlock()
			var offs []int64
			for _, e := range due {
				offs = append(offs, e.Offset)
			}
			masterFired = append(masterFired, offs...)
			stream = append(stream, EncodeFiredBatch(offs))
			return nil
		}
	})
	set := openFired(t, vfs.NewMem())
	var promoted atomic.Bool
	slave := newFixture(t, func(o *Options) {
		o.Fire = func(due []Entry) error {
			if !promoted.Load() {
				if set.TakeAll(due) {
					return nil
				}
				return fmt.Errorf("%w: a slave delivers nothing", ErrWait)
			}
			rest := set.TakeFired(due)
			mu.Lock()
			defer mu.Unlock()
			for _, e := range rest {
				slaveFired = append(slaveFired, e.Offset)
			}
			return nil
		}
	})
	for i, e := range entries {
		master.add(e, int64(i))
		slave.add(e, int64(i))
	}
	apply := func() {
		mu.Lock()
		batches := stream
		stream = nil
		mu.Unlock()
		for _, b := range batches {
			offs, err := DecodeFiredBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := set.Add(offs); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The slave's clock runs with the master's; the fired batches reach it
	// after its own store found the timers due.
	for range 30 {
		master.clk.Advance(500 * time.Millisecond)
		master.s.settle()
		slave.advance(500 * time.Millisecond)
		apply()
	}
	// Backed off, the slave passes what the master fired.
	slave.advance(11 * time.Second)
	slave.advance(11 * time.Second)
	mu.Lock()
	nMaster := len(masterFired)
	mu.Unlock()
	if nMaster < 20 || nMaster >= len(entries) {
		t.Fatalf("the master fired %d of %d timers; the test wants some fired and some not", nMaster, len(entries))
	}
	if got := slave.s.Pending(); got != int64(len(entries)-nMaster) {
		t.Fatalf("the slave's store holds %d timers, want the %d the master did not fire", got, len(entries)-nMaster)
	}
	// The master is gone; the slave takes over and fires the rest at once
	// (Retry drops its back-off; the clock does not move).
	promoted.Store(true)
	slave.s.Retry()
	slave.s.settle()
	mu.Lock()
	defer mu.Unlock()
	all := append(slices.Clone(masterFired), slaveFired...)
	slices.Sort(all)
	var want []int64
	for _, e := range entries {
		want = append(want, e.Offset)
	}
	if !slices.Equal(all, want) {
		t.Fatalf("master fired %v\nslave fired %v\nwant each of %v once", masterFired, slaveFired, want)
	}
	if set.Len() != 0 {
		t.Fatalf("%d fired timers left in the set", set.Len())
	}
}
