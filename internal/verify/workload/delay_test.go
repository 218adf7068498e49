package workload

import (
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// TestDelayWorkloadDeliversNothingEarlyAndEverythingAcked runs the delay
// workload against a live broker: every acked message is delivered, none
// before its DeliverAt (nor a margin after it: the consumers run on
// through the drain's wait), and the drain finds each in the topic.
func TestDelayWorkloadDeliversNothingEarlyAndEverythingAcked(t *testing.T) {
	env := liveBroker(t, delayName)
	env.Rate = 20
	ops := runBriefly(t, delayName, env, time.Second)
	sends := checkSends(t, ops)
	first, drained := map[string]time.Time{}, map[string]int{}
	for _, op := range ops {
		switch op.F {
		case history.Deliver:
			s := sends[op.ID]
			if s == nil || s.invoke.Sum != op.Sum || op.Corrupt {
				t.Errorf("delivered %s was not sent with sum %d", op.ID, op.Sum)
				continue
			}
			if op.Time.Before(s.invoke.DeliverAt) {
				t.Errorf("%s delivered at %v, %v before its time", op.ID, op.Time, s.invoke.DeliverAt.Sub(op.Time))
			}
			if _, ok := first[op.ID]; !ok {
				first[op.ID] = op.Time
			}
		case history.Drain:
			if op.Topic != env.Topic(delayName) {
				t.Errorf("drain line of topic %s", op.Topic)
			}
			drained[op.ID]++
		}
	}
	n := 0
	var late time.Duration
	for id, s := range sends {
		d := s.invoke.DeliverAt.Sub(s.invoke.Time)
		if d < delayMin-10*time.Millisecond || d > delayMax+10*time.Millisecond {
			t.Errorf("%s due %v after its send", id, d)
		}
		if _, ok := acked(s); !ok {
			continue
		}
		n++
		at, ok := first[id]
		if !ok {
			t.Errorf("acked %s never delivered", id)
			continue
		}
		late = max(late, at.Sub(s.invoke.DeliverAt))
		if drained[id] != 1 {
			t.Errorf("acked %s drained %d times", id, drained[id])
		}
	}
	if n < 10 {
		t.Fatalf("only %d sends acked", n)
	}
	// Messages come due after Run ended: the consumers go on consuming
	// while the drain waits, so none waits for the catch-up after it.
	if late >= delayMargin {
		t.Errorf("a message was delivered %v late: the consumers stopped before the due times", late)
	}
	t.Logf("%d acked, max lateness %v", n, late)
}
