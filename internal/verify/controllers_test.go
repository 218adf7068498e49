package verify

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/verify/cluster"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/nemesis"
	"github.com/petrelmq/petrel/internal/verify/proxy"
	"github.com/petrelmq/petrel/internal/vfs"
)

// fakeCluster is a clusterOps that records what was done and answers the
// controller questions from its fields: the master changes on a kill or a
// partition of the master (the controller elects the next replica).
type fakeCluster struct {
	mu     sync.Mutex
	top    cluster.Topology
	procs  []*cluster.Process
	master map[string]string // group → master process
	epoch  map[string]uint32
	leader string
	calls  []string
	inSync error
	// noFailover: a kill does not make the controller elect another.
	noFailover bool
}

func newFakeCluster(t *testing.T) *fakeCluster {
	top, err := cluster.ParseTopology("replicas=3+2,namesrv=3,controllers=3")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{top: top, master: map[string]string{"broker-a": "broker-a-0", "broker-b": "broker-b-0"},
		epoch: map[string]uint32{"broker-a": 1, "broker-b": 1}, leader: "namesrv-1"}
	dir := t.TempDir()
	for i := range 3 {
		name := "namesrv-" + string(rune('0'+i))
		f.procs = append(f.procs, &cluster.Process{Name: name, Role: cluster.RoleNamesrv, Namesrv: "127.0.0.1:1" + string(rune('0'+i)),
			Controller: "127.0.0.1:2" + string(rune('0'+i)), ControllerID: i + 1, DataDir: filepath.Join(dir, name)})
	}
	for _, g := range top.Groups {
		for i := range g.Replicas {
			name := g.Name + "-" + string(rune('0'+i))
			f.procs = append(f.procs, &cluster.Process{Name: name, Role: cluster.RoleReplica, Group: g.Name, BrokerID: -1,
				Remoting: "127.0.0.1:3" + name[len(name)-1:], DataDir: filepath.Join(dir, name)})
		}
	}
	return f
}

func (f *fakeCluster) did(format string, args ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, format+" "+strings.Join(args, " "))
}

func (f *fakeCluster) failover(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g, m := range f.master {
		if m != name || f.noFailover {
			continue
		}
		for _, p := range f.procs {
			if p.Group == g && p.Name != name {
				f.master[g] = p.Name
				f.epoch[g]++
				break
			}
		}
	}
}

func (f *fakeCluster) Close() error                  { return nil }
func (f *fakeCluster) NameServers() []string         { return []string{"127.0.0.1:10"} }
func (f *fakeCluster) Processes() []*cluster.Process { return f.procs }
func (f *fakeCluster) Topology() cluster.Topology    { return f.top }
func (f *fakeCluster) HasControllers() bool          { return f.top.Controllers > 0 }
func (f *fakeCluster) ControllerAddrs() []string {
	var out []string
	for _, p := range f.procs {
		if p.Controller != "" {
			out = append(out, p.Controller)
		}
	}
	return out
}
func (f *fakeCluster) Kill(name string) error { f.did("kill", name); f.failover(name); return nil }
func (f *fakeCluster) Stop(name string) error { f.did("stop", name); return nil }
func (f *fakeCluster) Start(_ context.Context, name string) error {
	f.did("start", name)
	return nil
}
func (f *fakeCluster) Pause(name string) error  { f.did("pause", name); f.failover(name); return nil }
func (f *fakeCluster) Resume(name string) error { f.did("resume", name); return nil }
func (f *fakeCluster) Signal(name string, s os.Signal) error {
	f.did("signal", name)
	return nil
}
func (f *fakeCluster) WaitReady(context.Context, string) error { return nil }
func (f *fakeCluster) WaitInSync(_ context.Context, g string) error {
	f.did("wait-in-sync", g)
	return f.inSync
}
func (f *fakeCluster) Master(_ context.Context, group string) (string, uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.master[group]
	if !ok {
		return "", 0, errors.New("no such group")
	}
	return m, f.epoch[group], nil
}
func (f *fakeCluster) Slaves(_ context.Context, group string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.procs {
		if p.Group == group && p.Name != f.master[group] {
			out = append(out, p.Name)
		}
	}
	return out, nil
}
func (f *fakeCluster) ControllerLeader(context.Context) (string, error) { return f.leader, nil }

func (f *fakeCluster) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func fakeRun(t *testing.T, f *fakeCluster) *run {
	t.Helper()
	n := proxy.NewNet(nil)
	t.Cleanup(func() { n.Close() })
	return &run{cfg: Config{MasterFaultHold: 6 * time.Second, DrainTimeout: time.Second}, log: slog.New(slog.DiscardHandler), net: n, cl: f}
}

func TestGroupFaultsFindTheMasterWhenTheyStrike(t *testing.T) {
	f := newFakeCluster(t)
	r := fakeRun(t, f)
	tg := &target{r: r}
	ctx := context.Background()
	step := func(e nemesis.Event) (string, string) {
		t.Helper()
		in, err := tg.Inject(ctx, e)
		if err != nil {
			t.Fatalf("inject %v: %v", e, err)
		}
		out, err := tg.Heal(ctx, e)
		if err != nil {
			t.Fatalf("heal %v: %v", e, err)
		}
		return in, out
	}

	in, out := step(nemesis.Event{Kind: nemesis.KillMaster, Target: "broker-a", Group: "broker-a"})
	if got := f.takeCalls(); !slices.Equal(got, []string{"kill broker-a-0", "start broker-a-0"}) {
		t.Errorf("kill-master: calls %v", got)
	}
	if !strings.Contains(in, "SIGKILL of the master broker-a-0 (epoch 1)") || !strings.Contains(out, "master now broker-a-1 at epoch 2 (was epoch 1)") {
		t.Errorf("kill-master: details %q / %q", in, out)
	}

	// The master moved: the next kill-master hits the new one.
	_, out = step(nemesis.Event{Kind: nemesis.KillMaster, Target: "broker-a"})
	if got := f.takeCalls(); !slices.Equal(got, []string{"kill broker-a-1", "start broker-a-1"}) {
		t.Errorf("second kill-master: calls %v", got)
	}
	if !strings.Contains(out, "the controller elected broker-a-0 at epoch 3") {
		t.Errorf("second kill-master: heal %q", out)
	}

	// No election: the heal waits FailoverWait, says so, and restarts.
	defer func(w time.Duration) { FailoverWait = w }(FailoverWait)
	FailoverWait = 50 * time.Millisecond
	f.noFailover = true
	_, out = step(nemesis.Event{Kind: nemesis.KillMaster, Target: "broker-a"})
	if got := f.takeCalls(); !slices.Equal(got, []string{"kill broker-a-0", "start broker-a-0"}) ||
		!strings.Contains(out, "no other master within 50ms (last: master broker-a-0 at epoch 3)") {
		t.Errorf("kill-master without an election: calls %v, heal %q", got, out)
	}
	f.noFailover = false

	step(nemesis.Event{Kind: nemesis.PauseMaster, Target: "broker-b", Hold: 6 * time.Second})
	if got := f.takeCalls(); !slices.Equal(got, []string{"pause broker-b-0", "resume broker-b-0"}) {
		t.Errorf("pause-master: calls %v", got)
	}

	in, _ = step(nemesis.Event{At: 3 * time.Millisecond, Kind: nemesis.KillSlave, Target: "broker-a"})
	calls := f.takeCalls()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "kill ") || calls[0] == "kill broker-a-1" || strings.TrimPrefix(calls[0], "kill ") != strings.TrimPrefix(calls[1], "start ") {
		t.Errorf("kill-slave: calls %v (%s)", calls, in)
	}

	f.master["broker-a"] = "broker-a-2"
	_, out = step(nemesis.Event{Kind: nemesis.KillControllerLeader, Target: "broker-a"})
	if got := f.takeCalls(); !slices.Equal(got, []string{"kill broker-a-2", "kill namesrv-1", "start namesrv-1", "start broker-a-2"}) {
		t.Errorf("kill-controller-leader: calls %v", got)
	}
	if !strings.Contains(out, "the controller elected broker-a-0") {
		t.Errorf("kill-controller-leader: heal %q", out)
	}
}

func TestPartitionMasterControllerCutsOnlyTheMastersControllerLinks(t *testing.T) {
	f := newFakeCluster(t)
	r := fakeRun(t, f)
	voters := f.ControllerAddrs()
	var links []*proxy.Link
	for _, from := range []string{"broker-a-0", "broker-a-1"} {
		for _, to := range append(slices.Clone(voters), "127.0.0.1:10") { // the voters and a name server
			l, err := r.net.Link(from, to)
			if err != nil {
				t.Fatal(err)
			}
			links = append(links, l)
		}
	}
	tg := &target{r: r}
	e := nemesis.Event{Kind: nemesis.PartitionMasterController, Target: "broker-a", Hold: 6 * time.Second}
	detail, err := tg.Inject(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "(3 links)") {
		t.Errorf("detail %q", detail)
	}
	for _, l := range links {
		cut := l.From() == "broker-a-0" && slices.Contains(voters, l.To())
		if got := l.Fault().Mode == proxy.Blackhole; got != cut {
			t.Errorf("link %s: blackholed %v, want %v", l.Name(), got, cut)
		}
	}
	healed, err := tg.Heal(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(healed, "no failover: the master's heartbeats still reached the controller leader") {
		t.Errorf("a partition the controller did not act on: heal %q does not say so", healed)
	}
	for _, l := range links {
		if l.Fault().Mode != proxy.Pass {
			t.Errorf("link %s still %v after the heal", l.Name(), l.Fault())
		}
	}
	if got := f.takeCalls(); len(got) != 0 {
		t.Errorf("a partition touched processes: %v", got)
	}
}

func TestAnnotateSetsTheGroupAndTheMinimumHold(t *testing.T) {
	f := newFakeCluster(t)
	r := fakeRun(t, f)
	plan := []nemesis.Event{
		{At: time.Second, Kind: nemesis.PauseMaster, Target: "broker-a", Hold: time.Second},
		{At: 2 * time.Second, Kind: nemesis.PartitionMasterController, Target: "broker-b", Hold: time.Second},
		{At: 3 * time.Second, Kind: nemesis.KillMaster, Target: "broker-a"},
		{At: 4 * time.Second, Kind: nemesis.Pause, Target: "namesrv-0", Hold: time.Second},
	}
	got := r.annotate(plan)
	want := []struct {
		group string
		hold  time.Duration
	}{{"broker-a", 6 * time.Second}, {"broker-b", 6 * time.Second}, {"broker-a", 0}, {"", time.Second}}
	for i, w := range want {
		if got[i].Group != w.group || got[i].Hold != w.hold {
			t.Errorf("event %d: group %q hold %v; want %q %v", i, got[i].Group, got[i].Hold, w.group, w.hold)
		}
	}
	// Without controllers the group is the target process's, the holds stay.
	plain := newFakeCluster(t)
	plain.top.Controllers = 0
	for _, p := range plain.procs {
		if p.Name == "broker-a-0" {
			p.Role = cluster.RoleMaster
		}
	}
	got = fakeRun(t, plain).annotate([]nemesis.Event{{Kind: nemesis.PauseMaster, Target: "broker-a-0", Hold: time.Second}})
	if got[0].Group != "broker-a" || got[0].Hold != time.Second {
		t.Errorf("without controllers: %+v", got[0])
	}
}

// writeLog writes a replica's data directory: one segment holding log,
// and a checkpoint at dispatched.
func writeLog(t *testing.T, dir string, log []byte, dispatched int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "commitlog", commitlog.SegmentName(0)), log, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dispatch.WriteCheckpoint(vfs.OS, dir, dispatch.Checkpoint{Dispatched: dispatched}); err != nil {
		t.Fatal(err)
	}
}

func TestCompareLogsWritesALinePerGroup(t *testing.T) {
	f := newFakeCluster(t)
	r := fakeRun(t, f)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r.hist = h
	good := []byte("0123456789abcdef")
	bad := []byte("0123456789abXdef")
	for _, p := range f.procs {
		switch {
		case p.Group == "broker-a":
			writeLog(t, p.DataDir, good, 16)
		case p.Name == "broker-b-1":
			writeLog(t, p.DataDir, bad, 16)
		case p.Group == "broker-b":
			writeLog(t, p.DataDir, good, 16)
		}
	}
	if err := r.compareLogs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Group != "broker-a" || ops[0].Error != "" || ops[1].Group != "broker-b" ||
		!strings.Contains(ops[1].Error, "broker-b-1 differs from broker-b-0 at offset 12") {
		t.Fatalf("compare lines %+v", ops)
	}
	calls := f.takeCalls()
	// Every group waited for its in-sync set, and stopped its master last.
	wantA := []string{"wait-in-sync broker-a", "stop broker-a-1", "stop broker-a-2", "stop broker-a-0"}
	if !slices.Equal(calls[:4], wantA) {
		t.Errorf("calls %v, want %v first", calls, wantA)
	}
	// A group not back in sync is a failure even with identical logs.
	f.inSync = errors.New("in-sync set [1 2] of 3")
	h2path := filepath.Join(t.TempDir(), "h2.jsonl")
	if r.hist, err = history.Create(h2path); err != nil {
		t.Fatal(err)
	}
	if err := r.compareLogs(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.hist.Close()
	ops, _ = history.ReadFile(h2path)
	if len(ops) != 2 || !strings.Contains(ops[0].Error, "not every replica was in the in-sync set") {
		t.Errorf("out of sync: %+v", ops)
	}
	res, err := CheckFile(h2path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid() || res.Summary.Diverged != 2 {
		t.Errorf("check of a diverged history: valid %v, diverged %d", res.Valid(), res.Summary.Diverged)
	}
}

// TestAnnotateAgainstAnExistingCluster: without a cluster of its own
// (--namesrv) the plan is left as it is.
func TestAnnotateAgainstAnExistingCluster(t *testing.T) {
	plan := []nemesis.Event{{At: time.Second, Kind: nemesis.Partition, Target: clientsTarget, Hold: time.Second}}
	got := (&run{}).annotate(plan)
	if len(got) != 1 || got[0] != plan[0] {
		t.Errorf("annotate = %+v", got)
	}
}
