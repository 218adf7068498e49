package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/loadgen"
)

func TestBenchGRPCFlagsParseIntoTheLoadgenConfig(t *testing.T) {
	var pc loadgen.ProduceConfig
	var rc loadgen.ReceiveConfig
	r := benchRunners{
		produce: func(_ context.Context, c loadgen.ProduceConfig) (*loadgen.Result, error) {
			pc = c
			return &loadgen.Result{Scenario: c.Scenario, BodyBytes: c.BodyBytes, Msgs: 7, Elapsed: time.Second, Latency: loadgen.NewHistogram()}, nil
		},
		receive: func(_ context.Context, c loadgen.ReceiveConfig) (*loadgen.Result, error) {
			rc = c
			return &loadgen.Result{Scenario: c.Scenario, BodyBytes: 1024, Msgs: 9, Elapsed: time.Second, Latency: loadgen.NewHistogram()}, nil
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

	out := run("produce", "--grpc", "127.0.0.1:28081", "--grpc-plaintext", "--size", "1024", "--count", "300000",
		"--concurrency", "64", "--batch", "4", "--topic", "T5", "--conns", "2")
	if pc.GRPC != "127.0.0.1:28081" || !pc.GRPCPlaintext || pc.BodyBytes != 1024 || pc.Count != 300000 || pc.InFlight != 64 ||
		pc.Batch != 4 || pc.Topic != "T5" || pc.Conns != 2 || len(pc.NameServers) != 0 || pc.Scenario != "produce-grpc" {
		t.Fatalf("produce --grpc config %+v", pc)
	}
	if !strings.HasPrefix(out, "petrel produce-grpc 1024B msgs=7 ") {
		t.Fatalf("produce --grpc printed %q", out)
	}
	run("produce", "--grpc", "127.0.0.1:28081", "--scenario", "mine")
	if pc.Scenario != "mine" || pc.GRPCPlaintext {
		t.Fatalf("produce --grpc --scenario: %+v", pc)
	}

	out = run("receive", "--grpc", "127.0.0.1:28081", "--group", "G", "--count", "300000", "--concurrency", "8", "--batch", "16",
		"--invisible", "45s", "--long-poll", "2s", "--idle", "3s", "--topic", "T6", "--duration", "1m", "--max-errors", "5")
	want := loadgen.ReceiveConfig{GRPC: "127.0.0.1:28081", Group: "G", Count: 300000, Concurrency: 8, Batch: 16,
		Invisible: 45 * time.Second, LongPoll: 2 * time.Second, IdleTimeout: 3 * time.Second, Topic: "T6", Duration: time.Minute,
		MaxErrors: 5, Scenario: "receive"}
	rc.Progress = nil
	if rc.GRPC != want.GRPC || rc.Group != want.Group || rc.Count != want.Count || rc.Concurrency != want.Concurrency ||
		rc.Batch != want.Batch || rc.Invisible != want.Invisible || rc.LongPoll != want.LongPoll || rc.IdleTimeout != want.IdleTimeout ||
		rc.Topic != want.Topic || rc.Duration != want.Duration || rc.MaxErrors != want.MaxErrors || rc.Scenario != want.Scenario ||
		rc.GRPCPlaintext || rc.AllowRemote {
		t.Fatalf("receive config\n got %+v\nwant %+v", rc, want)
	}
	if !strings.HasPrefix(out, "petrel receive 1024B msgs=9 ") {
		t.Fatalf("receive printed %q", out)
	}
	run("receive", "--grpc", "127.0.0.1:28081", "--group", "G", "--duration", "5s")
	if rc.Count != loadgen.CountUnlimited || rc.Duration != 5*time.Second || rc.Batch != loadgen.MaxReceiveBatch ||
		rc.Concurrency != loadgen.DefaultReceivers || rc.Invisible != loadgen.DefaultInvisible {
		t.Fatalf("receive --duration alone: %+v", rc)
	}
}

func TestBenchGRPCRejectsBadFlags(t *testing.T) {
	never := benchRunners{
		produce: func(context.Context, loadgen.ProduceConfig) (*loadgen.Result, error) {
			t.Error("produce ran despite bad flags")
			return nil, nil
		},
		receive: func(context.Context, loadgen.ReceiveConfig) (*loadgen.Result, error) {
			t.Error("receive ran despite bad flags")
			return nil, nil
		},
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"receive", "--group", "G"}, "--grpc is required"},
		{[]string{"receive", "--grpc", "127.0.0.1:8081"}, "--group is required"},
		{[]string{"produce", "--grpc", "127.0.0.1:8081", "--namesrv", "127.0.0.1:9876"}, "--namesrv does not apply"},
		{[]string{"produce", "--grpc", "127.0.0.1:8081", "--queues", "4"}, "--queues does not apply"},
		{[]string{"produce", "--grpc-plaintext"}, "--grpc-plaintext needs --grpc"},
		{[]string{"receive", "--grpc", "127.0.0.1:8081", "--group", "G", "--invisible", "soon"}, "invalid argument"},
	} {
		err := execBench(never, &bytes.Buffer{}, &bytes.Buffer{}, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchGRPCAgainstARunningServer runs produce and receive over the
// gRPC front of an in-process server (TLS, its self-signed certificate).
func TestBenchGRPCAgainstARunningServer(t *testing.T) {
	o := testOptions(t.TempDir())
	o.grpc = grpcOptions{listen: "127.0.0.1:0"}
	ctx, out := startTestServer(t, o)
	addr := regexp.MustCompile(`gRPC \(RocketMQ 5\.x\) listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if addr == nil {
		t.Fatalf("no gRPC address in %q", out.String())
	}
	bench := func(args ...string) map[string]any {
		t.Helper()
		cmd := newBenchCmd()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(append(args, "--grpc", addr[1], "-o", "json", "--progress", "off"))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			t.Fatalf("bench %v printed %q, not one JSON object: %v", args, stdout.String(), err)
		}
		return m
	}
	p := bench("produce", "--topic", "CmdGRPC", "--size", "100", "--concurrency", "8", "--count", "300")
	if p["scenario"] != "produce-grpc" || p["protocol"] != "grpc" || p["msgs"] != 300.0 || p["size_bytes"] != 100.0 ||
		p["bytes"] != 30000.0 || p["errors"] != 0.0 || p["latency_us"] == nil || p["msgs_per_sec"].(float64) <= 0 {
		t.Fatalf("produce summary %v", p)
	}
	r := bench("receive", "--topic", "CmdGRPC", "--group", "CG", "--count", "300", "--concurrency", "4")
	if r["scenario"] != "receive" || r["protocol"] != "grpc" || r["msgs"] != 300.0 || r["size_bytes"] != 100.0 ||
		r["batch"] != 32.0 || r["errors"] != 0.0 || r["latency_us"] == nil {
		t.Fatalf("receive summary %v", r)
	}
	r = bench("receive", "--topic", "CmdGRPC", "--group", "CG", "--count", "1", "--idle", "300ms", "--long-poll", "1s")
	if r["msgs"] != 0.0 || r["errors"] != 0.0 {
		t.Fatalf("a further receive: %v, want no message", r)
	}
}
