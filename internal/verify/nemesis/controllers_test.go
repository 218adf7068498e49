package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/verify/history"
)

func TestControllerKinds(t *testing.T) {
	for _, tc := range []struct {
		k     Kind
		held  bool
		needs bool
	}{
		{PartitionMasterController, true, true}, {KillControllerLeader, false, true},
		{KillMaster, false, false}, {PauseMaster, true, false}, {Kill, false, false},
	} {
		if tc.k.Held() != tc.held || tc.k.NeedsControllers() != tc.needs {
			t.Errorf("%s: held %v needs controllers %v; want %v %v", tc.k, tc.k.Held(), tc.k.NeedsControllers(), tc.held, tc.needs)
		}
	}
	for _, k := range []Kind{PartitionMasterController, KillControllerLeader} {
		if k.Aim() != Masters {
			t.Errorf("%s aims at %s, want a group's master", k, k.Aim())
		}
	}
	got, err := ParseKinds("partition-master-controller, kill-controller-leader")
	if err != nil || len(got) != 2 || got[0] != PartitionMasterController || got[1] != KillControllerLeader {
		t.Errorf("ParseKinds = %v, %v", got, err)
	}
}

func TestMinHoldLengthensOnlyHeldKindsWithAMinimum(t *testing.T) {
	plan := []Event{
		{At: 3 * time.Second, Kind: PauseMaster, Target: "broker-a", Hold: time.Second},
		{At: 6 * time.Second, Kind: KillMaster, Target: "broker-a"},
		{At: 9 * time.Second, Kind: PartitionMasterController, Target: "broker-a", Hold: 8 * time.Second},
		{At: 12 * time.Second, Kind: Pause, Target: "namesrv-0", Hold: time.Second},
	}
	min := func(k Kind) time.Duration {
		if k == PauseMaster || k == PartitionMasterController || k == KillMaster {
			return 6 * time.Second
		}
		return 0
	}
	got := MinHold(plan, min)
	want := []time.Duration{6 * time.Second, 0, 8 * time.Second, time.Second}
	for i, e := range got {
		if e.Hold != want[i] || e.At != plan[i].At || e.Target != plan[i].Target {
			t.Errorf("event %d = %v, want hold %v at %v", i, e, want[i], plan[i].At)
		}
	}
	if plan[0].Hold != time.Second {
		t.Error("MinHold changed its argument")
	}
}

// recordTarget does nothing and reports success.
type recordTarget struct{}

func (recordTarget) Inject(context.Context, Event) (string, error) { return "done", nil }
func (recordTarget) Heal(context.Context, Event) (string, error)   { return "healed", nil }

func TestRunWritesTheGroupOnTheFaultLine(t *testing.T) {
	path := t.TempDir() + "/h.jsonl"
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	plan := []Event{{At: 0, Kind: KillMaster, Target: "broker-a", Group: "broker-a"}}
	if err := Run(context.Background(), plan, recordTarget{}, w, clock.Real); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].F != history.Fault || ops[0].Group != "broker-a" || ops[1].Group != "broker-a" {
		t.Errorf("lines %+v; want a Fault and a Heal line of group broker-a", ops)
	}
}
