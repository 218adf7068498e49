package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
)

// startGRPCBroker runs a broker with an in-memory store and its gRPC front
// on loopback (TLS with an in-memory self-signed certificate, or
// plaintext) and returns the front's address.
func startGRPCBroker(t *testing.T, plaintext bool) string {
	t.Helper()
	d := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		cfg.NameServers = nil
		cfg.GRPCListen = "127.0.0.1:0"
		cfg.GRPC.Plaintext = plaintext
	})
	return d.Broker.GRPCAddr().String()
}

// receiveAll runs Receive and returns how often each sequence number was
// seen, failing the test on a message that is not one of ours.
func receiveAll(t *testing.T, cfg ReceiveConfig, size int) (*Result, map[uint64]int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[uint64]int{}
	var bad []string
	cfg.OnMessage = func(id string, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(body) != size {
			bad = append(bad, "message "+id+" has a body of the wrong size")
			return
		}
		seq := binary.BigEndian.Uint64(body)
		if len(id) != 32 || !strings.HasSuffix(id, string(appendHex12(nil, seq))) {
			bad = append(bad, "message id "+id+" does not end in its body's sequence number")
		}
		seen[seq]++
	}
	res, err := Receive(testContext(t), cfg)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d bad messages, first: %s", len(bad), bad[0])
	}
	return res, seen
}

// summaryOf is r's JSON summary decoded into a map.
func summaryOf(t *testing.T, r *Result) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGRPCProduceThenReceiveAcksEveryMessageExactlyOnce(t *testing.T) {
	addr := startGRPCBroker(t, false) // TLS, as the server's default
	const n, size, topic = 500, 200, "GRPCBench"
	res, err := Produce(testContext(t), ProduceConfig{GRPC: addr, Topic: topic, BodyBytes: size, InFlight: 8, Count: n})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if res.Msgs != n || res.Errors != 0 || res.Latency.Count() != n || res.Bytes != n*size || res.Protocol != ProtocolGRPC {
		t.Fatalf("produce: msgs %d errors %d (%s) latencies %d bytes %d protocol %q, want %d 0 %d %d grpc",
			res.Msgs, res.Errors, res.FirstError, res.Latency.Count(), res.Bytes, res.Protocol, n, n, n*size)
	}
	parseLine(t, res.Line(), "produce", size, produceKeys...)
	s := summaryOf(t, res)
	lat, _ := s["latency_us"].(map[string]any)
	if s["protocol"] != "grpc" || s["mode"] != "async" || s["batch"] != 1.0 || s["size_bytes"] != float64(size) ||
		s["msgs"] != float64(n) || s["errors"] != 0.0 || lat == nil || lat["p50"].(float64) <= 0 || lat["p50"].(float64) > lat["max"].(float64) {
		t.Fatalf("produce summary %v", s)
	}
	t.Log(res.Line())

	rres, seen := receiveAll(t, ReceiveConfig{GRPC: addr, Topic: topic, Group: "G1", Count: n, Concurrency: 4, Batch: 32,
		IdleTimeout: 5 * time.Second}, size)
	if rres.Msgs != n || rres.Errors != 0 || rres.Bytes != n*size || rres.BodyBytes != size {
		t.Fatalf("receive: msgs %d errors %d (%s) bytes %d size %d, want %d 0 %d %d",
			rres.Msgs, rres.Errors, rres.FirstError, rres.Bytes, rres.BodyBytes, n, n*size, size)
	}
	for i := range uint64(n) {
		if seen[i] != 1 {
			t.Fatalf("message %d was received %d times, want once", i, seen[i])
		}
	}
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
	// One ack per receive of at most 32 messages.
	if acks := rres.Latency.Count(); acks < n/32 || acks > n {
		t.Fatalf("%d ack latencies for %d messages in receives of up to 32", acks, n)
	}
	parseLine(t, rres.Line(), "receive", size, produceKeys...)
	s = summaryOf(t, rres)
	if s["scenario"] != "receive" || s["protocol"] != "grpc" || s["batch"] != 32.0 || s["msgs"] != float64(n) || s["latency_us"] == nil {
		t.Fatalf("receive summary %v", s)
	}
	t.Log(rres.Line())

	// Everything was acknowledged: nothing is left for the group.
	again, seen := receiveAll(t, ReceiveConfig{GRPC: addr, Topic: topic, Group: "G1", Count: 1, IdleTimeout: 300 * time.Millisecond,
		LongPoll: time.Second}, size)
	if again.Msgs != 0 || len(seen) != 0 || again.Errors != 0 {
		t.Fatalf("a further receive got %d messages (%d errors: %s), want none", again.Msgs, again.Errors, again.FirstError)
	}
}

func TestGRPCBatchesOverPlaintextAndReceiveTakesNoMoreThanItsCount(t *testing.T) {
	addr := startGRPCBroker(t, true)
	const n, size, topic = 95, 64, "GRPCBatch"
	res, err := Produce(testContext(t), ProduceConfig{GRPC: addr, GRPCPlaintext: true, Topic: topic, BodyBytes: size,
		InFlight: 3, Conns: 2, Batch: 10, Count: n, Mode: ModeSync})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	// 9 batches of 10 and one of 5.
	if res.Msgs != n || res.Errors != 0 || res.Latency.Count() != 10 || res.Batch != 10 {
		t.Fatalf("produce: msgs %d errors %d (%s) requests %d batch %d, want %d 0 10 10", res.Msgs, res.Errors, res.FirstError,
			res.Latency.Count(), res.Batch, n)
	}

	// Two runs splitting the messages: the first must not receive (and
	// leave invisible) more than its count.
	base := ReceiveConfig{GRPC: addr, GRPCPlaintext: true, Topic: topic, Group: "G2", Concurrency: 4, Batch: 16, IdleTimeout: 5 * time.Second}
	first := base
	first.Count = 60
	r1, seen1 := receiveAll(t, first, size)
	second := base
	second.Count = n - 60
	r2, seen2 := receiveAll(t, second, size)
	if r1.Msgs != 60 || r2.Msgs != n-60 || r1.Errors+r2.Errors != 0 {
		t.Fatalf("receives got %d and %d messages (errors %d %d: %s %s), want 60 and %d", r1.Msgs, r2.Msgs, r1.Errors, r2.Errors,
			r1.FirstError, r2.FirstError, n-60)
	}
	for i := range uint64(n) {
		if seen1[i]+seen2[i] != 1 {
			t.Fatalf("message %d was received %d times, want once", i, seen1[i]+seen2[i])
		}
	}
}

func TestGRPCDurationEndsAnUnlimitedProduce(t *testing.T) {
	addr := startGRPCBroker(t, true)
	var reports []Progress
	var mu sync.Mutex
	res, err := Produce(testContext(t), ProduceConfig{GRPC: addr, GRPCPlaintext: true, Topic: "GRPCTimed", BodyBytes: 100,
		InFlight: 4, Count: CountUnlimited, Duration: 300 * time.Millisecond, ProgressInterval: 50 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if res.Msgs == 0 || res.Errors != 0 || res.Elapsed < 300*time.Millisecond || len(reports) == 0 || !reports[len(reports)-1].Latency {
		t.Fatalf("timed produce: msgs %d errors %d (%s) elapsed %v reports %d", res.Msgs, res.Errors, res.FirstError, res.Elapsed, len(reports))
	}
}

func TestGRPCConfigurationErrors(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]ProduceConfig{
		"oneway":  {GRPC: "127.0.0.1:1", Mode: ModeOneway},
		"remote":  {GRPC: "192.0.2.1:8081"},
		"no addr": {GRPC: "127.0.0.1"},
	} {
		if _, err := Produce(ctx, cfg); err == nil {
			t.Errorf("produce %s: no error", name)
		} else if name == "remote" && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("produce %s: %v, want ErrNotLoopback", name, err)
		}
	}
	for name, cfg := range map[string]ReceiveConfig{
		"no grpc":     {Group: "G"},
		"no group":    {GRPC: "127.0.0.1:1"},
		"batch":       {GRPC: "127.0.0.1:1", Group: "G", Batch: 33},
		"invisible":   {GRPC: "127.0.0.1:1", Group: "G", Invisible: 500 * time.Millisecond},
		"long poll":   {GRPC: "127.0.0.1:1", Group: "G", LongPoll: time.Hour},
		"concurrency": {GRPC: "127.0.0.1:1", Group: "G", Concurrency: MaxReceivers + 1},
		"remote":      {GRPC: "192.0.2.1:8081", Group: "G"},
	} {
		_, err := Receive(ctx, cfg)
		want := ErrConfig
		if name == "remote" {
			want = ErrNotLoopback
		}
		if !errors.Is(err, want) {
			t.Errorf("receive %s: %v, want %v", name, err, want)
		}
	}
}

func TestGRPCReceiveOfAServerThatIsNotThereFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Receive(ctx, ReceiveConfig{GRPC: "127.0.0.1:1", GRPCPlaintext: true, Group: "G"})
	if err == nil || !strings.Contains(err.Error(), "route") {
		t.Fatalf("receive from a closed port: %v, want a route error", err)
	}
}
