package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/petrelmq/petrel/internal/ha"
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
	// Replication is a replicated topology's masters' --replication:
	// "sync" (default) or "async". (Args can still override it.)
	Replication string
	// HALink, when set, gives the address a slave dials for its master's
	// replication: from is the slave's process name, to the master's
	// --ha-listen address. verify makes it a fault-proxy link, so that a
	// partition can cut exactly that link. Called once per slave, before
	// any process starts. Nil: slaves dial their master directly.
	HALink func(from, to string) (string, error)
	// NamesrvLink, when set, gives the address a broker of a replicated
	// topology dials for a name server (its --namesrv entries): from is
	// the broker's process name, to the name server's address. verify
	// makes it a fault-proxy link, so that a partition of the broker or of
	// the name server cuts its registrations too. Called once per broker
	// and name server, before any process starts. Nil: brokers dial the
	// name servers directly. (A petrel server's broker registers with its
	// own name server in process.)
	NamesrvLink func(from, to string) (string, error)
	// ControllerLink, when set, gives the address a broker of a
	// topology with controllers dials for a controller voter (its
	// --controller entries): from is the broker's process name, to the
	// voter's --controller-listen address. verify makes it a fault-proxy
	// link, so that partition-master-controller can cut exactly the
	// master's links to the controllers. Nil: brokers dial the voters
	// directly. (The voters reach each other directly.)
	ControllerLink func(from, to string) (string, error)
	// Controller, when set, makes the client the cluster asks the
	// controller voters (addrs: their --controller-listen addresses)
	// about the groups; nil: internal/controller/client's Client.
	Controller func(addrs []string) ControllerClient
	// Security, when not zero, starts every process with authentication
	// and/or TLS (see Security); the zero value starts them without.
	Security Security
}

// DefaultStopGrace is Options.StopGrace's default.
const DefaultStopGrace = 20 * time.Second

// Process is one petrel process of a cluster: its name, role, data
// directory and the 127.0.0.1 addresses it listens on, which stay the same
// across restarts. An address it does not serve is "".
type Process struct {
	Name    string
	Role    string // RoleServer, RoleNamesrv, RoleMaster or RoleSlave
	DataDir string
	Log     string // path of its log file
	// Remoting is the broker's RocketMQ 4.x listener, GRPC the 5.x
	// endpoint, HTTP the /metrics, /healthz, /readyz listener, Namesrv the
	// name server.
	Remoting, GRPC, HTTP, Namesrv string
	// Group is a broker's --broker-name ("" for a name server), BrokerID
	// its --broker-id (0 the master).
	Group    string
	BrokerID int
	// NameServers are the addresses a broker registers with, as its
	// --namesrv takes them (semicolon-separated): the name servers', or
	// the Options.NamesrvLink addresses in front of them.
	NameServers string
	// HA is a master's --ha-listen, where its slaves replicate from (""
	// when its group has no slave, and on a slave). HAMaster is where a
	// slave dials its master's replication (its --ha-master: the HA of
	// its master, or the Options.HALink address in front of it). A
	// RoleReplica has an HA (it serves replication while it is the
	// master) and no HAMaster (the controller names the master).
	HA, HAMaster string
	// Controller is a name server's embedded controller voter's
	// --controller-listen ("" without one), ControllerID its
	// --controller-id. Controllers is what a RoleReplica's --controller
	// lists (the voters, or the Options.ControllerLink addresses in front
	// of them), comma-separated.
	Controller   string
	ControllerID int
	Controllers  string
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
	topo   Topology
	ctl    ControllerClient // nil without controllers
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

// Start starts every process of t, name servers first, and waits until
// each one is ready (a broker's /readyz answers 200, a name server's port
// accepts) and every slave is in sync with its master (WaitReplicated),
// bounded by ctx. On any failure it kills what it started
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
	if err := o.Security.check(); err != nil {
		return nil, err
	}
	if err := o.Security.writeInitUser(o.Dir); err != nil {
		return nil, err
	}
	tlsConf, err := o.Security.clientTLS()
	if err != nil {
		return nil, err
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
			Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf},
		},
	}
	switch o.Replication {
	case "":
		o.Replication = "sync"
	case "sync", "async":
	default:
		return nil, fmt.Errorf("cluster: Options.Replication %q: want sync or async", o.Replication)
	}
	c.opts.Replication = o.Replication
	c.topo = t
	if err := c.layout(t); err != nil {
		return nil, err
	}
	if t.Controllers > 0 {
		mk := o.Controller
		if mk == nil {
			if mk, err = defaultController(o.Security); err != nil {
				return nil, err
			}
		}
		c.ctl = mk(c.ControllerAddrs())
	}
	for _, p := range c.procs {
		if err := c.start(ctx, p); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	for _, g := range t.Groups {
		if g.Replicas < 2 {
			continue
		}
		wait := c.WaitReplicated
		if t.Controllers > 0 {
			wait = c.WaitInSync
		}
		if err := wait(ctx, g.Name); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// layout lays out every process of t, in start order: the name servers,
// then each group's master and its slaves.
func (c *Cluster) layout(t Topology) error {
	if t.Combined {
		p, err := c.serverProc(t.Groups[0].Name + "-0")
		if err != nil {
			return err
		}
		c.add(p)
		return nil
	}
	var nameServers []string
	for i := range t.NameServers {
		p, err := c.namesrvProc(fmt.Sprintf("namesrv-%d", i))
		if err != nil {
			return err
		}
		c.add(p)
		nameServers = append(nameServers, p.info.Namesrv)
	}
	if t.Controllers > 0 {
		return c.layoutControllers(t, nameServers)
	}
	for _, g := range t.Groups {
		var master *proc
		for id := range g.Replicas {
			p, err := c.brokerProc(g, id, master, nameServers)
			if err != nil {
				return err
			}
			if id == 0 {
				master = p
			}
			c.add(p)
		}
	}
	return nil
}

// serverProc lays out a `petrel server` named name: its ports, data dir,
// log and arguments.
func (c *Cluster) serverProc(name string) (*proc, error) {
	addrs, err := freeAddrs(name, 4)
	if err != nil {
		return nil, err
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
	args = append(args, c.opts.Security.args(c.opts.Dir)...)
	args = append(args, c.opts.Args...)
	return &proc{info: info, args: args}, nil
}

// namesrvProc lays out a `petrel namesrv` named name. It is ready once
// its port accepts connections.
func (c *Cluster) namesrvProc(name string) (*proc, error) {
	addrs, err := freeAddrs(name, 1)
	if err != nil {
		return nil, err
	}
	addr := addrs[0]
	info := Process{
		Name:    name,
		Role:    RoleNamesrv,
		DataDir: filepath.Join(c.opts.Dir, name),
		Log:     filepath.Join(c.opts.Dir, name+".log"),
		Namesrv: addr,
	}
	if err := os.MkdirAll(info.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// Options.Args are broker flags, which a name server does not take;
	// Security's flags it does.
	args := append([]string{"namesrv", "--namesrv-listen", info.Namesrv}, c.opts.Security.args(c.opts.Dir)...)
	return &proc{info: info, args: args}, nil
}

// brokerProc lays out broker id of group g (master is the group's master,
// nil for id 0), registering with every name server.
func (c *Cluster) brokerProc(g Group, id int, master *proc, nameServers []string) (*proc, error) {
	name := fmt.Sprintf("%s-%d", g.Name, id)
	addrs, err := freeAddrs(name, 4)
	if err != nil {
		return nil, err
	}
	info := Process{
		Name:     name,
		Role:     RoleMaster,
		DataDir:  filepath.Join(c.opts.Dir, name),
		Log:      filepath.Join(c.opts.Dir, name+".log"),
		Remoting: addrs[0],
		GRPC:     addrs[1],
		HTTP:     addrs[2],
		Group:    g.Name,
		BrokerID: id,
	}
	if id > 0 {
		info.Role = RoleSlave
		info.HAMaster = master.info.HA
		if c.opts.HALink != nil {
			a, err := c.opts.HALink(name, master.info.HA)
			if err != nil {
				return nil, fmt.Errorf("cluster: replication link of %s: %w", name, err)
			}
			info.HAMaster = a
		}
	} else if g.Replicas > 1 {
		info.HA = addrs[3]
	}
	dial := slices.Clone(nameServers)
	if c.opts.NamesrvLink != nil {
		for i, ns := range nameServers {
			a, err := c.opts.NamesrvLink(name, ns)
			if err != nil {
				return nil, fmt.Errorf("cluster: name server link of %s: %w", name, err)
			}
			dial[i] = a
		}
	}
	info.NameServers = strings.Join(dial, ";")
	if err := os.MkdirAll(info.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	args := []string{"broker",
		"--namesrv", info.NameServers,
		"--broker-name", g.Name,
		"--broker-id", strconv.Itoa(id),
		"--broker-listen", info.Remoting,
		"--grpc-listen", info.GRPC,
		"--http-listen", info.HTTP,
		"--data-dir", info.DataDir,
		"--flush", c.opts.Flush,
	}
	switch {
	case id > 0:
		// A slave serves no replication (yet: promotion is the next
		// step); its listener stays off so that it binds nothing more.
		args = append(args, "--ha-listen=", "--ha-master", info.HAMaster)
	case info.HA != "":
		args = append(args, "--ha-listen", info.HA, "--replication", c.opts.Replication)
	default:
		// A group of one: a plain master, no replication listener.
		args = append(args, "--ha-listen=")
	}
	args = append(args, c.opts.Security.args(c.opts.Dir)...)
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
	probe, what := c.readyProbe(p)
	return c.await(ctx, p, done, what, probe)
}

// readyProbe is how p is seen ready: GET /readyz answers 200 on its HTTP
// listener, or, for a name server (which has none), its port accepts a
// connection.
func (c *Cluster) readyProbe(p *proc) (func(context.Context) (bool, string), string) {
	if p.info.HTTP == "" {
		// A name server; with an embedded voter its controller port too.
		addrs := []string{p.info.Namesrv}
		if p.info.Controller != "" {
			addrs = append(addrs, p.info.Controller)
		}
		return func(ctx context.Context) (bool, string) {
			for _, addr := range addrs {
				d := net.Dialer{Timeout: readyzTimeout}
				conn, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					return false, err.Error()
				}
				_ = conn.Close()
			}
			return true, ""
		}, "connect to " + strings.Join(addrs, " and ")
	}
	url := c.opts.Security.httpScheme() + "://" + p.info.HTTP + "/readyz"
	return func(ctx context.Context) (bool, string) { return c.probe(ctx, url) }, "/readyz"
}

// await polls probe, with a growing interval, until it succeeds, ctx ends
// or p's run (done) exits (an *Exit then).
func (c *Cluster) await(ctx context.Context, p *proc, done <-chan struct{}, what string, probe func(context.Context) (bool, string)) error {
	interval := 20 * time.Millisecond
	last := "no answer yet"
	for {
		select {
		case <-done:
			return p.exit()
		default:
		}
		ok, why := probe(ctx)
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
			return fmt.Errorf("cluster: %s not ready: %w (last %s: %s)", p.info.Name, ctx.Err(), what, last)
		case <-t.C:
		}
		interval = min(2*interval, 250*time.Millisecond)
	}
}

// WaitReplicated waits until the master of group reports every slave of
// the group in sync (petrel_replication_in_sync 1 for each slave's broker
// id on its /metrics) and has recorded that a slave joined (the marker
// file joinedMarker in its data directory), bounded by ctx. A fresh master
// acknowledges sync sends on its own until its first slave joins, so
// Start waits for this before it returns: from then on a sync send is
// acknowledged only once a slave holds it. It fails at once, with an
// *Exit, when the master exits meanwhile.
func (c *Cluster) WaitReplicated(ctx context.Context, group string) error {
	var (
		master *proc
		slaves []int
	)
	for _, p := range c.procs {
		switch {
		case p.info.Group != group:
		case p.info.Role == RoleMaster:
			master = p
		case p.info.Role == RoleSlave:
			slaves = append(slaves, p.info.BrokerID)
		}
	}
	if master == nil {
		return fmt.Errorf("cluster: no master of group %q", group)
	}
	master.mu.Lock()
	done := master.done
	master.mu.Unlock()
	if done == nil {
		return fmt.Errorf("cluster: %s: %w", master.info.Name, errNotRunning)
	}
	url := c.opts.Security.httpScheme() + "://" + master.info.HTTP + "/metrics"
	err := c.await(ctx, master, done, "slaves in sync on /metrics", func(ctx context.Context) (bool, string) {
		in, err := c.inSync(ctx, url)
		if err != nil {
			return false, err.Error()
		}
		var missing []string
		for _, id := range slaves {
			if !in[strconv.Itoa(id)] {
				missing = append(missing, strconv.Itoa(id))
			}
		}
		if len(missing) > 0 {
			return false, "slave(s) " + strings.Join(missing, ", ") + " not in sync"
		}
		if _, err := os.Stat(filepath.Join(master.info.DataDir, joinedMarker)); err != nil {
			return false, "no slave recorded as joined yet: " + err.Error()
		}
		return true, ""
	})
	if err != nil {
		return fmt.Errorf("cluster: group %s not replicated: %w", group, err)
	}
	return nil
}

// joinedMarker is the file, in a master's data directory, that the broker
// (internal/daemon) writes once a slave has joined its group; right after
// it, the master's sync sends wait for the slaves.
const joinedMarker = ha.SlaveJoinedFile

// inSyncSeries is the metric WaitReplicated reads.
const inSyncSeries = "petrel_replication_in_sync"

// metricsBytes bounds how much of a /metrics page inSync reads.
const metricsBytes = 4 << 20

// inSync reads the slaves a master's /metrics reports in sync: the
// "slave" label of every petrel_replication_in_sync series at 1.
func (c *Cluster) inSync(ctx context.Context, url string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c.opts.Security.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, metricsBytes))
	if err != nil {
		return nil, err
	}
	return parseInSync(string(b)), nil
}

// parseInSync picks the slaves at 1 out of a Prometheus text page, lines
// like `petrel_replication_in_sync{slave="1"} 1`.
func parseInSync(page string) map[string]bool {
	in := map[string]bool{}
	for _, line := range strings.Split(page, "\n") {
		rest, ok := strings.CutPrefix(line, inSyncSeries+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || strings.TrimSpace(value) != "1" {
			continue
		}
		for _, l := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(l, `slave="`); ok {
				in[strings.TrimSuffix(v, `"`)] = true
			}
		}
	}
	return in
}

// probe does one GET of url; it reports 200 or what came instead.
func (c *Cluster) probe(ctx context.Context, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	c.opts.Security.authorize(req)
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
		// SIGKILL ends a stopped process too; it goes first, so a paused
		// one never runs again (resumed first, it could still answer a
		// request a WaitReady had queued, which then reads it as ready).
		if err := proc.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("cluster: close: kill %s (pid %d): %w", p.info.Name, proc.Pid, err))
		}
		if paused {
			_ = proc.Signal(syscall.SIGCONT)
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
	if c.ctl != nil {
		_ = c.ctl.Close()
	}
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
