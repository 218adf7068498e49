package daemon

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// TestRouteExpiresAcrossAPartitionAndReturnsWhenHealed runs a name
// server, a broker and a client on netx's in-memory network, with the
// name server's expiry and the broker's heartbeats on one manual clock.
// Cut from the name server (the broker's connection stays open but
// carries nothing, as in a real partition), every heartbeat times out, and
// the broker's route expires at the first scan more than BrokerTTL after
// its last registration, while the client still reaches the broker; once
// healed, the next heartbeat registers the broker again and the route
// comes back.
func TestRouteExpiresAcrossAPartitionAndReturnsWhenHealed(t *testing.T) {
	const (
		nsHost, brokerHost, clientHost = "10.0.0.1", "10.0.0.2", "10.0.0.3"
		nsAddr, brokerAddr             = nsHost + ":9876", brokerHost + ":10911"
		ttl, scan, heartbeat           = 30 * time.Second, 5 * time.Second, 10 * time.Second
		// callTimeout bounds each registration (real time): how long a
		// heartbeat into the partition takes to fail.
		callTimeout = time.Second
	)
	mem := netx.NewMem()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	ns, err := StartNameServer(nsAddr, namesrv.Options{Clock: clk, BrokerTTL: ttl, ScanInterval: scan, Network: mem.Host(nsHost)})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if got := ns.Addr().String(); got != nsAddr {
		t.Fatalf("name server listens on %s, want %s", got, nsAddr)
	}

	sent := make(chan namesrv.Sent, 256) // every registration attempt
	cfg := smallBrokerConfig()
	cfg.Listen, cfg.NameServers, cfg.Network = brokerAddr, []string{nsAddr}, mem.Host(brokerHost)
	cfg.Registrar = namesrv.RegistrarOptions{Clock: clk, HeartbeatInterval: heartbeat, Timeout: callTimeout,
		OnSent: func(s namesrv.Sent) {
			select {
			case sent <- s:
			default: // the test fails waiting for it
			}
		}}
	b, err := StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	}()
	if b.Advertised() != brokerAddr {
		t.Fatalf("broker advertises %s, want its in-memory address %s", b.Advertised(), brokerAddr)
	}
	client := remoting.NewClient(remoting.ClientOptions{Network: mem.Host(clientHost)})
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	invoke := func(addr string, req *remoting.Command) *remoting.Command {
		t.Helper()
		resp, err := client.Invoke(ctx, addr, req)
		if err != nil {
			t.Fatalf("invoke code %d on %s: %v", req.Code, addr, err)
		}
		return resp
	}
	// routed reports whether the name server routes Orders to the broker.
	routed := func() bool {
		t.Helper()
		resp := invoke(nsAddr, remoting.NewRequest(rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "Orders"}, nil))
		if resp.Code == rmq.RespTopicNotExist {
			return false
		}
		var rd namesrv.RouteData
		if resp.Code != remoting.CodeSuccess || json.Unmarshal(resp.Body, &rd) != nil ||
			len(rd.BrokerDatas) != 1 || len(rd.BrokerDatas[0].BrokerAddrs) != 1 || rd.BrokerDatas[0].BrokerAddrs[0] != brokerAddr {
			t.Fatalf("route of Orders: code %d %q body %s; want the broker at %s", resp.Code, resp.Remark, resp.Body, brokerAddr)
		}
		return true
	}
	next := func(what string) namesrv.Sent {
		t.Helper()
		select {
		case s := <-sent:
			return s
		case <-ctx.Done():
			t.Fatalf("%s: no registration attempt", what)
			return namesrv.Sent{}
		}
	}
	// awaitRoute waits, registration by registration, for the route.
	awaitRoute := func(what string) {
		t.Helper()
		for !routed() {
			next(what)
		}
	}
	send := func(what string) {
		t.Helper()
		if resp := invoke(brokerAddr, sendRequest("Orders", []byte(what))); resp.Code != remoting.CodeSuccess {
			t.Fatalf("send %s: code %d %q", what, resp.Code, resp.Remark)
		}
	}

	// The client sends to the broker (creating the topic) and finds the
	// topic's route at the name server.
	send("before")
	awaitRoute("before the partition")
	if err := b.awaitRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	for len(sent) > 0 {
		<-sent
	}
	// A heartbeat while connected is accepted: the last one before the
	// partition, at +10 s.
	clk.Advance(heartbeat)
	if s := next("connected heartbeat"); s.Err != nil {
		t.Fatalf("heartbeat while connected: %v", s.Err)
	}
	lastSeen := clk.Now()

	mem.Partition(brokerHost, nsHost)
	send("during") // the client's links are untouched
	// Heartbeats at +20, +30 and +40 s go into the partition and time
	// out; the route stays while the name server's last word from the
	// broker is at most BrokerTTL old.
	for clk.Now().Add(heartbeat).Sub(lastSeen) <= ttl {
		clk.Advance(heartbeat)
		if s := next("heartbeat into the partition"); s.Err == nil {
			t.Fatalf("at +%v a registration was accepted across the partition", clk.Now().Sub(lastSeen))
		}
		if !routed() {
			t.Fatalf("the route expired %v after the last registration, within BrokerTTL %v", clk.Now().Sub(lastSeen), ttl)
		}
	}
	// The heartbeat at +50 s fails too, and the scans at +45 and +50 s
	// (which ran inside Advance) dropped the broker.
	clk.Advance(heartbeat)
	if s := next("heartbeat into the partition"); s.Err == nil {
		t.Fatal("a registration was accepted across the partition")
	}
	if routed() {
		t.Fatalf("%v cut off from the name server (BrokerTTL %v), the broker is still in the route", clk.Now().Sub(lastSeen), ttl)
	}

	// Healing delivers the heartbeats held in the partition, but they are
	// deltas for a broker the name server no longer holds: only the next
	// heartbeat (refused as a delta, then sent in full) brings the route
	// back.
	mem.Heal(nsHost, brokerHost)
	if routed() {
		t.Fatal("the route came back before a registration")
	}
	clk.Advance(heartbeat)
	awaitRoute("after Heal")
	send("after")
}
