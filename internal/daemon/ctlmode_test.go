package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/vfs"
)

// The controller-mode tests run a controller Service over a FakeLog on
// netx's in-memory network, brokers on their own hosts there (so that a
// partition can cut one link), and a client host for the sends. Timing is
// scaled down (heartbeat 50 ms, lease 400 ms, session 600 ms) and real.
const (
	ctlHost    = "10.0.9.1"
	ctlAddr    = ctlHost + ":9880"
	sendHost   = "10.0.9.2"
	ctlGroup   = "broker-a"
	ctlLease   = 400 * time.Millisecond
	ctlSession = 600 * time.Millisecond
	ctlBeat    = 50 * time.Millisecond
)

type ctlHarness struct {
	t    *testing.T
	mem  *netx.Mem
	flog *controller.FakeLog
	svc  *controller.Service
	cl   *remoting.Client // the producer's
	ctl  *client.Client   // the operator's
	log  *slog.Logger
}

func newCtlHarness(t *testing.T) *ctlHarness {
	t.Helper()
	mem := netx.NewMem()
	h := &ctlHarness{t: t, mem: mem, flog: controller.NewFakeLog(controller.Voter{ID: 1, Addr: ctlAddr}),
		log: slog.New(slog.DiscardHandler)}
	if os.Getenv("PETREL_CTL_TEST_LOG") != "" {
		h.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := controller.DefaultServiceConfig()
	cfg.Heartbeat, cfg.Lease, cfg.Margin, cfg.SessionTimeout = ctlBeat, ctlLease, 50*time.Millisecond, ctlSession
	cfg.Logger = h.log
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h.svc = controller.NewService(cfg, h.flog)
	srv := remoting.NewServer(remoting.ServerOptions{Logger: h.log})
	h.svc.Register(srv)
	ln, err := mem.Host(ctlHost).Listen(ctlAddr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	h.svc.Start()
	h.cl = remoting.NewClient(remoting.ClientOptions{Network: mem.Host(sendHost)})
	h.ctl = client.New([]string{ctlAddr}, client.Options{Network: mem.Host(sendHost), Timeout: time.Second})
	t.Cleanup(func() {
		h.cl.Close()
		h.ctl.Close()
		h.svc.Close()
		srv.Close()
		<-done
	})
	return h
}

// brokerConfig is a replica on host with its data in fsys.
func (h *ctlHarness) brokerConfig(host string, fsys *vfs.MemFS) BrokerConfig {
	cfg := smallBrokerConfig()
	cfg.Store.FS = fsys
	cfg.Listen, cfg.Network, cfg.Logger = host+":10911", h.mem.Host(host), h.log.With("host", host)
	cfg.HA = HAConfig{Listen: host + ":10912", AwaitFirstSlave: true}
	cfg.Controller = ControllerConfig{Addrs: []string{ctlAddr}, HeartbeatInterval: ctlBeat}
	cfg.Broker.ReplicationTimeout = time.Second
	return cfg
}

func (h *ctlHarness) start(host string, fsys *vfs.MemFS) *Broker {
	h.t.Helper()
	d, err := StartBroker(h.brokerConfig(host, fsys))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { d.Close() })
	return d
}

// group is the group as the controller committed it.
func (h *ctlHarness) group() fsm.Group {
	var g fsm.Group
	h.flog.Read(func(s *fsm.State) {
		if p := s.Groups[ctlGroup]; p != nil {
			g = *p
			g.ISR = slices.Clone(p.ISR)
		}
	})
	return g
}

// await polls cond (every 5 ms, up to 20 s).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// send sends body (with its own UNIQ_KEY) to addr and returns the code.
func (h *ctlHarness) send(addr, body string) *remoting.Command {
	h.t.Helper()
	req := sendRequest("Orders", []byte(body))
	req.ExtFields["properties"] = "UNIQ_KEY\x01" + body + "\x02"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.cl.Invoke(ctx, addr, req)
	if err != nil {
		h.t.Fatalf("send %s to %s: %v", body, addr, err)
	}
	return resp
}

// sendOK sends until one is SEND_OK (a failover in progress answers
// refusals first).
func (h *ctlHarness) sendOK(addr, body string) {
	h.t.Helper()
	var last *remoting.Command
	await(h.t, "a send to "+addr+" is acked", func() bool {
		last = h.send(addr, body)
		return last.Code == 0
	})
}

func (h *ctlHarness) replicaID(d *Broker) int64 {
	d.ctl.mu.Lock()
	defer d.ctl.mu.Unlock()
	return d.ctl.id
}

// logBytes is the commit log of d from its first byte to its end.
func logBytes(t *testing.T, d *Broker) []byte {
	t.Helper()
	var out []byte
	end := d.Store().Written()
	for off := d.Store().CommitLogMinOffset(); off < end; {
		b, err := d.Store().ReadRaw(off, int(min(end-off, 1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("no bytes at %d below the end %d", off, end)
		}
		out = append(out, b...)
		off += int64(len(b))
	}
	return out
}

// TestControllerModeFirstBrokerIsMasterAndTheSecondItsSlave: a fresh
// group's first replica becomes its master at epoch 1 and takes sends, its
// replica id persisted; the second is a slave (refuses sends), joins the
// in-sync set once caught up, and serves what the master acked.
func TestControllerModeFirstBrokerIsMasterAndTheSecondItsSlave(t *testing.T) {
	h := newCtlHarness(t)
	fsA, fsB := vfs.NewMem(), vfs.NewMem()
	a := h.start("10.0.0.1", fsA)
	await(t, "the first replica is master", func() bool { return a.Core().Role() == broker.RoleMaster })
	if g := h.group(); g.Master != 1 || g.Epoch != 1 || !slices.Equal(g.ISR, []int64{1}) {
		t.Fatalf("group after the first registration: %+v; want master 1, epoch 1, ISR [1]", g)
	}
	h.sendOK(a.Advertised(), "m1")
	b := h.start("10.0.0.2", fsB)
	await(t, "the second replica joins the in-sync set", func() bool { return slices.Equal(h.group().ISR, []int64{1, 2}) })
	if b.Core().Role() != broker.RoleSlave || h.replicaID(b) != 2 {
		t.Fatalf("second replica: role %v id %d; want a slave with id 2", b.Core().Role(), h.replicaID(b))
	}
	if r := h.send(b.Advertised(), "on-slave"); r.Code == 0 {
		t.Fatal("the slave acked a send")
	}
	h.sendOK(a.Advertised(), "m2")
	if m := pullOne(t, h.cl, b.Advertised(), "Orders", 1); string(m.Body) != "m2" {
		t.Fatalf("the slave served %q at offset 1, want m2", m.Body)
	}
	for _, c := range []struct {
		fs   *vfs.MemFS
		want int64
	}{{fsA, 1}, {fsB, 2}} {
		id, err := readReplicaID(c.fs, "/data/ha/"+replicaIDFile, ctlGroup)
		if err != nil || id != c.want {
			t.Fatalf("persisted replica id %d, %v; want %d", id, err, c.want)
		}
	}
}

// TestControllerModeFailoverAndRejoin: the master is lost (closed, its
// disk kept as kill -9 leaves it) with a record only it holds (stored
// while cut from its slave, never acked); the slave is elected at epoch
// 2 once the session and the lease bound passed, and acks sends; the old
// master returns as a slave of epoch 2, cuts the record no one acked, and
// its log ends byte-identical to the new master's.
func TestControllerModeFailoverAndRejoin(t *testing.T) {
	h := newCtlHarness(t)
	fsA, fsB := vfs.NewMem(), vfs.NewMem()
	a := h.start("10.0.0.1", fsA)
	await(t, "the first replica is master", func() bool { return a.Core().Role() == broker.RoleMaster })
	b := h.start("10.0.0.2", fsB)
	await(t, "the slave joins the in-sync set", func() bool { return slices.Equal(h.group().ISR, []int64{1, 2}) })
	h.sendOK(a.Advertised(), "acked-1")

	// Cut A from B: a send is stored on A, but B never gets it, so it is
	// not acked (the in-sync set {1,2} holds the commit point).
	h.mem.Partition("10.0.0.1", "10.0.0.2")
	if r := h.send(a.Advertised(), "unacked"); r.Code == 0 {
		t.Fatalf("a send the slave cannot hold was acked: %+v", r)
	}
	aLEO := a.Store().Written()
	if aLEO <= b.Store().Written() {
		t.Fatalf("A's log (%d) should be longer than B's (%d)", aLEO, b.Store().Written())
	}
	clone := fsA.KillClone()
	lost := time.Now()
	a.Close()
	h.mem.Heal("10.0.0.1", "10.0.0.2")

	await(t, "the slave is elected", func() bool { return b.Core().Role() == broker.RoleMaster })
	if took := time.Since(lost); took < ctlLease {
		t.Fatalf("the slave was master %v after the loss, before the old master's lease (%v) ran out", took, ctlLease)
	}
	if g := h.group(); g.Master != 2 || g.Epoch != 2 {
		t.Fatalf("group after the failover: %+v; want master 2 at epoch 2", g)
	}
	h.sendOK(b.Advertised(), "acked-2")

	a2 := h.start("10.0.0.1", clone)
	if id := h.replicaID(a2); id != 0 && id != 1 {
		t.Fatalf("the old master came back as replica %d, want 1", id)
	}
	await(t, "the old master catches up as a slave", func() bool {
		return a2.Core().Role() == broker.RoleSlave && a2.Store().Written() == b.Store().Written()
	})
	if h.replicaID(a2) != 1 {
		t.Fatalf("the old master came back as replica %d, want 1", h.replicaID(a2))
	}
	await(t, "the logs are identical", func() bool { return bytes.Equal(logBytes(t, a2), logBytes(t, b)) })
	if m := pullOne(t, h.cl, a2.Advertised(), "Orders", 1); string(m.Body) != "acked-2" {
		t.Fatalf("the rejoined replica serves %q at offset 1, want acked-2 (the unacked record cut)", m.Body)
	}
}

// TestControllerModeLeaseFencesAnIsolatedMaster: a master cut from the
// controller only (its slave still fetches) stops acking once its lease
// ran out, before the controller elects the slave; after the heal it
// learns the new epoch and becomes a slave.
func TestControllerModeLeaseFencesAnIsolatedMaster(t *testing.T) {
	h := newCtlHarness(t)
	a := h.start("10.0.0.1", vfs.NewMem())
	await(t, "the first replica is master", func() bool { return a.Core().Role() == broker.RoleMaster })
	b := h.start("10.0.0.2", vfs.NewMem())
	await(t, "the slave joins the in-sync set", func() bool { return slices.Equal(h.group().ISR, []int64{1, 2}) })
	h.sendOK(a.Advertised(), "before")

	h.mem.Partition("10.0.0.1", ctlHost)
	cut := time.Now()
	await(t, "the isolated master's lease runs out", func() bool { return !a.ctl.lease.Valid() })
	if took := time.Since(cut); took > ctlLease+200*time.Millisecond {
		t.Fatalf("the lease ran %v after the last heartbeat could have been granted, longer than %v", took, ctlLease)
	}
	for i := range 5 {
		if r := h.send(a.Advertised(), fmt.Sprintf("fenced-%d", i)); r.Code == 0 {
			t.Fatalf("the isolated master acked a send after its lease ran out")
		}
	}
	await(t, "the slave is elected", func() bool { return b.Core().Role() == broker.RoleMaster })
	h.sendOK(b.Advertised(), "after")
	if a.Core().Role() != broker.RoleMaster {
		t.Fatal("the isolated master learnt of the election through a cut link")
	}
	if r := h.send(a.Advertised(), "still-fenced"); r.Code == 0 {
		t.Fatal("the deposed master acked a send")
	}
	h.mem.Heal("10.0.0.1", ctlHost)
	await(t, "the old master turns slave", func() bool { return a.Core().Role() == broker.RoleSlave })
	if g := h.group(); g.Master != 2 || g.Epoch != 2 {
		t.Fatalf("group: %+v; want master 2 at epoch 2", g)
	}
}

// TestControllerModeTransfer: petrel cluster transfer's request hands the
// group to the in-sync slave: the master fences itself, waits for the
// slave to hold its log, resigns; the slave is master at the next epoch at
// once (no session timeout), and nothing acked is lost.
func TestControllerModeTransfer(t *testing.T) {
	h := newCtlHarness(t)
	a := h.start("10.0.0.1", vfs.NewMem())
	await(t, "the first replica is master", func() bool { return a.Core().Role() == broker.RoleMaster })
	b := h.start("10.0.0.2", vfs.NewMem())
	await(t, "the slave joins the in-sync set", func() bool { return slices.Equal(h.group().ISR, []int64{1, 2}) })
	for i := range 10 {
		h.sendOK(a.Advertised(), fmt.Sprintf("m%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.ctl.Transfer(ctx, &api.TransferRequest{Group: ctlGroup, ReplicaID: 2}); err != nil {
		t.Fatal(err)
	}
	await(t, "the target is master", func() bool { return b.Core().Role() == broker.RoleMaster })
	if g := h.group(); g.Master != 2 || g.Epoch != 2 || g.TransferTo != 0 {
		t.Fatalf("group after the transfer: %+v; want master 2 at epoch 2, no transfer pending", g)
	}
	await(t, "the old master is a slave", func() bool { return a.Core().Role() == broker.RoleSlave })
	h.sendOK(b.Advertised(), "after")
	await(t, "both logs are identical", func() bool { return bytes.Equal(logBytes(t, a), logBytes(t, b)) })
}
