package main

import (
	"context"
	"fmt"
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
		Long: `Load a running Petrel (or any RocketMQ 4.x broker) over the remoting
protocol with Petrel's own client and print one result line per run, in the
format of the peer benchmarks:

  petrel produce 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
  petrel consume 1024B msgs=N secs=S msgs/s=X MB/s=Y errors=E

MB/s counts body bytes, 10^6 per second. A run stops after --count messages,
after --duration, or on SIGINT/SIGTERM (printing what it measured). Only
loopback addresses are used unless --allow-remote is given.`,
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
	var namesrv string
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Send messages with a window of requests in flight and report msgs/s and latency",
		Long: `Ask the name server for the topic's route (creating the topic with --queues
queues on every master when it has none) and send --count messages of
--size bytes with SEND_MESSAGE_V2, round-robin over the queues, with up to
--inflight requests outstanding over one connection per broker (--conns for
more). --rate paces the sends (messages per second overall), for latency
below saturation.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.NameServers = splitNameServers(namesrv)
			return runBench(cmd, func(ctx context.Context) (*loadgen.Result, error) { return r.produce(ctx, cfg) })
		},
	}
	fl := cmd.Flags()
	addBenchCommonFlags(fl, &namesrv, &cfg.Topic, &cfg.Count, &cfg.Duration, &cfg.MaxErrors, &cfg.AllowRemote, &cfg.Scenario, "produce")
	fl.IntVar(&cfg.Queues, "queues", loadgen.DefaultQueues, "queues per broker of the topic when it has to be created")
	fl.StringVar(&cfg.ProducerGroup, "group", loadgen.DefaultProducerGroup, "producer group named in the sends")
	fl.IntVar(&cfg.BodyBytes, "size", loadgen.DefaultBodyBytes, "message body size in bytes")
	fl.IntVar(&cfg.InFlight, "inflight", loadgen.DefaultInFlight, "requests in flight at once")
	fl.IntVar(&cfg.Conns, "conns", 1, "connections per broker")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second overall (0: as fast as the window allows)")
	fl.DurationVar(&cfg.GracePeriod, "grace", loadgen.DefaultGracePeriod, "how long to wait for outstanding answers once sending stopped")
	return cmd
}

func newBenchConsumeCmd(r benchRunners) *cobra.Command {
	var cfg loadgen.ConsumeConfig
	var namesrv string
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Drain messages with long-polling pulls and report msgs/s",
		Long: `Join --group with a heartbeat, start each queue of the topic at the group's
committed offset (or its first offset with --from-start, or when none is
committed) and pull every queue concurrently, --batch messages per pull,
with long polling, committing offsets, until --count messages arrived,
--duration passed or nothing arrived for --idle.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.NameServers = splitNameServers(namesrv)
			return runBench(cmd, func(ctx context.Context) (*loadgen.Result, error) { return r.consume(ctx, cfg) })
		},
	}
	fl := cmd.Flags()
	addBenchCommonFlags(fl, &namesrv, &cfg.Topic, &cfg.Count, &cfg.Duration, &cfg.MaxErrors, &cfg.AllowRemote, &cfg.Scenario, "consume")
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
	fl.DurationVar(duration, "duration", loadgen.DefaultDuration, "stop after this long even if --count is not reached")
	fl.Int64Var(maxErrors, "max-errors", loadgen.DefaultMaxErrors, "stop after this many failed requests")
	fl.BoolVar(allowRemote, "allow-remote", false, "allow non-loopback addresses (name servers and brokers)")
	fl.StringVar(scenario, "scenario", defScenario, "scenario name printed in the result line, e.g. produce-sync")
}

// runBench runs one load until it ends or SIGINT/SIGTERM stops it, and
// prints its result.
func runBench(cmd *cobra.Command, run func(context.Context) (*loadgen.Result, error)) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx)
	return printBenchResult(cmd, res, err)
}

// printBenchResult prints the result line (also after a run that stopped
// on errors) and the first failure.
func printBenchResult(cmd *cobra.Command, res *loadgen.Result, err error) error {
	if res != nil {
		fmt.Fprintln(cmd.OutOrStdout(), res.Line())
		if res.FirstError != "" && err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "petrel bench: %d requests failed; first: %s\n", res.Errors, res.FirstError)
		}
	}
	return err
}
