package brokerfront_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// slaveOf is a broker config edit: a slave whose master is at *addr (read
// at each send; "" for none known).
func slaveOf(addr *atomic.Value) func(*daemon.BrokerConfig) {
	return func(c *daemon.BrokerConfig) {
		c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave
		c.Broker.MasterAddr = func() string { s, _ := addr.Load().(string); return s }
	}
}

func addrOf(s string) *atomic.Value {
	var v atomic.Value
	v.Store(s)
	return &v
}

// TestSlaveForwardsSendsToItsMaster: a slave that knows its master relays
// a 4.x producer's SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and
// oneway sends to it and answers with the master's answer (code, msgId,
// queue offset; a refusal with the master's code and remark), storing
// nothing itself; so a demoted master keeps serving the producers whose
// routes still name it (issue 17 item 5).
func TestSlaveForwardsSendsToItsMaster(t *testing.T) {
	master := startFront(t)
	slave := startFrontWith(t, slaveOf(addrOf(master.addr)))

	resp := slave.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("v1"))
	if resp.Code != rmq.RespSuccess || resp.Ext("msgId") == "" || resp.Ext("queueOffset") != "0" {
		t.Fatalf("V1 send through the slave: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	v2 := map[string]string{"a": "pg", "b": "Orders", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": ""}
	resp = slave.invoke(t, codeSendMessageV2, v2, []byte("v2"))
	if resp.Code != rmq.RespSuccess || resp.Ext("queueOffset") != "1" {
		t.Fatalf("V2 send through the slave: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	batch := message.EncodeBatch([]message.BatchItem{{Body: []byte("b1")}, {Body: []byte("b2")}})
	resp = slave.invoke(t, rmq.CodeSendBatchMessage, sendExt("Orders", "", map[string]string{"batch": "true"}), batch)
	if resp.Code != rmq.RespSuccess || strings.Count(resp.Ext("msgId"), ",") != 1 || resp.Ext("queueOffset") != "2" {
		t.Fatalf("batch through the slave: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	// A oneway send is forwarded oneway.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := slave.client.InvokeOneway(ctx, slave.addr, remoting.NewRequest(rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("oneway"))); err != nil {
		t.Fatal(err)
	}
	if got := master.settledMaxOffset(t, "Orders", 5); got != "5" {
		t.Fatalf("the master holds %s messages, want 5", got)
	}
	if got := slave.maxOffset(t, "Orders"); got != "0" {
		t.Fatalf("the slave stored %s messages itself", got)
	}
	// The master's refusal keeps its code and remark.
	resp = slave.invoke(t, rmq.CodeSendMessage, sendExt("Bad Topic!", "", nil), []byte("x"))
	direct := master.invoke(t, rmq.CodeSendMessage, sendExt("Bad Topic!", "", nil), []byte("x"))
	if resp.Code != direct.Code || resp.Remark != direct.Remark || resp.Code == rmq.RespSuccess {
		t.Fatalf("refusal through the slave: code %d remark %q; the master answers code %d remark %q", resp.Code, resp.Remark, direct.Code, direct.Remark)
	}
}

// TestSlaveForwardWithoutAReachableMaster: with no master known the slave
// refuses as before (SERVICE_NOT_AVAILABLE, "slave"); with one it cannot
// reach, SERVICE_NOT_AVAILABLE naming the master and saying to retry,
// without the Go error behind it.
func TestSlaveForwardWithoutAReachableMaster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	addr := addrOf("")
	slave := startFrontWith(t, slaveOf(addr))
	resp := slave.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x"))
	if resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("no master known: code %d remark %q", resp.Code, resp.Remark)
	}
	addr.Store(gone)
	resp = slave.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x"))
	if resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, gone) || !strings.Contains(resp.Remark, "retry") ||
		strings.Contains(resp.Remark, "connect") || strings.Contains(resp.Remark, "refused") {
		t.Fatalf("master unreachable: code %d remark %q", resp.Code, resp.Remark)
	}
}

// TestSlaveForwardsOnlyOnce: two slaves that name each other as master
// (stale routes) do not pass a send back and forth: the second refuses a
// forwarded send instead of forwarding it again.
func TestSlaveForwardsOnlyOnce(t *testing.T) {
	aAddr, bAddr := addrOf(""), addrOf("")
	a := startFrontWith(t, slaveOf(aAddr))
	b := startFrontWith(t, slaveOf(bAddr))
	aAddr.Store(b.addr)
	bAddr.Store(a.addr)
	resp := a.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x"))
	if resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("send between two slaves: code %d remark %q", resp.Code, resp.Remark)
	}
}

// holdingMaster is a remoting server standing in for a master that sits
// on every SEND_MESSAGE (a paused one) until free is called (at the
// latest by the test's cleanup); arrived gets one value per send, got
// counts them.
type holdingMaster struct {
	addr    string
	got     atomic.Int64
	arrived chan struct{}
	free    func()
}

func startHoldingMaster(t *testing.T) *holdingMaster {
	t.Helper()
	release := make(chan struct{})
	var once sync.Once
	m := &holdingMaster{arrived: make(chan struct{}, 1024), free: func() { once.Do(func() { close(release) }) }}
	srv := remoting.NewServer(remoting.ServerOptions{})
	srv.Handle(rmq.CodeSendMessage, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		m.got.Add(1)
		m.arrived <- struct{}{}
		<-release
		return rmq.EncodeSendResponse(req, rmq.RespSuccess, rmq.SendResponse{MsgID: "00", Region: "DefaultRegion"})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Cleanup(m.free)
	m.addr = ln.Addr().String()
	return m
}

// TestSlaveForwardsAreBounded: while the master sits on the forwarded
// sends, at most the bound are in flight; beyond it a send is SYSTEM_BUSY
// at once (producers retry), and the held ones are answered when the
// master answers. (Each send names its own queue: the sends of one read
// to one queue are forwarded one after the other.)
func TestSlaveForwardsAreBounded(t *testing.T) {
	m := startHoldingMaster(t)
	got, arrived, free := &m.got, m.arrived, m.free

	slave := startFrontWith(t, slaveOf(addrOf(m.addr)))
	const bound = 128 // brokerfront's maxForwardedSends
	var wg sync.WaitGroup
	codes := make(chan int16, bound)
	for q := range bound {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := slave.client.Invoke(ctx, slave.addr, remoting.NewRequest(rmq.CodeSendMessage, sendExt("Orders", "", map[string]string{"queueId": strconv.Itoa(q)}), []byte("held")))
			if err != nil {
				t.Error(err)
				codes <- -1
				return
			}
			codes <- resp.Code
		}()
	}
	for range bound {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d forwards reached the master", got.Load(), bound)
		}
	}
	resp := slave.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("one too many"))
	if resp.Code != rmq.RespSystemBusy {
		t.Fatalf("send beyond the bound: code %d remark %q, want SYSTEM_BUSY", resp.Code, resp.Remark)
	}
	free()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != rmq.RespSuccess {
			t.Fatalf("a held forward was answered code %d", c)
		}
	}
	if n := got.Load(); n != bound {
		t.Fatalf("the master got %d forwards, want %d", n, bound)
	}
}

// TestSlaveAbandonsAForwardWhenTheMasterMoves: a send forwarded to a
// master that sits on it (paused) is answered SERVICE_NOT_AVAILABLE,
// saying the master changed and to retry, as soon as the group's master
// changes (broker.Config.MasterMoved) — not at the forward's timeout — so
// a 4.x producer's retry reaches the new master at once.
func TestSlaveAbandonsAForwardWhenTheMasterMoves(t *testing.T) {
	m := startHoldingMaster(t)
	moved, move := context.WithCancel(context.Background())
	defer move()
	slave := startFrontWith(t, func(c *daemon.BrokerConfig) {
		slaveOf(addrOf(m.addr))(c)
		c.Broker.ReplicationTimeout = time.Minute // the forward would wait a minute and more
		c.Broker.MasterMoved = func() context.Context { return moved }
	})
	answered := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		resp, err := slave.client.Invoke(ctx, slave.addr, remoting.NewRequest(rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("held")))
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	select {
	case <-m.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the send was not forwarded")
	}
	move()
	select {
	case resp := <-answered:
		if resp == nil {
			return
		}
		if resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, "master changed") || !strings.Contains(resp.Remark, "retry") {
			t.Fatalf("abandoned forward: code %d remark %q, want SERVICE_NOT_AVAILABLE saying the master changed", resp.Code, resp.Remark)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forward still waits on the old master after the master moved")
	}
}
