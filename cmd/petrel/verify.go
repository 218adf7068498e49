package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/verify"
	"github.com/petrelmq/petrel/internal/verify/nemesis"
	"github.com/petrelmq/petrel/internal/verify/report"
	"github.com/petrelmq/petrel/internal/verify/workload"
)

// Exit codes of `petrel verify`.
const (
	exitValid   = 0
	exitInvalid = 1
	exitNoRun   = 2
)

// exitError makes main exit with code without printing anything more (the
// command printed its own verdict), or printing err when it is set.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

type verifyOptions struct {
	topology      string
	namesrv       string
	grpc          string
	workloads     string
	faults        string
	faultInterval time.Duration
	seed          int64
	duration      time.Duration
	drainTimeout  time.Duration
	flush         string
	dir           string
	output        string
	reportFile    string
	producers     int
	consumers     int
	queues        int
	rate          int
	bodyBytes     int
	logLevel      string
	masterHold    time.Duration
	auth          bool
	tls           bool
}

func newVerifyCmd() *cobra.Command { return newVerifyCmdOf(&verifyOptions{}) }

// newVerifyCmdOf is the verify command with its flags bound to o.
func newVerifyCmdOf(o *verifyOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Prove that no acknowledged message is lost: run workloads under faults and check the history",
		Long: `Prove that no acknowledged message is lost.

verify starts its own Petrel processes (this same binary) on free loopback
ports, each with its own data directory, or — with --namesrv — uses a
cluster you point it at. It runs workloads through a fault proxy on every
client link while a seeded nemesis injects faults (kill: SIGKILL and a
restart on the same data; pause: SIGSTOP then SIGCONT; partition: cut
every client link to a process; restart: SIGTERM and start again;
slow-disk: only with a binary built with -tags verifyfault; on a
replicated --topology also kill-master, kill-slave, partition-slave and
pause-master; with controllers=N in the topology also
partition-master-controller and kill-controller-leader), then heals,
reads everything back, compares every replica's commit log byte for byte
up to its group's commit point, and checks what it recorded:

  lost        acknowledged, never delivered, and not in the log
  undelivered acknowledged and in the log, but never delivered
  unexpected  delivered but never sent
  duplicated  delivered more than once (allowed: at-least-once; reported)
  reordered   a key's messages delivered out of their send order (ordered)
  early       a delayed message delivered before its time (delay)
  rolled-back delivered  a rolled-back transaction's message arrived (txn)
  corrupt     a body that differs from what was sent
  holes       offsets missing inside a queue
  diverged    a group's replicas' commit logs differ below the commit point

With --auth every process runs with --auth and the workloads sign as a
normal user whose ACL allows only what they do; with --tls every listener
and link is TLS (enforcing) with a certificate of a CA made for the run.
The report says which was on.

Workloads (--workload, several at once): queue (default), broadcast,
ordered, delay, txn, grpc. Every operation is recorded in a JSON-lines
history in the run's directory; 'petrel verify check FILE' checks a saved
one again.

Exit code: 0 when the history is valid, 1 when it is not, 2 when verify
could not run.`,
		Example: `  petrel verify --duration 120s --faults kill,pause,partition --workload queue,ordered,delay,txn
  petrel verify --topology groups=2,replicas=2 --faults kill-master,kill-slave,partition-slave --duration 120s
  petrel verify --topology replicas=3+2,namesrv=3,controllers=3 --faults kill-master,pause-master,partition-master-controller,kill-controller-leader,kill-slave --fault-interval 10s --duration 5m --workload queue,grpc
  petrel verify --auth --tls --topology groups=1,replicas=2 --faults kill-master,partition --workload queue,grpc
  petrel verify --namesrv 10.0.0.1:9876 --faults partition -o json
  petrel verify check /tmp/petrel-verify-123/history.jsonl --report report.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerify(cmd, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.topology, "topology", "single", "cluster verify starts: single (one 'petrel server'), groups=G,replicas=R,namesrv=K (K name servers; G broker groups broker-a, broker-b, ... of a master and R-1 slaves each, sync replication, each slave replicating through a fault-proxy link; keys default to 1; replicas=3+2 gives each group its own count), with ,controllers=N the first N name servers embed controller voters and every broker runs with --controller (the controller elects the masters), or group:N (groups=1,replicas=N)")
	fl.StringVar(&o.namesrv, "namesrv", "", "verify an existing cluster through these name servers (semicolon-separated ip:port) instead of starting one; only client-side faults (partition)")
	fl.StringVar(&o.grpc, "grpc", "", "gRPC endpoint ip:port of the existing cluster, for the grpc workload with --namesrv")
	fl.StringVar(&o.workloads, "workload", "queue", "workloads to run at once, comma-separated: "+strings.Join(workload.Names(), ", "))
	fl.StringVar(&o.faults, "faults", "", "faults to inject, comma-separated: kill, pause, partition, restart, slow-disk, and on a topology with replicas kill-master, kill-slave, partition-slave (cut a slave's replication link), pause-master, with controllers partition-master-controller (cut only a master's links to the controllers) and kill-controller-leader (kill the leading voter's name server, then a master); or none (default kill,pause,partition; partition with --namesrv)")
	fl.DurationVar(&o.faultInterval, "fault-interval", 3*time.Second, "time between the starts of two faults")
	fl.Int64Var(&o.seed, "seed", 0, "seed of the fault plan and the workloads (default: a new one, printed in the report)")
	fl.DurationVar(&o.duration, "duration", time.Minute, "how long the workloads run (faults happen during it)")
	fl.DurationVar(&o.drainTimeout, "drain-timeout", 2*time.Minute, "how long healing and the final drain may take")
	fl.StringVar(&o.flush, "flush", "sync", "--flush of the servers verify starts: sync or async")
	fl.StringVar(&o.dir, "dir", "", "directory for the history, the servers' data and logs (default: a new one under the temporary directory; kept)")
	addVerifyOutputFlags(cmd, &o.output, &o.reportFile)
	fl.IntVar(&o.producers, "producers", 2, "producers per workload")
	fl.IntVar(&o.consumers, "consumers", 2, "consumers per workload")
	fl.IntVar(&o.queues, "queues", 4, "queues per topic")
	fl.IntVar(&o.rate, "rate", 50, "sends per second per producer (0: as fast as sync sends go)")
	fl.IntVar(&o.bodyBytes, "body-bytes", 256, "size of each message body")
	fl.DurationVar(&o.masterHold, "master-fault-hold", verify.DefaultMasterFaultHold, "with controllers, the shortest hold of pause-master and partition-master-controller: past the master's lease and the controller's session timeout, so that another master is elected meanwhile")
	fl.BoolVar(&o.auth, "auth", false, "start every process with --auth (init user "+verify.AdminUser+", a secret made for the run) and drive the workloads as the normal user "+verify.ClientUser+", whose ACL verify creates on every master: every request is signed and authorized")
	fl.BoolVar(&o.tls, "tls", false, "start every process with --tls-mode enforcing and a certificate of a CA made for the run (in the run's directory, tls/); every client dials TLS and verifies it")
	fl.StringVar(&o.logLevel, "log-level", "warn", "log level of verify itself on stderr: debug, info, warn or error")
	cmd.AddCommand(newVerifyCheckCmd())
	return cmd
}

func addVerifyOutputFlags(cmd *cobra.Command, output, reportFile *string) {
	cmd.Flags().StringVarP(output, "output", "o", "text", "output: text (a verdict line and a table) or json")
	cmd.Flags().StringVar(reportFile, "report", "", "also write a self-contained HTML report (timeline with the fault windows) to this file")
}

func newVerifyCheckCmd() *cobra.Command {
	var output, reportFile string
	cmd := &cobra.Command{
		Use:   "check HISTORY",
		Short: "Check a saved verify history again (offline)",
		Long: `Check a saved verify history again, offline: the same checker and report
as at the end of 'petrel verify'. Exit code 0 valid, 1 invalid, 2 when the
file cannot be read.`,
		Example: `  petrel verify check /tmp/petrel-verify-123/history.jsonl -o json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return &exitError{code: exitNoRun, err: err}
			}
			res, err := verify.CheckFile(args[0])
			if err != nil {
				return &exitError{code: exitNoRun, err: err}
			}
			return finishVerify(cmd.OutOrStdout(), res, output, reportFile)
		},
	}
	addVerifyOutputFlags(cmd, &output, &reportFile)
	return cmd
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("-o %q: want text or json", o)
	}
	return nil
}

func runVerify(cmd *cobra.Command, o *verifyOptions) error {
	cfg, err := o.config(cmd)
	if err != nil {
		return &exitError{code: exitNoRun, err: err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := verify.Run(ctx, cfg)
	if err != nil {
		return &exitError{code: exitNoRun, err: err}
	}
	return finishVerify(cmd.OutOrStdout(), res, o.output, o.reportFile)
}

func (o *verifyOptions) config(cmd *cobra.Command) (verify.Config, error) {
	if err := checkOutput(o.output); err != nil {
		return verify.Config{}, err
	}
	logger, err := newLogger(&options{logLevel: o.logLevel})
	if err != nil {
		return verify.Config{}, err
	}
	if o.flush != "sync" && o.flush != "async" {
		return verify.Config{}, fmt.Errorf("--flush %q: want sync or async", o.flush)
	}
	if o.duration <= 0 || o.faultInterval <= 0 || o.drainTimeout <= 0 {
		return verify.Config{}, errors.New("--duration, --fault-interval and --drain-timeout must be positive")
	}
	cfg := verify.Config{
		Topology: o.topology, GRPC: o.grpc, Workloads: splitList(o.workloads),
		FaultInterval: o.faultInterval, Seed: o.seed, Duration: o.duration, DrainTimeout: o.drainTimeout,
		Flush: o.flush, Dir: o.dir, Producers: o.producers, Consumers: o.consumers, Queues: o.queues,
		Rate: o.rate, BodyBytes: o.bodyBytes, Logger: logger, MasterFaultHold: o.masterHold,
		Auth: o.auth, TLS: o.tls,
	}
	cfg.NameSrv = splitNameServers(o.namesrv)
	faults := o.faults
	if faults == "" {
		faults = "kill,pause,partition"
		if len(cfg.NameSrv) > 0 {
			faults = "partition"
		}
	}
	if faults != "none" {
		if cfg.Faults, err = nemesis.ParseKinds(faults); err != nil {
			return verify.Config{}, fmt.Errorf("--faults: %w", err)
		}
	}
	if (o.auth || o.tls) && len(cfg.NameSrv) > 0 {
		return verify.Config{}, errors.New("--auth and --tls set up the cluster verify starts; they exclude --namesrv (verify has no credentials nor CA of your cluster)")
	}
	if cmd.Flags().Changed("topology") && len(cfg.NameSrv) > 0 {
		return verify.Config{}, errors.New("--topology and --namesrv exclude each other: verify either starts a cluster or uses yours")
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// finishVerify prints the result and turns the verdict into the exit code.
func finishVerify(out io.Writer, res *verify.Result, output, reportFile string) error {
	if reportFile != "" {
		if err := writeReport(reportFile, res); err != nil {
			return &exitError{code: exitNoRun, err: err}
		}
	}
	var err error
	if output == "json" {
		err = report.JSON(out, res.Summary)
	} else {
		err = report.Text(out, res.Summary)
	}
	if err != nil {
		return &exitError{code: exitNoRun, err: err}
	}
	if !res.Valid() {
		return &exitError{code: exitInvalid}
	}
	return nil
}

func writeReport(path string, res *verify.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := report.HTML(f, res.Ops, res.Summary); err != nil {
		f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}
