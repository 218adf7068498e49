// Package verify runs `petrel verify`: it starts a local cluster of Petrel
// processes (or uses one it is pointed at), drives workloads through fault
// proxies while a seeded nemesis kills, pauses and partitions, heals,
// drains, and checks the history it recorded. The parts are packages of
// their own, and this package only wires them:
//
//	cluster   the processes (the same binary), on free loopback ports
//	proxy     a fault proxy on every link from a client to a process, and
//	          from a broker to its master's replication and to the name servers
//	nemesis   the seeded fault plan and its runner
//	workload  producers and consumers over the real protocols
//	history   the JSON-lines record every part appends to
//	checker   the pure checker of a history
//	report    text, JSON and HTML output
package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/faults"
	"github.com/petrelmq/petrel/internal/verify/checker"
	"github.com/petrelmq/petrel/internal/verify/cluster"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/nemesis"
	"github.com/petrelmq/petrel/internal/verify/proxy"
	"github.com/petrelmq/petrel/internal/verify/report"
	"github.com/petrelmq/petrel/internal/verify/workload"
)

// Config is one verify run. Zero values take the defaults of DefaultConfig.
type Config struct {
	// Topology is the cluster verify starts ("single",
	// "groups=G,replicas=R,namesrv=K", see cluster.ParseTopology); ignored
	// with NameSrv.
	Topology string
	// NameSrv, when set, is an existing cluster's name servers: verify
	// starts nothing and injects client-side faults only (partition).
	NameSrv []string
	// GRPC is an existing cluster's gRPC endpoint (the grpc workload).
	GRPC string
	// Workloads to run at once (workload.Names()).
	Workloads []string
	// Faults to inject; empty runs without faults.
	Faults        []nemesis.Kind
	FaultInterval time.Duration
	// Seed drives the fault plan and the workloads' choices; 0 picks one
	// (Result.Seed says which).
	Seed int64
	// Duration of the workload phase (faults happen during it).
	Duration time.Duration
	// DrainTimeout bounds the heal and drain after it.
	DrainTimeout time.Duration
	// Flush is the started servers' --flush (sync or async).
	Flush string
	// Dir holds the history, the processes' data and logs. Empty: a new
	// directory under the system's temporary directory. It is kept.
	Dir string
	// Bin is the petrel binary the processes run; empty: this executable.
	Bin string
	// ServerArgs are added to every started server's command line.
	ServerArgs []string
	// Workload sizing (workload.Env).
	Producers, Consumers, Queues, Rate, BodyBytes int
	SendTimeout                                   time.Duration
	Logger                                        *slog.Logger
	// MasterFaultHold is the shortest hold of pause-master and
	// partition-master-controller on a topology with controllers: past
	// the master's lease and the controller's session timeout, so that
	// the controller elects another master meanwhile. Default 6s.
	MasterFaultHold time.Duration
	// Auth starts every process with --auth (init user AdminUser, a
	// secret made for the run) and drives the workloads as the normal
	// user ClientUser, whose ACL verify sets up on every master: every
	// request is authenticated and authorized.
	Auth bool
	// TLS starts every process with --tls-mode enforcing and a
	// certificate of a CA made for the run (in Dir/tls), which the
	// clients verify.
	TLS bool
}

// DefaultConfig is a one-minute queue workload on a single server with
// kills, pauses and partitions every 3 s.
func DefaultConfig() Config {
	return Config{
		Topology:      "single",
		Workloads:     []string{"queue"},
		Faults:        []nemesis.Kind{nemesis.Kill, nemesis.Pause, nemesis.Partition},
		FaultInterval: 3 * time.Second,
		Duration:      time.Minute,
		DrainTimeout:  2 * time.Minute,
		Flush:         "sync",

		MasterFaultHold: DefaultMasterFaultHold,
	}
}

// DefaultMasterFaultHold is Config.MasterFaultHold's default: above the
// controller's default session timeout (4 s), which is itself above the
// master's lease bound (3 s · 1.05 + 200 ms).
const DefaultMasterFaultHold = 6 * time.Second

// serverArgs make transactions and the broker's bookkeeping fast enough to
// settle within a drain: check-backs 2 s after a half message and every 2 s.
var serverArgs = []string{"--transaction-timeout", "2s", "--transaction-check-interval", "2s"}

// Result is a finished run.
type Result struct {
	Summary report.Summary
	Check   checker.Result
	Ops     []history.Op
	// History is the path of the history file; Dir the run's directory.
	History, Dir string
	Seed         int64
}

// Valid says whether the checker found the history valid.
func (r *Result) Valid() bool { return r.Check.Valid }

// ErrSetup wraps every error that stopped a run before it could be
// checked (exit code 2 of `petrel verify`).
var ErrSetup = errors.New("verify could not run")

func setupErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSetup, fmt.Sprintf(format, args...))
}

func (c *Config) fill() error {
	d := DefaultConfig()
	c.Topology = cmp.Or(c.Topology, d.Topology)
	if len(c.Workloads) == 0 {
		c.Workloads = d.Workloads
	}
	c.FaultInterval = cmp.Or(c.FaultInterval, d.FaultInterval)
	c.Duration = cmp.Or(c.Duration, d.Duration)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, d.DrainTimeout)
	c.Flush = cmp.Or(c.Flush, d.Flush)
	c.MasterFaultHold = cmp.Or(c.MasterFaultHold, d.MasterFaultHold)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Seed == 0 {
		c.Seed = rand.Int64N(1<<53) + 1
	}
	for _, w := range c.Workloads {
		if !slices.Contains(workload.Names(), w) {
			return setupErr("unknown workload %q; choose from %s", w, strings.Join(workload.Names(), ", "))
		}
	}
	if len(c.NameSrv) > 0 {
		for _, k := range c.Faults {
			if k != nemesis.Partition {
				return setupErr("fault %q needs a cluster that verify starts itself; against --namesrv only partition (client-side) can be injected", k)
			}
		}
		if c.Auth || c.TLS {
			return setupErr("--auth and --tls set up the cluster verify starts; against an existing cluster (--namesrv) verify has no credentials nor CA of it")
		}
		if slices.Contains(c.Workloads, "grpc") && c.GRPC == "" {
			return setupErr("the grpc workload against an existing cluster needs its gRPC endpoint (--grpc ip:port)")
		}
	}
	if c.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return setupErr("cannot find the petrel binary to start: %v", err)
		}
		c.Bin = exe
	}
	return nil
}

// Run runs the verification. The error is non-nil only when the run could
// not be carried out or checked (it wraps ErrSetup); an invalid history is
// a Result with Valid() false.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "petrel-verify-")
		if err != nil {
			return nil, setupErr("make the run's directory: %v", err)
		}
		cfg.Dir = d
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, setupErr("make the run's directory: %v", err)
	}
	sec, err := newSecurity(cfg)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, log: cfg.Logger, sec: sec}
	return r.run(ctx)
}

type run struct {
	cfg   Config
	log   *slog.Logger
	sec   *security // the run's users and certificates
	hist  *history.Writer
	net   *proxy.Net
	cl    clusterOps // nil against an existing cluster
	wls   []workload.Workload
	procs []string // names the nemesis may hit
	// aims are the processes of each nemesis.Aim but AnyProcess (procs);
	// nil against an existing cluster.
	aims map[nemesis.Aim][]string
}

// targets is the nemesis's target chooser: the processes a fault of kind
// k may hit.
func (r *run) targets(k nemesis.Kind) []string {
	if r.aims == nil || k.Aim() == nemesis.AnyProcess {
		return r.procs // against --namesrv: the clients, for partition
	}
	return r.aims[k.Aim()]
}

func (r *run) run(ctx context.Context) (*Result, error) {
	cfg := r.cfg
	histPath := filepath.Join(cfg.Dir, "history.jsonl")
	hist, err := history.Create(histPath)
	if err != nil {
		return nil, setupErr("%v", err)
	}
	r.hist = hist
	defer hist.Close()
	r.net = proxy.NewNet(r.log)
	defer r.net.Close()

	env := &workload.Env{
		RunID:       runID(cfg),
		History:     hist,
		Clock:       clock.Real,
		Logger:      r.log,
		Network:     r.net.Client,
		Queues:      cfg.Queues,
		Producers:   cfg.Producers,
		Consumers:   cfg.Consumers,
		Rate:        cfg.Rate,
		BodyBytes:   cfg.BodyBytes,
		SendTimeout: cfg.SendTimeout,
	}
	r.sec.apply(env)
	if len(cfg.NameSrv) > 0 {
		env.NameSrv, env.GRPC = cfg.NameSrv, cfg.GRPC
		r.procs = []string{clientsTarget}
	} else {
		if err := r.startCluster(ctx); err != nil {
			return nil, err
		}
		defer r.cl.Close()
		env.NameSrv = r.cl.NameServers()
		r.aims = map[nemesis.Aim][]string{}
		top := r.cl.Topology()
		if top.Controllers > 0 {
			// The controller decides which replica is the master: a
			// master or slave fault aims at a group and picks the
			// process when it strikes. Groups of one have no failover.
			for _, g := range top.Groups {
				if g.Replicas > 1 {
					r.aims[nemesis.Masters] = append(r.aims[nemesis.Masters], g.Name)
					r.aims[nemesis.Slaves] = append(r.aims[nemesis.Slaves], g.Name)
				}
			}
		}
		for _, p := range r.cl.Processes() {
			r.procs = append(r.procs, p.Name)
			if env.GRPC == "" && p.GRPC != "" {
				env.GRPC = p.GRPC
			}
			switch p.Role {
			case cluster.RoleReplica:
				r.aims[nemesis.Brokers] = append(r.aims[nemesis.Brokers], p.Name)
			case cluster.RoleServer, cluster.RoleMaster:
				// A petrel server is its group's (only) master.
				r.aims[nemesis.Masters] = append(r.aims[nemesis.Masters], p.Name)
				r.aims[nemesis.Brokers] = append(r.aims[nemesis.Brokers], p.Name)
			case cluster.RoleSlave:
				r.aims[nemesis.Slaves] = append(r.aims[nemesis.Slaves], p.Name)
				r.aims[nemesis.Brokers] = append(r.aims[nemesis.Brokers], p.Name)
			}
		}
		if top.Controllers > 0 {
			// Every replica's gRPC front forwards to the current master:
			// the 5.x clients get a list of them and move on when theirs
			// is down, so their failover time is the controller's, not a
			// restart's.
			// The fronts of one group (the first with replicas to fail
			// over to), since a front sends to its own group's master:
			// the grpc sends then belong to that group, and its
			// failover time is measured on it.
			var fronts []string
			for _, g := range top.Groups {
				if g.Replicas > 1 && env.GRPCGroup == "" {
					env.GRPCGroup = g.Name
				}
			}
			for _, p := range r.cl.Processes() {
				if p.Role == cluster.RoleReplica && p.GRPC != "" && p.Group == env.GRPCGroup {
					fronts = append(fronts, p.GRPC)
				}
			}
			if len(fronts) > 0 {
				env.GRPC = strings.Join(fronts, ",")
			}
		}
		for _, k := range cfg.Faults {
			if k.NeedsControllers() && top.Controllers == 0 {
				return nil, setupErr("fault %s needs a topology with controllers (e.g. --topology replicas=3+2,namesrv=3,controllers=3)", k)
			}
			if k == nemesis.PartitionSlave && top.Controllers > 0 {
				return nil, setupErr("fault %s needs a topology without controllers: with them a slave dials its master's own replication address, which the controller hands out, not through a fault-proxy link", k)
			}
			if len(r.targets(k)) == 0 {
				return nil, setupErr("fault %s hits a %s, and topology %s has none (slaves need replicas=2 or more, e.g. --topology groups=2,replicas=2)", k, k.Aim(), cfg.Topology)
			}
		}
	}

	var authDetail string
	if cfg.Auth {
		if authDetail, err = r.setupAuth(ctx, env.RunID); err != nil {
			return nil, err
		}
	}
	if err := r.recordSecurity(authDetail); err != nil {
		return nil, err
	}

	for _, name := range cfg.Workloads {
		w, err := workload.New(name)
		if err != nil {
			return nil, setupErr("%v", err)
		}
		if err := w.Setup(ctx, env); err != nil {
			return nil, setupErr("workload %s: %v", name, err)
		}
		r.wls = append(r.wls, w)
	}
	defer func() {
		for _, w := range r.wls {
			w.Close()
		}
	}()

	if err := r.workloadPhase(ctx); err != nil {
		return nil, err
	}
	if err := r.healAndDrain(ctx); err != nil {
		return nil, err
	}
	if r.cl != nil {
		if err := r.compareLogs(ctx); err != nil {
			return nil, err
		}
	}
	r.phase(history.PhaseDone)
	if err := hist.Close(); err != nil {
		return nil, setupErr("%v", err)
	}
	res, err := CheckFile(histPath)
	if err != nil {
		return nil, err
	}
	res.Dir, res.Seed = cfg.Dir, cfg.Seed
	res.Summary.Seed = cfg.Seed
	res.Summary.DurationS = cfg.Duration.Seconds()
	return res, nil
}

// runID names the run's topics and groups and seeds the workloads: from
// the seed alone on a cluster verify starts (fresh data, so a rerun with
// the same seed replays the same choices), mixed with the time against an
// existing cluster, whose topics of an earlier run with the same seed
// would otherwise hold messages this run never sent.
func runID(cfg Config) string {
	id := uint64(cfg.Seed) * 0x9e3779b97f4a7c15
	if len(cfg.NameSrv) > 0 {
		id ^= uint64(time.Now().UnixNano())
	}
	return fmt.Sprintf("%08x", uint32(id>>32))
}

// startCluster starts the topology's processes on free loopback ports.
func (r *run) startCluster(ctx context.Context) error {
	top, err := cluster.ParseTopology(r.cfg.Topology)
	if err != nil {
		return setupErr("%v", err)
	}
	if slices.Contains(r.cfg.Faults, nemesis.SlowDisk) && !hasTestFaults(ctx, r.cfg.Bin) {
		return setupErr("fault slow-disk needs a petrel binary built with the test-only fault hooks (go build -tags verifyfault ./cmd/petrel); %s has none", r.cfg.Bin)
	}
	args := append(append([]string(nil), serverArgs...), r.cfg.ServerArgs...)
	var env []string
	if slices.Contains(r.cfg.Faults, nemesis.SlowDisk) {
		env = append(env, slowDiskEnv(os.Getenv(faults.EnvVar)))
	}
	cl, err := cluster.Start(ctx, top, cluster.Options{
		Bin: r.cfg.Bin, Dir: r.cfg.Dir, Flush: r.cfg.Flush, Args: args, Env: env, Logger: r.log,
		Security: r.sec.cluster(),
		// Every slave replicates through a proxy link of its own, so
		// that partition-slave can cut exactly that link.
		HALink: r.processLink,
		// And every broker registers through links of its own, so that a
		// partition of a broker or a name server cuts registrations
		// and heartbeats as well as the clients' requests.
		NamesrvLink: r.processLink,
		// And heartbeats its controllers through links of its own, so
		// that partition-master-controller cuts exactly those.
		ControllerLink: r.processLink,
	})
	if err != nil {
		return setupErr("start the cluster: %v", err)
	}
	r.cl = cl
	return nil
}

// clusterOps is what a run does with the cluster it started: the methods
// of *cluster.Cluster it uses (tests put a fake in).
type clusterOps interface {
	Close() error
	NameServers() []string
	Processes() []*cluster.Process
	Topology() cluster.Topology
	HasControllers() bool
	ControllerAddrs() []string
	Kill(name string) error
	Stop(name string) error
	Start(ctx context.Context, name string) error
	Pause(name string) error
	Resume(name string) error
	Signal(name string, s os.Signal) error
	WaitReady(ctx context.Context, name string) error
	WaitInSync(ctx context.Context, group string) error
	Master(ctx context.Context, group string) (string, uint32, error)
	Slaves(ctx context.Context, group string) ([]string, error)
	ControllerLeader(ctx context.Context) (string, error)
}

// processLink is the address of the proxy link from process from to the
// address to, made on first use.
func (r *run) processLink(from, to string) (string, error) {
	l, err := r.net.Link(from, to)
	if err != nil {
		return "", err
	}
	return l.Addr(), nil
}

// slowDiskDelay is what each commit-log write and fsync of a server
// takes longer while the slow-disk fault holds, unless PETREL_TEST_FAULTS
// already sets it.
const slowDiskDelay = 100 * time.Millisecond

// slowDiskEnv is the PETREL_TEST_FAULTS of the started servers when the
// nemesis may slow their disks: the caller's spec (other test faults it
// asked for) with slow-disk added unless it is there.
func slowDiskEnv(spec string) string {
	if !strings.Contains(spec, "slow-disk") {
		spec = strings.TrimPrefix(spec+",slow-disk="+slowDiskDelay.String(), ",")
	}
	return faults.EnvVar + "=" + spec
}

// hasTestFaults says whether bin was built with the verifyfault tag: its
// `petrel version` has a "test faults:" line. (Not the whole line: the
// normal binary must not hold it, see faults.TestBinaryHasFaultHooksOnlyWithTheTag.)
func hasTestFaults(ctx context.Context, bin string) bool {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	return err == nil && strings.Contains(string(out), "\ntest faults:")
}

func (r *run) phase(name string) {
	op := history.New(history.Info, history.Phase)
	op.Process, op.Value = "verify", name
	if _, err := r.hist.Append(op); err != nil {
		r.log.Warn("verify: history", "err", err)
	}
}

// workloadPhase runs the workloads for the configured duration with the
// nemesis alongside, then stops both.
func (r *run) workloadPhase(ctx context.Context) error {
	wctx, stop := context.WithTimeout(ctx, r.cfg.Duration)
	defer stop()
	r.phase(history.PhaseWorkload)
	var wg sync.WaitGroup
	errs := make([]error, len(r.wls)+1)
	for i, w := range r.wls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				errs[i] = fmt.Errorf("workload %s: %w", w.Name(), err)
			}
		}()
	}
	if len(r.cfg.Faults) > 0 {
		plan := r.annotate(nemesis.PlanTargets(r.cfg.Seed, r.cfg.Faults, r.cfg.FaultInterval, r.cfg.Duration, r.targets))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := nemesis.Run(wctx, plan, &target{r: r}, r.hist, clock.Real); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				errs[len(r.wls)] = fmt.Errorf("nemesis: %w", err)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return setupErr("interrupted: %v", err)
	}
	if err := errors.Join(errs...); err != nil {
		return setupErr("%v", err)
	}
	return nil
}

// healAndDrain heals every link, makes sure every process runs and is
// ready, and drains every workload.
func (r *run) healAndDrain(ctx context.Context) error {
	dctx, stop := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer stop()
	r.net.Heal()
	if r.cl != nil {
		for _, p := range r.cl.Processes() {
			_ = r.cl.Resume(p.Name)
			if err := r.cl.WaitReady(dctx, p.Name); err != nil {
				if err := r.cl.Start(dctx, p.Name); err != nil {
					return setupErr("process %s is not back after the faults: %v", p.Name, err)
				}
			}
		}
	}
	r.phase(history.PhaseHealed)
	r.phase(history.PhaseDrain)
	var wg sync.WaitGroup
	errs := make([]error, len(r.wls))
	for i, w := range r.wls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Drain(dctx); err != nil {
				errs[i] = fmt.Errorf("workload %s drain: %w", w.Name(), err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return setupErr("%v (raise --drain-timeout if the cluster is slow to recover)", err)
	}
	return nil
}

// clientsTarget is the one partition target against an existing cluster:
// every client link.
const clientsTarget = "clients"

// target applies the nemesis's events to the cluster and the proxies.
// The nemesis calls it from one goroutine.
type target struct {
	r          *run
	partitions int // partitions injected so far
	// Of the event on now, on a topology with controllers: the processes
	// it hit (to start or resume again), the links it cut, the group's
	// epoch before it.
	hit   []string
	cut   func(from, to string) bool
	epoch uint32
}

// partitionModes are the ways a partition cuts a link, taken in turn.
var partitionModes = []struct {
	name string
	mode proxy.Mode
}{{"blackhole", proxy.Blackhole}, {"drop", proxy.Drop}, {"reset", proxy.Reset}}

func (t *target) Inject(ctx context.Context, e nemesis.Event) (string, error) {
	cl := t.r.cl
	if cl != nil && cl.HasControllers() && e.Kind.Aim() != nemesis.AnyProcess && e.Kind.Aim() != nemesis.Brokers {
		return t.injectGroup(ctx, e)
	}
	switch e.Kind {
	case nemesis.Kill, nemesis.KillMaster, nemesis.KillSlave:
		return "SIGKILL", cl.Kill(e.Target)
	case nemesis.Restart:
		return "SIGTERM", cl.Stop(e.Target)
	case nemesis.Pause, nemesis.PauseMaster:
		return fmt.Sprintf("SIGSTOP for %s", e.Hold), cl.Pause(e.Target)
	case nemesis.PartitionSlave:
		match, link, err := t.replicationLink(e.Target)
		if err != nil {
			return "", err
		}
		t.r.net.Set(match, proxy.Fault{Mode: proxy.Blackhole})
		return fmt.Sprintf("blackhole of the replication link %s for %s", link, e.Hold), nil
	case nemesis.SlowDisk:
		return "SIGUSR1 (slow disk on)", cl.Signal(e.Target, syscall.SIGUSR1)
	case nemesis.Partition:
		m := partitionModes[t.partitions%len(partitionModes)]
		t.partitions++
		match := t.match(e.Target)
		links := t.r.net.Set(match, proxy.Fault{Mode: m.mode})
		if e.Target == clientsTarget {
			return fmt.Sprintf("%s of every client link for %s (%d links)", m.name, e.Hold, len(links)), nil
		}
		return fmt.Sprintf("%s of every link to and from %s for %s (%d links)", m.name, e.Target, e.Hold, len(links)), nil
	}
	return "", fmt.Errorf("fault %q is not known", e.Kind)
}

func (t *target) Heal(ctx context.Context, e nemesis.Event) (string, error) {
	cl := t.r.cl
	if cl != nil && cl.HasControllers() && e.Kind.Aim() != nemesis.AnyProcess && e.Kind.Aim() != nemesis.Brokers {
		return t.healGroup(ctx, e)
	}
	switch e.Kind {
	case nemesis.Kill, nemesis.Restart, nemesis.KillMaster, nemesis.KillSlave:
		return "started again on the same data directory", cl.Start(ctx, e.Target)
	case nemesis.Pause, nemesis.PauseMaster:
		return "SIGCONT", cl.Resume(e.Target)
	case nemesis.PartitionSlave:
		match, _, err := t.replicationLink(e.Target)
		if err != nil {
			return "", err
		}
		t.r.net.Set(match, proxy.Fault{})
		return "replication link passes again", nil
	case nemesis.SlowDisk:
		return "SIGUSR2 (slow disk off)", cl.Signal(e.Target, syscall.SIGUSR2)
	case nemesis.Partition:
		t.r.net.Heal()
		return "links pass again", nil
	}
	return "", fmt.Errorf("fault %q is not known", e.Kind)
}

// match picks the links a partition of target cuts: every link to one of
// the process's addresses (clients', its slaves' replication links to a
// master, the brokers' links to a name server) and every link from it (a
// slave's replication link, a broker's links to the name servers), or
// every link against an existing cluster.
func (t *target) match(name string) func(from, to string) bool {
	if t.r.cl == nil || name == clientsTarget {
		return func(string, string) bool { return true }
	}
	var addrs []string
	for _, p := range t.r.cl.Processes() {
		if p.Name == name {
			addrs = append(addrs, p.Remoting, p.GRPC, p.HTTP, p.Namesrv, p.HA, p.Controller)
		}
	}
	return func(from, to string) bool { return from == name || (to != "" && slices.Contains(addrs, to)) }
}

// replicationLink picks the one proxy link slave replicates through (from
// the slave to its master's replication listener) and names it.
func (t *target) replicationLink(slave string) (func(from, to string) bool, string, error) {
	var group string
	for _, p := range t.r.cl.Processes() {
		if p.Name == slave && p.Role == cluster.RoleSlave {
			group = p.Group
		}
	}
	for _, p := range t.r.cl.Processes() {
		if group != "" && p.Group == group && p.Role == cluster.RoleMaster && p.HA != "" {
			ha := p.HA
			return func(from, to string) bool { return from == slave && to == ha }, proxy.Name(slave, ha), nil
		}
	}
	return nil, "", fmt.Errorf("%s is not a slave with a master", slave)
}

// CheckFile checks a saved history.
func CheckFile(path string) (*Result, error) {
	ops, err := history.ReadFile(path)
	if err != nil {
		return nil, setupErr("%v", err)
	}
	res := checker.Check(ops)
	sum := report.Build(ops, findings(res))
	sum.History = path
	return &Result{Summary: sum, Check: res, Ops: ops, History: path}, nil
}
