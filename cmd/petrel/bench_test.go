package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/loadgen"
)

// execBench runs `petrel bench args...` with r in place of the load
// generator, writing to stdout and stderr.
func execBench(r benchRunners, stdout, stderr io.Writer, args ...string) error {
	cmd := newBenchCmdWith(r)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(context.Background())
}

func TestBenchFlagsParseIntoTheLoadgenConfig(t *testing.T) {
	var pc loadgen.ProduceConfig
	var cc loadgen.ConsumeConfig
	r := benchRunners{
		produce: func(_ context.Context, c loadgen.ProduceConfig) (*loadgen.Result, error) {
			pc = c
			return &loadgen.Result{Scenario: c.Scenario, BodyBytes: c.BodyBytes, Msgs: 7, Elapsed: time.Second, Latency: loadgen.NewHistogram()}, nil
		},
		consume: func(_ context.Context, c loadgen.ConsumeConfig) (*loadgen.Result, error) {
			cc = c
			return &loadgen.Result{Scenario: c.Scenario, BodyBytes: 1024, Msgs: 9, Elapsed: time.Second}, nil
		},
	}
	run := func(args ...string) string {
		t.Helper()
		out := &bytes.Buffer{}
		if err := execBench(r, out, out, args...); err != nil {
			t.Fatalf("bench %v: %v", args, err)
		}
		return out.String()
	}

	out := run("produce", "--namesrv", "127.0.0.1:9876; 127.0.0.1:9877", "--topic", "T1", "--size", "512",
		"--inflight", "32", "--conns", "2", "--count", "500000", "--rate", "75000.5", "--duration", "90s",
		"--queues", "4", "--group", "PG", "--grace", "3s", "--max-errors", "9", "--allow-remote", "--scenario", "produce-sync")
	want := loadgen.ProduceConfig{NameServers: []string{"127.0.0.1:9876", "127.0.0.1:9877"}, Topic: "T1", Queues: 4,
		ProducerGroup: "PG", BodyBytes: 512, InFlight: 32, Conns: 2, Count: 500000, Duration: 90 * time.Second,
		Rate: 75000.5, GracePeriod: 3 * time.Second, MaxErrors: 9, AllowRemote: true, Scenario: "produce-sync"}
	if !equalProduce(pc, want) {
		t.Fatalf("produce config\n got %+v\nwant %+v", pc, want)
	}
	if !strings.HasPrefix(out, "petrel produce-sync 512B msgs=7 ") {
		t.Fatalf("produce printed %q", out)
	}

	run("produce")
	want = loadgen.ProduceConfig{NameServers: []string{"127.0.0.1:9876"}, Topic: loadgen.DefaultTopic, Queues: loadgen.DefaultQueues,
		ProducerGroup: loadgen.DefaultProducerGroup, BodyBytes: 1024, InFlight: 64, Conns: 1, Count: loadgen.DefaultCount,
		Duration: loadgen.DefaultDuration, GracePeriod: loadgen.DefaultGracePeriod, MaxErrors: loadgen.DefaultMaxErrors, Scenario: "produce"}
	if !equalProduce(pc, want) {
		t.Fatalf("produce defaults\n got %+v\nwant %+v", pc, want)
	}

	out = run("consume", "--namesrv", "127.0.0.1:1", "--topic", "T2", "--group", "G", "--count", "1000000",
		"--batch", "16", "--idle", "2s", "--suspend", "1s", "--from-start", "--duration", "1m", "--broker-id", "2")
	if cc.BrokerID != 2 || cc.Topic != "T2" || cc.Group != "G" || cc.Count != 1_000_000 || cc.PullBatch != 16 || cc.IdleTimeout != 2*time.Second ||
		cc.SuspendTimeout != time.Second || !cc.FromStart || cc.Duration != time.Minute || cc.AllowRemote ||
		len(cc.NameServers) != 1 || cc.NameServers[0] != "127.0.0.1:1" || cc.Scenario != "consume" {
		t.Fatalf("consume config %+v", cc)
	}
	if !strings.HasPrefix(out, "petrel consume 1024B msgs=9 ") {
		t.Fatalf("consume printed %q", out)
	}
	run("consume")
	if cc.BrokerID != 0 {
		t.Fatalf("consume --broker-id default %d, want 0 (the master)", cc.BrokerID)
	}
}

func equalProduce(a, b loadgen.ProduceConfig) bool {
	return strings.Join(a.NameServers, ";") == strings.Join(b.NameServers, ";") && a.Topic == b.Topic && a.Queues == b.Queues &&
		a.ProducerGroup == b.ProducerGroup && a.BodyBytes == b.BodyBytes && a.InFlight == b.InFlight && a.Conns == b.Conns &&
		a.Count == b.Count && a.Duration == b.Duration && a.Rate == b.Rate && a.GracePeriod == b.GracePeriod &&
		a.MaxErrors == b.MaxErrors && a.AllowRemote == b.AllowRemote && a.Scenario == b.Scenario
}

func TestBenchRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "--size", "big"},
		{"produce", "--unknown"},
		{"consume", "--count", "-"},
		{"produce", "extra-arg"},
	} {
		if err := execBench(benchRunners{}, &bytes.Buffer{}, &bytes.Buffer{}, args...); err == nil {
			t.Errorf("bench %v: no error", args)
		}
	}
}

// TestBenchAgainstARunningServer runs the real commands against an
// in-process server.
func TestBenchAgainstARunningServer(t *testing.T) {
	ctx, out := startTestServer(t, testOptions(t.TempDir()))
	ns := regexp.MustCompile(`name server listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if ns == nil {
		t.Fatalf("no name server address in %q", out.String())
	}
	bench := func(args ...string) string {
		t.Helper()
		cmd := newBenchCmd()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(append(args, "--namesrv", ns[1]))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	line := bench("produce", "--topic", "CmdBench", "--size", "100", "--inflight", "8", "--count", "500")
	if !regexp.MustCompile(`^petrel produce 100B msgs=500 secs=\S+ msgs/s=\S+ MB/s=\S+ p50_us=\d+ p90_us=\d+ p99_us=\d+ p999_us=\d+ max_us=\d+ errors=0\n$`).MatchString(line) {
		t.Fatalf("produce printed %q", line)
	}
	line = bench("consume", "--topic", "CmdBench", "--group", "CG", "--count", "500")
	if !regexp.MustCompile(`^petrel consume 100B msgs=500 secs=\S+ msgs/s=\S+ MB/s=\S+ errors=0\n$`).MatchString(line) {
		t.Fatalf("consume printed %q", line)
	}
}
