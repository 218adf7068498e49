package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
)

// startCluster runs a name server and a broker on loopback ports with an
// in-memory store and returns the name server's address.
func startCluster(t *testing.T) string {
	t.Helper()
	return daemontest.Start(t).NameServerAddr()
}

// startClusterWith is startCluster with the broker's config edited.
func startClusterWith(t *testing.T, edit func(*daemon.BrokerConfig)) string {
	t.Helper()
	return daemontest.Start(t, edit).NameServerAddr()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var lineRE = regexp.MustCompile(`^petrel ([a-z0-9-]+) (\d+)B((?: [A-Za-z0-9_/]+=[0-9.]+)+)$`)

// parseLine checks a result line's shape and returns its key=value fields.
func parseLine(t *testing.T, line, scenario string, size int, keys ...string) map[string]float64 {
	t.Helper()
	m := lineRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("result line %q does not parse", line)
	}
	if m[1] != scenario || m[2] != strconv.Itoa(size) {
		t.Fatalf("result line %q: scenario %q size %s, want %q %d", line, m[1], m[2], scenario, size)
	}
	out := map[string]float64{}
	var order []string
	for _, kv := range strings.Fields(m[3]) {
		k, v, _ := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("result line %q: %s is not a number", line, kv)
		}
		out[k] = f
		order = append(order, k)
	}
	if strings.Join(order, ",") != strings.Join(keys, ",") {
		t.Fatalf("result line %q has fields %v, want %v", line, order, keys)
	}
	return out
}

var produceKeys = []string{"msgs", "secs", "msgs/s", "MB/s", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "errors"}
var consumeKeys = []string{"msgs", "secs", "msgs/s", "MB/s", "errors"}

// drain consumes with cfg and returns how often each sequence number was
// seen, failing the test on a record that is not one of ours.
func drain(t *testing.T, cfg ConsumeConfig, topic string, size int) (*Result, map[uint64]int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[uint64]int{}
	var bad []string
	cfg.OnRecord = func(r message.Record) {
		body := r.Body()
		mu.Lock()
		defer mu.Unlock()
		if len(body) != size || string(r.Topic()) != topic {
			bad = append(bad, "record of topic "+string(r.Topic())+" with body of "+strconv.Itoa(len(body))+" bytes")
			return
		}
		seq := binary.BigEndian.Uint64(body)
		key, ok := r.Property(message.PropertyUniqKey)
		if !ok || len(key) != 32 || !strings.HasSuffix(string(key), string(appendHex12(nil, seq))) {
			bad = append(bad, "message "+strconv.FormatUint(seq, 10)+" has UNIQ_KEY "+string(key))
		}
		seen[seq]++
	}
	res, err := Consume(testContext(t), cfg)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d bad records, first: %s", len(bad), bad[0])
	}
	return res, seen
}

func TestProduceThenConsumeEveryMessageExactlyOnce(t *testing.T) {
	ns := startCluster(t)
	const n, size, topic = 3000, 200, "LoadgenTopic"
	res, err := Produce(testContext(t), ProduceConfig{
		NameServers: []string{ns}, Topic: topic, Queues: 4, BodyBytes: size, InFlight: 16, Conns: 2, Count: n,
	})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if res.Msgs != n || res.Errors != 0 || res.Latency.Count() != n || res.Bytes != n*size {
		t.Fatalf("produce: msgs %d errors %d (%s) latencies %d bytes %d, want %d 0 %d %d",
			res.Msgs, res.Errors, res.FirstError, res.Latency.Count(), res.Bytes, n, n, n*size)
	}
	f := parseLine(t, res.Line(), "produce", size, produceKeys...)
	if f["msgs"] != n || f["errors"] != 0 || f["p50_us"] > f["p99_us"] || f["p99_us"] > f["max_us"] {
		t.Fatalf("produce line %q: wrong figures", res.Line())
	}
	t.Log(res.Line())

	cres, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: topic, Group: "G1", Count: n}, topic, size)
	if cres.Msgs != n || cres.Errors != 0 || cres.Bytes != n*size || cres.BodyBytes != size {
		t.Fatalf("consume: msgs %d errors %d (%s) bytes %d size %d", cres.Msgs, cres.Errors, cres.FirstError, cres.Bytes, cres.BodyBytes)
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct messages, want %d", len(seen), n)
	}
	for seq, k := range seen {
		if seq >= n || k != 1 {
			t.Fatalf("message %d seen %d times", seq, k)
		}
	}
	f = parseLine(t, cres.Line(), "consume", size, consumeKeys...)
	if f["msgs"] != n {
		t.Fatalf("consume line %q: wrong count", cres.Line())
	}
	t.Log(cres.Line())

	// The offsets were committed: the group has nothing left, so the run
	// ends idle with nothing received.
	again, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: topic, Group: "G1", Count: n,
		IdleTimeout: 200 * time.Millisecond, SuspendTimeout: 100 * time.Millisecond}, topic, size)
	if again.Msgs != 0 || len(seen) != 0 || again.Errors != 0 {
		t.Fatalf("second run of the group got %d messages, %d errors (%s); want none", again.Msgs, again.Errors, again.FirstError)
	}
	parseLine(t, again.Line(), "consume", 0, consumeKeys...)

	// FromStart ignores the committed offsets.
	all, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: topic, Group: "G1", Count: n, FromStart: true, PullBatch: 7}, topic, size)
	if all.Msgs != n || len(seen) != n {
		t.Fatalf("from start: %d messages, %d distinct; want %d", all.Msgs, len(seen), n)
	}
}

func TestPacedProduceSendsTheCount(t *testing.T) {
	ns := startCluster(t)
	res, err := Produce(testContext(t), ProduceConfig{
		NameServers: []string{ns}, Topic: "Paced", BodyBytes: 64, InFlight: 8, Count: 300, Rate: 50_000, Scenario: "produce-paced",
	})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if res.Msgs != 300 || res.Errors != 0 {
		t.Fatalf("msgs %d errors %d (%s)", res.Msgs, res.Errors, res.FirstError)
	}
	parseLine(t, res.Line(), "produce-paced", 64, produceKeys...)
	cres, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: "Paced", Count: 300}, "Paced", 64)
	if cres.Msgs != 300 || len(seen) != 300 {
		t.Fatalf("consumed %d, %d distinct; want 300", cres.Msgs, len(seen))
	}
}

// TestPacedLatencyRunsFromTheSchedule: paced far above what one send in
// flight can do, every message is due at once and waits for the sends
// before it; its latency counts that wait (from its due time, not from
// when a slot freed), so the slowest is about the whole run, not one
// round trip: a stalled sender does not hide its backlog.
func TestPacedLatencyRunsFromTheSchedule(t *testing.T) {
	ns := startCluster(t)
	for _, mode := range []Mode{ModeAsync, ModeSync} {
		res, err := Produce(testContext(t), ProduceConfig{
			NameServers: []string{ns}, Topic: "Behind", BodyBytes: 64, InFlight: 1, Count: 200, Rate: 1e9, Mode: mode,
		})
		if err != nil || res.Msgs != 200 {
			t.Fatalf("%s: produce: %v (%+v)", mode, err, res)
		}
		if max := res.Latency.Max(); max < res.Elapsed/2 {
			t.Fatalf("%s: slowest send latency %v in a run of %v: the wait behind the earlier sends is not counted", mode, max, res.Elapsed)
		}
	}
}

func TestRefusedSendsStopTheRunAtMaxErrors(t *testing.T) {
	ns := startCluster(t)
	// The broker refuses bodies over 64 KiB.
	res, err := Produce(testContext(t), ProduceConfig{
		NameServers: []string{ns}, Topic: "TooBig", BodyBytes: 100 << 10, InFlight: 4, Count: 1000, MaxErrors: 5,
	})
	if !errors.Is(err, ErrTooManyErrors) {
		t.Fatalf("err = %v, want ErrTooManyErrors", err)
	}
	if res == nil || res.Msgs != 0 || res.Errors < 5 || !strings.Contains(res.FirstError, "code 13") {
		t.Fatalf("result %+v", res)
	}
	parseLine(t, res.Line(), "produce", 100<<10, produceKeys...)
}

func TestConfigurationErrors(t *testing.T) {
	ctx := testContext(t)
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"no name server", func() error { _, err := Produce(ctx, ProduceConfig{}); return err }, ErrConfig},
		{"body too small", func() error {
			_, err := Produce(ctx, ProduceConfig{NameServers: []string{"127.0.0.1:1"}, BodyBytes: 4})
			return err
		}, ErrConfig},
		{"in-flight too large", func() error {
			_, err := Produce(ctx, ProduceConfig{NameServers: []string{"127.0.0.1:1"}, InFlight: MaxInFlight + 1})
			return err
		}, ErrConfig},
		{"remote name server", func() error {
			_, err := Produce(ctx, ProduceConfig{NameServers: []string{"198.51.100.1:9876"}})
			return err
		}, ErrNotLoopback},
		{"remote name server, consume", func() error {
			_, err := Consume(ctx, ConsumeConfig{NameServers: []string{"198.51.100.1:9876"}})
			return err
		}, ErrNotLoopback},
		{"pull batch too large", func() error {
			_, err := Consume(ctx, ConsumeConfig{NameServers: []string{"127.0.0.1:1"}, PullBatch: MaxPullBatch + 1})
			return err
		}, ErrConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestConsumeOfAMissingTopicHasNoRoute(t *testing.T) {
	ns := startCluster(t)
	_, err := Consume(testContext(t), ConsumeConfig{NameServers: []string{ns}, Topic: "Nowhere", RouteWait: time.Millisecond})
	if !errors.Is(err, ErrNoRoute) {
		t.Fatalf("err = %v, want ErrNoRoute", err)
	}
}

// TestHostAddressesAreLocal: a server listening on all addresses
// advertises one of the host's own; the load generator accepts those and
// loopback, and refuses others.
func TestHostAddressesAreLocal(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		addr := net.JoinHostPort(n.IP.String(), "10911")
		if err := checkAddr(addr, false); err != nil {
			t.Errorf("this host's address %s refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:1", "localhost:1", "[::1]:1"} {
		if err := checkAddr(addr, false); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
	if err := checkAddr("198.51.100.1:10911", false); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("a remote address: %v, want ErrNotLoopback", err)
	}
	if err := checkAddr("198.51.100.1:10911", true); err != nil {
		t.Errorf("a remote address with AllowRemote: %v", err)
	}
}
