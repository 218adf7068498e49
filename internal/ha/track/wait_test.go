package track

import (
	"context"
	"sync"
	"testing"
	"time"
)

type result struct {
	end int64
	err error
	hw  int64 // HW seen right after Wait returned
}

// recv is the result of a Wait; a Wait that never returns fails the test
// instead of hanging it.
func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return result{}
	}
}

// goWait parks a Wait for end in its own goroutine; its result arrives on
// the returned channel.
func goWait(ctx context.Context, tr *Tracker, end int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		err := tr.Wait(ctx, end)
		ch <- result{end: end, err: err, hw: tr.HW()}
	}()
	return ch
}

func TestWaitAnswersInOrderAsTheHWMoves(t *testing.T) {
	base := int64(1<<32 + 1)
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(base, base)
	f.ack(1, base, base)
	ctx := context.Background()
	w300 := goWait(ctx, f.tr, base+300)
	w100 := goWait(ctx, f.tr, base+100)
	w200 := goWait(ctx, f.tr, base+200)
	parked(t, f.tr, 3)
	f.tr.MasterProgress(base+1000, base+1000)
	parked(t, f.tr, 3) // the master alone commits nothing
	f.ack(1, base+250, base+150)
	if r := recv(t, w100); r.err != nil || r.hw < r.end {
		t.Fatalf("w100 %+v", r)
	}
	parked(t, f.tr, 2)
	f.ack(1, base+300, base+300)
	for _, w := range []<-chan result{w200, w300} {
		if r := recv(t, w); r.err != nil || r.hw < r.end {
			t.Fatalf("%+v", r)
		}
	}
	parked(t, f.tr, 0)
}

func TestWaitTimesOutAndLeavesNoWaiter(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	// The replication timeout on the injected clock: no sleeping.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.clk.AfterFunc(3*time.Second, cancel)
	w := goWait(ctx, f.tr, 10)
	parked(t, f.tr, 1)
	f.clk.Advance(2 * time.Second)
	parked(t, f.tr, 1)
	f.clk.Advance(time.Second)
	if r := recv(t, w); r.err != ErrTimeout {
		t.Fatalf("Wait = %v, want ErrTimeout", r.err)
	}
	parked(t, f.tr, 0)
	// Many timed-out waiters leave nothing behind either.
	var ws []<-chan result
	ctx2, cancel2 := context.WithCancel(context.Background())
	for i := range 50 {
		ws = append(ws, goWait(ctx2, f.tr, int64(100+i)))
	}
	parked(t, f.tr, 50)
	cancel2()
	for _, w := range ws {
		if r := recv(t, w); r.err != ErrTimeout {
			t.Fatalf("%+v", r)
		}
	}
	parked(t, f.tr, 0)
	f.tr.MasterProgress(200, 200)
	f.ack(1, 200, 200)
	f.wantHW(200)
}

func TestParkedWaitsFailWhenTooFewStayInSync(t *testing.T) {
	for _, how := range []string{"gone", "lag_bytes", "lag_time"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t, cfgWith(1, false))
			f.tr.MasterProgress(0, 0)
			f.tr.MasterProgress(500, 500)
			f.ack(1, 400, 400)
			f.ack(2, 300, 300)
			w := goWait(context.Background(), f.tr, 450)
			parked(t, f.tr, 1)
			f.tr.SlaveGone(2) // one is left, one is needed: still waiting
			parked(t, f.tr, 1)
			switch how {
			case "gone":
				f.tr.SlaveGone(1)
			case "lag_bytes":
				f.tr.MasterProgress(1401, 1401)
			case "lag_time":
				f.clk.Advance(f.tr.Config().MaxLagTime)
				f.tr.Tick()
			}
			if r := recv(t, w); r.err != ErrNotEnoughReplicas {
				t.Fatalf("Wait = %v, want ErrNotEnoughReplicas", r.err)
			}
			parked(t, f.tr, 0)
			f.wantHW(400)
			if got := f.logs.Lines("reason=" + how); len(got) == 0 {
				t.Fatalf("no %s line:\n%s", how, f.logs)
			}
		})
	}
}

func TestWaitWithoutSyncReplicasFollowsTheMaster(t *testing.T) {
	f := newFixture(t, cfgWith(0, false))
	f.tr.MasterProgress(0, 0)
	w := goWait(context.Background(), f.tr, 100)
	parked(t, f.tr, 1)
	f.tr.MasterProgress(100, 99)
	parked(t, f.tr, 1)
	f.tr.MasterProgress(100, 100)
	if r := recv(t, w); r.err != nil || r.hw != 100 {
		t.Fatalf("%+v", r)
	}
}

// TestWaitAllocatesO1: a Wait that parks recycles its waiter.
func TestWaitAllocatesO1(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	ctx := context.Background()
	var end int64
	allocs := testing.AllocsPerRun(1000, func() {
		end += 1024
		f.tr.MasterProgress(end, end)
		if err := f.tr.SlaveProgress(1, end, end); err != nil {
			t.Fatal(err)
		}
		if err := f.tr.Wait(ctx, end); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per progress+Wait, want ≤ 1", allocs)
	}
	// A parked Wait: its ctx's channel and the goroutine are the caller's.
	var wg sync.WaitGroup
	allocs = testing.AllocsPerRun(200, func() {
		end += 1024
		wg.Add(1)
		done := make(chan struct{})
		go func() {
			defer wg.Done()
			close(done)
			if err := f.tr.Wait(ctx, end); err != nil {
				t.Error(err)
			}
		}()
		<-done
		f.tr.MasterProgress(end, end)
		if err := f.tr.SlaveProgress(1, end, end); err != nil {
			t.Error(err)
		}
		wg.Wait()
	})
	t.Logf("%.1f allocations per parked Wait with its goroutine, channel and closure", allocs)
	if allocs > 3 {
		t.Fatalf("%.1f allocations per parked Wait (with its goroutine), want ≤ 3", allocs)
	}
}
