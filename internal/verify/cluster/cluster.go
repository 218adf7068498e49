package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Options says how Start runs the processes.
type Options struct {
	// Bin is the petrel binary every process runs (required).
	Bin string
	// Dir holds each process's data directory (<Dir>/<name>) and its log
	// (<Dir>/<name>.log: stdout and stderr, appended to on every start).
	// Required; created when missing.
	Dir string
	// Flush is the broker's --flush: "sync" (default) or "async".
	Flush string
	// Args are more flags for every broker process, after the ones Start
	// sets (so they win over them), e.g. --transaction-timeout 2s.
	Args []string
	// Env are more environment variables (KEY=VALUE) for every process,
	// on top of this process's environment.
	Env []string
	// Logger gets the lifecycle events (starts, exits); default: discard.
	Logger *slog.Logger
	// StopGrace bounds how long Stop waits after SIGTERM before it sends
	// SIGKILL (default 20s).
	StopGrace time.Duration
}

// DefaultStopGrace is Options.StopGrace's default.
const DefaultStopGrace = 20 * time.Second

// Process is one petrel process of a cluster: its name, role, data
// directory and the 127.0.0.1 addresses it listens on, which stay the same
// across restarts. An address it does not serve is "".
type Process struct {
	Name    string
	Role    string // RoleServer
	DataDir string
	Log     string // path of its log file
	// Remoting is the broker's RocketMQ 4.x listener, GRPC the 5.x
	// endpoint, HTTP the /metrics, /healthz, /readyz listener, Namesrv the
	// name server.
	Remoting, GRPC, HTTP, Namesrv string
}

// Bounds of the waits this package does on the processes.
const (
	killWait      = 30 * time.Second // for the exit after SIGKILL
	pauseWait     = 10 * time.Second // for a SIGSTOP to take effect
	readyzTimeout = time.Second      // one GET /readyz
	startAttempts = 5                // launches of one Start when a port is still in use
	logTailBytes  = 4096             // of a log quoted in an error
)

// errClosed is returned by operations after Close.
var errClosed = errors.New("cluster: closed")

// Cluster is a set of running petrel processes. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts   Options
	log    *slog.Logger
	http   *http.Client
	procs  []*proc
	byName map[string]*proc

	mu      sync.Mutex
	closed  bool // launches refused from now on
	exits   []*Exit
	reapers sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Start starts every process of t and waits until each one's /readyz
// answers 200 (bounded by ctx). On any failure it kills what it started
// and returns an error naming the process (with the tail of its log when
// it exited).
func Start(ctx context.Context, t Topology, o Options) (*Cluster, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if o.Bin == "" {
		return nil, errors.New("cluster: Options.Bin (the petrel binary) is required")
	}
	if _, err := os.Stat(o.Bin); err != nil {
		return nil, fmt.Errorf("cluster: petrel binary: %w", err)
	}
	if o.Dir == "" {
		return nil, errors.New("cluster: Options.Dir (where data dirs and logs go) is required")
	}
	switch o.Flush {
	case "":
		o.Flush = "sync"
	case "sync", "async":
	default:
		return nil, fmt.Errorf("cluster: Options.Flush %q: want sync or async", o.Flush)
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{
		opts:   o,
		log:    o.Logger.With("component", "verify_cluster"),
		byName: map[string]*proc{},
		http: &http.Client{
			Timeout: readyzTimeout,
			// A fresh connection per probe: a kept-alive one to a
			// process that was since killed or paused would only
			// mislead the next probe.
			Transport: &http.Transport{DisableKeepAlives: true},
		},
	}
	// Validate allows only the combined single process for now.
	g := t.Groups[0]
	p, err := c.serverProc(g.Name + "-0")
	if err != nil {
		return nil, err
	}
	c.add(p)
	for _, p := range c.procs {
		if err := c.start(ctx, p); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// serverProc lays out a `petrel server` named name: its ports, data dir,
// log and arguments.
func (c *Cluster) serverProc(name string) (*proc, error) {
	var addrs [4]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, fmt.Errorf("cluster: ports for %s: %w", name, err)
		}
		addrs[i] = a
	}
	info := Process{
		Name:     name,
		Role:     RoleServer,
		DataDir:  filepath.Join(c.opts.Dir, name),
		Log:      filepath.Join(c.opts.Dir, name+".log"),
		Namesrv:  addrs[0],
		Remoting: addrs[1],
		GRPC:     addrs[2],
		HTTP:     addrs[3],
	}
	if err := os.MkdirAll(info.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	args := []string{"server",
		"--namesrv-listen", info.Namesrv,
		"--broker-listen", info.Remoting,
		"--grpc-listen", info.GRPC,
		"--http-listen", info.HTTP,
		"--data-dir", info.DataDir,
		"--flush", c.opts.Flush,
	}
	args = append(args, c.opts.Args...)
	return &proc{info: info, args: args}, nil
}

func (c *Cluster) add(p *proc) {
	c.procs = append(c.procs, p)
	c.byName[p.info.Name] = p
}

func (c *Cluster) lookup(name string) (*proc, error) {
	p, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("cluster: no process %q", name)
	}
	return p, nil
}

// Processes returns a copy of every process's description, in start
// order.
func (c *Cluster) Processes() []*Process {
	out := make([]*Process, 0, len(c.procs))
	for _, p := range c.procs {
		info := p.info
		out = append(out, &info)
	}
	return out
}

// NameServers returns the ip:port of every name server.
func (c *Cluster) NameServers() []string {
	var out []string
	for _, p := range c.procs {
		if p.info.Namesrv != "" {
			out = append(out, p.info.Namesrv)
		}
	}
	return out
}

// PID returns the process id of name's current run, or 0 when it is not
// running.
func (c *Cluster) PID(name string) int {
	p, err := c.lookup(name)
	if err != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited returns a channel closed when name's current run has exited (at
// once when it is not running, or unknown), to await a crash or an exit
// caused by a Signal.
func (c *Cluster) Exited(name string) <-chan struct{} {
	p, err := c.lookup(name)
	if err == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.done != nil {
			return p.done
		}
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Running reports whether name's process is running (paused counts).
func (c *Cluster) Running(name string) bool { return c.PID(name) != 0 }

// Exits returns the exits nobody asked for: processes that ended on their
// own (a crash) after they were up, oldest first. An exit during a Start is
// that Start's error instead; an exit after Kill, Stop, Close or a Signal
// of SIGKILL, SIGTERM or SIGINT is not one.
func (c *Cluster) Exits() []*Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Exit(nil), c.exits...)
}

// Kill sends SIGKILL to name and waits for it to exit. It is an error when
// the process is not running.
func (c *Cluster) Kill(name string) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	p.op.Lock()
	defer p.op.Unlock()
	return c.kill(p)
}

func (c *Cluster) kill(p *proc) error {
	pid, done, err := p.signal(syscall.SIGKILL, true)
	if err != nil {
		return fmt.Errorf("cluster: kill %s: %w", p.info.Name, err)
	}
	if !waitDone(done, killWait) {
		return fmt.Errorf("cluster: kill %s (pid %d): still running %v after SIGKILL", p.info.Name, pid, killWait)
	}
	return nil
}

// Stop sends SIGTERM to name (and SIGCONT when it is paused, so that it
// can act on it) and waits for it to exit. A process still running after
// Options.StopGrace is killed; that, and an exit status other than 0, are
// errors (the process is gone either way).
func (c *Cluster) Stop(name string) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	p.op.Lock()
	defer p.op.Unlock()
	pid, done, err := p.signal(syscall.SIGTERM, true)
	if err != nil {
		return fmt.Errorf("cluster: stop %s: %w", name, err)
	}
	p.mu.Lock()
	paused := p.paused
	p.mu.Unlock()
	if paused {
		if _, _, err := p.signal(syscall.SIGCONT, true); err != nil && !errors.Is(err, errNotRunning) {
			return fmt.Errorf("cluster: stop %s: %w", name, err)
		}
	}
	if !waitDone(done, c.opts.StopGrace) {
		if err := c.kill(p); err != nil {
			return err
		}
		return fmt.Errorf("cluster: stop %s (pid %d): still running %v after SIGTERM; killed", name, pid, c.opts.StopGrace)
	}
	if status := p.exitStatus(); status != nil {
		return fmt.Errorf("cluster: stop %s (pid %d): exited with %v after SIGTERM; log tail:\n%s", name, pid, status, p.logTail())
	}
	return nil
}

// Start starts name again, on the same ports and data directory, and waits
// until it is ready (bounded by ctx). A launch that fails because a port
// is still in use (a closing socket of the previous run) is retried a few
// times. When it does not get ready in time the process is left running
// (WaitReady can wait on); when it exits, the error is an *Exit.
func (c *Cluster) Start(ctx context.Context, name string) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	return c.start(ctx, p)
}

func (c *Cluster) start(ctx context.Context, p *proc) error {
	p.op.Lock()
	defer p.op.Unlock()
	p.mu.Lock()
	running := p.runningLocked()
	p.mu.Unlock()
	if running {
		return fmt.Errorf("cluster: start %s: already running (pid %d)", p.info.Name, c.PID(p.info.Name))
	}
	for attempt := 1; ; attempt++ {
		if err := c.launch(p); err != nil {
			return err
		}
		err := c.waitReady(ctx, p)
		p.mu.Lock()
		p.starting = false
		p.mu.Unlock()
		if err == nil {
			return nil
		}
		var exit *Exit
		if !errors.As(err, &exit) || !exit.PortInUse() || attempt == startAttempts {
			return err
		}
		backoff := time.Duration(attempt) * 250 * time.Millisecond
		c.log.Info("petrel port still in use, starting again", "process", p.info.Name, "attempt", attempt, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: start %s: %w (after: %w)", p.info.Name, ctx.Err(), err)
		}
	}
}

// launch starts one run of p's process and its reaper.
func (c *Cluster) launch(p *proc) error {
	f, err := os.OpenFile(p.info.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: start %s: %w", p.info.Name, err)
	}
	defer f.Close() // the child has its own copy
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cluster: start %s: %w", p.info.Name, err)
	}
	from := st.Size()
	p.mu.Lock()
	p.starts++
	n := p.starts
	p.mu.Unlock()
	if _, err := fmt.Fprintf(f, "----- verify: start #%d at %s: %s %q -----\n", n, time.Now().UTC().Format(time.RFC3339Nano), c.opts.Bin, p.args); err != nil {
		return fmt.Errorf("cluster: start %s: %w", p.info.Name, err)
	}
	cmd := newCmd(c.opts.Bin, p.args, c.opts.Env, f)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start %s: %w", p.info.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.status = cmd, done, nil
	p.paused, p.expect, p.starting, p.logFrom = false, false, true, from
	p.mu.Unlock()
	c.log.Info("petrel started", "process", p.info.Name, "pid", cmd.Process.Pid, "start", n)
	c.reapers.Add(1)
	go c.reap(p, cmd, done)
	return nil
}

// reap waits for a run of p to end, so that it leaves no zombie, and
// records an exit nobody asked for.
func (c *Cluster) reap(p *proc, cmd *exec.Cmd, done chan struct{}) {
	defer c.reapers.Done()
	err := cmd.Wait()
	p.mu.Lock()
	p.status = err
	p.paused = false
	unasked := !p.expect && !p.starting
	p.mu.Unlock()
	// The exit is on record before done closes, so whoever awaits done
	// (Exited, WaitReady) finds it in Exits.
	defer close(done)
	if !unasked {
		c.log.Info("petrel exited", "process", p.info.Name, "pid", cmd.Process.Pid, "status", exitString(err))
		return
	}
	e := &Exit{Name: p.info.Name, PID: cmd.Process.Pid, Time: time.Now(), Status: err, LogTail: p.logTail()}
	c.log.Warn("petrel exited on its own", "process", p.info.Name, "pid", e.PID, "status", exitString(err))
	c.mu.Lock()
	c.exits = append(c.exits, e)
	c.mu.Unlock()
}

// Pause stops name with SIGSTOP (until Resume) and, on Linux, waits until
// it has stopped.
func (c *Cluster) Pause(name string) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	pid, done, err := p.signal(syscall.SIGSTOP, false)
	if err != nil {
		return fmt.Errorf("cluster: pause %s: %w", name, err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- awaitStopped(pid) }()
	t := time.NewTimer(pauseWait)
	defer t.Stop()
	select {
	case err := <-stopped:
		if err != nil && !isDone(done) {
			return fmt.Errorf("cluster: pause %s (pid %d): wait for the stop: %w", name, pid, err)
		}
	case <-t.C:
		return fmt.Errorf("cluster: pause %s (pid %d): not stopped %v after SIGSTOP", name, pid, pauseWait)
	}
	if isDone(done) {
		return fmt.Errorf("cluster: pause %s (pid %d): exited", name, pid)
	}
	return nil
}

// Resume continues a paused name with SIGCONT.
func (c *Cluster) Resume(name string) error { return c.Signal(name, syscall.SIGCONT) }

// Signal sends s to name's process. It is an error when it is not
// running. SIGKILL, SIGTERM and SIGINT count as asked-for exits (see
// Exits). Signal waits for nothing (Pause does wait for the stop).
func (c *Cluster) Signal(name string, s os.Signal) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	ending := s == syscall.SIGKILL || s == syscall.SIGTERM || s == syscall.SIGINT
	if _, _, err := p.signal(s, ending); err != nil {
		return fmt.Errorf("cluster: signal %v to %s: %w", s, name, err)
	}
	return nil
}

// WaitReady waits until name's GET /readyz answers 200, bounded by ctx. It
// fails at once, with an *Exit, when the process exits meanwhile.
func (c *Cluster) WaitReady(ctx context.Context, name string) error {
	p, err := c.lookup(name)
	if err != nil {
		return err
	}
	return c.waitReady(ctx, p)
}

func (c *Cluster) waitReady(ctx context.Context, p *proc) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return fmt.Errorf("cluster: %s: %w", p.info.Name, errNotRunning)
	}
	url := "http://" + p.info.HTTP + "/readyz"
	interval := 20 * time.Millisecond
	last := "no answer yet"
	for {
		select {
		case <-done:
			return p.exit()
		default:
		}
		ok, why := c.probe(ctx, url)
		if ok {
			return nil
		}
		last = why
		t := time.NewTimer(interval)
		select {
		case <-done:
			t.Stop()
			return p.exit()
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: %s not ready: %w (last /readyz: %s)", p.info.Name, ctx.Err(), last)
		case <-t.C:
		}
		interval = min(2*interval, 250*time.Millisecond)
	}
}

// probe does one GET of url; it reports 200 or what came instead.
func (c *Cluster) probe(ctx context.Context, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err.Error()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return true, ""
	}
	return false, fmt.Sprintf("%s: %s", resp.Status, body)
}

// Close kills every process it started (SIGCONT first for a paused one, so
// that it can die), by PID, and waits for them to exit. It is idempotent:
// later (or concurrent) calls wait for the first and return its result.
// Operations after Close fail.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()

	var errs []error
	dones := make([]chan struct{}, len(c.procs))
	for i, p := range c.procs {
		p.mu.Lock()
		if !p.runningLocked() {
			p.mu.Unlock()
			continue
		}
		p.expect = true
		proc, paused := p.cmd.Process, p.paused
		dones[i] = p.done
		p.mu.Unlock()
		if paused {
			_ = proc.Signal(syscall.SIGCONT)
		}
		if err := proc.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("cluster: close: kill %s (pid %d): %w", p.info.Name, proc.Pid, err))
		}
	}
	all := true
	for i, done := range dones {
		if done != nil && !waitDone(done, killWait) {
			all = false
			errs = append(errs, fmt.Errorf("cluster: close: %s still running %v after SIGKILL", c.procs[i].info.Name, killWait))
		}
	}
	if all {
		c.reapers.Wait()
	}
	c.http.CloseIdleConnections()
	return errors.Join(errs...)
}

func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func waitDone(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
