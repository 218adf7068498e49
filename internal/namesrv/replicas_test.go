package namesrv

import (
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestMasterAndSlaveRegisterOverTheWire: a master and a slave of one
// broker name register through their registrars; the route and the
// cluster info list both ids in brokerAddrs, the slave learns the
// master's client and replication addresses from the answer to its
// registration (as RocketMQ's RegisterBrokerResult carries them), and when
// the slave unregisters the master stays routed.
func TestMasterAndSlaveRegisterOverTheWire(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	masterSent, slaveSent := make(sentLog, 16), make(sentLog, 16)
	master := NewRegistrar(cl, []string{ns.addr}, BrokerInfo{Cluster: "c", Name: "a", ID: 0, Addr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) { masterSent <- s }})
	defer master.Close()
	master.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	master.Start()
	if s := masterSent.wait(t, 1)[0]; s.Err != nil {
		t.Fatalf("master registration: %v", s.Err)
	}
	if m := master.Master(); m != (MasterInfo{}) {
		t.Fatalf("a master learned a master: %+v", m)
	}

	learned := make(chan MasterInfo, 4)
	slave := NewRegistrar(cl, []string{ns.addr}, BrokerInfo{Cluster: "c", Name: "a", ID: 1, Addr: "127.0.0.1:20911", HAServerAddr: "127.0.0.1:20912"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) { slaveSent <- s }, OnMaster: func(m MasterInfo) { learned <- m }})
	defer slave.Close()
	slave.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	slave.Start()
	if s := slaveSent.wait(t, 1)[0]; s.Err != nil {
		t.Fatalf("slave registration: %v", s.Err)
	}
	want := MasterInfo{Addr: "127.0.0.1:10911", HAAddr: "127.0.0.1:10912"}
	select {
	case m := <-learned:
		if m != want {
			t.Fatalf("slave learned %+v, want %+v", m, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the slave was not told its master")
	}
	if m := slave.Master(); m != want {
		t.Fatalf("Master() = %+v", m)
	}

	rd, ok := routeOf(t, ns, "T")
	if !ok || len(rd.BrokerDatas) != 1 {
		t.Fatalf("route %+v", rd)
	}
	if addrs := rd.BrokerDatas[0].BrokerAddrs; len(addrs) != 2 || addrs[0] != "127.0.0.1:10911" || addrs[1] != "127.0.0.1:20911" {
		t.Fatalf("brokerAddrs %v, want {0: master, 1: slave}", addrs)
	}
	resp := invoke(t, cl, ns.addr, rmq.CodeGetBrokerClusterInfo, nil, nil)
	ci, err := rmq.DecodeClusterInfoBody(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if addrs := ci.BrokerAddrTable["a"].BrokerAddrs; len(addrs) != 2 || addrs[1] != "127.0.0.1:20911" {
		t.Fatalf("cluster info brokerAddrs %v", addrs)
	}
	// Heartbeats keep telling the slave the same master, without calling
	// OnMaster again.
	clk.Advance(30 * time.Second)
	slaveSent.wait(t, 1)
	masterSent.wait(t, 1)
	select {
	case m := <-learned:
		t.Fatalf("OnMaster called again with %+v", m)
	default:
	}

	slave.Close()
	rd, ok = routeOf(t, ns, "T")
	if !ok || len(rd.BrokerDatas) != 1 {
		t.Fatalf("route after the slave left: %+v", rd)
	}
	if addrs := rd.BrokerDatas[0].BrokerAddrs; len(addrs) != 1 || addrs[0] != "127.0.0.1:10911" {
		t.Fatalf("brokerAddrs after the slave left: %v, want the master only", addrs)
	}
}
