package report

import (
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

const ms = time.Millisecond

func TestFaultsOfSampleHistory(t *testing.T) {
	fs := Faults(sampleHistory())
	type want struct {
		kind, target string
		start, end   time.Duration // end 0: not healed
		unavail      time.Duration
		recovered    bool
	}
	wants := []want{
		{"kill", "n0", 2000 * ms, 2450 * ms, 555 * ms, true},
		{"pause", "n0", 5000 * ms, 6010 * ms, 1055 * ms, true},
		{"partition", "queue-p0->n0", 8000 * ms, 0, 0, false},
	}
	if len(fs) != len(wants) {
		t.Fatalf("%d faults, want %d: %+v", len(fs), len(wants), fs)
	}
	for i, w := range wants {
		f := fs[i]
		if f.Kind != w.kind || f.Target != w.target || !f.Start.Equal(t0.Add(w.start)) {
			t.Errorf("fault %d = %s %s at %v, want %s %s at %v", i, f.Kind, f.Target, f.Start.Sub(t0), w.kind, w.target, w.start)
		}
		if w.end == 0 && f.Healed() || w.end != 0 && !f.End.Equal(t0.Add(w.end)) {
			t.Errorf("fault %d (%s) ends at %v (healed %v), want %v", i, f.Kind, f.End.Sub(t0), f.Healed(), w.end)
		}
		if f.Recovered != w.recovered || f.Unavailable != w.unavail {
			t.Errorf("fault %d (%s) unavailable %v recovered %v, want %v %v", i, f.Kind, f.Unavailable, f.Recovered, w.unavail, w.recovered)
		}
	}
}

func TestUnavailabilityCountsOnlySendsInvokedAfterTheFault(t *testing.T) {
	cases := []struct {
		name      string
		build     func(h *hist)
		unavail   time.Duration
		recovered bool
	}{
		{"a send in flight at the fault does not end it", func(h *hist) {
			h.invoke(0, "p0", "a")
			h.fault(10*ms, "kill", "n0", "")
			h.end(20*ms, history.OK, "p0", "a", 20*ms)
			h.send(30*ms, 15*ms, "p0", "b")
		}, 35 * ms, true},
		{"failed and in-doubt sends do not end it", func(h *hist) {
			h.fault(0, "pause", "n0", "")
			h.invoke(5*ms, "p0", "a")
			h.end(8*ms, history.Fail, "p0", "a", 3*ms)
			h.invoke(9*ms, "p1", "b")
			h.end(3009*ms, history.InDoubt, "p1", "b", 3*time.Second)
			h.send(3100*ms, 10*ms, "p1", "c")
		}, 3110 * ms, true},
		{"a retry under the same id counts from its own invoke", func(h *hist) {
			h.invoke(0, "p0", "a")
			h.fault(1*ms, "partition", "p0->n0", "")
			h.end(3000*ms, history.InDoubt, "p0", "a", 3000*ms)
			h.invoke(3001*ms, "p0", "a")
			h.end(3011*ms, history.OK, "p0", "a", 10*ms)
		}, 3010 * ms, true},
		{"the first ack in line order ends it, not the fastest", func(h *hist) {
			h.fault(0, "kill", "n0", "")
			h.invoke(1*ms, "p0", "slow")
			h.invoke(2*ms, "p1", "fast")
			h.end(50*ms, history.OK, "p1", "fast", 48*ms)
			h.end(60*ms, history.OK, "p0", "slow", 59*ms)
		}, 50 * ms, true},
		{"an OK with no invoke is not counted", func(h *hist) {
			h.fault(0, "kill", "n0", "")
			h.end(5*ms, history.OK, "p0", "orphan", 0)
		}, 0, false},
		{"no ack after the fault", func(h *hist) {
			h.send(0, 1*ms, "p0", "a")
			h.fault(10*ms, "kill", "n0", "")
			h.heal(20*ms, "kill", "n0")
		}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			c.build(h)
			fs := Faults(h.ops)
			if len(fs) != 1 {
				t.Fatalf("%d faults, want 1", len(fs))
			}
			if fs[0].Unavailable != c.unavail || fs[0].Recovered != c.recovered {
				t.Errorf("unavailable %v recovered %v, want %v %v", fs[0].Unavailable, fs[0].Recovered, c.unavail, c.recovered)
			}
		})
	}
}

func TestOneAckCanEndSeveralFaults(t *testing.T) {
	h := &hist{}
	h.fault(0, "pause", "n0", "")
	h.fault(100*ms, "partition", "p0->n0", "")
	h.invoke(150*ms, "p0", "a")
	h.fault(200*ms, "kill", "n0", "") // after a's invoke: a does not end it
	h.end(300*ms, history.OK, "p0", "a", 150*ms)
	h.send(400*ms, 10*ms, "p0", "b")
	fs := Faults(h.ops)
	want := []time.Duration{300 * ms, 200 * ms, 210 * ms}
	for i, w := range want {
		if !fs[i].Recovered || fs[i].Unavailable != w {
			t.Errorf("fault %d (%s): unavailable %v recovered %v, want %v", i, fs[i].Kind, fs[i].Unavailable, fs[i].Recovered, w)
		}
	}
	if fs[0].RecoveredBy != fs[1].RecoveredBy || fs[2].RecoveredBy == fs[0].RecoveredBy {
		t.Errorf("recovered by lines %d %d %d, want the first two equal and the third later", fs[0].RecoveredBy, fs[1].RecoveredBy, fs[2].RecoveredBy)
	}
}

func TestHealsPairWithTheirFault(t *testing.T) {
	h := &hist{}
	h.fault(0, "partition", "c0->n0", "")
	h.fault(10*ms, "pause", "n0", "")
	h.fault(20*ms, "partition", "c1->n0", "")
	h.heal(30*ms, "partition", "c1->n0") // the later partition, by target
	h.heal(40*ms, "pause", "n0")
	h.heal(50*ms, "", "")       // no kind, no target: the oldest still open
	h.heal(60*ms, "kill", "n9") // nothing open: ignored
	fs := Faults(h.ops)
	ends := []time.Duration{50 * ms, 40 * ms, 30 * ms}
	for i, e := range ends {
		if !fs[i].End.Equal(t0.Add(e)) {
			t.Errorf("fault %d (%s %s) healed at %v, want %v", i, fs[i].Kind, fs[i].Target, fs[i].End.Sub(t0), e)
		}
	}
}

func TestUnavailabilityPerKind(t *testing.T) {
	f := func(kind string, d time.Duration, rec bool) Fault {
		return Fault{Kind: kind, Unavailable: d, Recovered: rec}
	}
	got := Unavailability([]Fault{
		f("kill", 400*ms, true), f("kill", 100*ms, true), f("kill", 900*ms, true), f("kill", 200*ms, true),
		f("kill", 0, false),
		f("pause", 1500*ms, true),
		f("partition", 0, false),
	})
	want := map[string]Unavailable{
		// nearest rank: the median of 4 is the 2nd smallest
		"kill":      {Count: 5, MedianMS: 200, MaxMS: 900, Unrecovered: 1},
		"pause":     {Count: 1, MedianMS: 1500, MaxMS: 1500},
		"partition": {Count: 1, Unrecovered: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*ms)
	}
	cases := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7}, 0.99, 7},
		{[]time.Duration{1, 2, 3}, 0.5, 2},
		{[]time.Duration{1, 2, 3, 4}, 0.5, 2},
		{hundred, 0.5, 50 * ms},
		{hundred, 0.99, 99 * ms},
		{hundred, 1, 100 * ms},
		{hundred[:10], 0.99, 10 * ms},
	}
	for _, c := range cases {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%d values, %v) = %v, want %v", len(c.in), c.p, got, c.want)
		}
	}
}

func TestTimelinePerSecond(t *testing.T) {
	h := &hist{}
	h.phase(0, history.PhaseWorkload)
	// second 0: acks of 1..10 ms latency; second 1: nothing; second 2:
	// one ack of 50 ms, one fail, one in doubt.
	for i := 1; i <= 10; i++ {
		h.send(time.Duration(i)*50*ms, time.Duration(i)*ms, "p0", "a")
	}
	h.invoke(2000*ms, "p0", "b")
	h.end(2050*ms, history.OK, "p0", "b", 50*ms)
	h.invoke(2100*ms, "p0", "c")
	h.end(2200*ms, history.Fail, "p0", "c", 100*ms)
	h.invoke(2300*ms, "p0", "d")
	h.end(2999*ms, history.InDoubt, "p0", "d", 699*ms)
	tl := NewTimeline(h.ops)
	if tl.Step != time.Second || !tl.Start.Equal(t0) || len(tl.Points) != 3 {
		t.Fatalf("timeline step %v start %v with %d points, want 1s, t0, 3", tl.Step, tl.Start, len(tl.Points))
	}
	want := []Point{
		{At: 0, OK: 10, P50: 5 * ms, P99: 10 * ms},
		{At: time.Second},
		{At: 2 * time.Second, OK: 1, Errors: 2, P50: 50 * ms, P99: 50 * ms},
	}
	for i, w := range want {
		if tl.Points[i] != w {
			t.Errorf("point %d = %+v, want %+v", i, tl.Points[i], w)
		}
	}
}

func TestTimelineWidensItsStepForLongRuns(t *testing.T) {
	h := &hist{}
	h.send(0, ms, "p0", "a")
	h.send(5*time.Hour, ms, "p0", "b")
	tl := NewTimeline(h.ops)
	if len(tl.Points) > MaxPoints || tl.Step%time.Second != 0 || tl.Step <= time.Second {
		t.Fatalf("5 h run: %d points of %v, want at most %d of whole seconds > 1s", len(tl.Points), tl.Step, MaxPoints)
	}
	ok := 0
	for _, p := range tl.Points {
		ok += p.OK
	}
	if ok != 2 || tl.Points[len(tl.Points)-1].OK != 1 {
		t.Errorf("acks over the points %d (last %d), want 2 (last 1)", ok, tl.Points[len(tl.Points)-1].OK)
	}
	if n := len(NewTimeline(nil).Points); n != 0 {
		t.Errorf("empty history: %d points", n)
	}
}

// TestFaultDetailJoinsTheHealLine: what the nemesis did is only known
// after the fault (the Heal line carries the inject and heal details and
// any error), so a fault's detail joins both lines.
func TestFaultDetailJoinsTheHealLine(t *testing.T) {
	h := &hist{}
	h.fault(0, "partition", "n0", "hold 1s")
	op := history.New(history.Info, history.Heal)
	op.Process, op.Fault, op.Target = "nemesis", "partition", "n0"
	op.Value, op.Error = "blackhole of 3 links; links pass again", "heal: refused"
	h.add(time.Second, op)
	fs := Faults(h.ops)
	if want := "hold 1s; blackhole of 3 links; links pass again; heal: refused"; len(fs) != 1 || fs[0].Detail != want {
		t.Fatalf("faults %+v; want one with detail %q", fs, want)
	}
}
