package timer

import (
	"log/slog"
	"math/rand"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// BenchmarkTenMillion schedules 10,000,000 timers (due at random milliseconds
// over one hour) in a store on the real file system, reports the Go heap in
// use with all of them pending, then moves the manual clock past them all and
// reports the rate at which they are delivered. Not part of the normal run:
//
//	go test -run '^$' -bench TenMillion -benchtime 1x -v -timeout 30m ./internal/broker/timer
//
// PETREL_TIMER_10M=seq adds them in due order instead (each slot's chain is
// then contiguous in the log). It is a benchmark so that only -bench runs it;
// one run is one load (b.N is not used).
func BenchmarkTenMillion(b *testing.B) {
	t := b
	mode := os.Getenv("PETREL_TIMER_10M")
	const n = 10_000_000
	const window = 3_600_000 // ms
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	var fired, calls atomic.Int64
	var lastAt int64
	var outOfOrder atomic.Bool
	var heapFiring atomic.Uint64
	done := make(chan struct{})
	fire := func(due []Entry) error {
		for _, e := range due {
			if e.DeliverAt < lastAt {
				outOfOrder.Store(true)
			}
			lastAt = e.DeliverAt
		}
		calls.Add(1)
		k := fired.Add(int64(len(due)))
		if k-int64(len(due)) < n/2 && k >= n/2 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			heapFiring.Store(m.HeapInuse)
		}
		if k == n {
			close(done)
		}
		return nil
	}
	s, err := Open(vfs.OS, dir, Options{Clock: clk, Fire: fire, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	base := ms(t0) + 1000
	begin := time.Now()
	for i := range int64(n) {
		at := base + r.Int63n(window)
		if mode == "seq" {
			at = base + i*window/n
		}
		if err := s.Add(Entry{DeliverAt: at, Offset: i * 1024, Size: 1024, Key: uint64(i + 1)}, i); err != nil {
			t.Fatal(err)
		}
	}
	addDur := time.Since(begin)
	begin = time.Now()
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ckptDur := time.Since(begin)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	disk := dirBytes(t, vfs.OS, dir)
	t.Logf("added %d timers (%s order) in %v: %.0f adds/s; checkpoint %v", n, map[bool]string{true: "due", false: "random"}[mode == "seq"],
		addDur.Round(time.Millisecond), float64(n)/addDur.Seconds(), ckptDur.Round(time.Millisecond))
	t.Logf("heap in use after GC with %d pending: %.1f MiB (HeapAlloc %.1f MiB, Sys %.1f MiB); disk %d bytes (%.1f MiB)",
		s.Pending(), mib(m.HeapInuse), mib(m.HeapAlloc), mib(m.Sys), disk, mib(uint64(disk)))
	if m.HeapInuse > 200<<20 {
		t.Errorf("heap in use %.1f MiB > 200 MiB", mib(m.HeapInuse))
	}

	begin = time.Now()
	clk.Set(time.UnixMilli(base + window + 1000))
	select {
	case <-done:
	case <-time.After(20 * time.Minute):
		t.Fatalf("only %d of %d fired", fired.Load(), n)
	}
	fireDur := time.Since(begin)
	t.Logf("fired %d in %v: %.0f fires/s in %d Fire calls; heap in use half-way %.1f MiB",
		fired.Load(), fireDur.Round(time.Millisecond), float64(n)/fireDur.Seconds(), calls.Load(), mib(heapFiring.Load()))
	if outOfOrder.Load() {
		t.Error("fired out of DeliverAt order")
	}
	begin = time.Now()
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	t.Logf("after firing: checkpoint %v, disk %d bytes, log files %d, Pending %d",
		time.Since(begin).Round(time.Millisecond), dirBytes(t, vfs.OS, dir), len(logFiles(t, vfs.OS, dir)), s.Pending())
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkAdd measures Add on the real file system: buffered 48-byte
// appends, no fsync.
func BenchmarkAdd(b *testing.B) {
	clk := clock.NewManual(t0)
	s, err := Open(vfs.OS, b.TempDir(), Options{Clock: clk, Fire: func([]Entry) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.SetBytes(recordSize)
	b.ResetTimer()
	for i := range int64(b.N) {
		if err := s.Add(Entry{DeliverAt: ms(t0) + 1000 + r.Int63n(3_600_000), Key: uint64(i + 1)}, i); err != nil {
			b.Fatal(err)
		}
	}
}
