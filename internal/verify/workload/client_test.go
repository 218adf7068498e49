package workload

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// testClient starts a name server and a broker and returns them, an Env
// for them (defaults set) and a client "test" (closed at the test's end).
func testClient(t *testing.T) (*daemontest.Cluster, *Env, *Client) {
	t.Helper()
	c := daemontest.Start(t)
	env, err := testEnv(c.NameServerAddr()).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cl := NewClient(env, "test")
	t.Cleanup(func() { cl.Close() })
	return c, env, cl
}

// TestClientOutcomes: what a request's error says about its effect. A
// connection that cannot be made and a broker's refusal are Fail; a
// request written to a peer that never answers is InDoubt, after the
// timeout.
func TestClientOutcomes(t *testing.T) {
	c, env, cl := testClient(t)
	ctx := context.Background()

	if _, err := cl.Route(ctx, "verify-nope", false); Outcome(err) != history.Fail {
		t.Fatalf("route of a missing topic: %v (%s), want Fail", err, Outcome(err))
	}

	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	r := &Route{Queues: []rmq.MessageQueue{{Topic: "t", BrokerName: "b"}}, Addrs: map[string]string{"b": deadAddr}}
	_, err := cl.Send(ctx, r, r.Queues[0], []byte("x"), SendOpts{})
	if Outcome(err) != history.Fail {
		t.Fatalf("send to a closed port: %v (%s), want Fail", err, Outcome(err))
	}

	mute := muteListener(t)
	r.Addrs["b"] = mute
	short := *env
	short.SendTimeout = 300 * time.Millisecond
	shortCl := NewClient(&short, "short")
	defer shortCl.Close()
	start := time.Now()
	_, err = shortCl.Send(ctx, r, r.Queues[0], []byte("x"), SendOpts{})
	if Outcome(err) != history.InDoubt || time.Since(start) > 5*time.Second {
		t.Fatalf("send to a mute peer: %v (%s) after %v, want InDoubt after the timeout", err, Outcome(err), time.Since(start))
	}

	r.Addrs["b"] = c.Broker.Addr().String()
	r.Queues[0].Topic = "bad topic"
	_, err = cl.Send(ctx, r, r.Queues[0], []byte("x"), SendOpts{Properties: idProperties("a-b-0-0")})
	var oe *OpError
	if Outcome(err) != history.Fail || !asOpError(err, &oe) || oe.Code <= 0 {
		t.Fatalf("send to an invalid topic: %v, want a Fail with the broker's code", err)
	}
}

func asOpError(err error, oe **OpError) bool {
	e, ok := err.(*OpError)
	*oe = e
	return ok
}

// TestClientRoundTrip: create, route, send, pull and the offsets, as the
// workloads use them.
func TestClientRoundTrip(t *testing.T) {
	_, env, cl := testClient(t)
	ctx := context.Background()
	topic := env.Topic("rt")
	if err := cl.CreateTopic(ctx, topic, 3, false); err != nil {
		t.Fatal(err)
	}
	r, err := cl.Route(ctx, topic, false)
	if err != nil || len(r.Queues) != 3 {
		t.Fatalf("route: %+v, %v", r, err)
	}
	q := r.Queues[2]
	id := ID(env.RunID, "rt", 0, 0)
	body := Body(id, 64, Field{"seq", "1"})
	res, err := cl.Send(ctx, r, q, body, SendOpts{ProducerGroup: "pg", Properties: idProperties(id)})
	if err != nil || res.Queue != 2 || res.Offset != 0 {
		t.Fatalf("send: %+v, %v", res, err)
	}
	addr := r.Addr(q)
	// The broker acknowledges before its consume queue lists the message.
	if hi, err := stableMax(ctx, env, cl, topic, q); err != nil || hi != 1 {
		t.Fatalf("max offset %d, %v; want 1", hi, err)
	}
	if lo, err := cl.MinOffset(ctx, addr, q); err != nil || lo != 0 {
		t.Fatalf("min offset %d, %v; want 0", lo, err)
	}
	pr, err := cl.Pull(ctx, addr, "g", q, 0, 32, 0)
	if err != nil || pr.Code != rmq.RespSuccess || len(pr.Messages) != 1 || pr.Header.NextBeginOffset != 1 {
		t.Fatalf("pull: %+v, %v", pr, err)
	}
	if rc := Receive(pr.Messages[0]); rc.ID != id || rc.Sum != Sum(body) || rc.Corrupt {
		t.Fatalf("received %+v", rc)
	}
	if off, err := cl.QueryOffset(ctx, addr, "g", q); err != nil || off > 0 {
		t.Fatalf("offset of a group without one: %d, %v; want -1 or 0 (the first message)", off, err)
	}
	if err := cl.CommitOffset(ctx, addr, "g", q, 1); err != nil {
		t.Fatal(err)
	}
	if off, err := cl.QueryOffset(ctx, addr, "g", q); err != nil || off != 1 {
		t.Fatalf("committed offset %d, %v; want 1", off, err)
	}
	if err := cl.Heartbeat(ctx, addr, "me", "g", "CLUSTERING", "", topic); err != nil {
		t.Fatal(err)
	}
	if ids, err := cl.ConsumerList(ctx, addr, "g"); err != nil || len(ids) != 1 || ids[0] != "me" {
		t.Fatalf("consumer list %v, %v", ids, err)
	}
	got, err := cl.Lock(ctx, addr, "g", "me", r.Queues)
	if err != nil || len(got) != 3 {
		t.Fatalf("lock: %v, %v", got, err)
	}
	if got, err := cl.Lock(ctx, addr, "g", "other", r.Queues); err != nil || len(got) != 0 {
		t.Fatalf("another client locked held queues: %v, %v", got, err)
	}
	if err := cl.Unlock(ctx, addr, "g", "me", r.Queues[:1]); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Lock(ctx, addr, "g", "other", r.Queues); err != nil || len(got) != 1 {
		t.Fatalf("after an unlock another client got %v, %v; want the one queue", got, err)
	}
}

// TestRouteAgesAndFallsBack: a route is used for RouteMaxAge, then asked
// for again (a failover's new master shows up without a refusal first);
// when no name server answers, the old route is still used unless a fresh
// one was asked for.
func TestRouteAgesAndFallsBack(t *testing.T) {
	_, env, cl := testClient(t)
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	env.Clock = clk
	ctx := context.Background()
	topic := env.Topic("age")
	if err := cl.CreateTopic(ctx, topic, 2, false); err != nil {
		t.Fatal(err)
	}
	r1, err := cl.Route(ctx, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(RouteMaxAge / 2)
	if r2, err := cl.Route(ctx, topic, false); err != nil || r2 != r1 {
		t.Fatalf("a young route was asked for again: %p vs %p, %v", r2, r1, err)
	}
	clk.Advance(RouteMaxAge)
	r3, err := cl.Route(ctx, topic, false)
	if err != nil || r3 == r1 {
		t.Fatalf("an old route was used without asking: %p, %v", r3, err)
	}

	// A route missing a group's master (a failover under way) is asked
	// for again after DegradedRouteMaxAge, a whole one only after
	// RouteMaxAge.
	for _, degraded := range []bool{false, true} {
		old := &Route{Queues: r3.Queues, Addrs: r3.Addrs, fetched: clk.Now().Add(-2 * DegradedRouteMaxAge), degraded: degraded}
		cl.mu.Lock()
		cl.routes[topic] = old
		cl.mu.Unlock()
		r, err := cl.Route(ctx, topic, false)
		if err != nil {
			t.Fatal(err)
		}
		if asked := r != old; asked != degraded {
			t.Fatalf("degraded %v: a route %v old was asked for again: %v", degraded, 2*DegradedRouteMaxAge, asked)
		}
	}

	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	env2 := *env
	env2.NameSrv = []string{deadAddr}
	lone := NewClient(&env2, "lone")
	defer lone.Close()
	lone.routes[topic] = &Route{Queues: r3.Queues, Addrs: r3.Addrs, fetched: clk.Now().Add(-time.Hour)}
	if r, err := lone.Route(ctx, topic, false); err != nil || len(r.Queues) != 2 {
		t.Fatalf("no name server: the old route was not used: %+v, %v", r, err)
	}
	if _, err := lone.Route(ctx, topic, true); err == nil {
		t.Fatal("no name server: a fresh route was made up")
	}
}

// brokerHold is a network whose connections to one address swallow what
// is written while held (a paused broker, as its clients see it); the
// name servers' links pass.
type brokerHold struct {
	addr string
	holdNet
}

func (h *brokerHold) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (h *brokerHold) Dial(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := netx.TCP.Dial(ctx, addr)
	if err != nil || addr != h.addr {
		return nc, err
	}
	return &holdConn{Conn: nc, h: &h.holdNet}, nil
}

// TestSendWatchedLeavesAMovedMaster: a send to a master that does not
// answer is abandoned, InDoubt, at the first route watch whose route
// names another master for its broker (a paused master after the
// failover), and the cache then holds that route for the retry; while
// the route still names the master the send went to, the watch keeps
// waiting (and asks again).
func TestSendWatchedLeavesAMovedMaster(t *testing.T) {
	c, env, _ := testClient(t)
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	env.Clock = clk
	env.SendTimeout = time.Minute // only the watch may end the attempts
	hold := &brokerHold{addr: c.Broker.Addr().String()}
	env.Network = func(string) netx.Network { return hold }
	cl := NewClient(env, "watched")
	defer cl.Close()
	ctx := context.Background()
	topic := env.Topic("watch")
	if err := cl.CreateTopic(ctx, topic, 1, false); err != nil {
		t.Fatal(err)
	}
	real, err := cl.Route(ctx, topic, true)
	if err != nil {
		t.Fatal(err)
	}
	q := real.Queues[0]
	type result struct {
		res SendResult
		err error
	}
	send := func(cl *Client, r *Route) chan result {
		ch := make(chan result, 1)
		go func() {
			res, err := cl.SendWatched(ctx, r, q, []byte("x"), SendOpts{Properties: idProperties("a-b-0-0")})
			ch <- result{res, err}
		}()
		return ch
	}
	wait := func(ch chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(20 * time.Second):
			t.Fatal("the send was not abandoned")
			return result{}
		}
	}

	// The master the route names does not answer: the watch asks, finds
	// the same master, and waits on.
	hold.held.Store(true)
	ch := send(cl, real)
	for range 3 {
		await(t, "the route watch armed", func() bool { return clk.Pending() == 1 })
		clk.Advance(RouteWatch)
		select {
		case r := <-ch:
			t.Fatalf("the send ended while the route named its master: %+v", r)
		default:
		}
	}
	hold.held.Store(false)
	cl.rc.Close() // the held connection's request is lost: the send is InDoubt
	if r := wait(ch); Outcome(r.err) != history.InDoubt {
		t.Fatalf("send on a closed held connection: %v (%s), want InDoubt", r.err, Outcome(r.err))
	}

	// The attempt went to a master that is no longer the route's.
	mute := muteListener(t)
	old := &Route{Queues: real.Queues, Addrs: map[string]string{q.BrokerName: mute}}
	cl = NewClient(env, "watched2")
	defer cl.Close()
	ch = send(cl, old)
	await(t, "the route watch armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(RouteWatch)
	r := wait(ch)
	if Outcome(r.err) != history.InDoubt || !strings.Contains(r.err.Error(), hold.addr) {
		t.Fatalf("send to the old master: %v (%s), want InDoubt naming the new master %s", r.err, Outcome(r.err), hold.addr)
	}
	if clk.Pending() != 0 {
		t.Fatalf("%d timers left after the send ended; want the watch stopped", clk.Pending())
	}
	cached, err := cl.Route(ctx, topic, false)
	if err != nil || cached.Addr(q) != hold.addr {
		t.Fatalf("the retry's route names %q (%v), want the new master %s", cached.Addr(q), err, hold.addr)
	}
	if res, err := cl.SendWatched(ctx, cached, q, []byte("x"), SendOpts{Properties: idProperties("a-b-0-0")}); err != nil || res.Addr != hold.addr {
		t.Fatalf("the retry at the new master: %+v, %v", res, err)
	}
}

// muteListener is the address of a loopback listener that accepts
// connections and holds them open, never answering; closed at the end of
// the test.
func muteListener(t *testing.T) string {
	return serveLoopback(t, func(net.Conn) {})
}

// serveLoopback listens on a loopback port until the end of the test and
// hands every connection to serve; the connections are closed when the
// listener is.
func serveLoopback(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			serve(nc)
		}
	}()
	return ln.Addr().String()
}
