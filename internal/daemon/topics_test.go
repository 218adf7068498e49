package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// topicCluster is a name server and a broker whose registrar heartbeats on
// a manual clock, so that no registration happens but the ones the topic
// changes trigger and the heartbeats the test fires.
type topicCluster struct {
	ns     *NameServer
	b      *Broker
	clk    *clock.Manual
	sent   chan namesrv.Sent
	client *remoting.Client
}

func startTopicCluster(tb testing.TB) *topicCluster {
	tb.Helper()
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	c := &topicCluster{ns: ns, clk: clock.NewManual(time.Unix(1_700_000_000, 0)), sent: make(chan namesrv.Sent, 1<<16)}
	cfg := smallBrokerConfig()
	cfg.NameServers = []string{ns.Addr().String()}
	cfg.Registrar = namesrv.RegistrarOptions{Clock: c.clk, OnSent: func(s namesrv.Sent) {
		select {
		case c.sent <- s:
		default:
		}
	}}
	b, err := StartBroker(cfg)
	if err != nil {
		ns.Close()
		tb.Fatal(err)
	}
	c.b, c.client = b, remoting.NewClient(remoting.ClientOptions{})
	tb.Cleanup(func() {
		c.client.Close()
		if err := b.Close(); err != nil {
			tb.Errorf("close broker: %v", err)
		}
		ns.Close()
	})
	return c
}

func createTopicRequest(name string) *remoting.Command {
	return remoting.NewRequest(17, map[string]string{
		"topic": name, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
}

// createTopics creates n topics named prefix-<i> through the admin request
// with inFlight requests outstanding and returns their names.
func (c *topicCluster) createTopics(tb testing.TB, prefix string, n, inFlight int) []string {
	tb.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	work := make(chan string)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, err := c.client.Invoke(ctx, c.b.Advertised(), createTopicRequest(name))
				cancel()
				switch {
				case err != nil:
					errs <- fmt.Errorf("create %s: %w", name, err)
				case resp.Code != 0:
					errs <- fmt.Errorf("create %s: code %d remark %q", name, resp.Code, resp.Remark)
				case resp.Remark != "":
					errs <- fmt.Errorf("create %s answered with remark %q, want the route published", name, resp.Remark)
				}
			}
		}()
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return names
}

// missing returns the names the name server has no route for.
func (c *topicCluster) missing(tb testing.TB, names []string) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.client.Invoke(ctx, c.ns.Addr().String(), remoting.NewRequest(206, nil, nil))
	if err != nil || resp.Code != 0 {
		tb.Fatalf("topic list: %v %+v", err, resp)
	}
	var list struct {
		TopicList []string `json:"topicList"`
	}
	if err := json.Unmarshal(resp.Body, &list); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if !slices.Contains(list.TopicList, n) {
			out = append(out, n)
		}
	}
	return out
}

// heartbeat fires one heartbeat and waits until its registration was
// answered.
func (c *topicCluster) heartbeat(tb testing.TB) {
	tb.Helper()
	for {
		select {
		case <-c.sent:
			continue // earlier registrations
		default:
		}
		break
	}
	c.clk.Advance(30 * time.Second)
	select {
	case s := <-c.sent:
		if s.Err != nil {
			tb.Fatalf("heartbeat registration: %v", s.Err)
		}
	case <-time.After(10 * time.Second):
		tb.Fatal("no registration after the heartbeat")
	}
}

// TestConcurrentTopicCreatesAllReachTheNameServer: 1,000 topics created
// with 250 admin requests in flight are all routed by the name server when
// their creation is answered, and still after the next heartbeat (the
// registrar used to let an older topic table replace a newer one).
func TestConcurrentTopicCreatesAllReachTheNameServer(t *testing.T) {
	c := startTopicCluster(t)
	names := c.createTopics(t, "Conc", 1000, 250)
	if m := c.missing(t, names); len(m) > 0 {
		t.Errorf("when every create was answered, the name server has no route for %d of %d topics, e.g. %v", len(m), len(names), m[:min(5, len(m))])
	}
	c.heartbeat(t)
	if m := c.missing(t, names); len(m) > 0 {
		t.Fatalf("after one heartbeat, the name server has no route for %d of %d topics, e.g. %v", len(m), len(names), m[:min(5, len(m))])
	}
	// The periodic full registration sends the same table.
	for range 10 {
		c.heartbeat(t)
	}
	if m := c.missing(t, names); len(m) > 0 {
		t.Fatalf("after a full registration, the name server has no route for %d of %d topics, e.g. %v", len(m), len(names), m[:min(5, len(m))])
	}
}

// BenchmarkCreateTopics10k creates 10,000 topics through the admin request
// with 250 in flight (go test -run X -bench CreateTopics10k -benchtime 1x).
func BenchmarkCreateTopics10k(b *testing.B) {
	for i := range b.N {
		c := startTopicCluster(b)
		start := time.Now()
		names := c.createTopics(b, fmt.Sprintf("Bench%d", i), 10_000, 250)
		took := time.Since(start)
		b.ReportMetric(took.Seconds(), "s/10k-creates")
		b.Logf("10,000 creates with 250 in flight took %v", took)
		if m := c.missing(b, names); len(m) > 0 {
			b.Errorf("%d of %d topics have no route", len(m), len(names))
		}
	}
}

// TestTopicCreateAnswersWhileTheRouteIsStillPropagating: with a name server
// that accepts connections but never answers, a create answers success after
// RouteWait with a remark saying the route is still propagating; with the
// name server gone, at once after the failed registration, the same way.
func TestTopicCreateAnswersWhileTheRouteIsStillPropagating(t *testing.T) {
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c) // read nothing, answer nothing
			heldMu.Unlock()
		}
	}()
	const wait = 300 * time.Millisecond
	b := startBrokerWith(t, hole.Addr().String(), wait)
	t.Cleanup(func() { // before the broker's Close, which unregisters
		hole.Close()
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	})
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	create := func(b *Broker, name string) (*remoting.Command, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := cl.Invoke(ctx, b.Advertised(), createTopicRequest(name))
		if err != nil {
			t.Fatal(err)
		}
		return resp, time.Since(start)
	}
	resp, took := create(b, "Slow")
	if resp.Code != 0 || !strings.Contains(resp.Remark, "still propagating") || took < wait || took > 10*wait {
		t.Fatalf("create with a silent name server: code %d remark %q after %v, want success naming the propagation after %v", resp.Code, resp.Remark, took, wait)
	}
	if _, ok := b.Core().Topic("Slow"); !ok {
		t.Fatal("the topic was not created")
	}

	// No name server listens: the registration fails, the answer follows
	// without waiting for the bound.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	b2 := startBrokerWith(t, gone.Addr().String(), time.Minute)
	resp, took = create(b2, "Gone")
	if resp.Code != 0 || !strings.Contains(resp.Remark, "still propagating") || took > 30*time.Second {
		t.Fatalf("create with the name server down: code %d remark %q after %v", resp.Code, resp.Remark, took)
	}
}

// startBrokerWith starts a broker on an in-memory store registering with
// nsAddr, not waiting for its first registration.
func startBrokerWith(t *testing.T, nsAddr string, routeWait time.Duration) *Broker {
	t.Helper()
	scfg := store.DefaultConfig("/data")
	scfg.FS = vfs.NewMem()
	bcfg := broker.DefaultConfig()
	bcfg.BrokerName, bcfg.ClusterName = "broker-a", "DefaultCluster"
	b, err := StartBroker(BrokerConfig{Store: scfg, Broker: bcfg, Listen: "127.0.0.1:0",
		NameServers: []string{nsAddr}, RegisterWait: -1, RouteWait: routeWait,
		Registrar: namesrv.RegistrarOptions{Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
