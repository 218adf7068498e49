package checker

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/verify/history"
)

func compareLine(group, errText string) history.Op {
	op := history.New(history.Info, history.Compare)
	op.Process, op.Group, op.Value, op.Error = "verify", group, "3 replicas over [0, 100)", errText
	return op
}

func TestCheckDivergedLogsMakeTheRunInvalid(t *testing.T) {
	same := cat(sent("queue", "m1"), del("queue", "queue-c0", "m1"), compareLine("broker-a", ""))
	if r := Check(same); !r.Valid || r.Total.Diverged != 0 {
		t.Errorf("identical logs: valid %v, diverged %d", r.Valid, r.Total.Diverged)
	}
	why := "broker-a-2 differs from broker-a-0 at offset 4173 (commit point 8202): byte 0x1f, broker-a-0 has 0x45"
	ops := cat(sent("queue", "m1"), del("queue", "queue-c0", "m1"), compareLine("broker-a", why), compareLine("broker-b", ""))
	r := Check(ops)
	if r.Valid || r.Total.Diverged != 1 || len(r.Diverged) != 1 || r.Diverged[0].Group != "broker-a" || r.Diverged[0].Why != why {
		t.Fatalf("diverged logs: valid %v, total %d, list %+v", r.Valid, r.Total.Diverged, r.Diverged)
	}
	if len(r.Reasons) != 1 || !strings.Contains(r.Reasons[0], "1 diverged") || !strings.Contains(r.Reasons[0], "offset 4173") {
		t.Errorf("reasons %q", r.Reasons)
	}
	for _, w := range r.Workloads {
		if w.Diverged != 0 {
			t.Errorf("workload %s counts a divergence (it is the run's, not a workload's)", w.Name)
		}
	}
}
