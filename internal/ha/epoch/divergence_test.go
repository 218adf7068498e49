package epoch

import (
	"math/rand/v2"
	"testing"
)

func TestDivergencePoint(t *testing.T) {
	h := []Entry{{1, 0}, {3, 500}, {4, 800}, {5, 800}}
	for _, tc := range []struct {
		name      string
		leader    []Entry
		leaderLEO int64
		fLast     uint32
		fLEO      int64
		epoch     uint32
		end       int64
	}{
		{"same last epoch, follower shorter: a prefix", h, 1000, 5, 900, 5, 900},
		{"same last epoch, follower longer: cut at the leader's end", h, 1000, 5, 1200, 5, 1000},
		{"follower's epoch ended earlier on the leader", h, 1000, 3, 900, 3, 800},
		{"follower's epoch unknown to the leader: the largest below it", h, 1000, 2, 700, 1, 500},
		{"follower's epoch unknown, follower ends below the leader's end of the shared one", h, 1000, 2, 300, 1, 300},
		{"an epoch that wrote nothing on the leader", h, 1000, 4, 900, 4, 800},
		{"follower above every leader epoch", h, 1000, 9, 1500, 5, 1000},
		{"no shared epoch: below the leader's first entry", []Entry{{3, 400}}, 1000, 2, 900, 0, 400},
		{"no shared epoch, follower shorter", []Entry{{3, 400}}, 1000, 2, 100, 0, 100},
		{"empty leader history", nil, 1000, 2, 900, 0, 0},
		{"empty follower", h, 1000, 0, 0, 0, 0},
		{"offsets above 2^31", []Entry{{1, 0}, {2, 3 << 30}}, 4 << 30, 1, 5 << 30, 1, 3 << 30},
	} {
		e, end := DivergencePoint(tc.leader, tc.leaderLEO, tc.fLast, tc.fLEO)
		if e != tc.epoch || end != tc.end {
			t.Errorf("%s: DivergencePoint = (%d, %d), want (%d, %d)", tc.name, e, end, tc.epoch, tc.end)
		}
	}
}

func TestCutPoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		follower []Entry
		fLEO     int64
		epoch    uint32
		end      int64
		want     int64
	}{
		{"the follower's epoch goes on past the leader's end", []Entry{{1, 0}}, 900, 1, 500, 500},
		{"a later follower epoch starts below the leader's end", []Entry{{1, 0}, {2, 400}}, 700, 1, 500, 400},
		{"the shared epoch is the follower's last", []Entry{{1, 0}, {3, 400}}, 900, 3, 800, 800},
		{"the follower lacks the shared epoch", []Entry{{2, 0}}, 900, 1, 500, 0},
		{"no shared epoch", []Entry{{2, 100}}, 900, 0, 400, 100},
		{"end above the follower's log", []Entry{{1, 0}}, 300, 1, 500, 300},
	} {
		if got := CutPoint(tc.follower, tc.fLEO, tc.epoch, tc.end); got != tc.want {
			t.Errorf("%s: CutPoint = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestDivergenceProperty: for random pairs of logs that share a prefix
// (the same epochs up to a point, then each its own), the cut the two
// functions give is exactly the longest common prefix as the epoch
// histories describe it: every byte below it is of the same epoch on both,
// and the byte at it (when both have one) is not.
func TestDivergenceProperty(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 17))
	epochAt := func(es []Entry, off int64) uint32 {
		var e uint32
		for _, x := range es {
			if x.Start <= off {
				e = x.Epoch
			}
		}
		return e
	}
	for range 5000 {
		// A common history, then a leader branch and a follower branch.
		var common []Entry
		var pos int64
		ep := uint32(0)
		for range rnd.IntN(4) {
			ep += 1 + uint32(rnd.IntN(2))
			common = append(common, Entry{ep, pos})
			pos += int64(rnd.IntN(50))
		}
		fork := pos
		if len(common) > 0 {
			fork = common[len(common)-1].Start + int64(rnd.IntN(60))
		}
		branch := func(from []Entry, at int64, epochs []uint32) ([]Entry, int64) {
			es := append([]Entry(nil), from...)
			p := at
			for _, e := range epochs {
				es = append(es, Entry{e, p})
				p += int64(rnd.IntN(50))
			}
			return es, p + int64(rnd.IntN(30))
		}
		// Disjoint new epochs: the leader's from one set, the follower's from another.
		var le, fe []uint32
		next := ep
		for range rnd.IntN(3) {
			next += 1 + uint32(rnd.IntN(2))
			if rnd.IntN(2) == 0 {
				le = append(le, next)
			} else {
				fe = append(fe, next)
			}
		}
		leader, lLEO := branch(common, fork, le)
		follower, fLEO := branch(common, fork, fe)
		if len(le) == 0 {
			lLEO = max(lLEO, fork)
		}
		if len(fe) == 0 {
			fLEO = max(fLEO, fork)
		}
		lLEO = max(lLEO, lastStart(leader))
		fLEO = max(fLEO, lastStart(follower))
		if len(follower) == 0 {
			fLEO = 0
		}
		fLast := uint32(0)
		if fLEO > 0 {
			fLast = epochAt(follower, fLEO-1)
		}
		e, end := DivergencePoint(leader, lLEO, fLast, fLEO)
		cut := CutPoint(follower, fLEO, e, end)
		if cut > fLEO || cut > lLEO || cut < 0 {
			t.Fatalf("cut %d outside the logs (leader %v LEO %d, follower %v LEO %d)", cut, leader, lLEO, follower, fLEO)
		}
		for off := int64(0); off < cut; off++ {
			a, b := epochAt(leader, off), epochAt(follower, off)
			if a != b || a == 0 {
				t.Fatalf("byte %d below the cut %d is of epoch %d on the leader, %d on the follower (leader %v LEO %d, follower %v LEO %d; DivergencePoint (%d, %d))",
					off, cut, a, b, leader, lLEO, follower, fLEO, e, end)
			}
		}
		if cut < fLEO && cut < lLEO {
			if a, b := epochAt(leader, cut), epochAt(follower, cut); a == b && a != 0 {
				t.Fatalf("the byte at the cut %d is of epoch %d on both: the cut is too low (leader %v LEO %d, follower %v LEO %d; DivergencePoint (%d, %d))",
					cut, a, leader, lLEO, follower, fLEO, e, end)
			}
		}
	}
}

func lastStart(es []Entry) int64 {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Start
}
