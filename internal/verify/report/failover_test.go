package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// foHistory builds a history line by line at given offsets (ms) from t0.
type foHistory struct{ ops []history.Op }

var foStart = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

func (h *foHistory) add(ms int, op history.Op) {
	op.Index = int64(len(h.ops))
	op.Time = foStart.Add(time.Duration(ms) * time.Millisecond)
	h.ops = append(h.ops, op)
}

func (h *foHistory) fault(ms int, kind, group string) {
	op := history.New(history.Info, history.Fault)
	op.Process, op.Fault, op.Target, op.Group = "nemesis", kind, group, group
	h.add(ms, op)
}

// send is an Invoke at ms and its outcome at ms+lat.
func (h *foHistory) send(ms, lat int, wl, id, group string, t history.Type) {
	inv := history.New(history.Invoke, history.Send)
	inv.Workload, inv.Process, inv.ID, inv.Group = wl, wl+"-p0", id, group
	h.add(ms, inv)
	out := history.New(t, history.Send)
	out.Workload, out.Process, out.ID, out.Group = wl, wl+"-p0", id, group
	h.add(ms+lat, out)
}

func TestFailoversPerClientOnTheFaultsGroup(t *testing.T) {
	h := &foHistory{}
	h.send(0, 5, "queue", "q0", "broker-a", history.OK)
	h.fault(1000, "kill-master", "broker-a")
	// broker-b keeps taking writes: not the failover of broker-a.
	h.send(1100, 5, "queue", "q1", "broker-b", history.OK)
	h.send(1200, 3000, "queue", "q2", "broker-a", history.InDoubt)
	// Invoked before the fault: does not count even though acked after.
	h.send(4300, 10, "queue", "q3", "broker-a", history.OK) // 3.31 s after the fault
	h.send(1300, 700, "grpc", "g1", "", history.OK)         // 1 s after the fault, any group
	h.fault(10000, "kill-master", "broker-a")
	h.send(10100, 1900, "queue", "q4", "broker-a", history.OK) // 2 s
	h.fault(20000, "pause-master", "broker-b")
	h.send(20050, 100, "queue", "q5", "broker-a", history.OK) // another group: no
	// grpc never acks after the pause; queue never on broker-b.
	got := Failovers(h.ops)
	want := []Failover{
		{Kind: "kill-master", Client: "grpc", Count: 2, MedianMS: 1000, MaxMS: 1000, Unrecovered: 1, GapMedianMS: 1000, GapMaxMS: 1000},
		{Kind: "kill-master", Client: "queue", Count: 2, MedianMS: 2000, MaxMS: 3310, GapMedianMS: 2000, GapMaxMS: 3310},
		{Kind: "pause-master", Client: "grpc", Count: 1, Unrecovered: 1},
		{Kind: "pause-master", Client: "queue", Count: 1, Unrecovered: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Failovers = %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var b bytes.Buffer
	writeFailover(&b, got)
	for _, line := range []string{"failover (master fault to the first ack", "kill-master queue 2 2.00s 3.31s 2.00s 3.31s 0", "pause-master queue 1 – – – – 1"} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
	if fs := Failovers(nil); fs == nil || len(fs) != 0 {
		t.Errorf("no faults: %#v, want empty", fs)
	}
}

// TestFailoversSkipGroupsAClientNeverSendsTo: a client bound to one group
// (the grpc fronts of broker-a) is not measured for another group's
// faults.
func TestFailoversSkipGroupsAClientNeverSendsTo(t *testing.T) {
	h := &foHistory{}
	h.send(0, 5, "grpc", "g0", "broker-a", history.OK)
	h.fault(1000, "kill-master", "broker-b")
	h.send(1100, 5, "grpc", "g1", "broker-a", history.OK)
	h.fault(2000, "kill-master", "broker-a")
	h.send(2100, 400, "grpc", "g2", "broker-a", history.OK)
	got := Failovers(h.ops)
	want := []Failover{{Kind: "kill-master", Client: "grpc", Count: 1, MedianMS: 500, MaxMS: 500, GapMedianMS: 500, GapMaxMS: 500}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Failovers = %+v, want %+v", got, want)
	}
}

// TestFailoverGapCoversAMasterThatAcksUnderItsLease: after a partition the
// old master acks on for its lease, then nothing until the new master: the
// first ack comes at once, the longest gap shows the outage.
func TestFailoverGapCoversAMasterThatAcksUnderItsLease(t *testing.T) {
	h := &foHistory{}
	h.fault(0, "partition-master-controller", "broker-a")
	for ms := 100; ms <= 3000; ms += 100 {
		h.send(ms, 5, "queue", "a"+strconv.Itoa(ms), "broker-a", history.OK)
	}
	h.send(3100, 3000, "queue", "late", "broker-a", history.Fail)
	heal := history.New(history.Info, history.Heal)
	heal.Fault, heal.Target, heal.Group = "partition-master-controller", "broker-a", "broker-a"
	h.add(6000, heal)
	h.send(7400, 5, "queue", "new", "broker-a", history.OK) // the new master
	h.send(7500, 5, "queue", "next", "broker-a", history.OK)
	got := Failovers(h.ops)
	if len(got) != 1 || got[0].MedianMS != 105 || got[0].GapMaxMS != 7405-3005 {
		t.Fatalf("Failovers = %+v; want the first ack after 105ms and a longest gap of 4.4s", got)
	}
}
