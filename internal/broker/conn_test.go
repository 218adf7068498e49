package broker

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
)

// recHandler records what the broker pushes to one registered connection.
type recHandler struct {
	n   int      // the test's number for it
	log *hookLog // shared: "group n" per consumer-ids notification

	mu      sync.Mutex
	id      uint64 // its id, set after RegisterConn
	checks  []TransactionCheck
	expired int
	refuse  bool // CheckTransaction reports false
}

func (h *recHandler) CheckTransaction(c TransactionCheck) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, c)
	return !h.refuse
}

func (h *recHandler) NotifyConsumerIDsChanged(group string) {
	h.log.add(fmt.Sprintf("%s %d", group, h.n))
}

func (h *recHandler) Expired() {
	h.mu.Lock()
	h.expired++
	h.mu.Unlock()
}

func (h *recHandler) state() (checks []TransactionCheck, expired int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.checks), h.expired
}

// testConns registers connections under small test numbers, on first
// use, each with its own recHandler.
type testConns struct {
	b   *Broker
	log hookLog

	mu  sync.Mutex
	ids map[int]uint64
	hs  map[int]*recHandler
}

func newTestConns(b *Broker) *testConns {
	return &testConns{b: b, ids: map[int]uint64{}, hs: map[int]*recHandler{}}
}

// id returns the id of connection n, registering it (remoting, no idle
// timeout) on first use.
func (tc *testConns) id(n int) uint64 {
	return tc.register(n, ConnInfo{Protocol: ProtocolRemoting, Remote: netip.MustParseAddrPort("10.0.0.2:40000")})
}

// register returns the id of connection n, registering it with info on
// first use.
func (tc *testConns) register(n int, info ConnInfo) uint64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if id, ok := tc.ids[n]; ok {
		return id
	}
	h := &recHandler{n: n, log: &tc.log}
	id := tc.b.RegisterConn(info, h)
	h.mu.Lock()
	h.id = id
	h.mu.Unlock()
	tc.ids[n], tc.hs[n] = id, h
	return id
}

func (tc *testConns) handler(n int) *recHandler {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.hs[n]
}

// TestConnIDsUniqueAcrossProtocols: registrations from both fronts at
// once get distinct, non-zero ids, each known with its own info until it
// is closed.
func TestConnIDsUniqueAcrossProtocols(t *testing.T) {
	e := newEnv(t)
	const workers, each = 8, 200
	ids := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proto := ProtocolRemoting
			if w%2 == 1 {
				proto = ProtocolGRPC
			}
			for i := range each {
				info := ConnInfo{Protocol: proto, ClientID: fmt.Sprintf("c-%d-%d", w, i)}
				if proto == ProtocolGRPC {
					info.IdleTimeout = time.Minute
				}
				ids[w] = append(ids[w], e.b.RegisterConn(info, &recHandler{log: &hookLog{}}))
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for w, list := range ids {
		for i, id := range list {
			if id == 0 || seen[id] {
				t.Fatalf("worker %d registration %d got id %d: zero or handed out twice", w, i, id)
			}
			seen[id] = true
			info, ok := e.b.Conn(id)
			if !ok || info.ClientID != fmt.Sprintf("c-%d-%d", w, i) || (info.Protocol == ProtocolGRPC) != (w%2 == 1) {
				t.Fatalf("conn %d: %+v %v, want worker %d's registration %d", id, info, ok, w, i)
			}
		}
	}
	if n := e.b.Conns(); n != workers*each {
		t.Fatalf("%d registered conns, want %d", n, workers*each)
	}
	for _, list := range ids {
		for _, id := range list {
			e.b.ConnClosed(id)
		}
	}
	if n := e.b.Conns(); n != 0 {
		t.Fatalf("%d registered conns after closing all, want 0", n)
	}
}

// TestCheckBackGoesToTheRegisteringHandlerOnly: a transaction check-back
// of a group is delivered to the handler that registered the producer's
// connection, named by its own id; never to another front's handler or to
// a producer of another group.
func TestCheckBackGoesToTheRegisteringHandlerOnly(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	tc := newTestConns(e.b)
	e.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "remoting-producer", Producers: []string{"other"}})
	grpc := tc.register(2, ConnInfo{Protocol: ProtocolGRPC, ClientID: "grpc-producer", IdleTimeout: time.Hour})
	e.b.Heartbeat(grpc, Heartbeat{ClientID: "grpc-producer", Producers: []string{"pg"}})
	e.sendHalf("T1", "pg", "TX-ROUTE", "ask me")
	e.waitMax(txn.HalfTopic, 0, 1)
	for range 40 {
		if c, _ := tc.handler(2).state(); len(c) > 0 {
			break
		}
		e.clk.Advance(5 * time.Second)
	}
	checks, _ := tc.handler(2).state()
	if len(checks) == 0 {
		t.Fatal("no check-back reached the producer of pg")
	}
	for _, c := range checks {
		if c.Conn != grpc || c.Group != "pg" || c.Header.TransactionID != "TX-ROUTE" {
			t.Fatalf("check %+v: want one for conn %d, group pg, transaction TX-ROUTE", c, grpc)
		}
	}
	if other, _ := tc.handler(1).state(); len(other) != 0 {
		t.Fatalf("the producer of another group on another front got %d checks", len(other))
	}
}

// TestExpiredConnLeavesItsGroups: a registration with an idle timeout that
// is not touched for it is dropped by the broker's sweep: its consumer and
// producer memberships go, the remaining members are told, its handler's
// Expired runs once, and the id is unknown from then on. A touch restarts
// the timeout; a connection without one stays.
func TestExpiredConnLeavesItsGroups(t *testing.T) {
	e := newEnv(t)
	tc := newTestConns(e.b)
	const idle = 30 * time.Second
	sub := []Subscription{{Topic: "T", Expression: "*"}}
	a := tc.register(1, ConnInfo{Protocol: ProtocolGRPC, ClientID: "A", IdleTimeout: idle})
	e.b.Heartbeat(a, Heartbeat{ClientID: "A", Producers: []string{"pg"}, Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	e.b.Heartbeat(tc.id(2), Heartbeat{ClientID: "B", Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	tc.log.take()

	e.clk.Advance(20 * time.Second)
	if !e.b.TouchConn(a) {
		t.Fatal("TouchConn of a live registration reported false")
	}
	e.clk.Advance(idle - time.Second) // 29 s after the touch
	if _, ok := e.b.Conn(a); !ok || len(e.b.ConsumerIDs("g")) != 2 {
		t.Fatalf("expired %v after its last touch (registered %v, members %v)", idle-time.Second, ok, e.b.ConsumerIDs("g"))
	}
	e.clk.Advance(time.Second + idleInterval(idle)) // past the timeout plus one sweep
	if _, ok := e.b.Conn(a); ok || e.b.TouchConn(a) {
		t.Fatal("registration still known after its idle timeout")
	}
	if _, expired := tc.handler(1).state(); expired != 1 {
		t.Fatalf("Expired called %d times, want 1", expired)
	}
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"B"}) {
		t.Fatalf("members after expiry %v, want [B]", ids)
	}
	if len(e.b.ProducerConns("pg")) != 0 {
		t.Fatal("the expired connection is still a producer of pg")
	}
	if got := tc.log.take(); !slices.Equal(got, []string{"g 2"}) {
		t.Fatalf("notifications %v, want the remaining member told once", got)
	}
	// The front learns of it late and closes it: nothing more happens.
	e.b.ConnClosed(a)
	if _, expired := tc.handler(1).state(); expired != 1 {
		t.Fatalf("Expired called %d times after ConnClosed, want still 1", expired)
	}
	// The connection without an idle timeout stays (its membership lasts
	// ClientExpiry from its heartbeat).
	if _, ok := e.b.Conn(tc.id(2)); !ok {
		t.Fatal("a registration without an idle timeout expired")
	}
}

// TestShortIdleTimeoutBringsTheSweepForward: a registration whose idle
// timeout needs a sweep sooner than the client-expiry sweep gets it.
func TestShortIdleTimeoutBringsTheSweepForward(t *testing.T) {
	e := newEnv(t) // ClientExpiry 120 s: sweeps every 10 s
	tc := newTestConns(e.b)
	e.clk.Advance(time.Second) // the pending sweep is 9 s away
	a := tc.register(1, ConnInfo{Protocol: ProtocolGRPC, IdleTimeout: 2 * time.Second})
	e.clk.Advance(2*time.Second + idleInterval(2*time.Second))
	if _, ok := e.b.Conn(a); ok {
		t.Fatal("a 2 s idle registration is still there 2.5 s later")
	}
	if _, expired := tc.handler(1).state(); expired != 1 {
		t.Fatalf("Expired called %d times, want 1", expired)
	}
}

// TestConnClosedIsIdempotent: a second ConnClosed of an id (or one of an
// id never registered) changes nothing and tells nobody; a closed
// registration is never expired.
func TestConnClosedIsIdempotent(t *testing.T) {
	e := newEnv(t)
	tc := newTestConns(e.b)
	sub := []Subscription{{Topic: "T", Expression: "*"}}
	a := tc.register(1, ConnInfo{Protocol: ProtocolGRPC, IdleTimeout: 5 * time.Second})
	e.b.Heartbeat(a, Heartbeat{ClientID: "A", Producers: []string{"pg"}, Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	e.b.Heartbeat(tc.id(2), Heartbeat{ClientID: "B", Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	tc.log.take()
	for range 2 {
		e.b.ConnClosed(a)
	}
	e.b.ConnClosed(1 << 40) // never handed out
	if got := tc.log.take(); !slices.Equal(got, []string{"g 2"}) {
		t.Fatalf("notifications %v, want one for the remaining member", got)
	}
	if _, ok := e.b.Conn(a); ok || e.b.TouchConn(a) || e.b.Conns() != 1 {
		t.Fatalf("closed registration still known (conns %d)", e.b.Conns())
	}
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"B"}) || len(e.b.ProducerConns("pg")) != 0 {
		t.Fatalf("members %v producers %v after close", ids, e.b.ProducerConns("pg"))
	}
	e.clk.Advance(time.Minute)
	if _, expired := tc.handler(1).state(); expired != 0 {
		t.Fatalf("a closed registration was expired %d times", expired)
	}
	// A late heartbeat on the closed connection (one that raced with its
	// close) registers nothing.
	e.b.Heartbeat(a, Heartbeat{ClientID: "A", Producers: []string{"pg"}, Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"B"}) || len(e.b.ProducerConns("pg")) != 0 || len(tc.log.take()) != 0 {
		t.Fatalf("a heartbeat on a closed connection registered it again: members %v producers %v", ids, e.b.ProducerConns("pg"))
	}
}
