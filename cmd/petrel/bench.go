package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/cli"
	"github.com/petrelmq/petrel/internal/loadgen"
)

// benchRunners are the load generator's entry points; tests replace them
// to check what the flags produce.
type benchRunners struct {
	produce func(context.Context, loadgen.ProduceConfig) (*loadgen.Result, error)
	consume func(context.Context, loadgen.ConsumeConfig) (*loadgen.Result, error)
	receive func(context.Context, loadgen.ReceiveConfig) (*loadgen.Result, error)
}

// newBenchCmd returns `petrel bench` with its produce and consume
// subcommands.
func newBenchCmd() *cobra.Command {
	return newBenchCmdWith(benchRunners{produce: loadgen.Produce, consume: loadgen.Consume, receive: loadgen.Receive})
}

func newBenchCmdWith(r benchRunners) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running Petrel: produce, consume and receive throughput, latency",
		Long: `Measure a running Petrel: produce, consume and receive throughput, latency.

Load a running Petrel (or any RocketMQ 4.x broker) over the remoting
protocol with Petrel's own client — or, with --grpc, its RocketMQ 5.x gRPC
front with Petrel's own gRPC client (produce, receive) — and print one
result line per run, in the format of the peer benchmarks:

  petrel produce 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. errors=E [not_replicated=R]
  petrel consume 1024B msgs=N secs=S msgs/s=X MB/s=Y errors=E
  petrel receive 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. (ack latency) .. errors=E

or, with -o json, one JSON object (scenario, mode, batch, size_bytes, msgs,
bytes, secs, msgs_per_sec, mb_per_sec, latency_us{p50,p90,p99,p999,max},
errors, first_error, not_replicated; protocol "grpc" for gRPC runs). A send a
replicating master stored but did not confirm replicated (SLAVE_NOT_AVAILABLE,
FLUSH_SLAVE_TIMEOUT) counts in not_replicated, not in msgs or errors. MB/s counts body bytes, 10^6 per second. While a run
lasts, a progress line (msgs/s, MB/s, p50/p99 latency, errors) is updated
once a second on stderr when it is a terminal (--progress).

A run stops after --count messages, after --duration (given alone, it runs
for that long), or on SIGINT/SIGTERM (printing what it measured). Only
loopback addresses are used unless --allow-remote is given.

Against a server run with --auth, give a user's credentials
(--access-key/--secret-key or PETREL_ACCESS_KEY/PETREL_SECRET_KEY): every
remoting request is signed, every gRPC call carries the 5.x clients'
authorization metadata. --tls (or --tls-ca / --tls-insecure) dials the
remoting servers over TLS; for --grpc, --tls-ca verifies the front's
certificate instead of accepting any.`,
		Example: `  petrel server &
  petrel bench produce --size 1024 --count 1000000 --concurrency 128
  petrel bench consume --count 1000000
  petrel bench produce --grpc 127.0.0.1:8081 --count 1000000
  petrel bench receive --grpc 127.0.0.1:8081 --group G --count 1000000`,
		Args: cobra.NoArgs,
	}
	var profile string
	var stopProfile func()
	cmd.PersistentFlags().StringVar(&profile, "cpu-profile", "", "write a CPU profile (pprof) of the load generator to this file")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) (err error) {
		stopProfile, err = startCPUProfile(profile)
		return err
	}
	cmd.PersistentPostRun = func(*cobra.Command, []string) { stopProfile() }
	sec := &securityFlags{}
	addSecurityFlags(cmd.PersistentFlags(), sec)
	cmd.AddCommand(newBenchProduceCmd(r, sec), newBenchConsumeCmd(r, sec), newBenchReceiveCmd(r, sec))
	return cmd
}

func newBenchProduceCmd(r benchRunners, sec *securityFlags) *cobra.Command {
	var cfg loadgen.ProduceConfig
	var namesrv, mode string
	var out benchOutput
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Send messages with --concurrency requests in flight and report msgs/s and latency",
		Long: `Send messages to a running Petrel and report msgs/s, MB/s and send latency.

Ask the name server for the topic's route (creating the topic with --queues
queues on every master when it has none) and send --count messages of
--size bytes, round-robin over the queues, with up to --concurrency requests
outstanding over one connection per broker (--conns for more).

--mode async (default) keeps the requests in flight with callbacks, as an
async producer; sync runs --concurrency senders that each wait for their
answer; oneway sends without answers (latency is then the time to write
the request). --batch N sends N messages per request (SEND_BATCH_MESSAGE).
--rate paces the sends (messages per second overall), for latency below
saturation; a paced send's latency runs from its due time (start + i/rate),
so sends delayed behind a full window or a stall count the delay. --inflight is an alias of --concurrency.

With --grpc ADDR the messages go to the RocketMQ 5.x gRPC front at ADDR
(SendMessage, --batch messages per call) instead: the topic must exist or
be auto-created by the server's QueryRoute; --concurrency calls are in
flight over --conns HTTP/2 connections; TLS accepting any certificate
unless --grpc-plaintext. --namesrv, --queues and --group do not apply,
nor --mode oneway. The result line's scenario is then produce-grpc.`,
		Example: `  # one million 1 KiB messages, 128 in flight, a live progress line
  petrel bench produce --size 1024 --count 1000000 --concurrency 128
  # 30 s of sync sends of 10-message batches, summary as JSON
  petrel bench produce --mode sync --batch 10 --duration 30s -o json
  # the same over the gRPC front
  petrel bench produce --grpc 127.0.0.1:8081 --size 1024 --count 300000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := loadgen.ParseMode(mode)
			if err != nil {
				return fmt.Errorf("--mode %q: want sync, async or oneway", mode)
			}
			cfg.Mode = m
			cfg.NameServers = splitNameServers(namesrv)
			if cfg.Security, err = sec.bench(cfg.GRPCPlaintext); err != nil {
				return err
			}
			out.signed = cfg.AccessKey != ""
			if err := grpcProduceFlags(cmd, &cfg); err != nil {
				return err
			}
			countOrDuration(cmd, &cfg.Count)
			return out.run(cmd, func(ctx context.Context, progress func(loadgen.Progress)) (*loadgen.Result, error) {
				cfg.Progress = progress
				return r.produce(ctx, cfg)
			})
		},
	}
	fl := cmd.Flags()
	addBenchCommonFlags(fl, &namesrv, &cfg.Topic, &cfg.Count, &cfg.Duration, &cfg.MaxErrors, &cfg.AllowRemote, &cfg.Scenario, "produce")
	out.addFlags(fl)
	fl.IntVar(&cfg.Queues, "queues", loadgen.DefaultQueues, "queues per broker of the topic when it has to be created")
	fl.StringVar(&cfg.ProducerGroup, "group", loadgen.DefaultProducerGroup, "producer group named in the sends")
	fl.IntVar(&cfg.BodyBytes, "size", loadgen.DefaultBodyBytes, "message body size in bytes")
	fl.IntVar(&cfg.InFlight, "concurrency", loadgen.DefaultInFlight, "requests in flight at once (sync: sending workers)")
	fl.StringVar(&mode, "mode", string(loadgen.ModeAsync), "how to send: async, sync or oneway")
	fl.IntVar(&cfg.Batch, "batch", 1, "messages per send; above 1 sends batches (SEND_BATCH_MESSAGE)")
	fl.StringVar(&cfg.Serialize, "serialize", loadgen.SerializeJSON, "remoting header format: json (as the official Go client) or rocketmq (the binary layout Java clients can use)")
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "inflight" {
			name = "concurrency"
		}
		return pflag.NormalizedName(name)
	})
	fl.IntVar(&cfg.Conns, "conns", 1, "connections per broker")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second overall (0: as fast as the window allows)")
	fl.DurationVar(&cfg.GracePeriod, "grace", loadgen.DefaultGracePeriod, "how long to wait for outstanding answers once sending stopped")
	fl.StringVar(&cfg.GRPC, "grpc", "", "send to the RocketMQ 5.x gRPC front at this host:port instead of over remoting")
	fl.BoolVar(&cfg.GRPCPlaintext, "grpc-plaintext", false, "dial --grpc without TLS (for a server started with --grpc-plaintext)")
	return cmd
}

// grpcProduceFlags checks the flags of a produce over gRPC and names it
// produce-grpc unless --scenario says otherwise.
func grpcProduceFlags(cmd *cobra.Command, cfg *loadgen.ProduceConfig) error {
	fl := cmd.Flags()
	if cfg.GRPC == "" {
		if cfg.GRPCPlaintext {
			return fmt.Errorf("--grpc-plaintext needs --grpc ADDR (the gRPC front to send to)")
		}
		return nil
	}
	for _, name := range []string{"namesrv", "queues", "group"} {
		if fl.Changed(name) {
			return fmt.Errorf("--%s does not apply with --grpc: the gRPC front routes and creates the topic itself and has no producer groups; drop one of them", name)
		}
	}
	cfg.NameServers = nil
	if !fl.Changed("scenario") {
		cfg.Scenario = "produce-grpc"
	}
	return nil
}

func newBenchConsumeCmd(r benchRunners, sec *securityFlags) *cobra.Command {
	var cfg loadgen.ConsumeConfig
	var namesrv string
	var out benchOutput
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Drain messages with long-polling pulls and report msgs/s",
		Long: `Drain a topic of a running Petrel and report msgs/s and MB/s.

Join --group with a heartbeat, start each queue of the topic at the group's
committed offset (or its first offset with --from-start, or when none is
committed) and pull every queue concurrently, --batch messages per pull,
with long polling, committing offsets, until --count messages arrived,
--duration passed or nothing arrived for --idle.

By default each queue is read from the master of its broker group.
--broker-id N reads from broker id N of every group instead (1: the first
slave), e.g. to compare the drain rate of a slave with the master's; the
route must list that id for every group of the topic. Offsets are still
queried from and committed to each group's master (the replica's when the
master is down), and pulls from a slave do not commit offsets on the way,
as the official clients do.`,
		Example: `  # drain what 'petrel bench produce' sent, 64 messages per pull
  petrel bench consume --count 1000000 --batch 64
  # read the topic again from its start, summary as JSON
  petrel bench consume --from-start --group again -o json
  # drain from the slaves (broker id 1) of every group
  petrel bench consume --broker-id 1 --from-start --group from-slave --scenario consume-slave`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.NameServers = splitNameServers(namesrv)
			var err error
			if cfg.Security, err = sec.bench(false); err != nil {
				return err
			}
			out.signed = cfg.AccessKey != ""
			countOrDuration(cmd, &cfg.Count)
			return out.run(cmd, func(ctx context.Context, progress func(loadgen.Progress)) (*loadgen.Result, error) {
				cfg.Progress = progress
				return r.consume(ctx, cfg)
			})
		},
	}
	fl := cmd.Flags()
	addBenchCommonFlags(fl, &namesrv, &cfg.Topic, &cfg.Count, &cfg.Duration, &cfg.MaxErrors, &cfg.AllowRemote, &cfg.Scenario, "consume")
	out.addFlags(fl)
	fl.StringVar(&cfg.Group, "group", loadgen.DefaultConsumerGroup, "consumer group")
	fl.IntVar(&cfg.PullBatch, "batch", loadgen.DefaultPullBatch, "messages per pull (maxMsgNums)")
	fl.DurationVar(&cfg.IdleTimeout, "idle", loadgen.DefaultIdleTimeout, "stop when nothing arrived for this long")
	fl.DurationVar(&cfg.SuspendTimeout, "suspend", loadgen.DefaultSuspendTimeout, "how long the broker may hold a pull that finds nothing")
	fl.BoolVar(&cfg.FromStart, "from-start", false, "start at each queue's first offset, ignoring committed offsets")
	fl.Int64Var(&cfg.BrokerID, "broker-id", 0, "pull from this broker id of every group: 0 the master, 1..N a slave")
	return cmd
}

func addBenchCommonFlags(fl *pflag.FlagSet, namesrv, topic *string, count *int64, duration *time.Duration, maxErrors *int64, allowRemote *bool, scenario *string, defScenario string) {
	fl.StringVar(namesrv, "namesrv", defaultNameServer(), "name servers, semicolon-separated host:port; "+namesrvEnv+" sets the default")
	fl.StringVar(topic, "topic", loadgen.DefaultTopic, "topic")
	fl.Int64Var(count, "count", loadgen.DefaultCount, "messages to send or receive")
	fl.DurationVar(duration, "duration", loadgen.DefaultDuration, "stop after this long; given without --count, run for this long")
	fl.Int64Var(maxErrors, "max-errors", loadgen.DefaultMaxErrors, "stop after this many failed requests")
	fl.BoolVar(allowRemote, "allow-remote", false, "allow non-loopback addresses (name servers and brokers)")
	fl.StringVar(scenario, "scenario", defScenario, "scenario name printed in the result line, e.g. produce-sync")
}

// countOrDuration makes --duration alone bound the run: without --count
// the count is unlimited.
func countOrDuration(cmd *cobra.Command, count *int64) {
	fl := cmd.Flags()
	if fl.Changed("duration") && !fl.Changed("count") {
		*count = loadgen.CountUnlimited
	}
}

// benchOutput holds the output flags of a bench subcommand.
type benchOutput struct {
	format   string // -o: table (the one result line; "text" is accepted too) or json
	progress string // --progress: auto, on or off
	signed   bool   // the run has credentials (no hint to pass them)
}

func (o *benchOutput) addFlags(fl *pflag.FlagSet) {
	fl.StringVarP(&o.format, "output", "o", cli.OutputTable, "result format: table (one result line) or json (one object)")
	fl.StringVar(&o.progress, "progress", "auto", "progress line once a second on stderr: auto (when stderr is a terminal), on or off")
}

// run runs one load until it ends or SIGINT/SIGTERM stops it, showing
// progress, and prints its result.
func (o *benchOutput) run(cmd *cobra.Command, run func(context.Context, func(loadgen.Progress)) (*loadgen.Result, error)) error {
	switch o.format {
	case cli.OutputTable, "text", cli.OutputJSON:
	default:
		return fmt.Errorf("-o %q: want table or json", o.format)
	}
	stderr := cmd.ErrOrStderr()
	var show bool
	switch o.progress {
	case "auto":
		show = isTerminal(stderr)
	case "on":
		show = true
	case "off":
	default:
		return fmt.Errorf("--progress %q: want auto, on or off", o.progress)
	}
	var pp *progressPrinter
	var progress func(loadgen.Progress)
	if show {
		pp = &progressPrinter{w: stderr, tty: isTerminal(stderr)}
		progress = pp.print
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, progress)
	if pp != nil {
		pp.end()
	}
	if !o.signed {
		if err != nil && needsCredentials(err.Error()) {
			err = fmt.Errorf("%w; %s", err, benchCredentialsHint)
		}
		if res != nil && needsCredentials(res.FirstError) {
			res.FirstError += "; " + benchCredentialsHint
		}
	}
	return printBenchResult(cmd, res, err, o.format == cli.OutputJSON)
}

// progressPrinter writes progress lines: on a terminal it rewrites one
// line in place, elsewhere it writes one line per report.
type progressPrinter struct {
	w    io.Writer
	tty  bool
	prev loadgen.Progress
	used bool
}

func (p *progressPrinter) print(cur loadgen.Progress) {
	line := loadgen.FormatProgress(p.prev, cur)
	p.prev = cur
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[2K"+line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.used = true
}

// end clears the progress line on a terminal, so the result stands alone.
func (p *progressPrinter) end() {
	if p.tty && p.used {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printBenchResult prints the result (also after a run that stopped on
// errors), as a line or as JSON, and the first failure.
func printBenchResult(cmd *cobra.Command, res *loadgen.Result, err error, asJSON bool) error {
	if res != nil {
		if asJSON {
			raw, jerr := json.Marshal(res.Summary())
			if jerr != nil {
				return errors.Join(err, fmt.Errorf("encode the result as JSON: %w", jerr))
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(raw))
		} else {
			fmt.Fprintln(cmd.OutOrStdout(), res.Line())
		}
		if res.FirstError != "" && err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "petrel bench: %d requests failed; first: %s\n", res.Errors, res.FirstError)
		}
		if res.NotReplicated > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "petrel bench: %d messages were stored on the master but not confirmed replicated (SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT)\n", res.NotReplicated)
		}
	}
	return err
}

func newBenchReceiveCmd(r benchRunners, sec *securityFlags) *cobra.Command {
	var cfg loadgen.ReceiveConfig
	var out benchOutput
	cmd := &cobra.Command{
		Use:   "receive",
		Short: "Receive and acknowledge as a 5.x simple consumer over gRPC and report msgs/s and ack latency",
		Long: `Receive and acknowledge messages as a RocketMQ 5.x simple consumer over the
gRPC front at --grpc and report msgs/s, MB/s and AckMessage latency.

Send the group's Settings on a Telemetry stream, then run --concurrency
receivers that each loop: ReceiveMessage of up to --batch messages (the
server holds it up to --long-poll when nothing is there), then one
AckMessage for all it got. Received messages stay invisible to the group
for --invisible. The run stops once --count messages were acknowledged
(it never receives more than --count), after --duration, or when nothing
arrived for --idle. TLS accepting any certificate unless --grpc-plaintext.`,
		Example: `  # drain what 'petrel bench produce --grpc' sent
  petrel bench receive --grpc 127.0.0.1:8081 --group G --count 1000000 --concurrency 8 --batch 32
  # a minute of receiving, summary as JSON
  petrel bench receive --grpc 127.0.0.1:8081 --group G --duration 1m -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.GRPC == "" {
				return fmt.Errorf("--grpc is required: give the host:port of the server's gRPC front (its --grpc-listen, 8081 by default)")
			}
			if cfg.Group == "" {
				return fmt.Errorf("--group is required: name the consumer group to receive as")
			}
			var err error
			if cfg.Security, err = sec.bench(cfg.GRPCPlaintext); err != nil {
				return err
			}
			out.signed = cfg.AccessKey != ""
			countOrDuration(cmd, &cfg.Count)
			return out.run(cmd, func(ctx context.Context, progress func(loadgen.Progress)) (*loadgen.Result, error) {
				cfg.Progress = progress
				return r.receive(ctx, cfg)
			})
		},
	}
	fl := cmd.Flags()
	out.addFlags(fl)
	fl.StringVar(&cfg.GRPC, "grpc", "", "host:port of the RocketMQ 5.x gRPC front (required)")
	fl.BoolVar(&cfg.GRPCPlaintext, "grpc-plaintext", false, "dial --grpc without TLS (for a server started with --grpc-plaintext)")
	fl.StringVar(&cfg.Group, "group", "", "consumer group (required)")
	fl.StringVar(&cfg.Topic, "topic", loadgen.DefaultTopic, "topic")
	fl.Int64Var(&cfg.Count, "count", loadgen.DefaultCount, "messages to receive and acknowledge")
	fl.DurationVar(&cfg.Duration, "duration", loadgen.DefaultDuration, "stop after this long; given without --count, run for this long")
	fl.DurationVar(&cfg.IdleTimeout, "idle", loadgen.DefaultIdleTimeout, "stop when nothing arrived for this long")
	fl.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultReceivers, "receivers, each with one receive or ack outstanding")
	fl.IntVar(&cfg.Batch, "batch", loadgen.MaxReceiveBatch, "messages per receive, 1..32")
	fl.DurationVar(&cfg.Invisible, "invisible", loadgen.DefaultInvisible, "how long a received message stays invisible to the group unless acknowledged")
	fl.DurationVar(&cfg.LongPoll, "long-poll", loadgen.DefaultLongPoll, "how long the server may hold a receive that finds nothing")
	fl.Int64Var(&cfg.MaxErrors, "max-errors", loadgen.DefaultMaxErrors, "stop after this many failed requests")
	fl.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a non-local --grpc address")
	fl.StringVar(&cfg.Scenario, "scenario", "receive", "scenario name printed in the result line")
	return cmd
}

// bench is the load generator's Security of the flags; TLS flags with
// --grpc-plaintext contradict each other.
func (f *securityFlags) bench(grpcPlaintext bool) (loadgen.Security, error) {
	if grpcPlaintext && (f.tls || f.tlsCA != "" || f.tlsInsecure) {
		return loadgen.Security{}, fmt.Errorf("%w: --grpc-plaintext dials without TLS and --tls/--tls-ca/--tls-insecure with it: drop one of them", cli.ErrUsage)
	}
	ak, sk, tlsCfg, err := f.resolve()
	if err != nil {
		return loadgen.Security{}, err
	}
	return loadgen.Security{AccessKey: ak, SecretKey: sk, TLS: tlsCfg}, nil
}

// benchCredentialsHint is added to a refusal of an unsigned run.
const benchCredentialsHint = "the server requires credentials: pass --access-key and --secret-key (or set " + cli.AccessKeyEnv + " / " + cli.SecretKeyEnv + ")"

// needsCredentials reports whether a failure's text is a refusal for want
// of credentials: NO_PERMISSION (code 16) on remoting, UNAUTHORIZED on
// gRPC.
func needsCredentials(text string) bool {
	return strings.Contains(text, "code 16:") || strings.Contains(text, "UNAUTHORIZED")
}
