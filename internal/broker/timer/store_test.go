package timer

import (
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func TestFiresOldestFirstInBatches(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.FireBatch = 7 })
	r := rand.New(rand.NewSource(1))
	const n = 300
	var want []int64
	for i := range n {
		at := ms(t0) + 1000 + r.Int63n(20_000) // within 21 s, any millisecond
		want = append(want, at)
		f.add(Entry{DeliverAt: at, Offset: int64(i) * 100, Size: 100, Key: uint64(i + 1)}, int64(i))
	}
	if got := f.s.Pending(); got != n {
		t.Fatalf("Pending = %d, want %d", got, n)
	}
	slices.Sort(want)
	for _, at := range slices.Compact(slices.Clone(want)) {
		f.advanceTo(at) // step to each due time to see it fire exactly then
	}
	if f.nFired() != n {
		t.Fatalf("fired %d, want %d", f.nFired(), n)
	}
	for i, e := range f.fired {
		if e.DeliverAt != want[i] {
			t.Fatalf("fired[%d] due %d, want %d (not oldest first)", i, e.DeliverAt, want[i])
		}
		if e.Size != 100 || e.Offset != int64(e.Key-1)*100 {
			t.Fatalf("fired[%d] = %+v: fields not kept", i, e)
		}
	}
	for i, at := range f.at {
		if at.UnixMilli() != f.fired[i].DeliverAt {
			t.Fatalf("entry due %d fired at %d, want exactly on time with a manual clock", f.fired[i].DeliverAt, at.UnixMilli())
		}
	}
	for _, b := range f.batches {
		if len(b) > 7 {
			t.Fatalf("batch of %d > FireBatch 7", len(b))
		}
	}
	if got := f.s.Pending(); got != 0 {
		t.Fatalf("Pending after firing = %d", got)
	}
}

func TestNeverEarlyExactMillisecond(t *testing.T) {
	for _, off := range []int64{0, 1, 123, 999, 1000, 61_500} {
		f := newFixture(t, nil)
		at := ms(t0) + 5000 + off
		f.add(Entry{DeliverAt: at, Key: 1, Size: 1}, 0)
		f.advanceTo(at - 1)
		if n := f.nFired(); n != 0 {
			t.Fatalf("due %d: fired at %d, 1 ms early", at, at-1)
		}
		f.advanceTo(at)
		if n := f.nFired(); n != 1 {
			t.Fatalf("due %d: %d fired at the due millisecond, want 1", at, n)
		}
	}
}

func TestAlreadyDueFiresWithoutClockMove(t *testing.T) {
	f := newFixture(t, nil)
	f.advance(10 * time.Second)
	// In the past, in the current second (slot taken), and now.
	f.add(Entry{DeliverAt: ms(t0) - 3_600_000, Key: 1}, 0)
	f.add(Entry{DeliverAt: ms(f.clk.Now()) - 1, Key: 2}, 1)
	f.add(Entry{DeliverAt: ms(f.clk.Now()), Key: 3}, 2)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("fired %v, want [1 2 3] at once", got)
	}
	// Due later in the second whose slot is already taken: on time, not before.
	at := ms(f.clk.Now()) + 400
	f.add(Entry{DeliverAt: at, Key: 4}, 3)
	f.advanceTo(at - 1)
	if f.nFired() != 3 {
		t.Fatal("late-chain entry fired early")
	}
	f.advanceTo(at)
	if f.nFired() != 4 {
		t.Fatal("late-chain entry not fired on time")
	}
}

func TestRollOverBeyondSpan(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Span = 60 * time.Second
		o.MaxDelay = 24 * time.Hour
	})
	at := ms(t0) + 10*60_000 + 250 // 10 min: rolls 9 times round a 60 s wheel
	f.add(Entry{DeliverAt: at, Key: 7, Offset: 4242, Size: 9}, 0)
	at2 := ms(t0) + 3*3_600_000 + 7 // 3 h
	f.add(Entry{DeliverAt: at2, Key: 8}, 1)
	f.add(Entry{DeliverAt: ms(t0) + 90_000, Key: 9}, 2) // cancelled before it rolls
	f.cancel(9, ms(t0)+90_000, 3)
	// Restart halfway to check the rolled records survive.
	f.advance(5 * time.Minute)
	f.reopen()
	f.advanceTo(at - 1)
	if f.nFired() != 0 {
		t.Fatalf("fired %v before the 10-minute timer was due", f.firedKeys())
	}
	f.advanceTo(at)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{7}) || f.fired[0].Offset != 4242 || f.fired[0].Size != 9 {
		t.Fatalf("fired %+v, want the 10-minute entry", f.fired)
	}
	if got := f.s.Pending(); got != 1 {
		t.Fatalf("Pending = %d, want 1 (the 3 h timer)", got)
	}
	f.advanceTo(at2 - 1)
	f.reopen()
	if f.nFired() != 1 {
		t.Fatal("3 h timer fired early")
	}
	f.advanceTo(at2)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{7, 8}) {
		t.Fatalf("fired %v, want [7 8]", got)
	}
	if got := f.s.Pending(); got != 0 {
		t.Fatalf("Pending = %d, want 0", got)
	}
}

func TestMaxDelayRefusedNamingTheCap(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxDelay = time.Hour })
	now := ms(t0)
	err := f.s.Add(Entry{DeliverAt: now + 3_600_001, Key: 1}, 0)
	if !errors.Is(err, ErrTooFar) || !strings.Contains(err.Error(), "1h0m0s") {
		t.Fatalf("Add 1h+1ms ahead: err = %v, want ErrTooFar naming 1h0m0s", err)
	}
	if err := f.s.Add(Entry{DeliverAt: now + 3_600_000, Key: 1}, 0); err != nil {
		t.Fatalf("Add exactly MaxDelay ahead: %v", err)
	}
	if f.s.Pending() != 1 {
		t.Fatalf("Pending = %d", f.s.Pending())
	}

	g := newFixture(t, nil) // default cap 7 days
	err = g.s.Add(Entry{DeliverAt: now + 8*24*3_600_000, Key: 1}, 0)
	if !errors.Is(err, ErrTooFar) || !strings.Contains(err.Error(), "168h0m0s") {
		t.Fatalf("default cap: err = %v, want ErrTooFar naming 168h0m0s", err)
	}

	// A cap of years on the default 7-day wheel.
	y := newFixture(t, func(o *Options) { o.MaxDelay = 400 * 24 * time.Hour })
	if err := y.s.Add(Entry{DeliverAt: now + 365*24*3_600_000, Key: 1}, 0); err != nil {
		t.Fatalf("Add a year ahead with MaxDelay 400 days: %v", err)
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Span = 60 * time.Second; o.MaxDelay = time.Hour })
	base := ms(t0) + 5000
	f.add(Entry{DeliverAt: base, Key: 1}, 0)
	f.add(Entry{DeliverAt: base, Key: 2}, 1)
	f.add(Entry{DeliverAt: base, Key: 3}, 2)
	f.add(Entry{DeliverAt: base + 600_000, Key: 4}, 3) // rolls
	f.cancel(2, base, 4)
	f.cancel(4, base+600_000, 5)
	f.cancel(99, base, 6)  // no such timer
	f.cancel(1, base+1, 7) // right key, other time: no effect
	if got := f.s.Pending(); got != 4 {
		t.Fatalf("Pending = %d before the slot comes round, want 4", got)
	}
	f.advanceTo(base)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("fired %v, want [1 3]", got)
	}
	if got := f.s.Pending(); got != 0 {
		t.Fatalf("Pending = %d, want 0 (cancelled ones passed)", got)
	}
	f.cancel(1, base, 8) // already fired: nothing happens
	f.advance(15 * time.Minute)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("fired %v, want [1 3] (4 was cancelled)", got)
	}

	// A cancel only hits timers added before it: the same key re-added later fires.
	at := ms(f.clk.Now()) + 2000
	f.add(Entry{DeliverAt: at, Key: 5}, 9)
	f.cancel(5, at, 10)
	f.add(Entry{DeliverAt: at, Key: 5, Offset: 55}, 11)
	f.advanceTo(at)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 3, 5}) || f.fired[2].Offset != 55 {
		t.Fatalf("fired %+v, want the re-added timer 5 once", f.fired)
	}
}

func TestCancelLoadedAndLateTimers(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.LoadLimit = 4 })
	f.advance(time.Second)
	now := ms(f.clk.Now())
	// Slot of the next second: taken when it starts, entries spread over it.
	next := (now/1000 + 1) * 1000
	for i := range 10 {
		f.add(Entry{DeliverAt: next + int64(i)*50, Key: uint64(10 + i)}, int64(i))
	}
	f.advanceTo(next) // slot taken, first entry fired, others loaded
	if got := f.firedKeys(); !slices.Equal(got, []uint64{10}) {
		t.Fatalf("fired %v, want [10]", got)
	}
	f.cancel(11, next+50, 20)  // loaded in the buffer
	f.cancel(17, next+350, 21) // beyond the first pass (LoadLimit 4)
	// A late timer (its second is taken), then cancelled.
	f.add(Entry{DeliverAt: next + 600, Key: 30}, 22)
	f.cancel(30, next+600, 23)
	f.add(Entry{DeliverAt: next + 610, Key: 31}, 24)
	f.advance(2 * time.Second)
	want := []uint64{10, 12, 13, 14, 15, 16, 18, 19, 31}
	if got := f.firedKeys(); !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if got := f.s.Pending(); got != 0 {
		t.Fatalf("Pending = %d, want 0", got)
	}
}

func TestManyInOneSecondFireInOrderOverSeveralPasses(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.LoadLimit = 8; o.FireBatch = 5 })
	r := rand.New(rand.NewSource(3))
	sec := (ms(t0)/1000 + 3) * 1000
	var want []int64
	src := int64(0)
	cancelled := map[uint64]bool{}
	for i := range 200 {
		at := sec + r.Int63n(1000)
		f.add(Entry{DeliverAt: at, Key: uint64(i + 1)}, src)
		src++
		if r.Intn(5) == 0 {
			f.cancel(uint64(i+1), at, src)
			src++
			cancelled[uint64(i+1)] = true
		} else {
			want = append(want, at)
		}
	}
	f.advance(5 * time.Second)
	slices.Sort(want)
	if len(f.fired) != len(want) {
		t.Fatalf("fired %d, want %d", len(f.fired), len(want))
	}
	for i, e := range f.fired {
		if e.DeliverAt != want[i] || cancelled[e.Key] {
			t.Fatalf("fired[%d] = %+v, want due %d and not cancelled", i, e, want[i])
		}
	}
	if f.s.Pending() != 0 {
		t.Fatalf("Pending = %d", f.s.Pending())
	}
}

func TestFireErrorIsRetriedWithBackOff(t *testing.T) {
	f := newFixture(t, nil)
	at := ms(t0) + 2000
	for i := range 3 {
		f.add(Entry{DeliverAt: at + int64(i), Key: uint64(i + 1)}, int64(i))
	}
	f.failures = 2
	// To the first due time only: the back-off counts from the failed
	// fire, and a fire at at+2 (had the clock passed it before the timer
	// goroutine ran) would make "99 ms later" depend on the scheduler.
	// The other two come due during the back-off and wait for the retry.
	f.advanceTo(at)
	if f.calls != 1 || f.nFired() != 0 {
		t.Fatalf("calls %d fired %d after the first failure", f.calls, f.nFired())
	}
	f.advance(99 * time.Millisecond)
	if f.calls != 1 {
		t.Fatalf("retried after 99 ms, want the 100 ms back-off")
	}
	f.advance(time.Millisecond)
	if f.calls != 2 || f.nFired() != 0 {
		t.Fatalf("calls %d fired %d: want a second (failing) try at 100 ms", f.calls, f.nFired())
	}
	if got := f.s.Pending(); got != 3 {
		t.Fatalf("Pending = %d during failures, want 3", got)
	}
	f.advance(199 * time.Millisecond)
	if f.calls != 2 {
		t.Fatalf("retried before the doubled back-off")
	}
	f.advance(time.Millisecond)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 2, 3}) || f.calls != 3 {
		t.Fatalf("fired %v in %d calls, want [1 2 3] in 3", got, f.calls)
	}
	if f.s.Pending() != 0 {
		t.Fatalf("Pending = %d", f.s.Pending())
	}
	// Back-off resets after a success.
	f.add(Entry{DeliverAt: ms(f.clk.Now()) + 1000, Key: 4}, 3)
	f.failures = 1
	f.advance(time.Second)
	f.advance(100 * time.Millisecond)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("fired %v after one failure and 100 ms", got)
	}
}

func TestRestartKeepsPendingTimers(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Span = 60 * time.Second
		o.MaxDelay = time.Hour
		o.EntriesPerFile = 50
		o.SnapshotEvery = 64
	})
	r := rand.New(rand.NewSource(5))
	type tm struct {
		at        int64
		cancelled bool
	}
	timers := map[uint64]*tm{}
	src := int64(0)
	for i := range 500 {
		at := ms(f.clk.Now()) + 1000 + r.Int63n(300_000)
		key := uint64(i + 1)
		timers[key] = &tm{at: at}
		f.add(Entry{DeliverAt: at, Key: key}, src)
		src++
		if r.Intn(8) == 0 {
			f.cancel(key, at, src)
			src++
			timers[key].cancelled = true
		}
		if i%100 == 99 {
			f.advance(7 * time.Second)
			f.reopen()
			if got := f.s.Applied(); got != src {
				t.Fatalf("Applied after clean restart = %d, want %d", got, src)
			}
		}
	}
	for range 40 {
		f.advance(10 * time.Second)
		if r.Intn(4) == 0 {
			f.reopen()
		}
	}
	seen := map[uint64]bool{}
	for _, e := range f.fired {
		if seen[e.Key] {
			t.Fatalf("timer %d fired twice across clean restarts", e.Key)
		}
		seen[e.Key] = true
		if timers[e.Key].cancelled {
			t.Fatalf("cancelled timer %d fired", e.Key)
		}
	}
	for k, tm := range timers {
		if !tm.cancelled && !seen[k] {
			t.Fatalf("timer %d (due %d) lost", k, tm.at)
		}
	}
	if f.s.Pending() != 0 {
		t.Fatalf("Pending = %d", f.s.Pending())
	}
}

func TestOldLogFilesAreReclaimed(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.EntriesPerFile = 16
		o.SnapshotEvery = 40
	})
	// 160 timers due over 10 s, in order: 10 files.
	for i := range 160 {
		f.add(Entry{DeliverAt: ms(t0) + 1000 + int64(i)*62, Key: uint64(i + 1)}, int64(i))
	}
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := len(logFiles(t, f.fsys, f.dir)); n != 10 {
		t.Fatalf("%d log files, want 10", n)
	}
	f.advance(5 * time.Second) // about the first 64 fire
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	files := logFiles(t, f.fsys, f.dir)
	if len(files) >= 10 || len(files) < 5 {
		t.Fatalf("after half fired: log files %v, want the first few gone and the rest kept", files)
	}
	if files[len(files)-1] != logName(144) {
		t.Fatalf("last file %s removed or renamed", files[len(files)-1])
	}
	f.advance(10 * time.Second)
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if files := logFiles(t, f.fsys, f.dir); len(files) != 1 {
		t.Fatalf("after all fired: log files %v, want only the last", files)
	}
	f.reopen()
	if w := wheelFiles(t, f.fsys, f.dir); len(w) != 1 {
		t.Fatalf("wheel files %v, want one", w)
	}
	if f.nFired() != 160 || f.s.Pending() != 0 {
		t.Fatalf("fired %d pending %d", f.nFired(), f.s.Pending())
	}
	// The store goes on appending after the reclaimed files.
	f.add(Entry{DeliverAt: ms(f.clk.Now()) + 1500, Key: 999}, 160)
	f.advance(2 * time.Second)
	if f.nFired() != 161 {
		t.Fatalf("fired %d after reopen, want 161", f.nFired())
	}
}

func TestReplayedSrcBelowNextIsIgnored(t *testing.T) {
	f := newFixture(t, nil)
	at := ms(t0) + 3000
	f.add(Entry{DeliverAt: at, Key: 1}, 10)
	f.add(Entry{DeliverAt: at, Key: 2}, 10) // same src again: ignored
	f.add(Entry{DeliverAt: at, Key: 3}, 5)
	if f.s.Pending() != 1 {
		t.Fatalf("Pending = %d, want 1", f.s.Pending())
	}
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := f.s.Applied(); got != 11 {
		t.Fatalf("Applied = %d, want 11", got)
	}
}

func TestSpanChangeRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Span = time.Minute })
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	o := f.opts
	o.Span = 2 * time.Minute
	if _, err := Open(f.fsys, f.dir, o); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("Open with another Span: %v, want ErrIncompatible", err)
	}
	o.Span = 1500 * time.Millisecond
	if _, err := Open(f.fsys, f.dir, o); err == nil {
		t.Fatal("Open with a Span of 1.5 s succeeded")
	}
	f.open()
}

func TestOptionsRequired(t *testing.T) {
	fsys := vfs.NewMem()
	if _, err := Open(fsys, "/t", Options{Fire: func([]Entry) error { return nil }}); err == nil {
		t.Fatal("Open without a Clock succeeded")
	}
	if _, err := Open(fsys, "/t", Options{Clock: clock.NewManual(t0)}); err == nil {
		t.Fatal("Open without Fire succeeded")
	}
}

func TestWriteFailureFailsTheStoreUntilReopen(t *testing.T) {
	f := newFixture(t, nil)
	mem := f.fsys.(*vfs.MemFS)
	f.add(Entry{DeliverAt: ms(t0) + 5000, Key: 1}, 0)
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	mem.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.Contains(p, logPrefix) {
			return boom
		}
		return nil
	})
	f.add(Entry{DeliverAt: ms(t0) + 5000, Key: 2}, 1)
	if err := f.s.Checkpoint(); !errors.Is(err, ErrFailed) || !errors.Is(err, boom) {
		t.Fatalf("Checkpoint with a failing sync: %v, want ErrFailed wrapping the cause", err)
	}
	if err := f.s.Add(Entry{DeliverAt: ms(t0) + 5000, Key: 3}, 2); !errors.Is(err, ErrFailed) {
		t.Fatalf("Add after the failure: %v, want ErrFailed", err)
	}
	mem.InjectError(nil)
	_ = f.s.Close()
	f.open()
	if got := f.s.Applied(); got != 1 {
		t.Fatalf("Applied after reopen = %d, want 1", got)
	}
	f.add(Entry{DeliverAt: ms(t0) + 5000, Key: 2}, 1) // the caller replays
	f.advance(6 * time.Second)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("fired %v, want [1 2]", got)
	}
}

func TestClosedStoreRefuses(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := f.s.Add(Entry{DeliverAt: ms(t0)}, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := f.s.Checkpoint(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close: %v", err)
	}
	f.s = nil
}

func TestCatchUpAfterLongDowntime(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Span = 60 * time.Second; o.MaxDelay = 24 * time.Hour })
	var src int64
	for i := range 50 {
		f.add(Entry{DeliverAt: ms(t0) + int64(i)*97_000, Key: uint64(i + 1)}, src)
		src++
	}
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(3 * time.Hour) // the store is down across many turns of the wheel
	f.open()
	f.s.settle()
	if f.nFired() != 50 {
		t.Fatalf("fired %d after catching up, want 50", f.nFired())
	}
	if !slices.IsSortedFunc(f.fired, func(a, b Entry) int { return int(a.DeliverAt - b.DeliverAt) }) {
		t.Fatal("catch-up fired out of order")
	}
}

func TestFiringIsCheckpointedWithoutClockOrCaller(t *testing.T) {
	f := newFixture(t, nil)
	at := ms(t0) + 2000
	f.add(Entry{DeliverAt: at, Key: 1}, 0)
	f.add(Entry{DeliverAt: at + 5000, Key: 2}, 1)
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	f.opts.CheckpointInterval = time.Hour // only the Fire itself may cause a checkpoint
	f.reopen()
	f.clk.Set(time.UnixMilli(at))
	f.s.settle()
	if f.nFired() != 1 {
		t.Fatalf("fired %d, want 1", f.nFired())
	}
	// The checkpoint must be durable, not only visible: look at what a
	// crash would leave (a rename is visible before its directory sync).
	var crashed *vfs.MemFS
	await(t, 10*time.Second, "a durable checkpoint of the firing", func() bool {
		crashed = f.fsys.(*vfs.MemFS).CrashClone(vfs.CrashOptions{})
		b, _, err := vfs.ReadFile(crashed, f.dir+"/"+checkpointName)
		if err != nil {
			return false
		}
		st, err := decodeCheckpoint(b)
		return err == nil && st.pending == 1
	})
	g := &fixture{t: t, fsys: crashed, dir: f.dir, clk: f.clk}
	g.opts = f.opts
	g.opts.Fire = g.fire
	g.open()
	defer g.s.Close()
	if g.s.Applied() != 2 {
		t.Fatalf("Applied after crash = %d, want 2", g.s.Applied())
	}
	g.advance(10 * time.Second)
	if got := g.firedKeys(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("after the crash fired %v, want only [2]: timer 1's firing was checkpointed", got)
	}
}

func TestDueLateEntryNotHeldBehindOneNotYetDue(t *testing.T) {
	f := newFixture(t, nil)
	f.advance(10*time.Second + 500*time.Millisecond)
	now := ms(f.clk.Now())
	f.add(Entry{DeliverAt: now + 300, Key: 1}, 0) // this second's slot is taken: a late run waiting 300 ms
	f.add(Entry{DeliverAt: now - 5000, Key: 2}, 1)
	f.add(Entry{DeliverAt: now + 100, Key: 3}, 2)
	f.add(Entry{DeliverAt: now, Key: 4}, 3)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{2, 4}) {
		t.Fatalf("fired %v, want [2 4] at once", got)
	}
	if got := len(f.s.lateRuns); got < 2 {
		t.Fatalf("%d late runs, want several waiting", got)
	}
	f.advanceTo(now + 100)
	f.advanceTo(now + 300)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{2, 4, 3, 1}) {
		t.Fatalf("fired %v, want [2 4 3 1]", got)
	}
	// Restart with late runs in the checkpoint.
	f.add(Entry{DeliverAt: now + 700, Key: 5}, 4)
	f.add(Entry{DeliverAt: now + 600, Key: 6}, 5)
	if err := f.s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	c := f.fsys.(*vfs.MemFS).CrashClone(vfs.CrashOptions{})
	_ = f.s.Close()
	f.fsys = c
	f.open()
	f.advanceTo(now + 699)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{2, 4, 3, 1, 6}) {
		t.Fatalf("fired %v after restart, want [2 4 3 1 6]", got)
	}
	f.advance(time.Millisecond)
	if got := f.firedKeys(); !slices.Equal(got, []uint64{2, 4, 3, 1, 6, 5}) || f.s.Pending() != 0 {
		t.Fatalf("fired %v pending %d", got, f.s.Pending())
	}
}
