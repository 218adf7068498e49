package track

import (
	"context"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
)

// BenchmarkMasterProgressAndWait is the sync-send path when the slave is
// ahead of the sender: master progress, the slave's ack, and a Wait that
// finds the HW already there. One op = one 1 KiB record.
func BenchmarkMasterProgressAndWait(b *testing.B) {
	tr := New(DefaultConfig(), clock.NewManual(t0), nil)
	tr.MasterProgress(0, 0)
	if err := tr.SlaveProgress(1, 0, 0); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var end int64
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		end += 1024
		tr.MasterProgress(end, end)
		if err := tr.SlaveProgress(1, end, end); err != nil {
			b.Fatal(err)
		}
		if err := tr.Wait(ctx, end); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWaitParked: 64 sends in flight park in Wait, then one master
// progress and one slave ack answer them all (the group-commit shape).
// One op = one parked Wait, including its hand-off to a waiting goroutine.
func BenchmarkWaitParked(b *testing.B) {
	const inflight = 64
	tr := New(DefaultConfig(), clock.NewManual(t0), nil)
	tr.MasterProgress(0, 0)
	if err := tr.SlaveProgress(1, 0, 0); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	reqs := make(chan int64, inflight)
	done := make(chan error, inflight)
	for range inflight {
		go func() {
			for end := range reqs {
				done <- tr.Wait(ctx, end)
			}
		}()
	}
	defer close(reqs)
	var end int64
	b.ReportAllocs()
	b.SetBytes(1024)
	for i := 0; i < b.N; i += inflight {
		n := min(inflight, b.N-i)
		for range n {
			end += 1024
			reqs <- end
		}
		tr.MasterProgress(end, end)
		if err := tr.SlaveProgress(1, end, end); err != nil {
			b.Fatal(err)
		}
		for range n {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
}
