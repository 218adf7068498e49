package track

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestExplicitISRArithmetic: with SetISR the HW is the minimum of the
// master's contribution and every listed slave's, whatever the local lag
// rules think of them; a listed slave that is not connected holds the HW;
// a set smaller than minSlaves refuses waits at once; slaves not listed do
// not count.
func TestExplicitISRArithmetic(t *testing.T) {
	cases := []struct {
		name         string
		async        bool
		leo, durable int64 // master
		slaves       []ack
		isr          []int64
		min          int
		wantHW       int64
		notEnough    bool // Wait(HW+1) fails at once
	}{
		{name: "empty set, min 0: the master alone", leo: 1000, durable: 900, wantHW: 900},
		{name: "empty set ignores connected slaves", leo: 1000, durable: 900, slaves: []ack{{1, 500, 500}}, wantHW: 900},
		{name: "one listed slave: its durable", leo: 1000, durable: 1000, slaves: []ack{{1, 800, 700}}, isr: []int64{1}, min: 1, wantHW: 700},
		{name: "async: its written", async: true, leo: 1000, durable: 0, slaves: []ack{{1, 800, 700}}, isr: []int64{1}, min: 1, wantHW: 800},
		{name: "the master bounds", leo: 1000, durable: 600, slaves: []ack{{1, 1000, 1000}}, isr: []int64{1}, min: 1, wantHW: 600},
		{name: "every listed slave, not the best", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}, {2, 400, 400}}, isr: []int64{1, 2}, min: 1, wantHW: 400},
		{name: "an unlisted slave does not count", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}, {2, 400, 400}}, isr: []int64{1}, min: 1, wantHW: 900},
		{name: "a listed slave out of local sync still holds it", leo: 5000, durable: 5000, slaves: []ack{{1, 4900, 4900}, {2, 100, 100}}, isr: []int64{1, 2}, min: 1, wantHW: 100},
		{name: "a listed slave not connected holds it", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}}, isr: []int64{1, 3}, min: 1, wantHW: 0},
		{name: "fewer listed than min", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}}, isr: []int64{1}, min: 2, wantHW: 0, notEnough: true},
		{name: "empty set, min 1", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}}, min: 1, wantHW: 0, notEnough: true},
		{name: "duplicates count once", leo: 1000, durable: 1000, slaves: []ack{{1, 900, 900}}, isr: []int64{1, 1}, min: 2, wantHW: 0, notEnough: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := cfgWith(1, c.async)
			cfg.MaxLagBytes = 2000
			f := newFixture(t, cfg)
			f.tr.MasterProgress(0, 0)
			f.tr.SetISR(c.isr, c.min)
			f.clk.Advance(time.Second)
			f.tr.MasterProgress(c.leo, c.durable)
			for _, s := range c.slaves {
				f.ack(s.id, s.written, s.durable)
			}
			f.wantHW(c.wantHW)
			if err := f.tr.Wait(canceled(), c.wantHW); err != nil {
				t.Fatalf("Wait(HW) = %v", err)
			}
			want := ErrTimeout
			if c.notEnough {
				want = ErrNotEnoughReplicas
			}
			if err := f.tr.Wait(canceled(), c.wantHW+1); err != want {
				t.Fatalf("Wait(HW+1) = %v, want %v", err, want)
			}
			st := f.tr.Stats()
			if !st.Explicit || !slices.Equal(st.ISR, slices.Compact(slices.Sorted(slices.Values(c.isr)))) || st.MinSlaves != c.min {
				t.Fatalf("stats: explicit %v isr %v min %d", st.Explicit, st.ISR, st.MinSlaves)
			}
		})
	}
}

// TestExplicitISRChanges: the HW follows the committed set as it changes,
// never moving back; parked waits are answered when every listed slave
// covers them, held while a listed slave is gone, and failed at once when
// the set shrinks below minSlaves.
func TestExplicitISRChanges(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(0, 0)
	f.tr.MasterProgress(1000, 1000)
	f.tr.SetISR([]int64{1, 2}, 1)
	f.ack(1, 1000, 1000)
	f.ack(2, 300, 300)
	f.wantHW(300)

	w := goWait(context.Background(), f.tr, 800)
	parked(t, f.tr, 1)
	f.ack(1, 1000, 1000)
	f.ack(2, 700, 700)
	f.wantHW(700)
	parked(t, f.tr, 1) // slave 2 is still short of 800
	f.tr.SlaveGone(2)  // listed but gone: the HW holds
	f.wantHW(700)
	parked(t, f.tr, 1)
	f.ack(2, 900, 900) // back (a new session) and past 800
	if r := recv(t, w); r.err != nil || r.hw < 800 {
		t.Fatalf("wait for 800: %+v", r)
	}
	f.wantHW(900)

	// The controller drops slave 2: the HW follows slave 1 alone.
	f.tr.SetISR([]int64{1}, 1)
	f.wantHW(1000)
	// A smaller set never lowers the HW; a larger one holds it.
	f.tr.MasterProgress(2000, 2000)
	f.tr.SetISR([]int64{1, 3}, 1)
	f.ack(1, 2000, 2000)
	f.wantHW(1000)

	w = goWait(context.Background(), f.tr, 1500)
	parked(t, f.tr, 1)
	f.tr.SetISR(nil, 1) // below minSlaves: parked waits fail at once
	if r := recv(t, w); r.err != ErrNotEnoughReplicas {
		t.Fatalf("parked wait after the set shrank below minSlaves: %v", r.err)
	}
	f.wantHW(1000)
	// minSlaves 0 with an empty set: the master alone (a 2-replica group
	// after a failover).
	f.tr.SetISR(nil, 0)
	f.wantHW(2000)

	// A listed slave's wait times out when it does not cover the offset.
	f.tr.SetISR([]int64{1}, 1)
	f.tr.MasterProgress(3000, 3000)
	ctx, cancel := context.WithCancel(context.Background())
	w = goWait(ctx, f.tr, 2500)
	parked(t, f.tr, 1)
	cancel()
	if r := recv(t, w); r.err != ErrTimeout {
		t.Fatalf("wait for a slave that never acks: %v, want ErrTimeout", r.err)
	}
	parked(t, f.tr, 0)
}

// TestOnInSyncReportsEveryChangeOfTheLocalSet: OnInSync gets the ids the
// local lag rules find in sync each time that set changes (joins, lag
// fall-outs, SlaveGone), with SetISR or without, outside the lock (the
// callback may call the tracker), and not when nothing changed.
func TestOnInSyncReportsEveryChangeOfTheLocalSet(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		name := "count-mode"
		if explicit {
			name = "explicit-isr"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var calls [][]int64
			cfg := cfgWith(1, false)
			var tr *Tracker
			cfg.OnInSync = func(ids []int64) {
				_ = tr.HW() // would deadlock if called under the lock
				mu.Lock()
				calls = append(calls, ids)
				mu.Unlock()
			}
			f := newFixture(t, cfg)
			tr = f.tr
			want := func(step string, sets ...[]int64) {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				if len(calls) != len(sets) {
					t.Fatalf("%s: calls %v, want %v", step, calls, sets)
				}
				for i := range sets {
					if !slices.Equal(calls[i], sets[i]) {
						t.Fatalf("%s: calls %v, want %v", step, calls, sets)
					}
				}
			}
			f.tr.MasterProgress(0, 0)
			if explicit {
				f.tr.SetISR([]int64{1}, 1)
			}
			f.tr.MasterProgress(500, 500)
			f.ack(1, 500, 500)
			want("slave 1 joins", []int64{1})
			f.ack(1, 500, 500)
			f.tr.MasterProgress(600, 600)
			f.tr.Tick()
			want("no change", []int64{1})
			f.ack(2, 600, 600)
			want("slave 2 joins", []int64{1}, []int64{1, 2})
			f.tr.MasterProgress(600+2000, 600+2000) // both beyond MaxLagBytes 1000
			want("both fall out", []int64{1}, []int64{1, 2}, []int64{})
			f.ack(2, 2600, 2600)
			f.tr.SlaveGone(2)
			want("slave 2 back and gone", []int64{1}, []int64{1, 2}, []int64{}, []int64{2}, []int64{})
			f.tr.SlaveGone(1) // out of sync already: no change
			want("slave 1 gone", []int64{1}, []int64{1, 2}, []int64{}, []int64{2}, []int64{})
		})
	}
}

// TestOnInSyncCallsDoNotOverlap: acks from many goroutines; the callback
// is never entered twice at once, and its last call names the final set.
func TestOnInSyncCallsDoNotOverlap(t *testing.T) {
	var in, calls int
	var mu sync.Mutex
	var last []int64
	cfg := cfgWith(1, false)
	cfg.OnInSync = func(ids []int64) {
		mu.Lock()
		in++
		if in > 1 {
			t.Error("OnInSync entered concurrently")
		}
		calls++
		last = ids
		mu.Unlock()
		for range 10 {
			runtime.Gosched() // widen the window an overlap would need
		}
		mu.Lock()
		in--
		mu.Unlock()
	}
	f := newFixture(t, cfg)
	f.tr.MasterProgress(0, 0)
	f.tr.MasterProgress(100, 100)
	var wg sync.WaitGroup
	for id := int64(1); id <= 8; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := f.tr.SlaveProgress(id, 100, 100); err != nil {
					t.Error(err)
					return
				}
				f.tr.SlaveGone(id)
			}
			if err := f.tr.SlaveProgress(id, 100, 100); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 || !slices.Equal(last, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("%d calls, last %v; want the final set of all 8", calls, last)
	}
}
