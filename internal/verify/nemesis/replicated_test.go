package nemesis

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestReplicationKindsHoldAndAim(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		held bool
		aim  Aim
	}{
		{Kill, false, AnyProcess}, {Pause, true, AnyProcess}, {Partition, true, AnyProcess},
		{Restart, false, AnyProcess}, {SlowDisk, true, Brokers},
		{KillMaster, false, Masters}, {KillSlave, false, Slaves},
		{PartitionSlave, true, Slaves}, {PauseMaster, true, Masters},
	} {
		if tc.k.Held() != tc.held || tc.k.Aim() != tc.aim {
			t.Errorf("%s: held %v aim %s; want %v %s", tc.k, tc.k.Held(), tc.k.Aim(), tc.held, tc.aim)
		}
	}
}

// cluster2x2 is the target chooser of groups=2,replicas=2.
func cluster2x2(k Kind) []string {
	switch k.Aim() {
	case Masters:
		return []string{"broker-a-0", "broker-b-0"}
	case Slaves:
		return []string{"broker-a-1", "broker-b-1"}
	case Brokers:
		return []string{"broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"}
	}
	return []string{"namesrv-0", "broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"}
}

// TestPlanTargetsAimsEachKind: every event of a plan with the
// replication kinds hits a process of the kind's aim, each target of a
// kind is hit, the kinds come equally often, the kills are not held and
// the rest are, and the plan depends on the seed alone.
func TestPlanTargetsAimsEachKind(t *testing.T) {
	kinds := []Kind{KillMaster, KillSlave, PartitionSlave, PauseMaster, Kill}
	interval, duration := 3*time.Second, 120*time.Second
	plan := PlanTargets(11, kinds, interval, duration, cluster2x2)
	if len(plan) != 39 {
		t.Fatalf("%d events, want 39 (one every 3 s in 120 s)", len(plan))
	}
	count := map[Kind]int{}
	hit := map[Kind]map[string]bool{}
	for _, e := range plan {
		if !slices.Contains(cluster2x2(e.Kind), e.Target) {
			t.Errorf("%v: target not among %v", e, cluster2x2(e.Kind))
		}
		if e.Kind.Held() != (e.Hold > 0) || (e.Hold > 0 && (e.Hold < interval/4 || e.Hold > interval/2)) {
			t.Errorf("%v: hold %v", e, e.Hold)
		}
		count[e.Kind]++
		if hit[e.Kind] == nil {
			hit[e.Kind] = map[string]bool{}
		}
		hit[e.Kind][e.Target] = true
	}
	for _, k := range kinds {
		if count[k] < 7 || count[k] > 8 {
			t.Errorf("%s: %d events, want 7 or 8 of 39 (balanced rounds)", k, count[k])
		}
		if len(hit[k]) != len(cluster2x2(k)) && k != Kill {
			t.Errorf("%s hit %v, want each of %v", k, hit[k], cluster2x2(k))
		}
	}
	if again := PlanTargets(11, kinds, interval, duration, cluster2x2); !reflect.DeepEqual(plan, again) {
		t.Fatal("the same seed gives two plans")
	}
	if other := PlanTargets(12, kinds, interval, duration, cluster2x2); reflect.DeepEqual(plan, other) {
		t.Fatal("seeds 11 and 12 give the same plan")
	}
}

// TestPlanTargetsLeavesOutKindsWithoutTargets: a kind with no process to
// hit (kill-slave without slaves) is not planned; the others still are.
func TestPlanTargetsLeavesOutKindsWithoutTargets(t *testing.T) {
	noSlaves := func(k Kind) []string {
		if k.Aim() == Slaves {
			return nil
		}
		return []string{"broker-a-0"}
	}
	plan := PlanTargets(3, []Kind{KillSlave, KillMaster}, time.Second, 10*time.Second, noSlaves)
	if len(plan) != 9 {
		t.Fatalf("plan %v, want 9 events", plan)
	}
	for _, e := range plan {
		if e.Kind != KillMaster {
			t.Fatalf("event %v of a kind without targets", e)
		}
	}
	if p := PlanTargets(3, []Kind{KillSlave}, time.Second, 10*time.Second, noSlaves); p != nil {
		t.Fatalf("plan %v, want none", p)
	}
}

// TestPlanIsPlanTargetsWithOneList: Plan is unchanged by the per-kind
// chooser — the same list for every kind gives the same events.
func TestPlanIsPlanTargetsWithOneList(t *testing.T) {
	targets := []string{"a", "b", "c"}
	for seed := range int64(10) {
		a := Plan(seed, three, 0, time.Minute, targets)
		b := PlanTargets(seed, three, 0, time.Minute, func(Kind) []string { return targets })
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: Plan %v, PlanTargets %v", seed, a, b)
		}
	}
}
