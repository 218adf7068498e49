package loadgen

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// produceAndCheck produces with cfg, then drains the topic and checks that
// every message arrived exactly once.
func produceAndCheck(t *testing.T, ns string, cfg ProduceConfig) *Result {
	t.Helper()
	cfg.NameServers = []string{ns}
	res, err := Produce(testContext(t), cfg)
	if err != nil {
		t.Fatalf("produce %s: %v", cfg.Mode, err)
	}
	if res.Msgs != cfg.Count || res.Errors != 0 || res.Bytes != cfg.Count*int64(cfg.BodyBytes) {
		t.Fatalf("produce %s: msgs %d errors %d (%s) bytes %d, want %d 0 %d", cfg.Mode, res.Msgs, res.Errors, res.FirstError,
			res.Bytes, cfg.Count, cfg.Count*int64(cfg.BodyBytes))
	}
	parseLine(t, res.Line(), cfg.Scenario, cfg.BodyBytes, produceKeys...)
	cres, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: cfg.Topic, Group: "G-" + cfg.Topic, Count: cfg.Count},
		cfg.Topic, cfg.BodyBytes)
	if cres.Msgs != cfg.Count || len(seen) != int(cfg.Count) {
		t.Fatalf("consumed %d messages, %d distinct; want %d", cres.Msgs, len(seen), cfg.Count)
	}
	for seq, k := range seen {
		if seq >= uint64(cfg.Count) || k != 1 {
			t.Fatalf("message %d seen %d times", seq, k)
		}
	}
	return res
}

func TestSyncModeSendsTheCountWithOneLatencyPerSend(t *testing.T) {
	ns := startCluster(t)
	res := produceAndCheck(t, ns, ProduceConfig{Topic: "SyncMode", Mode: ModeSync, InFlight: 4, BodyBytes: 100, Count: 400, Scenario: "produce-sync"})
	if res.Mode != "sync" || res.Latency.Count() != 400 {
		t.Fatalf("sync run: mode %q, %d latencies; want sync and 400", res.Mode, res.Latency.Count())
	}
}

func TestOnewayModeStoresEveryMessage(t *testing.T) {
	ns := startCluster(t)
	res := produceAndCheck(t, ns, ProduceConfig{Topic: "OnewayMode", Mode: ModeOneway, InFlight: 8, BodyBytes: 64, Count: 500, Scenario: "produce-oneway"})
	if res.Latency.Count() != 500 {
		t.Fatalf("oneway run recorded %d write latencies, want 500", res.Latency.Count())
	}
}

// TestRocketMQHeadersStoreEveryMessage: sends with the binary ROCKETMQ
// header layout (async, and batched) are stored and answered like JSON ones.
func TestRocketMQHeadersStoreEveryMessage(t *testing.T) {
	ns := startCluster(t)
	res := produceAndCheck(t, ns, ProduceConfig{Topic: "Binary", Serialize: SerializeRocketMQ, InFlight: 8, BodyBytes: 64, Count: 300, Scenario: "produce-binary"})
	if res.Errors != 0 || res.Latency.Count() != 300 {
		t.Fatalf("binary run: %d errors, %d latencies", res.Errors, res.Latency.Count())
	}
	produceAndCheck(t, ns, ProduceConfig{Topic: "BinaryBatch", Serialize: SerializeRocketMQ, Batch: 5, InFlight: 2, BodyBytes: 64, Count: 50, Scenario: "produce-binary-batch"})
	if _, err := Produce(testContext(t), ProduceConfig{NameServers: []string{ns}, Serialize: "xml"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("an unknown header format: %v, want ErrConfig", err)
	}
}

func TestBatchSendsCountMessagesNotRequests(t *testing.T) {
	ns := startCluster(t)
	// 1003 is not a multiple of 10: the last batch holds 3 messages.
	res := produceAndCheck(t, ns, ProduceConfig{Topic: "Batched", Batch: 10, InFlight: 4, BodyBytes: 50, Count: 1003, Scenario: "produce-batch"})
	if res.Latency.Count() != 101 || res.Batch != 10 {
		t.Fatalf("batch run: %d latencies (one per request), batch %d; want 101 and 10", res.Latency.Count(), res.Batch)
	}
	res = produceAndCheck(t, ns, ProduceConfig{Topic: "BatchedSync", Mode: ModeSync, Batch: 7, InFlight: 2, BodyBytes: 50, Count: 70, Scenario: "produce-batch-sync"})
	if res.Latency.Count() != 10 {
		t.Fatalf("sync batch run: %d latencies, want 10", res.Latency.Count())
	}
}

func TestDurationBoundsAnUnlimitedRunAndProgressIsReported(t *testing.T) {
	ns := startCluster(t)
	var mu sync.Mutex
	var reports []Progress
	res, err := Produce(testContext(t), ProduceConfig{NameServers: []string{ns}, Topic: "Timed", BodyBytes: 32, InFlight: 4,
		Count: CountUnlimited, Duration: 300 * time.Millisecond, ProgressInterval: 20 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs == 0 || res.Errors != 0 || res.Elapsed < 300*time.Millisecond || res.Elapsed > 20*time.Second {
		t.Fatalf("timed run: %d msgs, %d errors (%s) in %v; want some messages, no errors, about 300ms",
			res.Msgs, res.Errors, res.FirstError, res.Elapsed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 {
		t.Fatal("no progress report in a 300ms run with a 20ms interval")
	}
	for i, p := range reports {
		if !p.Latency || p.Msgs > res.Msgs || (i > 0 && (p.Msgs < reports[i-1].Msgs || p.Elapsed <= reports[i-1].Elapsed)) {
			t.Fatalf("progress report %d %+v is not monotone or exceeds the result (%d msgs)", i, p, res.Msgs)
		}
		if p.Msgs > 0 && (p.P50 <= 0 || p.P99 < p.P50) {
			t.Fatalf("progress report %d %+v: latencies out of order", i, p)
		}
	}

	// Consume reports progress too, without latencies.
	var creports []Progress
	cres, err := Consume(testContext(t), ConsumeConfig{NameServers: []string{ns}, Topic: "Timed", Count: CountUnlimited,
		IdleTimeout: 300 * time.Millisecond, SuspendTimeout: 100 * time.Millisecond, ProgressInterval: 20 * time.Millisecond,
		Progress: func(p Progress) { creports = append(creports, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if cres.Msgs != res.Msgs {
		t.Fatalf("consumed %d of the %d messages produced", cres.Msgs, res.Msgs)
	}
	if len(creports) == 0 || creports[len(creports)-1].Latency {
		t.Fatalf("consume progress reports %+v: want some, without latency", creports)
	}
}

func TestFormatProgress(t *testing.T) {
	prev := Progress{Elapsed: 2 * time.Second, Msgs: 100_000, Bytes: 100_000_000}
	cur := Progress{Elapsed: 3*time.Second + 400*time.Millisecond, Msgs: 150_000, Bytes: 150_000_000, Errors: 2,
		Latency: true, P50: 420 * time.Microsecond, P99: 1234 * time.Microsecond}
	got := FormatProgress(prev, cur)
	// 50,000 messages and 50 MB over 1.4 s.
	want := "[     3s] msgs=150000 msgs/s=35714 MB/s=35.71 p50=0.42ms p99=1.23ms errors=2"
	if got != want {
		t.Fatalf("FormatProgress\n got %q\nwant %q", got, want)
	}
	consume := FormatProgress(Progress{}, Progress{Elapsed: 61 * time.Second, Msgs: 61})
	if consume != "[   1m1s] msgs=61 msgs/s=1 MB/s=0.00 errors=0" {
		t.Fatalf("consume progress line %q", consume)
	}
	if strings.Contains(FormatProgress(cur, cur), "NaN") || strings.Contains(FormatProgress(cur, cur), "Inf") {
		t.Fatal("a zero interval gives NaN or Inf rates")
	}
}

func TestSummaryJSON(t *testing.T) {
	h := NewHistogram()
	h.Record(100 * time.Microsecond)
	h.Record(300 * time.Microsecond)
	r := &Result{Scenario: "produce", Mode: "async", Batch: 4, BodyBytes: 1000, Msgs: 2000, Bytes: 2_000_000,
		Elapsed: 2 * time.Second, Errors: 1, FirstError: "boom", Latency: h}
	raw, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"scenario": "produce", "mode": "async", "batch": 4.0, "size_bytes": 1000.0,
		"msgs": 2000.0, "bytes": 2e6, "secs": 2.0, "msgs_per_sec": 1000.0, "mb_per_sec": 1.0, "errors": 1.0, "first_error": "boom"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v (json %s)", k, m[k], want, raw)
		}
	}
	lat, ok := m["latency_us"].(map[string]any)
	if !ok || lat["max"].(float64) < 295 || lat["p50"].(float64) > lat["p99"].(float64) {
		t.Fatalf("latency_us = %v", m["latency_us"])
	}
	raw, _ = json.Marshal((&Result{Scenario: "consume", Msgs: 1, Elapsed: time.Second}).Summary())
	if strings.Contains(string(raw), "latency") || strings.Contains(string(raw), "mode") {
		t.Fatalf("consume summary %s has produce-only fields", raw)
	}
}

func TestModeAndBatchConfigErrors(t *testing.T) {
	if m, err := ParseMode("oneway"); err != nil || m != ModeOneway {
		t.Fatalf("ParseMode(oneway) = %q, %v", m, err)
	}
	if _, err := ParseMode("fast"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "sync, async or oneway") {
		t.Fatalf("ParseMode(fast): %v", err)
	}
	ctx := testContext(t)
	for name, cfg := range map[string]ProduceConfig{
		"bad mode":        {Mode: "fast"},
		"batch too large": {Batch: MaxBatch + 1},
		"batch too heavy": {Batch: 1000, BodyBytes: 8 << 10},
	} {
		cfg.NameServers = []string{"127.0.0.1:1"}
		if _, err := Produce(ctx, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
}
