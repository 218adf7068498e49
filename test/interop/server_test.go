package interop

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// petrelBin is the server binary every test starts; buildErr says why there
// is none.
var (
	petrelBin string
	buildErr  error
)

// defaultParallel is how many tests run at once unless -parallel is given.
// The tests spend most of their time waiting on the client's fixed timers
// (rebalance 20 s, heartbeat 30 s), not on the CPU, so running them side by
// side keeps the suite near three minutes even on two cores.
const defaultParallel = 8

func TestMain(m *testing.M) {
	if os.Getenv(orderlyChildEnv) != "" {
		rlog.SetLogLevel("error")
		os.Exit(runOrderlyChild())
	}
	if os.Getenv(pushChildEnv) != "" {
		rlog.SetLogLevel("error")
		os.Exit(runPushChild())
	}
	if os.Getenv(sendBackChildEnv) != "" {
		rlog.SetLogLevel("error")
		os.Exit(runSendBackChild())
	}
	if os.Getenv(haChildEnv) != "" {
		rlog.SetLogLevel("error")
		os.Exit(runHAChild())
	}
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			explicit = true
		}
	})
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	rlog.SetLogLevel("error")

	tmp, err := os.MkdirTemp("", "petrel-interop-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	if bin := os.Getenv("PETREL_BIN"); bin != "" {
		petrelBin = bin
	} else {
		petrelBin, buildErr = buildPetrel(tmp)
	}
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// buildPetrel builds ./cmd/petrel of the enclosing Petrel repository into dir.
func buildPetrel(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "petrel")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/petrel")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/petrel in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// repoRoot walks up from the working directory to the go.mod whose module is
// github.com/petrelmq/petrel.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				f := strings.Fields(line)
				if len(f) == 2 && f[0] == "module" && f[1] == "github.com/petrelmq/petrel" {
					return dir, nil
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod with module github.com/petrelmq/petrel above the working directory")
		}
		dir = parent
	}
}

// Free loopback ports. Ports handed out once are never handed out again in
// this process, so parallel tests cannot collide with each other. They are
// taken from below the kernel's ephemeral range when it leaves room: a port
// from inside it could become the local port of some outgoing connection
// between the check here and the server's bind ("address already in use",
// seen once in ten runs of the suite).
var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
)

// fixedPortsFrom is where ports below the ephemeral range start.
const fixedPortsFrom = 20000

func freePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	if lo := ephemeralPortsFrom(); lo-fixedPortsFrom >= 1000 {
		for range 1000 {
			port := fixedPortsFrom + rand.IntN(lo-fixedPortsFrom)
			if portsUsed[port] {
				continue
			}
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				continue // taken by someone else
			}
			_ = l.Close()
			portsUsed[port] = true
			return port
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("pick a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !portsUsed[port] {
			portsUsed[port] = true
			return port
		}
	}
	t.Fatal("pick a free port: no unused port after 100 tries")
	return 0
}

// ephemeralPortsFrom is the first port of the kernel's ephemeral range
// (Linux), or 0 when it cannot be read.
func ephemeralPortsFrom() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// serverOptions are the optional flags of `petrel server`.
type serverOptions struct {
	brokerName       string
	cluster          string
	autoCreateTopics *bool    // nil: the server's default
	extraArgs        []string // more flags for petrel server
	// seed, when set, prepares the fresh data directory before the first
	// start.
	seed func(t testing.TB, dataDir string)
}

// petrel is one `petrel server` process and everything needed to start it
// again on the same ports and data directory.
type petrel struct {
	t       testing.TB
	dataDir string
	nsAddr  string // "127.0.0.1:port" of the name server
	brAddr  string // "127.0.0.1:port" of the broker
	// grpcAddr is "127.0.0.1:port" of the gRPC (5.x) endpoint; every
	// server gets its own, so parallel servers never share :8081.
	grpcAddr string
	opts     serverOptions

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	exit   error
	stdout *lockedBuffer
	stderr *lockedBuffer
	starts int
	// stopped holds what runs once the test's final stop of the server is
	// done (afterStop).
	stopped []func()
}

// afterStop has fn run after the server is stopped at the end of the test.
func (p *petrel) afterStop(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = append(p.stopped, fn)
}

// startPetrel starts a server on fresh ports and a fresh data directory and
// waits until it is ready. It is stopped (SIGTERM, then SIGKILL) when the
// test ends.
func startPetrel(t testing.TB, opts serverOptions) *petrel {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("cannot run the server: %v", buildErr)
	}
	p := &petrel{
		t:       t,
		dataDir: t.TempDir(),
		nsAddr:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		brAddr:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		opts:    opts,
	}
	p.grpcAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	if opts.seed != nil {
		opts.seed(t, p.dataDir)
	}
	t.Cleanup(func() {
		if p.running() {
			if err := p.stopWith(syscall.SIGTERM, 20*time.Second); err != nil {
				t.Errorf("petrel did not stop cleanly on SIGTERM at the end of the test: %v", err)
			}
		}
		p.mu.Lock()
		stopped := p.stopped
		p.stopped = nil
		p.mu.Unlock()
		for _, fn := range stopped {
			fn()
		}
		if t.Failed() {
			p.dumpLogs()
		}
	})
	p.start()
	return p
}

func (p *petrel) args() []string {
	a := []string{"server",
		"--data-dir", p.dataDir,
		"--namesrv-listen", p.nsAddr,
		"--broker-listen", p.brAddr,
		"--http-listen", "127.0.0.1:0", // the default :8080 would clash between servers
		"--grpc-listen", p.grpcAddr,
		"--flush", "sync",
	}
	if p.opts.brokerName != "" {
		a = append(a, "--broker-name", p.opts.brokerName)
	}
	if p.opts.cluster != "" {
		a = append(a, "--cluster", p.opts.cluster)
	}
	a = append(a, p.opts.extraArgs...)
	if p.opts.autoCreateTopics != nil {
		a = append(a, "--auto-create-topics="+strconv.FormatBool(*p.opts.autoCreateTopics))
	}
	return a
}

// startupTimeout bounds how long a start (including recovery) may take.
const startupTimeout = 30 * time.Second

// start launches the process and waits for its startup lines: one naming the
// name-server port, one naming the broker port and one naming the data
// directory. Then both ports must accept connections.
func (p *petrel) start() {
	p.t.Helper()
	p.mu.Lock()
	p.starts++
	n := p.starts
	if p.stdout == nil {
		p.stdout, p.stderr = &lockedBuffer{}, &lockedBuffer{}
	}
	if n > 1 {
		banner := fmt.Sprintf("----- start #%d -----\n", n)
		p.stdout.WriteString(banner)
		p.stderr.WriteString(banner)
	}
	cmd := exec.Command(petrelBin, p.args()...)
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.mu.Unlock()
		p.t.Fatalf("petrel start #%d: %v", n, err)
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatalf("petrel start #%d: %v", n, err)
	}
	p.cmd = cmd
	done := make(chan struct{})
	p.done = done
	lines := make(chan string, 64)
	stdout := p.stdout
	p.mu.Unlock()

	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			stdout.WriteString(line + "\n")
			select {
			case lines <- line:
			default: // nobody is waiting any more
			}
		}
		_, _ = io.Copy(io.Discard, out)
		err := cmd.Wait()
		p.mu.Lock()
		p.exit = err
		p.mu.Unlock()
		close(done)
	}()

	_, nsPort, _ := net.SplitHostPort(p.nsAddr)
	_, brPort, _ := net.SplitHostPort(p.brAddr)
	want := map[string]func(string) bool{
		"name-server listener line (mentioning :" + nsPort + ")": func(l string) bool { return strings.Contains(l, ":"+nsPort) },
		"broker listener line (mentioning :" + brPort + ")":      func(l string) bool { return strings.Contains(l, ":"+brPort) },
		"data-dir line (mentioning " + p.dataDir + ")":           func(l string) bool { return strings.Contains(l, p.dataDir) },
	}
	deadline := time.NewTimer(startupTimeout)
	defer deadline.Stop()
	for len(want) > 0 {
		select {
		case l := <-lines:
			for k, match := range want {
				if match(l) {
					delete(want, k)
				}
			}
		case <-done:
			p.t.Fatalf("petrel start #%d (%s %s) exited before printing its startup lines (still missing: %v): %v\nstdout:\n%s\nstderr:\n%s",
				n, petrelBin, strings.Join(p.args(), " "), keys(want), p.exitErr(), p.stdout.String(), tail(p.stderr.String(), 4000))
		case <-deadline.C:
			p.t.Fatalf("petrel start #%d: no startup lines within %v (still missing: %v)\nstdout:\n%s\nstderr:\n%s",
				n, startupTimeout, keys(want), p.stdout.String(), tail(p.stderr.String(), 4000))
		}
	}
	// The lines say the listeners exist; make sure they accept.
	for _, addr := range []string{p.nsAddr, p.brAddr, p.grpcAddr} {
		waitFor(p.t, 10*time.Second, "petrel listener "+addr+" accepts connections", func() (bool, string) {
			return accepts(addr)
		})
	}
}

func (p *petrel) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (p *petrel) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// stop sends SIGTERM and waits for a clean exit (status 0).
func (p *petrel) stop() {
	p.t.Helper()
	if err := p.stopWith(syscall.SIGTERM, 30*time.Second); err != nil {
		p.t.Fatalf("petrel did not stop cleanly on SIGTERM: %v\nstderr:\n%s", err, tail(p.stderr.String(), 4000))
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *petrel) kill() {
	p.t.Helper()
	_ = p.stopWith(syscall.SIGKILL, 10*time.Second)
	if p.running() {
		p.t.Fatal("petrel still running 10 s after SIGKILL")
	}
}

// restart starts the server again on the same ports and data directory.
func (p *petrel) restart() {
	p.t.Helper()
	if p.running() {
		p.t.Fatal("restart: petrel is still running")
	}
	p.start()
}

// stopWith signals the process and waits up to timeout for it to exit; after
// the timeout it is killed. It returns the exit error (nil for status 0).
func (p *petrel) stopWith(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || done == nil {
		return errors.New("not started")
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return p.exitErr()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running %v after %v; killed", timeout, sig)
	}
}

func (p *petrel) dumpLogs() {
	p.t.Logf("petrel %s\nstdout:\n%s\nstderr (tail):\n%s",
		strings.Join(p.args(), " "), p.stdout.String(), tail(p.stderr.String(), 8000))
}

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
}

func (b *lockedBuffer) String() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// waitFor polls cond until it holds or timeout passes; then the test fails
// with what and cond's last explanation. Polling (every 50 ms, growing to
// 500 ms) is for state only visible over the network; in-process state uses
// the collector's notifications instead.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if !poll(timeout, cond) {
		_, why := cond()
		t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
	}
}

// poll is waitFor without the failure: it reports whether cond held in time.
func poll(timeout time.Duration, cond func() (bool, string)) bool {
	deadline := time.Now().Add(timeout)
	interval := 50 * time.Millisecond
	for {
		if ok, _ := cond(); ok {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		timer := time.NewTimer(min(interval, left))
		<-timer.C
		interval = min(interval*2, 500*time.Millisecond)
	}
}

// accepts is a waitFor condition: addr accepts a TCP connection.
func accepts(addr string) (bool, string) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false, err.Error()
	}
	_ = c.Close()
	return true, ""
}
