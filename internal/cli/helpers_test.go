package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// waitLimit bounds every wait for a condition.
const waitLimit = 10 * time.Second

// cluster is an in-process name server and broker on loopback ports with
// an in-memory store.
type cluster struct {
	t  *testing.T
	ns *daemon.NameServer
	b  *daemon.Broker
	// raw is a remoting client for requests the CLI does not send
	// (heartbeats, send-back); notices collects what brokers send it.
	raw     *remoting.Client
	notices chan *remoting.Command
}

func startCluster(t *testing.T, opts ...func(*broker.Config)) *cluster {
	t.Helper()
	d := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		for _, o := range opts {
			o(&cfg.Broker)
		}
	})
	c := &cluster{t: t, ns: d.NameServer, b: d.Broker, notices: make(chan *remoting.Command, 16)}
	c.raw = remoting.NewClient(remoting.ClientOptions{Handler: func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		select {
		case c.notices <- req:
		default:
		}
		return nil
	}})
	t.Cleanup(func() { c.raw.Close() })
	return c
}

// run runs fn against a CLI with the given output format and returns what
// it wrote.
func (c *cluster) run(output string, fn func(*CLI) error) (string, error) {
	c.t.Helper()
	var out bytes.Buffer
	// A generous bound: it only ends a request to a server that is gone
	// (those tests are refused at once), and 5 s failed sends and queries
	// on loaded CI machines.
	cl, err := New(Config{NameServers: []string{c.ns.Addr().String()}, Output: output, Timeout: 30 * time.Second, Out: &out})
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	err = fn(cl)
	return out.String(), err
}

// must runs fn and fails the test on an error.
func (c *cluster) must(output string, fn func(*CLI) error) string {
	c.t.Helper()
	out, err := c.run(output, fn)
	if err != nil {
		c.t.Fatalf("command failed: %v\noutput:\n%s", err, out)
	}
	return out
}

// mustJSON runs fn with JSON output and decodes it into v.
func (c *cluster) mustJSON(v any, fn func(*CLI) error) {
	c.t.Helper()
	out := c.must(OutputJSON, fn)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

func (c *cluster) invoke(addr string, req *remoting.Command) *remoting.Command {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp, err := c.raw.Invoke(ctx, addr, req)
	if err != nil {
		c.t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

// heartbeat registers the raw client as a member of group subscribed to
// topic.
func (c *cluster) heartbeat(clientID, group, topic string) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"clientID":        clientID,
		"producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
			"subscriptionDataSet": []any{map[string]any{
				"topic": topic, "subString": "*", "tagsSet": []string{}, "subVersion": 1, "expressionType": "TAG",
			}},
		}},
	})
	if r := c.invoke(c.b.Advertised(), remoting.NewRequest(34, nil, body)); r.Code != 0 {
		c.t.Fatalf("heartbeat: code %d %s", r.Code, r.Remark)
	}
}

// dispatched waits until every message the broker has acknowledged is in
// its consume queue: a send is answered once stored, and the queues' max
// offsets (describe, lag, consume --exit) count a message only once it is
// dispatched.
func (c *cluster) dispatched() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.b.Store().WaitDispatched(ctx); err != nil {
		c.t.Fatalf("waiting for dispatch: %v", err)
	}
}

// waitFor checks cond on every tick until it holds (state published in
// the background, such as routes, has no event to wait on); what names the
// condition.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, waitLimit)
		case <-tick.C:
		}
	}
}

// wantErr checks that err wraps want and mentions every substring.
func wantErr(t *testing.T, err, want error, substr ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %v", err, want)
	}
	for _, s := range substr {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

// Volatile parts of tables, masked with text of the same length so the
// columns stay aligned as they were.
var masks = []struct {
	re   *regexp.Regexp
	char byte
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`), 'T'},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), 'A'},
	{regexp.MustCompile(`\b[0-9A-F]{32}\b`), 'I'},
	{regexp.MustCompile(`\b\d+(s|m\d+s|h\d+m)\b`), 'U'},
}

func normalize(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllStringFunc(s, func(x string) string { return strings.Repeat(string(m.char), len(x)) })
	}
	return s
}

// golden compares normalized output with testdata/<name>.golden, or
// rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = normalize(got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (run with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
