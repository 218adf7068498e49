package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/loadgen"
)

// benchRunners are the load generator's entry points; tests replace them
// to check what the flags produce.
type benchRunners struct {
	produce func(context.Context, loadgen.ProduceConfig) (*loadgen.Result, error)
	consume func(context.Context, loadgen.ConsumeConfig) (*loadgen.Result, error)
}

// newBenchCmd returns `petrel bench` with its produce and consume
// subcommands.
func newBenchCmd() *cobra.Command {
	return newBenchCmdWith(benchRunners{produce: loadgen.Produce, consume: loadgen.Consume})
}

func newBenchCmdWith(r benchRunners) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running Petrel: produce and consume throughput, send latency",
		Long: `Measure a running Petrel: produce and consume throughput, send latency.

Load a running Petrel (or any RocketMQ 4.x broker) over the remoting
protocol with Petrel's own client and print one result line per run, in the
format of the peer benchmarks:

  petrel produce 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
  petrel consume 1024B msgs=N secs=S msgs/s=X MB/s=Y errors=E

or, with -o json, one JSON object (scenario, mode, batch, size_bytes, msgs,
bytes, secs, msgs_per_sec, mb_per_sec, latency_us{p50,p90,p99,p999,max},
errors, first_error). MB/s counts body bytes, 10^6 per second. While a run
lasts, a progress line (msgs/s, MB/s, p50/p99 latency, errors) is updated
once a second on stderr when it is a terminal (--progress).

A run stops after --count messages, after --duration (given alone, it runs
for that long), or on SIGINT/SIGTERM (printing what it measured). Only
loopback addresses are used unless --allow-remote is given.`,
		Example: `  petrel server &
  petrel bench produce --size 1024 --count 1000000 --concurrency 128
  petrel bench consume --count 1000000`,
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
	cmd.AddCommand(newBenchProduceCmd(r), newBenchConsumeCmd(r))
	return cmd
}

func newBenchProduceCmd(r benchRunners) *cobra.Command {
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
saturation. --inflight is an alias of --concurrency.`,
		Example: `  # one million 1 KiB messages, 128 in flight, a live progress line
  petrel bench produce --size 1024 --count 1000000 --concurrency 128
  # 30 s of sync sends of 10-message batches, summary as JSON
  petrel bench produce --mode sync --batch 10 --duration 30s -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := loadgen.ParseMode(mode)
			if err != nil {
				return fmt.Errorf("--mode %q: want sync, async or oneway", mode)
			}
			cfg.Mode = m
			cfg.NameServers = splitNameServers(namesrv)
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
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "inflight" {
			name = "concurrency"
		}
		return pflag.NormalizedName(name)
	})
	fl.IntVar(&cfg.Conns, "conns", 1, "connections per broker")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second overall (0: as fast as the window allows)")
	fl.DurationVar(&cfg.GracePeriod, "grace", loadgen.DefaultGracePeriod, "how long to wait for outstanding answers once sending stopped")
	return cmd
}

func newBenchConsumeCmd(r benchRunners) *cobra.Command {
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
--duration passed or nothing arrived for --idle.`,
		Example: `  # drain what 'petrel bench produce' sent, 64 messages per pull
  petrel bench consume --count 1000000 --batch 64
  # read the topic again from its start, summary as JSON
  petrel bench consume --from-start --group again -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.NameServers = splitNameServers(namesrv)
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
	return cmd
}

func addBenchCommonFlags(fl *pflag.FlagSet, namesrv, topic *string, count *int64, duration *time.Duration, maxErrors *int64, allowRemote *bool, scenario *string, defScenario string) {
	fl.StringVar(namesrv, "namesrv", "127.0.0.1:9876", "name servers, semicolon-separated ip:port")
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
	format   string // -o: text or json
	progress string // --progress: auto, on or off
}

func (o *benchOutput) addFlags(fl *pflag.FlagSet) {
	fl.StringVarP(&o.format, "output", "o", "text", "result format: text (one line) or json (one object)")
	fl.StringVar(&o.progress, "progress", "auto", "progress line once a second on stderr: auto (when stderr is a terminal), on or off")
}

// run runs one load until it ends or SIGINT/SIGTERM stops it, showing
// progress, and prints its result.
func (o *benchOutput) run(cmd *cobra.Command, run func(context.Context, func(loadgen.Progress)) (*loadgen.Result, error)) error {
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("-o %q: want text or json", o.format)
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
	return printBenchResult(cmd, res, err, o.format == "json")
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
	}
	return err
}
