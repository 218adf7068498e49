package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/petrelmq/petrel/internal/loadgen"
)

func TestBenchModeBatchConcurrencyAndCountOrDuration(t *testing.T) {
	var pc loadgen.ProduceConfig
	var cc loadgen.ConsumeConfig
	r := benchRunners{
		produce: func(_ context.Context, c loadgen.ProduceConfig) (*loadgen.Result, error) {
			pc = c
			return &loadgen.Result{Scenario: c.Scenario, Mode: string(c.Mode), Batch: c.Batch, BodyBytes: c.BodyBytes, Msgs: 10,
				Bytes: 10 * int64(c.BodyBytes), Elapsed: 2 * time.Second, Latency: loadgen.NewHistogram()}, nil
		},
		consume: func(_ context.Context, c loadgen.ConsumeConfig) (*loadgen.Result, error) {
			cc = c
			return &loadgen.Result{Scenario: c.Scenario, BodyBytes: 10, Msgs: 4, Bytes: 40, Elapsed: time.Second}, nil
		},
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := execBench(r, &out, &errOut, args...)
		return out.String(), err
	}
	if _, err := run("produce", "--mode", "sync", "--batch", "5", "--concurrency", "7", "--duration", "3s"); err != nil {
		t.Fatal(err)
	}
	if pc.Mode != loadgen.ModeSync || pc.Batch != 5 || pc.InFlight != 7 || pc.Duration != 3*time.Second || pc.Count != loadgen.CountUnlimited {
		t.Fatalf("produce config %+v: want sync, batch 5, 7 in flight, 3s, unlimited count", pc)
	}
	if pc.Progress != nil {
		t.Fatal("progress is reported although stderr is not a terminal")
	}
	if _, err := run("produce", "--inflight", "9", "--duration", "3s", "--count", "20", "--progress", "on"); err != nil {
		t.Fatal(err)
	}
	if pc.InFlight != 9 || pc.Count != 20 || pc.Mode != loadgen.ModeAsync || pc.Batch != 1 || pc.Progress == nil {
		t.Fatalf("produce config %+v: want --inflight as --concurrency, count 20 kept, async, batch 1, progress", pc)
	}
	out, err := run("produce", "--mode", "oneway", "--size", "100", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("-o json printed %q: %v", out, err)
	}
	if sum["mode"] != "oneway" || sum["msgs"] != 10.0 || sum["size_bytes"] != 100.0 || sum["msgs_per_sec"] != 5.0 || sum["latency_us"] == nil {
		t.Fatalf("json summary %v", sum)
	}
	if _, err := run("consume", "--duration", "2s", "--output", "json"); err != nil {
		t.Fatal(err)
	}
	if cc.Count != loadgen.CountUnlimited || cc.Duration != 2*time.Second {
		t.Fatalf("consume config %+v: want unlimited count for 2s", cc)
	}
	for _, args := range [][]string{
		{"produce", "--mode", "fast"},
		{"produce", "-o", "yaml"},
		{"consume", "--progress", "sometimes"},
	} {
		if _, err := run(args...); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("bench %v: err %v, want one saying what is accepted", args, err)
		}
	}
}

func TestProgressPrinter(t *testing.T) {
	a := loadgen.Progress{Elapsed: time.Second, Msgs: 1000, Bytes: 1_000_000, Latency: true, P50: time.Millisecond, P99: 2 * time.Millisecond}
	b := loadgen.Progress{Elapsed: 2 * time.Second, Msgs: 3000, Bytes: 3_000_000, Latency: true, P50: time.Millisecond, P99: 2 * time.Millisecond}
	var tty bytes.Buffer
	p := &progressPrinter{w: &tty, tty: true}
	p.print(a)
	p.print(b)
	p.end()
	want := "\r\x1b[2K" + loadgen.FormatProgress(loadgen.Progress{}, a) + "\r\x1b[2K" + loadgen.FormatProgress(a, b) + "\r\x1b[2K"
	if tty.String() != want {
		t.Fatalf("terminal output %q, want %q", tty.String(), want)
	}
	if !strings.Contains(tty.String(), "msgs/s=2000 ") {
		t.Fatalf("second line lacks the rate over the last interval: %q", tty.String())
	}
	var plain bytes.Buffer
	p = &progressPrinter{w: &plain}
	p.print(a)
	p.print(b)
	p.end()
	if lines := strings.Split(strings.TrimSuffix(plain.String(), "\n"), "\n"); len(lines) != 2 || strings.Contains(plain.String(), "\x1b") {
		t.Fatalf("non-terminal output %q: want two plain lines", plain.String())
	}
	if isTerminal(&plain) {
		t.Fatal("a buffer is taken for a terminal")
	}
}

func TestLogFormats(t *testing.T) {
	var buf bytes.Buffer
	l, err := buildLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("started", "topic", "T")
	l.Debug("hidden")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "started" || rec["topic"] != "T" || rec["level"] != "INFO" {
		t.Fatalf("json log %q: %v", buf.String(), err)
	}
	buf.Reset()
	l, err = buildLogger(&buf, "debug", "text")
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("shown", "queue_id", 3)
	if !strings.Contains(buf.String(), "level=DEBUG msg=shown queue_id=3") {
		t.Fatalf("text log %q", buf.String())
	}
	if _, err := buildLogger(&buf, "info", "xml"); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Fatalf("bad --log-format: %v", err)
	}
}

// TestBenchModesAndMetricsAgainstARunningServer runs the bench commands in
// every mode against an in-process server with its HTTP listener, then
// checks /readyz and that /metrics counts what was sent and consumed.
func TestBenchModesAndMetricsAgainstARunningServer(t *testing.T) {
	o := testOptions(t.TempDir())
	o.httpListen, o.logFormat = "127.0.0.1:0", "json"
	ctx, out := startTestServer(t, o)
	ns := regexp.MustCompile(`name server listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	web := regexp.MustCompile(`http listening on (127\.0\.0\.1:\d+) \(/metrics, /healthz, /readyz\)`).FindStringSubmatch(out.String())
	if ns == nil || web == nil {
		t.Fatalf("no name server or http address in %q", out.String())
	}
	bench := func(args ...string) map[string]any {
		t.Helper()
		cmd := newBenchCmd()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(append(args, "--namesrv", ns[1], "-o", "json"))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, stderr.String())
		}
		var sum map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatalf("bench %v printed %q: %v", args, stdout.String(), err)
		}
		if sum["errors"] != 0.0 {
			t.Fatalf("bench %v: %v", args, sum)
		}
		return sum
	}
	const topic = "OpsBench"
	total := 0.0
	for _, args := range [][]string{
		{"--mode", "sync", "--concurrency", "4", "--count", "200"},
		{"--mode", "async", "--count", "300"},
		{"--mode", "oneway", "--count", "100"},
		{"--batch", "8", "--count", "160"},
	} {
		sum := bench(append([]string{"produce", "--topic", topic, "--size", "64", "--queues", "2"}, args...)...)
		mode := "async"
		if args[0] == "--mode" {
			mode = args[1]
		}
		if sum["mode"] != mode || sum["size_bytes"] != 64.0 {
			t.Fatalf("produce %v: %v", args, sum)
		}
		total += sum["msgs"].(float64)
	}
	if total != 760 {
		t.Fatalf("produced %v messages, want 760", total)
	}
	timed := bench("produce", "--topic", "OpsTimed", "--size", "64", "--duration", "200ms")
	// It ran and it stopped (the measured time starts after the route
	// lookup, so it may be a little under the 200 ms).
	if secs := timed["secs"].(float64); timed["msgs"].(float64) <= 0 || secs <= 0 || secs > 20 {
		t.Fatalf("a 200ms run: %v", timed)
	}
	got := bench("consume", "--topic", topic, "--group", "OpsGroup", "--count", "760")
	if got["msgs"] != 760.0 {
		t.Fatalf("consumed %v of 760", got["msgs"])
	}

	base := "http://" + web[1]
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz of a running server: %s", resp.Status)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	find := func(name, topicLabel string) float64 {
		t.Helper()
		for _, m := range fams[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == topicLabel {
					return m.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no %s{topic=%q} in /metrics", name, topicLabel)
		return 0
	}
	if v := find("petrel_put_messages_total", topic); v != 760 {
		t.Errorf("petrel_put_messages_total{topic=%q} = %v, want 760", topic, v)
	}
	if v := find("petrel_get_messages_total", topic); v < 760 {
		t.Errorf("petrel_get_messages_total{topic=%q} = %v, want at least 760", topic, v)
	}
	if h := fams["petrel_send_duration_seconds"]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() < 760/8 {
		t.Errorf("petrel_send_duration_seconds: %v", h)
	}
	for _, name := range []string{"petrel_commitlog_group_commit_messages", "petrel_commitlog_flush_duration_seconds",
		"petrel_parked_pulls", "petrel_consumer_lag_messages", "petrel_disk_free_bytes", "petrel_connections",
		"petrel_dedup_hits_total", "petrel_timer_pending_messages"} {
		if fams[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
}
