package fsm

import (
	"math"
	"time"
)

// Progress is what the active controller last heard from a replica (soft
// state, never replicated): the incarnation it runs, the epoch of its last
// record, its log end and its durable end.
type Progress struct {
	Incarnation  uint64
	LastEpoch    uint32
	LEO, Durable int64
}

// PickMaster chooses a new master for g among live (replica id → progress,
// only those heard within the session timeout): the live ISR member (its
// Incarnation equal to the registered one) other than g.Master with the
// largest (LastEpoch, LEO), compared as integers (never as a difference),
// ties to the lowest id. With none and allowUnclean: the live registered
// replica (incarnation matching, not g.Master) with the largest (LastEpoch,
// LEO), unclean=true. ok=false: no candidate. Pure; it reads g and live
// only.
func PickMaster(g *Group, live map[int64]Progress, allowUnclean bool) (id int64, unclean bool, ok bool) {
	if g == nil {
		return 0, false, false
	}
	if id, ok := pickAmong(g, live, true); ok {
		return id, false, true
	}
	if !allowUnclean {
		return 0, false, false
	}
	if id, ok := pickAmong(g, live, false); ok {
		return id, true, true
	}
	return 0, false, false
}

// pickAmong walks g.Replicas in id order, so a strictly larger (LastEpoch,
// LEO) is needed to replace a candidate: ties go to the lowest id.
func pickAmong(g *Group, live map[int64]Progress, isrOnly bool) (int64, bool) {
	var (
		best  int64
		bestP Progress
		found bool
	)
	for _, r := range g.Replicas {
		if r.ID == g.Master || isrOnly && !g.InISR(r.ID) {
			continue
		}
		p, ok := live[r.ID]
		if !ok || p.Incarnation != r.Incarnation {
			continue
		}
		if !found || p.LastEpoch > bestP.LastEpoch || p.LastEpoch == bestP.LastEpoch && p.LEO > bestP.LEO {
			best, bestP, found = r.ID, p, true
		}
	}
	return best, found
}

// LeaseSurelyExpired is the controller's rule before it replaces a master:
// now ≥ lastGrantRecv + lease·(1+drift) + margin, where lastGrantRecv is
// the controller's receive time of the last heartbeat it answered with a
// lease (a zero time: it granted none, so the bound is at the zero time and
// has passed). The master's lease runs from its own earlier send time for
// lease as its clock measures it, and that clock may run slow by up to
// drift (a fraction), so past this bound it has expired by its own clock. Negative lease, drift or
// margin count as 0; a NaN or infinite drift, or a bound past time's range,
// never expires (the safe side). Monotonic readings are used when both
// times carry them.
func LeaseSurelyExpired(lastGrantRecv, now time.Time, lease time.Duration, drift float64, margin time.Duration) bool {
	if math.IsNaN(drift) || math.IsInf(drift, 0) {
		return false
	}
	lease, margin, drift = max(lease, 0), max(margin, 0), max(drift, 0)
	stretched := math.Ceil(float64(lease) * (1 + drift))
	if stretched >= math.MaxInt64 || int64(stretched) > math.MaxInt64-int64(margin) {
		return false
	}
	bound := time.Duration(stretched) + margin
	return !now.Before(lastGrantRecv.Add(bound))
}
