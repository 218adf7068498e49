package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// petrelBin is the binary the process tests start. These tests are about
// real processes (signals, exits, ports, data directories), so they need
// the real `petrel`; TestMain builds it once for the whole test binary,
// without -race, to keep the build quick.
var (
	petrelBin string
	buildErr  error
)

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "petrel-verify-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster test:", err)
		os.Exit(1)
	}
	petrelBin, buildErr = buildPetrel(tmp)
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// buildPetrel builds ./cmd/petrel of the module this package is in.
func buildPetrel(dir string) (string, error) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "petrel")); err != nil {
		return "", fmt.Errorf("no cmd/petrel at %s: %w", root, err)
	}
	bin := filepath.Join(dir, "petrel")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/petrel")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/petrel in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

const startTimeout = 60 * time.Second

// testLogger writes to the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startSingle starts a single-process cluster killed at the end of the
// test; on failure the processes' logs go to the test log.
func startSingle(t *testing.T, o Options) *Cluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("cannot build petrel: %v", buildErr)
	}
	o.Bin = petrelBin
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Start(ctx, Single(), o)
	if err != nil {
		t.Fatalf("start single: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				b, _ := os.ReadFile(p.Log)
				t.Logf("log of %s:\n%s", p.Name, b)
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// only returns the cluster's one process.
func only(t *testing.T, c *Cluster) *Process {
	t.Helper()
	ps := c.Processes()
	if len(ps) != 1 {
		t.Fatalf("%d processes, want 1", len(ps))
	}
	return ps[0]
}

// readyz does one GET /readyz within d and returns the status code.
func readyz(p *Process, d time.Duration) (int, error) {
	cl := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + p.HTTP + "/readyz")
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// gone reports whether no process has pid (it has exited and was reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// petrelCLI runs the petrel binary as a client and returns its stdout.
func petrelCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(petrelBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("petrel %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func TestParseTopology(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // topology name, or "" for an error
		errPart string
		groups  []Group
		ns      int
	}{
		{in: "single", want: "single", groups: []Group{{"broker-a", 1}}, ns: 1},
		{in: "", want: "single", groups: []Group{{"broker-a", 1}}, ns: 1},
		{in: "groups=2,replicas=2,namesrv=2", want: "groups=2,replicas=2,namesrv=2", groups: []Group{{"broker-a", 2}, {"broker-b", 2}}, ns: 2},
		{in: "groups=2,replicas=2", want: "groups=2,replicas=2,namesrv=1", groups: []Group{{"broker-a", 2}, {"broker-b", 2}}, ns: 1},
		{in: " replicas=3 , groups=1 ", want: "groups=1,replicas=3,namesrv=1", groups: []Group{{"broker-a", 3}}, ns: 1},
		{in: "groups=3", want: "groups=3,replicas=1,namesrv=1", groups: []Group{{"broker-a", 1}, {"broker-b", 1}, {"broker-c", 1}}, ns: 1},
		{in: "group:2", want: "group:2", groups: []Group{{"broker-a", 2}}, ns: 1},
		{in: "group:1", errPart: "2 ≤ N"},
		{in: "group:x", errPart: "2 ≤ N"},
		{in: "groups=0", errPart: "groups=0: want a whole number from 1 to 26"},
		{in: "groups=27", errPart: "from 1 to 26"},
		{in: "replicas=x", errPart: "replicas=x"},
		{in: "groups=2,groups=3", errPart: "key groups given twice"},
		{in: "groups=2,slaves=1", errPart: `unknown key "slaves"`},
		{in: "groups=2,replicas", errPart: `"replicas" is not key=value`},
		{in: "triple", errPart: `unknown topology "triple" (known: single, groups=G,replicas=R,namesrv=K[,controllers=N], group:N)`},
	} {
		got, err := ParseTopology(tc.in)
		if tc.want != "" {
			if err != nil || got.Name != tc.want || got.NameServers != tc.ns || fmt.Sprint(got.Groups) != fmt.Sprint(tc.groups) {
				t.Errorf("ParseTopology(%q) = %+v, %v; want %s with %d name servers and groups %v", tc.in, got, err, tc.want, tc.ns, tc.groups)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("ParseTopology(%q) gives a topology Start refuses: %v", tc.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errPart) {
			t.Errorf("ParseTopology(%q) error %v, want one containing %q", tc.in, err, tc.errPart)
		}
	}
	for _, bad := range []Topology{
		{Name: "no namesrv", Groups: []Group{{Name: "broker-a", Replicas: 2}}},
		{Name: "no groups", NameServers: 1},
		{Name: "no replicas", NameServers: 1, Groups: []Group{{Name: "broker-a"}}},
		{Name: "same name", NameServers: 1, Groups: []Group{{"broker-a", 1}, {"broker-a", 1}}},
		{Name: "combined pair", NameServers: 1, Groups: []Group{{"broker-a", 2}}, Combined: true},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("topology %q validates", bad.Name)
		}
	}
	if !Replicated(2, 2, 1).Slaves() || Replicated(2, 1, 1).Slaves() || Single().Slaves() {
		t.Error("Slaves() wrong")
	}
}

func TestParseInSync(t *testing.T) {
	page := `# HELP petrel_replication_in_sync 1 while a slave is in sync
# TYPE petrel_replication_in_sync gauge
petrel_replication_in_sync{slave="1"} 1
petrel_replication_in_sync{slave="2"} 0
petrel_replication_in_sync_total{slave="3"} 1
petrel_replication_lag_bytes{slave="4"} 1
petrel_replication_in_sync{slave="5"} 1
`
	if got := parseInSync(page); fmt.Sprint(got) != "map[1:true 5:true]" {
		t.Errorf("parseInSync = %v, want slaves 1 and 5", got)
	}
}

func TestStartRefusesBadOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]Options{
		"no bin":     {Dir: t.TempDir()},
		"bin absent": {Bin: filepath.Join(t.TempDir(), "nope"), Dir: t.TempDir()},
		"no dir":     {Bin: os.Args[0]},
		"bad flush":  {Bin: os.Args[0], Dir: t.TempDir(), Flush: "sometimes"},
	} {
		if c, err := Start(ctx, Single(), o); err == nil {
			_ = c.Close()
			t.Errorf("%s: Start succeeded", name)
		}
	}
	if _, err := Start(ctx, Topology{Name: "group:2"}, Options{Bin: os.Args[0], Dir: t.TempDir()}); err == nil {
		t.Error("Start of a topology without processes succeeded")
	}
	if _, err := Start(ctx, Replicated(1, 2, 1), Options{Bin: os.Args[0], Dir: t.TempDir(), Replication: "eventually"}); err == nil {
		t.Error("Start with a bad Options.Replication succeeded")
	}
}

func TestStartSingleServesOnItsOwnPorts(t *testing.T) {
	dir := t.TempDir()
	c := startSingle(t, Options{Dir: dir})
	p := only(t, c)
	if p.Name != "broker-a-0" || p.Role != RoleServer || p.DataDir != filepath.Join(dir, p.Name) || p.Log != filepath.Join(dir, p.Name+".log") {
		t.Errorf("process %+v", p)
	}
	if ns := c.NameServers(); len(ns) != 1 || ns[0] != p.Namesrv {
		t.Errorf("name servers %v, want [%s]", ns, p.Namesrv)
	}
	seen := map[string]bool{}
	for _, a := range []string{p.Namesrv, p.Remoting, p.GRPC, p.HTTP} {
		host, _, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || seen[a] {
			t.Errorf("address %q: want a distinct 127.0.0.1 port (%v)", a, err)
		}
		seen[a] = true
		conn, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			t.Errorf("dial %s: %v", a, err)
			continue
		}
		_ = conn.Close()
	}
	if code, err := readyz(p, 5*time.Second); err != nil || code != http.StatusOK {
		t.Errorf("GET /readyz: %d %v, want 200", code, err)
	}
	if pid := c.PID(p.Name); pid <= 0 || !c.Running(p.Name) {
		t.Errorf("pid %d, running %v", pid, c.Running(p.Name))
	}
	b, err := os.ReadFile(p.Log)
	if err != nil || !strings.Contains(string(b), "verify: start #1") {
		t.Errorf("log %s has no start banner: %v\n%s", p.Log, err, b)
	}
	if _, err := os.Stat(p.DataDir); err != nil {
		t.Errorf("data dir: %v", err)
	}
	if err := c.Kill("no-such"); err == nil {
		t.Error("Kill of an unknown process succeeded")
	}
}

func TestKillThenStartKeepsPortsAndData(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	topic, key := "verify-cluster-kill", "k-before-kill"
	petrelCLI(t, "send", "--namesrv", p.Namesrv, "--topic", topic, "--key", key, "acked before the kill")

	pid := c.PID(p.Name)
	if err := c.Kill(p.Name); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if !gone(pid) || c.Running(p.Name) {
		t.Fatalf("pid %d still there after Kill (running %v)", pid, c.Running(p.Name))
	}
	if _, err := readyz(p, time.Second); err == nil {
		t.Fatal("/readyz answers while the process is killed")
	}
	if err := c.Kill(p.Name); err == nil {
		t.Error("Kill of a process that is not running succeeded")
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Start(ctx, p.Name); err != nil {
		t.Fatalf("start again: %v", err)
	}
	if err := c.Start(ctx, p.Name); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Start: %v, want already running", err)
	}
	if again := only(t, c); *again != *p {
		t.Errorf("after the restart the process is %+v, was %+v", again, p)
	}
	if npid := c.PID(p.Name); npid == pid || npid == 0 {
		t.Errorf("pid after restart %d (before %d)", npid, pid)
	}
	if code, err := readyz(p, 5*time.Second); err != nil || code != http.StatusOK {
		t.Errorf("GET /readyz after restart: %d %v", code, err)
	}
	out := petrelCLI(t, "message", "query", "--namesrv", p.Namesrv, "--topic", topic, "--key", key)
	if !strings.Contains(out, key) {
		t.Errorf("the message sent before the kill is not found after the restart on the same data dir:\n%s", out)
	}
	if ex := c.Exits(); len(ex) != 0 {
		t.Errorf("a kill asked for is reported as an exit: %v", ex)
	}
}

func TestStopIsGracefulAndStartAgain(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	pid := c.PID(p.Name)
	if err := c.Stop(p.Name); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !gone(pid) {
		t.Fatalf("pid %d still there after Stop", pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Start(ctx, p.Name); err != nil {
		t.Fatalf("start again: %v", err)
	}
	// Stop of a paused process: it gets SIGCONT too, so it can act on
	// the SIGTERM.
	if err := c.Pause(p.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(p.Name); err != nil {
		t.Fatalf("stop of a paused process: %v", err)
	}
	if c.Running(p.Name) {
		t.Fatal("still running after Stop")
	}
	b, _ := os.ReadFile(p.Log)
	if n := strings.Count(string(b), "----- verify: start #"); n != 2 {
		t.Errorf("log has %d start banners, want 2 (appended across starts)", n)
	}
}

func TestPauseResume(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	if err := c.Pause(p.Name); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if code, err := readyz(p, 300*time.Millisecond); err == nil {
		t.Fatalf("/readyz answered %d while the process is paused", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := c.WaitReady(ctx, p.Name)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady while paused: %v, want a deadline error", err)
	}
	if err := c.Resume(p.Name); err != nil {
		t.Fatalf("resume: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.WaitReady(ctx, p.Name); err != nil {
		t.Fatalf("WaitReady after resume: %v", err)
	}
	if code, err := readyz(p, 5*time.Second); err != nil || code != http.StatusOK {
		t.Fatalf("GET /readyz after resume: %d %v", code, err)
	}
}

func TestCloseKillsEvenAPausedProcess(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	pid := c.PID(p.Name)
	if err := c.Pause(p.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !gone(pid) {
		t.Fatalf("pid %d still there after Close", pid)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Start(ctx, p.Name); !errors.Is(err, errClosed) {
		t.Errorf("Start after Close: %v, want %v", err, errClosed)
	}
	if ex := c.Exits(); len(ex) != 0 {
		t.Errorf("Close's kills reported as exits: %v", ex)
	}
}

func TestAnExitOnItsOwnIsReported(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	pid := c.PID(p.Name)
	// SIGQUIT makes a Go program dump its goroutines and exit 2: a crash
	// as far as the cluster knows.
	if err := c.Signal(p.Name, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited(p.Name):
	case <-time.After(startTimeout):
		t.Fatal("no exit after SIGQUIT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := c.WaitReady(ctx, p.Name)
	var exit *Exit
	if !errors.As(err, &exit) {
		t.Fatalf("WaitReady after a crash: %v, want an *Exit", err)
	}
	if exit.Name != p.Name || exit.PID != pid || exit.Status == nil || !strings.Contains(exit.LogTail, "SIGQUIT") {
		t.Errorf("exit %+v", exit)
	}
	if !strings.Contains(err.Error(), p.Name) || !strings.Contains(err.Error(), "SIGQUIT") {
		t.Errorf("error %q names neither the process nor its log", err)
	}
	ex := c.Exits()
	if len(ex) != 1 || ex[0].PID != pid || !strings.HasPrefix(ex[0].LogTail, "SIGQUIT: ") {
		t.Fatalf("exits %+v, want the one crash", ex)
	}
}

func TestExcerptStartsAtTheCrash(t *testing.T) {
	long := strings.Repeat("x", 2*logTailBytes)
	for _, tc := range []struct{ in, wantPrefix string }{
		{"level=INFO msg=started\npanic: boom\n\ngoroutine 1 [running]:\n" + long, "panic: boom\n"},
		{"a\nfatal error: concurrent map writes\n" + long, "fatal error: concurrent map writes"},
		{"no crash here: panic: not at a line start\nbye", "no crash here"},
		{long + "the end", "..."},
	} {
		got := excerpt(tc.in)
		if !strings.HasPrefix(got, tc.wantPrefix) || len(got) > logTailBytes+8 {
			t.Errorf("excerpt of %.40q… = %.60q… (%d bytes), want it to start %q", tc.in, got, len(got), tc.wantPrefix)
		}
	}
}

func TestStartThatExitsSaysWhy(t *testing.T) {
	if buildErr != nil {
		t.Fatalf("cannot build petrel: %v", buildErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	_, err := Start(ctx, Single(), Options{Bin: petrelBin, Dir: t.TempDir(), Args: []string{"--no-such-flag"}, Logger: testLogger(t)})
	var exit *Exit
	if !errors.As(err, &exit) || exit.Name != "broker-a-0" || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("start with a bad flag: %v, want an *Exit quoting the log", err)
	}
	if exit.PortInUse() {
		t.Error("a bad flag taken for a port in use")
	}
}

// retryHandler signals each time the cluster logs that it starts again
// because of a port in use.
type retryHandler struct {
	slog.Handler
	retried chan struct{}
}

func (h retryHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "petrel port still in use, starting again" {
		select {
		case h.retried <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h retryHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return retryHandler{h.Handler.WithAttrs(as), h.retried}
}

func TestStartRetriesWhileAPortIsInUse(t *testing.T) {
	retried := make(chan struct{}, 1)
	c := startSingle(t, Options{Logger: slog.New(retryHandler{testLogger(t).Handler(), retried})})
	p := only(t, c)
	if err := c.Kill(p.Name); err != nil {
		t.Fatal(err)
	}
	// Someone holds the broker's port while it is down.
	l, err := net.Listen("tcp", p.Remoting)
	if err != nil {
		t.Fatalf("take the broker's port: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx, p.Name) }()
	select {
	case <-retried:
	case err := <-started:
		_ = l.Close()
		t.Fatalf("Start returned %v while the port was taken", err)
	}
	_ = l.Close()
	if err := <-started; err != nil {
		t.Fatalf("start once the port is free: %v", err)
	}
	if ex := c.Exits(); len(ex) != 0 {
		t.Errorf("the retried launch is reported as a crash: %v", ex)
	}
}

func TestCloseInterruptsAWaitReady(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	if err := c.Pause(p.Name); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.WaitReady(context.Background(), p.Name) }()
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-waited:
		var exit *Exit
		if !errors.As(err, &exit) || exit.Name != p.Name {
			t.Fatalf("WaitReady interrupted by Close: %v, want the process's exit", err)
		}
	case <-time.After(startTimeout): // a bound on a hang, not a sync
		t.Fatal("WaitReady still waiting after Close")
	}
}
