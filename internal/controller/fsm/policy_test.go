package fsm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPickMaster(t *testing.T) {
	// Group "g" of the fixture: master 1, ISR {1,2,3}, replica 4 outside;
	// incarnation i for replica i.
	p := func(inc uint64, lastEpoch uint32, leo int64) Progress {
		return Progress{Incarnation: inc, LastEpoch: lastEpoch, LEO: leo}
	}
	cases := []struct {
		name        string
		live        map[int64]Progress
		unclean     bool
		id          int64
		wantUnclean bool
		ok          bool
	}{
		{"largest LEO", map[int64]Progress{2: p(2, 1, 100), 3: p(3, 1, 200)}, false, 3, false, true},
		{"last epoch before LEO", map[int64]Progress{2: p(2, 2, 10), 3: p(3, 1, 1<<40)}, false, 2, false, true},
		{"tie to the lowest id", map[int64]Progress{3: p(3, 1, 100), 2: p(2, 1, 100)}, false, 2, false, true},
		{"LEOs further apart than 32 bits", map[int64]Progress{2: p(2, 1, 1), 3: p(3, 1, 1<<33+1)}, false, 3, false, true},
		{"LEO difference overflowing int64", map[int64]Progress{2: p(2, 1, math.MinInt64), 3: p(3, 1, math.MaxInt64)}, false, 3, false, true},
		{"the master is never picked", map[int64]Progress{1: p(1, 9, 1<<50), 2: p(2, 1, 0)}, false, 2, false, true},
		{"an old incarnation is not live", map[int64]Progress{2: p(1, 1, 500), 3: p(3, 1, 100)}, false, 3, false, true},
		{"outside the ISR only unclean", map[int64]Progress{4: p(4, 5, 1<<40), 2: p(2, 1, 1)}, true, 2, false, true},
		{"none live", map[int64]Progress{}, false, 0, false, false},
		{"nil live", nil, true, 0, false, false},
		{"only the master live", map[int64]Progress{1: p(1, 1, 1)}, true, 0, false, false},
		{"only outside the ISR, unclean off", map[int64]Progress{4: p(4, 1, 1)}, false, 0, false, false},
		{"only outside the ISR, unclean on", map[int64]Progress{4: p(4, 1, 1)}, true, 4, true, true},
		{"unclean ignores an old incarnation", map[int64]Progress{4: p(3, 1, 1)}, true, 0, false, false},
		{"unclean ignores an unregistered id", map[int64]Progress{9: p(9, 1, 1)}, true, 0, false, false},
		{"ISR members with old incarnations, unclean picks the best live",
			map[int64]Progress{2: p(7, 1, 1), 3: p(8, 1, 1), 4: p(4, 1, 1)}, true, 4, true, true},
	}
	g := fixture(t).Groups["g"]
	for _, tc := range cases {
		id, unclean, ok := PickMaster(g, tc.live, tc.unclean)
		if id != tc.id || unclean != tc.wantUnclean || ok != tc.ok {
			t.Errorf("%s: PickMaster = %d, %v, %v; want %d, %v, %v", tc.name, id, unclean, ok, tc.id, tc.wantUnclean, tc.ok)
		}
	}
	if _, _, ok := PickMaster(nil, map[int64]Progress{1: {}}, true); ok {
		t.Error("PickMaster(nil) found a candidate")
	}
	// An offline group (no master): any live ISR member.
	og := offline(t).Groups["g"]
	if id, unclean, ok := PickMaster(og, map[int64]Progress{3: p(3, 2, 5), 1: p(1, 9, 9)}, false); id != 3 || unclean || !ok {
		t.Errorf("offline group: PickMaster = %d, %v, %v; want 3, false, true", id, unclean, ok)
	}
}

// PickMaster against a naive model: sort the eligible candidates by
// (LastEpoch desc, LEO desc, id asc) and take the first.
func TestPickMasterModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for range 5000 {
		g := &Group{Master: int64(rng.IntN(5)), Epoch: 1}
		for id := int64(1); id <= int64(1+rng.IntN(6)); id++ {
			g.Replicas = append(g.Replicas, Replica{ID: id, Incarnation: uint64(id)})
			if rng.IntN(2) == 0 || id == g.Master {
				g.ISR = append(g.ISR, id)
			}
		}
		live := map[int64]Progress{}
		for id := int64(1); id <= 7; id++ {
			if rng.IntN(3) == 0 {
				continue
			}
			inc := uint64(id)
			if rng.IntN(6) == 0 {
				inc++
			}
			// Extreme LEOs so that a difference cast would mis-order them.
			leo := []int64{0, 1, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, math.MaxInt64, math.MinInt64}[rng.IntN(7)]
			live[id] = Progress{Incarnation: inc, LastEpoch: uint32(rng.IntN(3)), LEO: leo}
		}
		allow := rng.IntN(2) == 0
		model := func(isrOnly bool) []int64 {
			var c []int64
			for _, r := range g.Replicas {
				if p, ok := live[r.ID]; ok && p.Incarnation == r.Incarnation && r.ID != g.Master && (!isrOnly || slices.Contains(g.ISR, r.ID)) {
					c = append(c, r.ID)
				}
			}
			slices.SortFunc(c, func(a, b int64) int {
				pa, pb := live[a], live[b]
				switch {
				case pa.LastEpoch != pb.LastEpoch:
					return int(pb.LastEpoch) - int(pa.LastEpoch)
				case pa.LEO > pb.LEO:
					return -1
				case pa.LEO < pb.LEO:
					return 1
				}
				return cmpInt64(a, b)
			})
			return c
		}
		wantID, wantUnclean, wantOK := int64(0), false, false
		if c := model(true); len(c) > 0 {
			wantID, wantOK = c[0], true
		} else if c := model(false); allow && len(c) > 0 {
			wantID, wantUnclean, wantOK = c[0], true, true
		}
		id, unclean, ok := PickMaster(g, live, allow)
		if id != wantID || unclean != wantUnclean || ok != wantOK {
			t.Fatalf("group %+v live %+v unclean %v: PickMaster = %d, %v, %v; model %d, %v, %v", g, live, allow, id, unclean, ok, wantID, wantUnclean, wantOK)
		}
	}
}

func TestLeaseSurelyExpired(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	lease, drift, margin := 3*time.Second, 0.05, 200*time.Millisecond
	bound := 3350 * time.Millisecond // 3 s · 1.05 + 200 ms
	cases := []struct {
		name   string
		grant  time.Time
		now    time.Time
		lease  time.Duration
		drift  float64
		margin time.Duration
		want   bool
	}{
		{"at the bound", t0, t0.Add(bound), lease, drift, margin, true},
		{"past the bound", t0, t0.Add(bound + time.Hour), lease, drift, margin, true},
		{"1 ns before", t0, t0.Add(bound - 1), lease, drift, margin, false},
		{"the lease alone is not enough", t0, t0.Add(lease), lease, drift, margin, false},
		{"before the grant", t0, t0.Add(-time.Second), lease, drift, margin, false},
		{"no drift, no margin", t0, t0.Add(lease), lease, 0, 0, true},
		{"negative drift counts as 0", t0, t0.Add(lease + margin - 1), lease, -0.5, margin, false},
		{"negative drift at lease+margin", t0, t0.Add(lease + margin), lease, -0.5, margin, true},
		{"negative margin counts as 0", t0, t0.Add(lease - 1), lease, 0, -time.Hour, false},
		{"negative lease counts as 0", t0, t0.Add(margin), -lease, drift, margin, true},
		{"a fractional nanosecond rounds up", t0, t0.Add(2), 3, 0.5, 0, false},
		{"NaN drift never expires", t0, t0.Add(1000 * time.Hour), lease, math.NaN(), margin, false},
		{"infinite drift never expires", t0, t0.Add(1000 * time.Hour), lease, math.Inf(1), margin, false},
		{"a bound beyond the range never expires", t0, t0.Add(1000 * time.Hour), math.MaxInt64 / 2, 3, margin, false},
		{"a margin beyond the range never expires", t0, t0.Add(1000 * time.Hour), lease, drift, math.MaxInt64 - time.Second, false},
		{"no grant ever", time.Time{}, t0, lease, drift, margin, true},
	}
	for _, tc := range cases {
		if got := LeaseSurelyExpired(tc.grant, tc.now, tc.lease, tc.drift, tc.margin); got != tc.want {
			t.Errorf("%s: LeaseSurelyExpired = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Monotonic readings: wall-clock steps do not matter when both times
	// carry them.
	now := time.Now()
	later := now.Add(bound)
	if !LeaseSurelyExpired(now, later, lease, drift, margin) || LeaseSurelyExpired(now, later.Add(-1), lease, drift, margin) {
		t.Error("monotonic readings: wrong bound")
	}
}
