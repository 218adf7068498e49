package report

import (
	"fmt"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// t0 is when every synthetic history starts.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// hist builds a synthetic history line by line, each at a time from t0;
// lines get their index in the order they are added.
type hist struct{ ops []history.Op }

func (h *hist) add(at time.Duration, op history.Op) {
	op.Index = int64(len(h.ops))
	op.Time = t0.Add(at)
	h.ops = append(h.ops, op)
}

func (h *hist) invoke(at time.Duration, proc, id string) {
	op := history.New(history.Invoke, history.Send)
	op.Workload, op.Process, op.ID = "queue", proc, id
	h.add(at, op)
}

// end writes the outcome (OK, Fail, InDoubt) of proc's send of id, lat
// after its invoke.
func (h *hist) end(at time.Duration, typ history.Type, proc, id string, lat time.Duration) {
	op := history.New(typ, history.Send)
	op.Workload, op.Process, op.ID, op.Latency = "queue", proc, id, lat
	if typ == history.OK {
		op.Queue, op.Offset = 0, int64(len(h.ops))
	}
	h.add(at, op)
}

// send is an invoke at `at` and an OK lat later, both added now.
func (h *hist) send(at, lat time.Duration, proc, id string) {
	h.invoke(at, proc, id)
	h.end(at+lat, history.OK, proc, id, lat)
}

func (h *hist) fault(at time.Duration, kind, target, detail string) {
	op := history.New(history.Info, history.Fault)
	op.Process, op.Fault, op.Target, op.Value = "nemesis", kind, target, detail
	h.add(at, op)
}

func (h *hist) heal(at time.Duration, kind, target string) {
	op := history.New(history.Info, history.Heal)
	op.Process, op.Fault, op.Target = "nemesis", kind, target
	h.add(at, op)
}

func (h *hist) phase(at time.Duration, value string) {
	op := history.New(history.Info, history.Phase)
	op.Value = value
	h.add(at, op)
}

// sampleHistory is a 10 s run of one producer sending every 100 ms
// (from 50 ms; 5 ms latency), with a kill at 2 s healed at 2.45 s, a pause
// at 5 s healed at 6.01 s, and a partition at 8 s never healed. Sends fail
// (3 ms) from each fault to 2.5 s, 6 s and the end. So the kill's
// unavailability is 555 ms (the send invoked at 2.55 s is acked at
// 2.555 s), the pause's 1,055 ms, and the partition has no ack after it.
func sampleHistory() []history.Op {
	h := &hist{}
	type event struct {
		at   time.Duration
		emit func()
	}
	events := []event{
		{2000 * ms, func() { h.fault(2000*ms, "kill", "n0", "SIGKILL, restarted") }},
		{2450 * ms, func() { h.heal(2450*ms, "kill", "n0") }},
		{5000 * ms, func() { h.fault(5000*ms, "pause", "n0", "pause 1s") }},
		{6010 * ms, func() { h.heal(6010*ms, "pause", "n0") }},
		{8000 * ms, func() { h.fault(8000*ms, "partition", "queue-p0->n0", "blackhole") }},
	}
	failing := func(at time.Duration) bool {
		return at > 2000*ms && at < 2500*ms || at > 5000*ms && at < 6000*ms || at > 8000*ms
	}
	h.phase(0, history.PhaseWorkload)
	n := 0
	for at := 50 * ms; at < 10*time.Second; at += 100 * ms {
		for len(events) > 0 && events[0].at <= at {
			events[0].emit()
			events = events[1:]
		}
		id := fmt.Sprintf("r1-queue-0-%d", n)
		n++
		if failing(at) {
			h.invoke(at, "queue-p0", id)
			h.end(at+3*ms, history.Fail, "queue-p0", id, 3*ms)
		} else {
			h.send(at, 5*ms, "queue-p0", id)
		}
	}
	h.phase(10*time.Second, history.PhaseDone)
	return h.ops
}
