package workload

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/vfs"
)

// testEnv is an Env over a fresh in-memory history (kept in memory).
func testEnv(nameSrv string) *Env {
	hw := history.NewWriter(nopWriter{})
	hw.Keep()
	return &Env{
		RunID: "0badc0de", NameSrv: []string{nameSrv}, History: hw,
		Queues: 4, Producers: 2, Consumers: 2, Rate: 100, BodyBytes: 128, SendTimeout: 5 * time.Second,
	}
}

type nopWriter struct{}

func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }

// await polls cond until it holds, failing the test after 30 s.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// started sets workload name up (after edit) and runs it in the
// background: for runFor when that is > 0, else until stop. stop ends
// Run (or waits for runFor to pass) and waits for it, then runs Drain
// and Close, and returns the history.
func started(t *testing.T, name string, env *Env, runFor time.Duration, edit ...func(Workload)) (stop func() []history.Op) {
	t.Helper()
	w, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range edit {
		f(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	if err := w.Setup(ctx, env); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	runCtx, stopRun := context.WithCancel(ctx)
	if runFor > 0 {
		stopRun()
		runCtx, stopRun = context.WithTimeout(ctx, runFor)
	}
	t.Cleanup(stopRun)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	return func() []history.Op {
		t.Helper()
		if runFor <= 0 {
			stopRun()
		}
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		phase := history.New(history.Info, history.Phase)
		phase.Value = history.PhaseDrain
		env.History.Append(phase)
		if err := w.Drain(ctx); err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return env.History.Ops()
	}
}

// runBriefly runs workload name (after edit) for d, drains it and
// returns the history.
func runBriefly(t *testing.T, name string, env *Env, d time.Duration, edit ...func(Workload)) []history.Op {
	t.Helper()
	return started(t, name, env, d, edit...)()
}

// sendInfo is what the history says of an id's sends: its first Invoke
// and every outcome line.
type sendInfo struct {
	invoke  history.Op
	outcome []history.Op
}

// acked reports whether a send of the id was acknowledged, and its OK.
func acked(s *sendInfo) (history.Op, bool) {
	for _, op := range s.outcome {
		if op.Type == history.OK {
			return op, true
		}
	}
	return history.Op{}, false
}

// checkSends checks that every send Invoke comes from a started producer
// and has exactly one outcome line before the id is sent again (with the
// same body), and returns the sends by id.
func checkSends(t *testing.T, ops []history.Op) map[string]*sendInfo {
	t.Helper()
	started := map[string]bool{}
	m := map[string]*sendInfo{}
	pending := map[string]bool{}
	for _, op := range ops {
		if op.F == history.Start && op.Role == history.RoleProducer {
			started[op.Process] = true
		}
		if op.F != history.Send {
			continue
		}
		s := m[op.ID]
		if op.Type == history.Invoke {
			switch {
			case !started[op.Process]:
				t.Errorf("send by %s before its Start line", op.Process)
			case pending[op.ID]:
				t.Errorf("id %s invoked again before its outcome", op.ID)
			case s != nil && s.invoke.Sum != op.Sum:
				t.Errorf("id %s resent with another body", op.ID)
			case s == nil:
				m[op.ID] = &sendInfo{invoke: op}
			}
			pending[op.ID] = true
			continue
		}
		if s == nil || !pending[op.ID] {
			t.Errorf("outcome line without an invoke: %+v", op)
			continue
		}
		pending[op.ID] = false
		s.outcome = append(s.outcome, op)
	}
	for id, p := range pending {
		if p {
			t.Errorf("id %s has no outcome line", id)
		}
	}
	return m
}

func count(ops []history.Op, typ history.Type, f history.Func) int {
	n := 0
	for _, op := range ops {
		if op.Type == typ && op.F == f {
			n++
		}
	}
	return n
}

// checkHistory asserts what the checker will: every Invoke has one
// outcome, every acked id was delivered (to the group, or to each member
// when each) and drained where the send said, nothing unexpected or
// corrupt, a Start line per client.
func checkHistory(t *testing.T, ops []history.Op, wl string, consumers int, each bool) (acked map[string]history.Op) {
	t.Helper()
	sends := checkSends(t, ops)
	starts := map[string]string{}
	acked = map[string]history.Op{}
	delivered := map[string]map[string]int{} // process → id → count
	drained := map[string][]history.Op{}
	for _, op := range ops {
		if op.Workload != "" && op.Workload != wl {
			t.Fatalf("line of workload %q in a %s run: %+v", op.Workload, wl, op)
		}
		s := sends[op.ID]
		switch {
		case op.F == history.Start:
			starts[op.Process] = op.Role
		case op.F == history.Send && op.Type == history.OK:
			if op.Queue < 0 || op.Offset < 0 {
				t.Fatalf("OK without a queue/offset: %+v", op)
			}
			if op.Group == "" || op.Group != s.invoke.Group {
				t.Fatalf("OK without the broker group of its queue (the failover times are per group): %+v", op)
			}
			acked[op.ID] = op
		case op.F == history.Deliver:
			if starts[op.Process] != history.RoleConsumer {
				t.Fatalf("delivery to %s before its Start line", op.Process)
			}
			if s == nil || op.Corrupt || op.Sum != s.invoke.Sum {
				t.Fatalf("delivery of an unsent or corrupt message: %+v", op)
			}
			if delivered[op.Process] == nil {
				delivered[op.Process] = map[string]int{}
			}
			delivered[op.Process][op.ID]++
		case op.F == history.Drain:
			if s == nil || op.Corrupt || op.Sum != s.invoke.Sum || op.Process != wl+"-drain" {
				t.Fatalf("drain of an unsent or corrupt message: %+v", op)
			}
			drained[op.ID] = append(drained[op.ID], op)
		}
	}
	if len(starts) == 0 {
		t.Fatal("no Start lines")
	}
	nc := 0
	for p, role := range starts {
		if role == history.RoleConsumer {
			nc++
			if !strings.HasPrefix(p, wl+"-c") {
				t.Fatalf("consumer %s is not named %s-cN", p, wl)
			}
		}
	}
	if nc != consumers {
		t.Fatalf("%d consumers started, want %d", nc, consumers)
	}
	for id, ok := range acked {
		found := false
		for _, d := range drained[id] {
			found = found || (d.Queue == ok.Queue && d.Offset == ok.Offset)
		}
		if !found {
			t.Fatalf("acked %s (queue %d offset %d) not drained there: %+v", id, ok.Queue, ok.Offset, drained[id])
		}
		if each {
			for p := range delivered {
				if delivered[p][id] == 0 {
					t.Fatalf("member %s never got acked %s", p, id)
				}
			}
			continue
		}
		got := 0
		for p := range delivered {
			got += delivered[p][id]
		}
		if got == 0 {
			t.Fatalf("acked %s was never delivered", id)
		}
	}
	if each && len(delivered) != consumers {
		t.Fatalf("%d members got messages, want %d", len(delivered), consumers)
	}
	return acked
}

func TestWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name string
		each bool
	}{{"queue", false}, {"broadcast", true}, {"ordered", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := daemontest.Start(t)
			env := testEnv(c.NameServerAddr())
			stop := started(t, tc.name, env, 0)
			hw := env.History
			await(t, "200 acked sends", func() bool { return count(hw.Ops(), history.OK, history.Send) >= 200 })
			ops := stop()
			acked := checkHistory(t, ops, tc.name, env.Consumers, tc.each)
			t.Logf("%s: %d acked, %d deliveries, %d drained", tc.name, len(acked),
				count(ops, history.Info, history.Deliver), count(ops, history.Info, history.Drain))
			if tc.name == "ordered" {
				checkOrder(t, ops, len(acked))
			}
		})
	}
}

// checkOrder asserts that each key's first deliveries come in seq order
// and that several keys were used.
func checkOrder(t *testing.T, ops []history.Op, acked int) {
	t.Helper()
	last := map[string]int64{}
	seen := map[string]bool{}
	for _, op := range ops {
		if op.F != history.Deliver || seen[op.ID] {
			continue
		}
		seen[op.ID] = true
		if op.Key == "" || op.Seq <= 0 {
			t.Fatalf("ordered delivery without key/seq: %+v", op)
		}
		if op.Seq < last[op.Key] {
			t.Fatalf("key %s: seq %d delivered first after seq %d", op.Key, op.Seq, last[op.Key])
		}
		last[op.Key] = op.Seq
	}
	if len(last) < 2*KeysPerProducer {
		t.Fatalf("deliveries of %d keys, want %d", len(last), 2*KeysPerProducer)
	}
}

// TestBrokerGoesAway: a broker that closes mid-run and comes back (a new
// one on the same data and port) leaves Run running: sends in the gap are
// recorded as Fail or InDoubt, sends after it succeed, and nothing acked
// is lost.
func TestBrokerGoesAway(t *testing.T) {
	for _, name := range []string{"queue", "ordered"} {
		t.Run(name, func(t *testing.T) {
			ns, err := daemon.StartNameServer("127.0.0.1:0", namesrv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ns.Close() })
			cfg := daemontest.Config()
			cfg.Store.FS = vfs.NewMem()
			cfg.NameServers = []string{ns.Addr().String()}
			var mu sync.Mutex
			b, err := daemon.StartBroker(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mu.Lock(); defer mu.Unlock(); b.Close() })
			cfg.Listen = b.Addr().String()

			env := testEnv(ns.Addr().String())
			env.SendTimeout = time.Second
			stop := started(t, name, env, 0)
			hw := env.History
			await(t, "50 acked sends", func() bool { return count(hw.Ops(), history.OK, history.Send) >= 50 })
			mu.Lock()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Unlock()
			await(t, "failed sends while the broker is away", func() bool {
				ops := hw.Ops()
				return count(ops, history.Fail, history.Send)+count(ops, history.InDoubt, history.Send) >= 5
			})
			okBefore := count(hw.Ops(), history.OK, history.Send)
			nb, err := daemon.StartBroker(cfg)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			b = nb
			mu.Unlock()
			await(t, "acked sends after the restart", func() bool { return count(hw.Ops(), history.OK, history.Send) >= okBefore+100 })
			ops := stop()
			acked := checkHistory(t, ops, name, env.Consumers, false)
			if name == "ordered" {
				checkOrder(t, ops, len(acked))
			}
			t.Logf("%s: %d acked, %d failed, %d in doubt", name, len(acked), count(ops, history.Fail, history.Send), count(ops, history.InDoubt, history.Send))
		})
	}
}
