package nemesis

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Kind
		errPart string
	}{
		{in: "kill,pause,partition,restart,slow-disk", want: []Kind{Kill, Pause, Partition, Restart, SlowDisk}},
		{in: " kill , pause ", want: []Kind{Kill, Pause}},
		{in: "partition", want: []Kind{Partition}},
		{in: "", want: nil},
		{in: "none", want: nil},
		{in: "kill,explode", errPart: `unknown fault kind "explode" (known: kill, pause, partition, restart, slow-disk, kill-master, kill-slave, partition-slave, pause-master, partition-master-controller, kill-controller-leader)`},
		{in: "kill-master,kill-slave,partition-slave,pause-master", want: []Kind{KillMaster, KillSlave, PartitionSlave, PauseMaster}},
		{in: "kill,,pause", errPart: "empty fault kind"},
		{in: "kill,pause,kill", errPart: `"kill" listed twice`},
		{in: "Kill", errPart: `unknown fault kind "Kill"`},
	} {
		got, err := ParseKinds(tc.in)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("ParseKinds(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.errPart)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

var three = []Kind{Kill, Pause, Partition}

func TestPlanIsDeterministicPerSeed(t *testing.T) {
	targets := []string{"broker-a-0", "broker-a-1"}
	a := Plan(7, three, 0, 120*time.Second, targets)
	b := Plan(7, three, 0, 120*time.Second, targets)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("two plans of seed 7 differ (or are empty):\n%v\n%v", a, b)
	}
	c := Plan(8, three, 0, 120*time.Second, targets)
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 give the same 39-event plan")
	}
}

func TestPlanTakesKindsInBalancedShuffledRounds(t *testing.T) {
	kinds := []Kind{Kill, Pause, Partition, Restart, SlowDisk}
	orders := map[string]bool{}
	for seed := range int64(20) {
		plan := Plan(seed, kinds, time.Second, 103*time.Second, []string{"x"})
		if len(plan) != 102 {
			t.Fatalf("seed %d: %d events in 103 s at 1 s, want 102", seed, len(plan))
		}
		for r := 0; r+len(kinds) <= len(plan); r += len(kinds) {
			var got []Kind
			for _, e := range plan[r : r+len(kinds)] {
				got = append(got, e.Kind)
			}
			orders[string(got[0])+string(got[1])] = true
			slices.Sort(got)
			want := slices.Clone(kinds)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: round at event %d has kinds %v, want each kind once", seed, r, got)
			}
		}
		count := map[Kind]int{}
		for _, e := range plan {
			count[e.Kind]++
		}
		lo, hi := len(plan), 0
		for _, k := range kinds {
			lo, hi = min(lo, count[k]), max(hi, count[k])
		}
		if hi-lo > 1 {
			t.Fatalf("seed %d: kind counts %v differ by more than one", seed, count)
		}
	}
	if len(orders) < 5 {
		t.Errorf("rounds are barely shuffled: only %d distinct starts over 20 seeds", len(orders))
	}
	// A kind listed twice is still one kind of the round.
	plan := Plan(1, []Kind{Kill, Kill, Pause}, time.Second, 10*time.Second, []string{"x"})
	n := 0
	for _, e := range plan {
		if e.Kind == Kill {
			n++
		}
	}
	if n > (len(plan)+1)/2 {
		t.Errorf("kill listed twice came %d times in %d events", n, len(plan))
	}
}

func TestPlanSpacingHoldsAndDuration(t *testing.T) {
	for _, tc := range []struct{ interval, duration time.Duration }{
		{0, 120 * time.Second},
		{10 * time.Second, 95 * time.Second},
		{time.Second, 30 * time.Second},
		{7 * time.Millisecond, time.Second},
	} {
		interval := tc.interval
		if interval == 0 {
			interval = DefaultInterval
		}
		plan := Plan(42, []Kind{Kill, Pause, Partition, Restart, SlowDisk}, tc.interval, tc.duration, []string{"a"})
		if want := int((tc.duration - interval/2) / interval); len(plan) != want {
			t.Errorf("%v over %v: %d events, want %d", interval, tc.duration, len(plan), want)
		}
		for i, e := range plan {
			if e.At != time.Duration(i+1)*interval {
				t.Errorf("%v: event %d at %v, want %v", interval, i, e.At, time.Duration(i+1)*interval)
			}
			if e.At+e.Hold > tc.duration {
				t.Errorf("%v: %v ends after the %v run", interval, e, tc.duration)
			}
			if e.Kind.Held() {
				if e.Hold < interval/4 || e.Hold > interval/2 {
					t.Errorf("%v: %v holds outside [%v, %v]", interval, e, interval/4, interval/2)
				}
			} else if e.Hold != 0 {
				t.Errorf("%v: %v has a hold; kill and restart heal at once", interval, e)
			}
		}
	}
}

func TestPlanOf120sGivesAtLeastTenKills(t *testing.T) {
	for seed := range int64(50) {
		kills := 0
		for _, e := range Plan(seed, three, 0, 120*time.Second, []string{"broker-a-0"}) {
			if e.Kind == Kill {
				kills++
			}
		}
		if kills < 10 {
			t.Fatalf("seed %d: %d kills in 120 s of kill,pause,partition at the default interval, want ≥ 10", seed, kills)
		}
	}
}

func TestPlanTargetsAreDrawnFromTheGivenNames(t *testing.T) {
	targets := []string{"a", "b", "c"}
	used := map[string]int{}
	for _, e := range Plan(3, three, time.Second, 300*time.Second, targets) {
		if !slices.Contains(targets, e.Target) {
			t.Fatalf("%v aims at a target not given", e)
		}
		used[e.Target]++
	}
	for _, n := range targets {
		if used[n] < 50 {
			t.Errorf("target %s hit %d times in 299 events (%v)", n, used[n], used)
		}
	}
}

func TestPlanWithNothingToDo(t *testing.T) {
	for name, plan := range map[string][]Event{
		"no kinds":   Plan(1, nil, 0, time.Minute, []string{"a"}),
		"no targets": Plan(1, three, 0, time.Minute, nil),
		"no room":    Plan(1, three, 0, 4*time.Second, []string{"a"}),
	} {
		if len(plan) != 0 {
			t.Errorf("%s: %v", name, plan)
		}
	}
}
