package track

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// model is the naive tracker the property test compares with: the full
// history of the master's LEO, and every slave's acks.
type model struct {
	cfg    Config
	clk    *clock.Manual
	start  int64 // the LEO of the first MasterProgress
	hist   []sample
	leo    int64
	dur    int64
	slaves map[int64]*mslave
}

type mslave struct {
	written, durable int64
	wasIn            bool // the tracker said in sync at the last check
}

func (m *model) contribution(written, durable int64) int64 {
	if m.cfg.AsyncFlush {
		return written
	}
	return durable
}

// trueLag is how long the master has held a byte past written (exactly;
// "long" = 1<<62 when it was there at the start).
func (m *model) trueLag(written int64) time.Duration {
	if written >= m.leo {
		return 0
	}
	if m.start > written {
		return 1 << 62
	}
	for _, s := range m.hist {
		if s.leo > written {
			return m.clk.Now().Sub(s.at)
		}
	}
	panic("no sample above a lagging slave")
}

// TestPropertiesUnderRandomProgress drives a tracker and a naive model
// with random progress, acks (good and bad), departures, time and waits,
// over many seeds, and checks after every step: the HW never decreases, is
// at most the master's contribution, is covered by SyncReplicas in-sync
// slaves when it moves, equals the rule over the in-sync set; the in-sync
// set keeps the lag bounds (up to one granule, towards staying in, and the
// hysteresis); Wait answers from the state; parked waiters are exactly the
// ones above the HW; a Wait that returns nil sees HW ≥ end.
func TestPropertiesUnderRandomProgress(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, uint64(seed)) })
	}
}

func runProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 16))
	cfg := Config{SyncReplicas: rng.IntN(3), AsyncFlush: rng.IntN(2) == 0, MaxLagBytes: 1 << 20, MaxLagTime: 2 * time.Second}
	clk := clock.NewManual(t0)
	tr := New(cfg, clk, nil)
	g := cfg.MaxLagTime / 32
	base := 1<<31 + rng.Int64N(1<<50)
	m := &model{cfg: cfg, clk: clk, start: base, leo: base, dur: base, slaves: map[int64]*mslave{}}
	m.hist = append(m.hist, sample{at: clk.Now(), leo: base})
	tr.MasterProgress(base, base)

	var wg sync.WaitGroup
	results := make(chan result, 1000)
	var stats struct{ advances, inSync, nilWaits, nerWaits int }
	defer func() {
		t.Logf("k %d async %v: %d HW advances, mean in sync %.2f, parked waits nil %d, not enough %d, fall-outs %d",
			cfg.SyncReplicas, cfg.AsyncFlush, stats.advances, float64(stats.inSync)/400, stats.nilWaits, stats.nerWaits, tr.Stats().FallOuts)
	}()
	prevHW := tr.HW()
	for step := range 400 {
		op := rng.IntN(100)
		switch {
		case op < 25: // master grows
			d := rng.Int64N(64 << 10)
			if rng.IntN(20) == 0 {
				d = 2 << 20
			}
			m.leo += d
			m.dur += rng.Int64N(m.leo - m.dur + 1)
			m.hist = append(m.hist, sample{at: clk.Now(), leo: m.leo})
			tr.MasterProgress(m.leo, m.dur)
		case op < 55: // a good ack
			id := 1 + rng.Int64N(3)
			s := m.slaves[id]
			if s == nil {
				w := m.leo - rng.Int64N(min(m.leo-base, 4<<20)+1)
				if rng.IntN(10) == 0 {
					w = base - 1 - rng.Int64N(1000) // behind the log the master started with
				}
				s = &mslave{written: w, durable: w - rng.Int64N(1000)}
				m.slaves[id] = s
			} else if rng.IntN(2) == 0 {
				s.written = m.leo // caught up
				s.durable += rng.Int64N(s.written - s.durable + 1)
			} else {
				s.written += rng.Int64N(m.leo - s.written + 1)
				s.durable += rng.Int64N(s.written - s.durable + 1)
			}
			if err := tr.SlaveProgress(id, s.written, s.durable); err != nil {
				t.Fatalf("step %d: good ack refused: %v", step, err)
			}
		case op < 62: // a bad ack
			id := 1 + rng.Int64N(3)
			w, d := m.leo+1+rng.Int64N(1<<40), m.leo
			if s := m.slaves[id]; s != nil && s.written > base && rng.IntN(2) == 0 {
				w, d = s.written-1, min(s.durable, s.written-1)
			}
			before := tr.Stats()
			if err := tr.SlaveProgress(id, w, d); !errors.Is(err, ErrBadAck) {
				t.Fatalf("step %d: bad ack (%d, %d) of %d: %v", step, w, d, id, err)
			}
			if after := tr.Stats(); !slices.Equal(after.Slaves, before.Slaves) || after.HW != before.HW {
				t.Fatalf("step %d: a refused ack changed the state", step)
			}
		case op < 66: // a slave leaves
			id := 1 + rng.Int64N(3)
			delete(m.slaves, id)
			tr.SlaveGone(id)
		case op < 82: // time passes
			clk.Advance(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
			tr.Tick()
		case op < 92: // a Wait that answers from the state alone
			end := prevHW + rng.Int64N(11) - 5
			err := tr.Wait(canceled(), end)
			var want error
			switch {
			case end <= tr.HW():
			case len(tr.InSync()) < cfg.SyncReplicas:
				want = ErrNotEnoughReplicas
			default:
				want = ErrTimeout
			}
			if err != want {
				t.Fatalf("step %d: Wait(%d) = %v, want %v (HW %d)", step, end, err, want, tr.HW())
			}
		default: // a Wait that parks (or answers at once)
			end := prevHW + 1 + rng.Int64N(256<<10)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := tr.Wait(context.Background(), end)
				results <- result{end: end, err: err, hw: tr.HW()}
			}()
		}
		if h := checkProperties(t, step, tr, m, prevHW, g); h > prevHW {
			stats.advances++
			prevHW = h
		}
		stats.inSync += len(tr.InSync())
	}
	// Release the parked waiters: with slaves needed, they fail once the
	// slaves are gone; without, the master's progress answers them.
	for id := range int64(4) {
		tr.SlaveGone(id)
	}
	m.leo += 1 << 30
	tr.MasterProgress(m.leo, m.leo)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("parked Waits did not return")
	}
	close(results)
	for r := range results {
		if r.err == nil {
			stats.nilWaits++
		} else {
			stats.nerWaits++
		}
		switch {
		case r.err == nil && r.hw < r.end:
			t.Fatalf("Wait(%d) = nil with HW %d", r.end, r.hw)
		case r.err != nil && r.err != ErrNotEnoughReplicas:
			t.Fatalf("Wait(%d) = %v", r.end, r.err)
		case r.err == ErrNotEnoughReplicas && cfg.SyncReplicas == 0:
			t.Fatalf("Wait(%d) = %v without sync replicas", r.end, r.err)
		}
	}
	if n := tr.waiters.Len(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func checkProperties(t *testing.T, step int, tr *Tracker, m *model, prevHW int64, g time.Duration) int64 {
	t.Helper()
	k := m.cfg.SyncReplicas
	st := tr.Stats()
	hw := st.HW
	in := tr.InSync()
	if hw < prevHW {
		t.Fatalf("step %d: HW moved back %d -> %d", step, prevHW, hw)
	}
	mc := m.contribution(m.leo, m.dur)
	if hw > mc {
		t.Fatalf("step %d: HW %d above the master's contribution %d", step, hw, mc)
	}
	var cs []int64
	for _, id := range in {
		s := m.slaves[id]
		if s == nil {
			t.Fatalf("step %d: gone slave %d in sync", step, id)
		}
		cs = append(cs, m.contribution(s.written, s.durable))
	}
	want := prevHW
	if len(cs) >= k {
		f := mc
		if k > 0 {
			slices.Sort(cs)
			f = min(f, cs[len(cs)-k])
		}
		want = max(prevHW, f)
	}
	if hw != want {
		t.Fatalf("step %d: HW %d, want %d (prev %d, master %d, in-sync contributions %v, k %d)", step, hw, want, prevHW, mc, cs, k)
	}
	if hw > prevHW {
		covered := 0
		for _, c := range cs {
			if c >= hw {
				covered++
			}
		}
		if covered < k {
			t.Fatalf("step %d: HW %d held by %d in-sync slaves, want %d", step, hw, covered, k)
		}
	}
	if st.InSync != len(in) {
		t.Fatalf("step %d: Stats.InSync %d, InSync() %v", step, st.InSync, in)
	}
	for id, s := range m.slaves {
		isIn := slices.Contains(in, id)
		lagBytes := m.leo - s.written
		lag := m.trueLag(s.written)
		if isIn && (lagBytes > m.cfg.MaxLagBytes || lag >= m.cfg.MaxLagTime+g) {
			t.Fatalf("step %d: slave %d in sync with lag %d bytes, %v", step, id, lagBytes, lag)
		}
		if !isIn && lagBytes <= m.cfg.MaxLagBytes/2 && lag < m.cfg.MaxLagTime/2 {
			t.Fatalf("step %d: slave %d out of sync within half the bounds: lag %d bytes, %v", step, id, lagBytes, lag)
		}
		if !isIn && s.wasIn && lagBytes <= m.cfg.MaxLagBytes && lag < m.cfg.MaxLagTime {
			t.Fatalf("step %d: slave %d fell out within the bounds: lag %d bytes, %v", step, id, lagBytes, lag)
		}
		s.wasIn = isIn
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, w := range tr.waiters {
		if w.end <= tr.hw {
			t.Fatalf("step %d: waiter for %d parked with HW %d", step, w.end, tr.hw)
		}
	}
	if tr.inSync < k && tr.waiters.Len() > 0 {
		t.Fatalf("step %d: %d waiters parked with %d of %d in sync", step, tr.waiters.Len(), tr.inSync, k)
	}
	return hw
}
