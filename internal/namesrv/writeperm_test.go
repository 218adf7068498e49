package namesrv

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func queuePerm(t *testing.T, tb *Table, topicName, broker string) int32 {
	t.Helper()
	for _, q := range mustRoute(t, tb, topicName).QueueDatas {
		if q.BrokerName == broker {
			return q.Perm
		}
	}
	t.Fatalf("route of %s has no queues of %s", topicName, broker)
	return 0
}

// TestWipeWritePermOutlivesRegistrations: a drained broker name's queues
// are routed read-only through every kind of registration (full, delta,
// heartbeat, a restart that drops and re-registers it) until
// AddWritePerm, which routes the registered perms again.
func TestWipeWritePermOutlivesRegistrations(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "broker-a", 0, "10.0.0.1:1", 1, topic("T", 4, 6), topic("RO", 4, 4)), t0)
	tb.Register(full("c", "broker-b", 0, "10.0.0.2:1", 1, topic("T", 4, 6)), t0)

	n, err := tb.WipeWritePerm("broker-a")
	if err != nil || n != 2 {
		t.Fatalf("wipe: %d topics, %v; want 2", n, err)
	}
	if p := queuePerm(t, tb, "T", "broker-a"); p != 4 {
		t.Fatalf("drained broker-a routed with perm %d, want 4", p)
	}
	if p := queuePerm(t, tb, "T", "broker-b"); p != 6 {
		t.Fatalf("broker-b routed with perm %d, want 6 (only the named broker is drained)", p)
	}
	// A full registration with a new version (a topic change), a delta
	// heartbeat, then a restart (dropped, registered afresh).
	tb.Register(full("c", "broker-a", 0, "10.0.0.1:1", 2, topic("T", 4, 6), topic("RO", 4, 4), topic("New", 2, 6)), t0.Add(time.Second))
	r := full("c", "broker-a", 0, "10.0.0.1:1", 2)
	r.Delta, r.BaseVersion, r.Topics = true, r.Version, nil
	if res := tb.Register(r, t0.Add(2*time.Second)); res.NeedFull {
		t.Fatal("heartbeat refused")
	}
	tb.Unregister("c", "broker-a", 0, "10.0.0.1:1")
	tb.Register(full("c", "broker-a", 0, "10.0.0.1:1", 1, topic("T", 4, 6), topic("RO", 4, 4), topic("New", 2, 6)), t0.Add(3*time.Second))
	for _, name := range []string{"T", "New"} {
		if p := queuePerm(t, tb, name, "broker-a"); p != 4 {
			t.Fatalf("after registrations and a restart %s routed with perm %d, want 4", name, p)
		}
	}
	if !tb.Drained("broker-a") || tb.Drained("broker-b") {
		t.Fatal("Drained does not say which broker is drained")
	}
	if n := tb.AddWritePerm("broker-a"); n != 3 {
		t.Fatalf("add: %d topics, want 3", n)
	}
	if p := queuePerm(t, tb, "T", "broker-a"); p != 6 {
		t.Fatalf("undrained T routed with perm %d, want 6", p)
	}
	if p := queuePerm(t, tb, "RO", "broker-a"); p != 4 {
		t.Fatalf("undrained read-only topic routed with perm %d, want its registered 4", p)
	}
}

func TestWipeWritePermOfAnUnknownBrokerAndTheLimit(t *testing.T) {
	tb := NewTable()
	if n, err := tb.WipeWritePerm("later"); n != 0 || err != nil {
		t.Fatalf("unknown broker: %d %v", n, err)
	}
	tb.Register(full("c", "later", 0, "10.0.0.1:1", 1, topic("T", 4, 6)), t0)
	if p := queuePerm(t, tb, "T", "later"); p != 4 {
		t.Fatalf("a broker drained before it registered is routed with perm %d, want 4", p)
	}
	for i := len(tb.wiped); i < MaxDrainedBrokers; i++ {
		if _, err := tb.WipeWritePerm("b" + strconv.Itoa(i)); err != nil {
			t.Fatalf("wipe %d: %v", i, err)
		}
	}
	if _, err := tb.WipeWritePerm("one-more"); err != ErrTooManyDrained {
		t.Fatalf("wipe beyond the limit: %v", err)
	}
	if _, err := tb.WipeWritePerm("later"); err != nil {
		t.Fatalf("wiping a drained broker again at the limit: %v", err)
	}
}

func TestWritePermRequestsOverTheWire(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	cl := newClient(t)
	body := encodeRegisterBody(map[string]TopicConfig{"A": topic("A", 4, 6), "B": topic("B", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	if resp := invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body); resp.Code != 0 {
		t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
	resp := invoke(t, cl, ns.addr, rmq.CodeWipeWritePermOfBroker, map[string]string{"brokerName": "a"}, nil)
	if resp.Code != 0 || resp.Ext("wipeTopicCount") != "2" {
		t.Fatalf("wipe: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	route, _ := routeOf(t, ns, "A")
	if route.QueueDatas[0].Perm != 4 {
		t.Fatalf("route after wipe: %+v", route.QueueDatas)
	}
	// The broker's next full registration does not undo it.
	if resp := invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body); resp.Code != 0 {
		t.Fatalf("re-register: %d %s", resp.Code, resp.Remark)
	}
	if route, _ = routeOf(t, ns, "A"); route.QueueDatas[0].Perm != 4 {
		t.Fatalf("route after a re-registration: %+v", route.QueueDatas)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeAddWritePermOfBroker, map[string]string{"brokerName": "a"}, nil)
	if resp.Code != 0 || resp.Ext("addTopicCount") != "2" {
		t.Fatalf("add: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if route, _ = routeOf(t, ns, "A"); route.QueueDatas[0].Perm != 6 {
		t.Fatalf("route after add: %+v", route.QueueDatas)
	}
	resp = invoke(t, cl, ns.addr, rmq.CodeWipeWritePermOfBroker, nil, nil)
	if resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "brokerName is missing") {
		t.Fatalf("wipe without a broker name: code %d remark %q", resp.Code, resp.Remark)
	}
}
