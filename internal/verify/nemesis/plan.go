package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// DefaultInterval is the time between two faults when Plan is given none.
const DefaultInterval = 3 * time.Second

// MinHold is plan with every held event of a kind that has a minimum
// (min(kind) > 0) held at least that long: the master faults of a
// topology with controllers, which must outlast the master's lease to
// make the controller elect another. Later events keep their times (Run
// starts an event whose time has passed at once).
func MinHold(plan []Event, min func(Kind) time.Duration) []Event {
	out := append([]Event(nil), plan...)
	for i, e := range out {
		if m := min(e.Kind); e.Kind.Held() && e.Hold < m {
			out[i].Hold = m
		}
	}
	return out
}

// Event is one fault of a plan.
type Event struct {
	// At is when the fault starts, from the start of Run.
	At     time.Duration
	Kind   Kind
	Target string
	// Hold is how long a held kind (Kind.Held) stays on before its heal,
	// counted from the end of its inject; 0 for kill and restart, whose
	// heal follows as soon as the process is down.
	Hold time.Duration
	// Group is the broker group whose master the fault hits (the master
	// kinds, Kind.Aim Masters), set by the caller after planning ("" when
	// it does not say): the Fault line carries it, and the report
	// measures the failover time on that group.
	Group string
}

func (e Event) String() string {
	if e.Hold > 0 {
		return fmt.Sprintf("%s %s at %v for %v", e.Kind, e.Target, e.At, e.Hold)
	}
	return fmt.Sprintf("%s %s at %v", e.Kind, e.Target, e.At)
}

// planStream is the second half of the generator's seed, fixed so that a
// plan depends on the seed alone.
const planStream = 0x6e656d65736973 // "nemesis"

// Plan lays out the faults of a run of the given duration: one every
// interval (DefaultInterval when interval ≤ 0), the first one interval in,
// and only as long as a fault started then, held for the longest hold
// (interval/2), ends within the duration. Kinds are taken in rounds, each
// a seeded shuffle of kinds (a kind listed twice counts once), so that
// every kind comes equally often (within one, for a last partial round).
// Each event's target is drawn by the seed from targets; a held kind's
// hold is drawn from [interval/4, interval/2] (in steps of a millisecond
// when the interval allows). No kinds, no targets or no room gives no events.
//
// Plan is pure: the same arguments give the same plan.
func Plan(seed int64, kinds []Kind, interval, duration time.Duration, targets []string) []Event {
	return PlanTargets(seed, kinds, interval, duration, func(Kind) []string { return targets })
}

// PlanTargets is Plan with a target list per kind: targets(k) are the
// processes a fault of kind k may hit (e.g. the masters for kill-master,
// see Kind.Aim). A kind without targets is left out of the plan, as if
// not listed. With the same list for every kind it gives Plan's plan.
//
// PlanTargets is pure as long as targets is.
func PlanTargets(seed int64, kinds []Kind, interval, duration time.Duration, targets func(Kind) []string) []Event {
	if interval <= 0 {
		interval = DefaultInterval
	}
	var distinct []Kind
	seen := map[Kind]bool{}
	aims := map[Kind][]string{}
	for _, k := range kinds {
		if seen[k] {
			continue
		}
		seen[k] = true
		if ts := targets(k); len(ts) > 0 {
			aims[k] = append([]string(nil), ts...)
			distinct = append(distinct, k)
		}
	}
	if len(distinct) == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), planStream))
	var (
		out   []Event
		round []Kind
	)
	for at := interval; at+interval/2 <= duration; at += interval {
		if len(round) == 0 {
			round = append(round[:0], distinct...)
			r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		ts := aims[round[0]]
		e := Event{At: at, Kind: round[0], Target: ts[r.IntN(len(ts))]}
		round = round[1:]
		if e.Kind.Held() {
			e.Hold = hold(r, interval)
		}
		out = append(out, e)
	}
	return out
}

// hold draws a hold in [interval/4, interval/2].
func hold(r *rand.Rand, interval time.Duration) time.Duration {
	lo, hi := interval/4, interval/2
	unit := time.Duration(1)
	if hi-lo >= 4*time.Millisecond {
		unit = time.Millisecond
	}
	// Whole units above lo, rounded so as to stay within [lo, hi].
	steps := int64((hi - lo) / unit)
	return lo + time.Duration(r.Int64N(steps+1))*unit
}
