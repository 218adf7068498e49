package namesrv

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting"
)

// testLogger writes to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type testNS struct {
	*Server
	addr   string
	closed chan struct{} // one value per connection-close callback
}

// startNS runs a name server on 127.0.0.1:0 (or on addr) with clk.
func startNS(t *testing.T, clk clock.Clock, addr string) *testNS {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Clock: clk, Logger: testLogger(t)})
	ns := &testNS{Server: s, addr: ln.Addr().String(), closed: make(chan struct{}, 64)}
	s.testConnClosed = func() { ns.closed <- struct{}{} }
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ns
}

func newClient(t *testing.T) *remoting.Client {
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func invoke(t *testing.T, cl *remoting.Client, addr string, code int16, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ext == nil {
		ext = map[string]string{}
	}
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("invoke %d: %v", code, err)
	}
	return resp
}

func registerExt(name string, id int64, addr string) map[string]string {
	return map[string]string{"brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster",
		"haServerAddr": "", "brokerId": strconv.FormatInt(id, 10), "compressed": "false"}
}

func TestRouteOverTheWireIsByteExact(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := newClient(t)
	resp := invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, javaExt([]byte(javaBody)), []byte(javaBody))
	if resp.Code != 0 || resp.Ext(ExtDataVersion) != `{"timestamp":1700000000123,"counter":3}` {
		t.Fatalf("register: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4,"topicSysFlag":0}]}`
	if resp.Code != 0 || string(resp.Body) != want {
		t.Fatalf("route: code %d\n got %s\nwant %s", resp.Code, resp.Body, want)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "Nope"}, nil)
	if resp.Code != rmq.RespTopicNotExist || !strings.Contains(resp.Remark, "Nope") || len(resp.Body) != 0 {
		t.Fatalf("unknown topic: code %d remark %q body %q", resp.Code, resp.Remark, resp.Body)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeGetAllTopicList, nil, nil)
	if string(resp.Body) != `{"topicList":["%RETRY%g","TopicTest"]}` {
		t.Fatalf("topic list %s", resp.Body)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeGetBrokerClusterInfo, nil, nil)
	if want := `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`; string(resp.Body) != want {
		t.Fatalf("cluster info %s", resp.Body)
	}
	invoke(t, cl, ns.addr, rmq.CodeDeleteTopicInNamesrv, map[string]string{"topic": "TopicTest"}, nil)
	if resp = invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil); resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("deleted topic: code %d", resp.Code)
	}
	// A bad registration is refused with a remark and disturbs nothing.
	resp = invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("", 0, "x:1"), nil)
	if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, "brokerName") {
		t.Fatalf("bad registration: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestRegistrationFullThenDelta(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := newClient(t)
	v1, v2 := DataVersion{Timestamp: 1, Counter: 1}, DataVersion{Timestamp: 1, Counter: 2}
	body := encodeRegisterBody(map[string]TopicConfig{"A": topic("A", 4, 6), "B": topic("B", 4, 6)}, v1)
	if resp := invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body); resp.Code != 0 {
		t.Fatalf("full: %d %s", resp.Code, resp.Remark)
	}
	ext := registerExt("a", 0, "127.0.0.1:1")
	ext[ExtDelta], ext[ExtBaseVersion] = "true", v1.String()
	resp := invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, ext,
		encodeDeltaBody(v2, map[string]TopicConfig{"C": topic("C", 2, 6)}, []string{"A"}))
	if resp.Code != 0 || resp.Ext(ExtDataVersion) != v2.String() {
		t.Fatalf("delta: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if got := invoke(t, cl, ns.addr, rmq.CodeGetAllTopicList, nil, nil); string(got.Body) != `{"topicList":["B","C"]}` {
		t.Fatalf("topics after delta %s", got.Body)
	}
	// The same delta again has a stale base: refused.
	resp = invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, ext, encodeDeltaBody(v2, nil, nil))
	if resp.Code != CodeNeedFullRegistration || resp.Ext(ExtNeedFull) != "true" {
		t.Fatalf("stale delta: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	// QUERY_DATA_VERSION.
	q := registerExt("a", 0, "127.0.0.1:1")
	resp = invoke(t, cl, ns.addr, rmq.CodeQueryDataVersion, q, []byte(v2.String()))
	if resp.Ext("changed") != "false" || string(resp.Body) != v2.String() {
		t.Fatalf("query data version: %v %s", resp.ExtFields, resp.Body)
	}
	if resp = invoke(t, cl, ns.addr, rmq.CodeQueryDataVersion, q, []byte(v1.String())); resp.Ext("changed") != "true" {
		t.Fatalf("query old data version: %v", resp.ExtFields)
	}
	// A fresh name server (a restart) refuses the delta.
	ns2 := startNS(t, clock.NewManual(t0), "")
	ext[ExtBaseVersion] = v2.String()
	if resp = invoke(t, cl, ns2.addr, rmq.CodeRegisterBroker, ext, encodeDeltaBody(v2, nil, nil)); resp.Ext(ExtNeedFull) != "true" {
		t.Fatalf("restarted name server accepted a delta: %d", resp.Code)
	}
	// Unregister.
	invoke(t, cl, ns.addr, rmq.CodeUnregisterBroker, registerExt("a", 0, "127.0.0.1:1"), nil)
	if got := invoke(t, cl, ns.addr, rmq.CodeGetAllTopicList, nil, nil); string(got.Body) != `{"topicList":[]}` {
		t.Fatalf("topics after unregister %s", got.Body)
	}
}

func TestConnectionCloseDropsBroker(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := newClient(t)
	brokerCl := remoting.NewClient(remoting.ClientOptions{})
	body := encodeRegisterBody(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	invoke(t, brokerCl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body)
	// A second broker registers over the long-lived client and stays.
	invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("b", 0, "127.0.0.1:2"), body)
	_ = brokerCl.Close()
	select {
	case <-ns.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("connection close not seen")
	}
	resp := invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	var rd RouteData
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		t.Fatal(err)
	}
	if len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerName != "b" {
		t.Fatalf("route after close: %s", resp.Body)
	}
}

func TestBrokerExpiresOnTheScanAfter120s(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	body := encodeRegisterBody(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body)
	clk.Advance(120 * time.Second) // scans at 10..120 s: silent for exactly 120 s is still alive
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil); resp.Code != 0 {
		t.Fatalf("expired too early: %d", resp.Code)
	}
	clk.Advance(10 * time.Second)
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil); resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("not expired after 130 s: %d", resp.Code)
	}
	_ = ns.Close()
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers left after Close", n)
	}
}

func TestKVConfig(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := newClient(t)
	kv := func(ns, key, value string) map[string]string {
		return map[string]string{"namespace": ns, "key": key, "value": value}
	}
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetKVConfig, kv("n", "k", ""), nil); resp.Code != rmq.RespQueryNotFound {
		t.Fatalf("missing key: %d", resp.Code)
	}
	if resp := invoke(t, cl, ns.addr, rmq.CodePutKVConfig, kv("", "k", "v"), nil); resp.Code == 0 {
		t.Fatal("put without namespace accepted")
	}
	invoke(t, cl, ns.addr, rmq.CodePutKVConfig, kv("n", "k", "v"), nil)
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetKVConfig, kv("n", "k", ""), nil); resp.Code != 0 || resp.Ext("value") != "v" {
		t.Fatalf("get: %d %v", resp.Code, resp.ExtFields)
	}
	resp := invoke(t, cl, ns.addr, rmq.CodeGetKVListByNamespace, kv("n", "", ""), nil)
	if resp.Code != 0 || string(resp.Body) != `{"table":{"k":"v"}}` {
		t.Fatalf("list: %d %s", resp.Code, resp.Body)
	}
	invoke(t, cl, ns.addr, rmq.CodeDeleteKVConfig, kv("n", "k", ""), nil)
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetKVListByNamespace, kv("n", "", ""), nil); resp.Code != rmq.RespQueryNotFound {
		t.Fatalf("list after delete: %d", resp.Code)
	}
	// ORDER_TOPIC_CONFIG feeds orderTopicConf and the registration answer.
	invoke(t, cl, ns.addr, rmq.CodePutKVConfig, kv(OrderTopicNamespace, "T", "a:4"), nil)
	body := encodeRegisterBody(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	resp = invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body)
	if string(resp.Body) != `{"table":{"T":"a:4"}}` {
		t.Fatalf("registration answer body %s", resp.Body)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if !strings.HasSuffix(string(resp.Body), `,"orderTopicConf":"a:4"}`) {
		t.Fatalf("route %s", resp.Body)
	}
}

// --- Registrar ---

type sentLog chan Sent

func (c sentLog) wait(t *testing.T, n int) []Sent {
	t.Helper()
	out := make([]Sent, 0, n)
	for len(out) < n {
		select {
		case s := <-c:
			out = append(out, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d registrations: %+v", len(out), n, out)
		}
	}
	return out
}

func routeOf(t *testing.T, ns *testNS, topicName string) (RouteData, bool) {
	t.Helper()
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.table.Route(topicName)
}

func TestRegistrarWithTwoNameServers(t *testing.T) {
	clk := clock.NewManual(t0)
	ns1, ns2 := startNS(t, clk, ""), startNS(t, clk, "")
	sent := make(sentLog, 64)
	cl := newClient(t)
	broker := BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"}
	r := NewRegistrar(cl, []string{ns1.addr, ns2.addr}, broker, RegistrarOptions{
		Clock: clk, Logger: testLogger(t), FullEvery: 3, OnSent: func(s Sent) { sent <- s },
	})
	defer r.Close()
	r.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	r.Start()
	for _, s := range sent.wait(t, 2) {
		if !s.Full || s.Err != nil {
			t.Fatalf("first registration %+v", s)
		}
	}
	for _, ns := range []*testNS{ns1, ns2} {
		if _, ok := routeOf(t, ns, "T"); !ok {
			t.Fatalf("no route on %s", ns.addr)
		}
	}
	// A topic change goes out as a delta to both.
	r.Update(map[string]TopicConfig{"U": topic("U", 2, 6)}, DataVersion{Timestamp: 1, Counter: 2})
	for _, s := range sent.wait(t, 2) {
		if s.Full || s.Err != nil {
			t.Fatalf("update %+v", s)
		}
	}
	for _, ns := range []*testNS{ns1, ns2} {
		if _, ok := routeOf(t, ns, "T"); ok {
			t.Fatal("removed topic still routed")
		}
		if _, ok := routeOf(t, ns, "U"); !ok {
			t.Fatal("added topic not routed")
		}
	}
	// Heartbeats: deltas, every third a full one; the broker never expires
	// although 10 minutes pass.
	var fulls, deltas int
	for i := 1; i <= 20; i++ {
		clk.Advance(30 * time.Second)
		for _, s := range sent.wait(t, 2) {
			if s.Err != nil {
				t.Fatalf("heartbeat %d: %v", i, s.Err)
			}
			if s.Full {
				fulls++
			} else {
				deltas++
				if s.BodyBytes > 200 {
					t.Fatalf("heartbeat delta of %d bytes", s.BodyBytes)
				}
			}
		}
	}
	if fulls != 2*6 || deltas != 2*14 {
		t.Fatalf("%d full and %d delta registrations over 20 heartbeats", fulls, deltas)
	}
	if _, ok := routeOf(t, ns1, "U"); !ok {
		t.Fatal("broker expired despite heartbeats")
	}

	// Close unregisters from both.
	r.Close()
	for _, ns := range []*testNS{ns1, ns2} {
		if _, ok := routeOf(t, ns, "U"); ok {
			t.Fatalf("route on %s after the registrar closed", ns.addr)
		}
	}
}

func TestRegistrarFullAfterNameServerRestart(t *testing.T) {
	clk := clock.NewManual(t0)
	ns1, ns2 := startNS(t, clk, ""), startNS(t, clk, "")
	sent := make(sentLog, 64)
	cl := newClient(t)
	r := NewRegistrar(cl, []string{ns1.addr, ns2.addr}, BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) { sent <- s }})
	defer r.Close()
	r.Update(map[string]TopicConfig{"U": topic("U", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	r.Start()
	sent.wait(t, 2)

	// Restart ns2 on the same address: its next heartbeat delta is refused
	// and a full registration follows at once; ns1 only gets deltas.
	addr2 := ns2.addr
	_ = ns2.Close()
	ns2b := startNS(t, clk, addr2)
	var refused, full2 bool
	for beat := 1; beat <= 3 && !full2; beat++ {
		clk.Advance(30 * time.Second)
		got := sent.wait(t, 2)
		for len(got) > 0 {
			s := got[0]
			got = got[1:]
			switch {
			case s.NameServer == ns1.addr:
				if s.Full || s.Err != nil {
					t.Fatalf("ns1: %+v", s)
				}
			case errors.Is(s.Err, ErrNeedFull):
				refused = true
				got = append(got, sent.wait(t, 1)...)
			case s.Err != nil:
				// The send hit the old connection before the client saw
				// it close; the next heartbeat retries.
			case s.Full:
				full2 = true
			default:
				t.Fatalf("restarted name server accepted a delta: %+v", s)
			}
		}
	}
	if !refused || !full2 {
		t.Fatalf("restart: refused %v, full %v", refused, full2)
	}
	if _, ok := routeOf(t, ns2b, "U"); !ok {
		t.Fatal("restarted name server has no route")
	}
}

// TestRegistrarWaitRegistered: WaitRegistered returns once a name server
// accepted the broker (its route is then there), and not before: with only
// an unreachable name server it ends with the caller's deadline.
func TestRegistrarWaitRegistered(t *testing.T) {
	clk := clock.NewManual(t0)
	cl := newClient(t)
	broker := BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"}

	dead := NewRegistrar(cl, []string{"127.0.0.1:1"}, broker, RegistrarOptions{Clock: clk, Logger: testLogger(t)})
	defer dead.Close()
	dead.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := dead.WaitRegistered(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with no name server up: %v, want the deadline", err)
	}

	ns := startNS(t, clk, "")
	r := NewRegistrar(cl, []string{"127.0.0.1:1", ns.addr}, broker, RegistrarOptions{Clock: clk, Logger: testLogger(t)})
	defer r.Close()
	r.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	r.Start()
	if err := r.WaitRegistered(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := routeOf(t, ns, "T"); !ok {
		t.Fatal("WaitRegistered returned before the name server had the broker's topics")
	}
}
