package timer

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// t0 is where the tests' clocks start: a whole second.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(t time.Time) int64 { return t.UnixMilli() }

// tlogWriter sends log lines to t.Log.
type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fixture is a store on a MemFS and a manual clock, with a Fire that records
// what it gets and checks it is never early.
type fixture struct {
	t    testing.TB
	fsys vfs.FS
	dir  string
	clk  *clock.Manual
	opts Options
	s    *Store

	mu       sync.Mutex
	fired    []Entry
	batches  [][]Entry
	calls    int
	failures int // Fire calls still to fail
	at       []time.Time
}

func newFixture(t testing.TB, tweak func(*Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, fsys: vfs.NewMem(), dir: "/timer", clk: clock.NewManual(t0)}
	f.opts = Options{Clock: f.clk, Fire: f.fire, Logger: testLogger(t), FireBatch: 16}
	if tweak != nil {
		tweak(&f.opts)
	}
	f.open()
	t.Cleanup(func() {
		if f.s != nil {
			_ = f.s.Close()
		}
	})
	return f
}

func (f *fixture) open() {
	f.t.Helper()
	s, err := Open(f.fsys, f.dir, f.opts)
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	f.s = s
	if err := s.Start(); err != nil {
		f.t.Fatalf("Start: %v", err)
	}
	s.settle()
}

func (f *fixture) reopen() {
	f.t.Helper()
	if err := f.s.Close(); err != nil {
		f.t.Fatalf("Close: %v", err)
	}
	f.open()
}

var errFireTest = errors.New("fire failed on purpose")

func (f *fixture) fire(due []Entry) error {
	now := f.clk.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.failures > 0 {
		f.failures--
		return errFireTest
	}
	if len(due) == 0 || len(due) > f.opts.FireBatch {
		f.t.Errorf("Fire got %d entries, want 1..%d", len(due), f.opts.FireBatch)
	}
	for i, e := range due {
		if e.DeliverAt > ms(now) {
			f.t.Errorf("entry %+v fired %d ms early (now %d)", e, e.DeliverAt-ms(now), ms(now))
		}
		if i > 0 && due[i-1].DeliverAt > e.DeliverAt {
			f.t.Errorf("batch out of order: %d before %d", due[i-1].DeliverAt, e.DeliverAt)
		}
	}
	f.fired = append(f.fired, due...)
	f.batches = append(f.batches, slices.Clone(due))
	for range due {
		f.at = append(f.at, now)
	}
	return nil
}

func (f *fixture) firedKeys() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []uint64
	for _, e := range f.fired {
		out = append(out, e.Key)
	}
	return out
}

func (f *fixture) nFired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fired)
}

// advance moves the clock by d and waits for the store to do what is due.
func (f *fixture) advance(d time.Duration) {
	f.clk.Advance(d)
	f.s.settle()
}

// advanceTo moves the clock to unix millisecond at.
func (f *fixture) advanceTo(at int64) {
	f.clk.Set(time.UnixMilli(at))
	f.s.settle()
}

func (f *fixture) add(e Entry, src int64) {
	f.t.Helper()
	if err := f.s.Add(e, src); err != nil {
		f.t.Fatalf("Add(%+v, %d): %v", e, src, err)
	}
	f.s.settle()
}

func (f *fixture) cancel(key uint64, at, src int64) {
	f.t.Helper()
	if err := f.s.Cancel(key, at, src); err != nil {
		f.t.Fatalf("Cancel(%d, %d, %d): %v", key, at, src, err)
	}
	f.s.settle()
}

// logFiles lists the timer-log files of dir.
func logFiles(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := parseLogName(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func wheelFiles(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := parseWheelName(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func dirBytes(t testing.TB, fsys vfs.FS, dir string) int64 {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := fsys.Stat(path.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// await polls cond (yielding to the scheduler, no sleep) until it holds or
// the deadline passes.
func await(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", d, what)
		default:
		}
		yield()
	}
}

func yield() { runtime.Gosched() }
