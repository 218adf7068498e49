package track

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// TestConcurrentUse runs a master, two slaves (one of them reconnecting),
// a ticking clock and many waiters with and without timeouts at once
// (meant for -race). Every Wait returns, a nil answer is covered by the
// HW, no waiter is left, and once everything stops the HW is the rule's.
func TestConcurrentUse(t *testing.T) {
	const total = 4 << 20
	clk := clock.NewManual(t0)
	cfg := DefaultConfig()
	cfg.MaxLagBytes = 256 << 10
	tr := New(cfg, clk, nil)
	tr.MasterProgress(0, 0)

	var leo atomic.Int64
	var stop atomic.Bool
	var workers, waiters sync.WaitGroup
	workers.Go(func() { // master: writes, then fsyncs
		for off := int64(1024); off <= total; off += 1024 {
			tr.MasterProgress(off, off-1024)
			leo.Store(off)
			tr.MasterProgress(off, off)
		}
	})
	for id := int64(1); id <= 2; id++ {
		workers.Go(func() { // a slave: acks what the master has, sometimes reconnects
			rng := rand.New(rand.NewPCG(uint64(id), 2))
			var w, d int64
			for w < total {
				if id == 2 && rng.IntN(50) == 0 {
					tr.SlaveGone(id)
					w = max(0, w-rng.Int64N(8<<10)) // a new session may start lower
					d = 0
				}
				w = min(leo.Load(), w+rng.Int64N(64<<10))
				d = max(d, w-rng.Int64N(min(w, 512)+1))
				if err := tr.SlaveProgress(id, w, d); err != nil {
					t.Errorf("slave %d: %v", id, err)
					return
				}
			}
			if err := tr.SlaveProgress(id, total, total); err != nil {
				t.Errorf("slave %d final: %v", id, err)
			}
		})
	}
	workers.Go(func() { // the clock
		for !stop.Load() {
			clk.Advance(100 * time.Millisecond)
			tr.Tick()
			_ = tr.Stats()
			_ = tr.InSync()
		}
	})
	var nils, timeouts, notEnough atomic.Int64
	for g := range 8 {
		waiters.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 8))
			for range 300 {
				end := rng.Int64N(total) + 1
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					clk.AfterFunc(time.Duration(rng.IntN(300))*time.Millisecond, cancel)
				}
				err := tr.Wait(ctx, end)
				cancel()
				switch {
				case err == nil:
					nils.Add(1)
					if hw := tr.HW(); hw < end {
						t.Errorf("Wait(%d) = nil with HW %d", end, hw)
					}
				case errors.Is(err, ErrTimeout):
					timeouts.Add(1)
				case errors.Is(err, ErrNotEnoughReplicas):
					notEnough.Add(1)
				default:
					t.Errorf("Wait: %v", err)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { waiters.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		// The master and slaves finish by themselves; once the slaves
		// have acked everything every waiter must have been answered.
		t.Fatal("waiters did not return")
	}
	stop.Store(true)
	workers.Wait()
	if hw := tr.HW(); hw != total {
		t.Fatalf("HW %d, want %d (stats %+v)", hw, total, tr.Stats())
	}
	if n := tr.waiters.Len(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
	t.Logf("waits: %d nil, %d timed out, %d not enough replicas; stats %+v", nils.Load(), timeouts.Load(), notEnough.Load(), tr.Stats())
	if nils.Load() == 0 {
		t.Fatal("no Wait succeeded")
	}
}
