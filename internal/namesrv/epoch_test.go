package namesrv

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// withEpoch is r claiming master epoch e.
func withEpoch(r Registration, e uint32) Registration {
	r.MasterEpoch = e
	return r
}

func masterAddr(t *testing.T, tb *Table, topicName string) string {
	t.Helper()
	rd := mustRoute(t, tb, topicName)
	if len(rd.BrokerDatas) != 1 {
		t.Fatalf("route %+v", rd)
	}
	return rd.BrokerDatas[0].BrokerAddrs[MasterID]
}

// TestMasterEpochHighestWins: a claim to broker id 0 with a higher epoch
// replaces the master; a later claim with a lower epoch than the live
// master's is ignored (nothing changes, the claimer is not listed as
// master, the result says so); the demoted master registered under its
// replica id is a slave; a claim equal to the held epoch is the master's
// own heartbeat.
func TestMasterEpochHighestWins(t *testing.T) {
	tb := NewTable()
	a, b := "10.0.0.1:10911", "10.0.0.2:10911"
	tb.Register(withEpoch(full("c", "g", 0, a, 1, topic("T", 4, 6)), 1), t0)
	tb.Register(withEpoch(full("c", "g", 2, b, 1, topic("T", 4, 6)), 1), t0)
	if got := masterAddr(t, tb, "T"); got != a {
		t.Fatalf("master %q, want %q", got, a)
	}
	// b is elected: epoch 2.
	res := tb.Register(withEpoch(full("c", "g", 0, b, 2, topic("T", 4, 6), topic("New", 1, 6)), 2), t0)
	if res.Ignored {
		t.Fatal("the higher epoch's claim was ignored")
	}
	if got := masterAddr(t, tb, "T"); got != b {
		t.Fatalf("master %q after the epoch-2 claim, want %q", got, b)
	}
	if _, ok := tb.Route("New"); !ok {
		t.Fatal("the new master's topics are not routed")
	}
	// The old master, not yet fenced, heartbeats its epoch-1 claim.
	res = tb.Register(withEpoch(full("c", "g", 0, a, 5, topic("T", 4, 6), topic("Stale", 1, 6)), 1), t0.Add(time.Second))
	if !res.Ignored || res.HeldEpoch != 2 {
		t.Fatalf("result %+v, want the stale claim ignored with the held epoch 2", res)
	}
	if got := masterAddr(t, tb, "T"); got != b {
		t.Fatalf("master %q after the stale claim, want %q", got, b)
	}
	if _, ok := tb.Route("Stale"); ok {
		t.Fatal("the stale claim's topics are routed")
	}
	rd := mustRoute(t, tb, "T")
	for id, addr := range rd.BrokerDatas[0].BrokerAddrs {
		if addr == a {
			t.Fatalf("the stale master is listed (id %d)", id)
		}
	}
	// Its deltas are ignored too (it does not hold id 0: a full one is asked).
	d := withEpoch(Registration{Broker: BrokerID{Cluster: "c", Name: "g", ID: 0}, Addr: a, Delta: true,
		BaseVersion: DataVersion{Timestamp: 1, Counter: 5}, Version: DataVersion{Timestamp: 1, Counter: 6}}, 1)
	if res := tb.Register(d, t0.Add(time.Second)); !res.NeedFull {
		t.Fatalf("stale delta %+v, want NeedFull", res)
	}
	// The new master's heartbeat (same epoch) goes through.
	if res := tb.Register(withEpoch(full("c", "g", 0, b, 3, topic("T", 4, 6)), 2), t0.Add(2*time.Second)); res.Ignored || res.Stale {
		t.Fatalf("the master's own heartbeat: %+v", res)
	}
	// Demoted, the old master registers under its replica id: a slave.
	tb.Register(withEpoch(full("c", "g", 1, a, 6), 2), t0.Add(2*time.Second))
	rd = mustRoute(t, tb, "T")
	if addrs := rd.BrokerDatas[0].BrokerAddrs; len(addrs) != 2 || addrs[0] != b || addrs[1] != a {
		t.Fatalf("brokerAddrs %v, want {0: %s, 1: %s}", addrs, b, a)
	}
}

// TestMasterEpochWithoutTheField: registrations without an epoch (the
// official brokers, brokers without a controller) behave as before: the
// last claim to id 0 wins, whatever epoch the held one had.
func TestMasterEpochWithoutTheField(t *testing.T) {
	tb := NewTable()
	a, b := "10.0.0.1:10911", "10.0.0.2:10911"
	tb.Register(withEpoch(full("c", "g", 0, a, 1, topic("T", 4, 6)), 3), t0)
	if res := tb.Register(full("c", "g", 0, b, 1, topic("T", 4, 6)), t0); res.Ignored {
		t.Fatal("a claim without an epoch was ignored")
	}
	if got := masterAddr(t, tb, "T"); got != b {
		t.Fatalf("master %q, want the last claim %q", got, b)
	}
	tb.Register(full("c", "g", 0, a, 2, topic("T", 4, 6)), t0)
	if got := masterAddr(t, tb, "T"); got != a {
		t.Fatalf("master %q, want the last claim %q", got, a)
	}
}

// TestMasterEpochOnlyAgainstALiveMaster: a lower epoch is refused only
// while the higher epoch's master is registered; once it is gone
// (expired, unregistered), the claim is taken.
func TestMasterEpochOnlyAgainstALiveMaster(t *testing.T) {
	tb := NewTable()
	a, b := "10.0.0.1:10911", "10.0.0.2:10911"
	tb.Register(withEpoch(full("c", "g", 0, b, 1, topic("T", 4, 6)), 4), t0)
	if res := tb.Register(withEpoch(full("c", "g", 0, a, 1, topic("T", 4, 6)), 3), t0); !res.Ignored {
		t.Fatal("a lower epoch was taken while the higher one is live")
	}
	tb.Expire(t0.Add(200*time.Second), 120*time.Second)
	if res := tb.Register(withEpoch(full("c", "g", 0, a, 2, topic("T", 4, 6)), 3), t0.Add(200*time.Second)); res.Ignored {
		t.Fatal("the claim was ignored with no live master")
	}
	if got := masterAddr(t, tb, "T"); got != a {
		t.Fatalf("master %q, want %q", got, a)
	}
}

// TestMasterEpochExtField: the registration codec carries petrelMasterEpoch
// (decimal) when the epoch is set and not otherwise; a malformed value is
// a bad registration.
func TestMasterEpochExtField(t *testing.T) {
	h := rmq.RegisterBrokerRequest{BrokerIdentity: rmq.BrokerIdentity{ClusterName: "c", BrokerName: "g", BrokerAddr: "10.0.0.1:1", BrokerID: 0}, MasterEpoch: 7}
	c := rmq.EncodeRegisterBroker(h, nil)
	if v := c.Ext(ExtMasterEpoch); v != "7" {
		t.Fatalf("ext %s = %q, want 7", ExtMasterEpoch, v)
	}
	r, err := decodeRegistration(c)
	if err != nil || r.MasterEpoch != 7 {
		t.Fatalf("decoded %+v %v", r, err)
	}
	h.MasterEpoch = 0
	if c := rmq.EncodeRegisterBroker(h, nil); c.Ext(ExtMasterEpoch) != "" {
		t.Fatal("an epoch field without an epoch")
	}
	for _, bad := range []string{"-1", "x", "4294967296"} {
		c := rmq.EncodeRegisterBroker(h, nil)
		c.ExtFields[ExtMasterEpoch] = bad
		if _, err := decodeRegistration(c); !errors.Is(err, ErrBadRegistration) || !strings.Contains(err.Error(), ExtMasterEpoch) {
			t.Fatalf("epoch %q: %v, want a bad registration naming the field", bad, err)
		}
	}
}

// TestRegistrarSetIdentity: a slave promoted with SetIdentity(0, epoch)
// registers again at once (no heartbeat needed) with its epoch and is the
// master in the route; the old master's registrar, still claiming epoch 1,
// is not listed; demoted with SetIdentity(replica id, epoch), it is a
// slave.
func TestRegistrarSetIdentity(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	v := DataVersion{Timestamp: 1, Counter: 1}
	aSent, bSent := make(sentLog, 16), make(sentLog, 16)
	a := NewRegistrar(cl, []string{ns.addr}, BrokerInfo{Cluster: "c", Name: "g", ID: 0, Addr: "127.0.0.1:10911"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) { aSent <- s }})
	defer a.Close()
	a.SetIdentity(0, 1)
	a.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, v)
	a.Start()
	if s := aSent.wait(t, 1)[0]; s.Err != nil {
		t.Fatal(s.Err)
	}
	learned := make(chan MasterInfo, 4)
	b := NewRegistrar(cl, []string{ns.addr}, BrokerInfo{Cluster: "c", Name: "g", ID: 2, Addr: "127.0.0.1:20911"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) { bSent <- s }, OnMaster: func(m MasterInfo) { learned <- m }})
	defer b.Close()
	b.SetIdentity(2, 1)
	b.Update(map[string]TopicConfig{"T": topic("T", 4, 6)}, v)
	b.Start()
	bSent.wait(t, 1)
	select {
	case m := <-learned:
		if m.Addr != "127.0.0.1:10911" {
			t.Fatalf("slave learned %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the slave was not told its master")
	}

	b.SetIdentity(0, 2) // promoted
	if s := bSent.wait(t, 1)[0]; s.Err != nil || !s.Full {
		t.Fatalf("registration after SetIdentity: %+v, want a full one accepted", s)
	}
	if m := b.Master(); m != (MasterInfo{}) {
		t.Fatalf("a master still names a master: %+v", m)
	}
	rd, _ := routeOf(t, ns, "T")
	if got := rd.BrokerDatas[0].BrokerAddrs; len(got) != 1 || got[0] != "127.0.0.1:20911" {
		t.Fatalf("brokerAddrs %v after the promotion, want {0: b}", got)
	}
	// The old master's heartbeat with epoch 1 changes nothing: its delta
	// is refused (it does not hold id 0), its full registration ignored.
	clk.Advance(30 * time.Second)
	if s := aSent.wait(t, 2); !errors.Is(s[0].Err, ErrNeedFull) || s[1].Err != nil || !s[1].Full {
		t.Fatalf("old master's heartbeat: %+v, want a refused delta and a full one", s)
	}
	bSent.wait(t, 1)
	rd, _ = routeOf(t, ns, "T")
	if got := rd.BrokerDatas[0].BrokerAddrs; len(got) != 1 || got[0] != "127.0.0.1:20911" {
		t.Fatalf("brokerAddrs %v after the stale heartbeat, want {0: b}", got)
	}
	a.SetIdentity(3, 2) // demoted
	aSent.wait(t, 1)
	rd, _ = routeOf(t, ns, "T")
	if got := rd.BrokerDatas[0].BrokerAddrs; len(got) != 2 || got[0] != "127.0.0.1:20911" || got[3] != "127.0.0.1:10911" {
		t.Fatalf("brokerAddrs %v after the demotion, want {0: b, 3: a}", got)
	}
}
