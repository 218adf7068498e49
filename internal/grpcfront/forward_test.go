package grpcfront

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
	"github.com/petrelmq/petrel/internal/store/storetest"
)

// pair is a master (a broker with its remoting front on host "master" of
// an in-memory network) and a slave whose gRPC front forwards to it from
// host "slave".
type pair struct {
	mem        *netx.Mem
	master     *env
	slave      *env
	masterAddr atomic.Pointer[string]
	srv        *remoting.Server
	// moved is the slave front's Config.MasterMoved context (moveMaster
	// ends it).
	moved atomic.Pointer[movedCtx]
}

type movedCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// moveMaster names addr as the master, as the controller's view of a
// failover does, and ends the MasterMoved context.
func (p *pair) moveMaster(addr string) {
	ctx, cancel := context.WithCancel(context.Background())
	p.masterAddr.Store(&addr)
	p.moved.Swap(&movedCtx{ctx, cancel}).cancel()
}

func newPair(t *testing.T, forwardTimeout time.Duration, masterOpts ...func(*envOptions)) *pair {
	t.Helper()
	p := &pair{mem: netx.NewMem()}
	p.master = newEnv(t, masterOpts...)
	front := brokerfront.New(p.master.b, brokerfront.Options{Logger: storetest.Logger(t)})
	p.srv = remoting.NewServer(remoting.ServerOptions{Logger: storetest.Logger(t), OnConnClose: front.ConnClosed})
	front.Register(p.srv)
	ln, err := p.mem.Host("master").Listen("master:10911")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.srv.Serve(ln) }()
	t.Cleanup(func() {
		p.srv.Close()
		if err := <-served; err != nil {
			t.Errorf("master's remoting server: %v", err)
		}
	})
	addr := ln.Addr().String()
	p.masterAddr.Store(&addr)
	mctx, mcancel := context.WithCancel(context.Background())
	p.moved.Store(&movedCtx{mctx, mcancel})
	t.Cleanup(func() { p.moved.Load().cancel() })
	cl := remoting.NewClient(remoting.ClientOptions{Network: p.mem.Host("slave")})
	t.Cleanup(func() { cl.Close() })
	p.slave = newEnv(t, func(o *envOptions) {
		// A master until the topic is created below (a slave learns
		// topics from its master's log, which this test has not).
		o.broker = func(c *broker.Config) { c.BrokerID = 1 }
		o.front = func(c *Config) {
			c.Master = func() string { return *p.masterAddr.Load() }
			c.MasterMoved = func() context.Context { return p.moved.Load().ctx }
			c.Remoting, c.Network = cl, p.mem.Host("slave")
			c.ForwardTimeout = forwardTimeout
		}
	})
	p.master.createTopic("T", 2)
	p.slave.createTopic("T", 2)
	p.slave.b.SetRole(broker.RoleSlave)
	return p
}

// anyReq is a receive of everything of topic T for group g1.
func anyReq() *v2.ReceiveMessageRequest {
	r := receiveReq("g1", "T", 32, 30*time.Second)
	r.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}
	return r
}

// received returns the messages of a receive's answer, failing unless its
// status is OK.
func received(t *testing.T, resps []*v2.ReceiveMessageResponse) []*v2.Message {
	t.Helper()
	if len(resps) == 0 || code(resps[0].GetStatus()) != v2.Code_OK {
		t.Fatalf("receive answered %v", resps)
	}
	var out []*v2.Message
	for _, r := range resps[1:] {
		if m := r.GetMessage(); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// TestSlaveForwardsReceiveAckAndChangeToTheMaster: a 5.x consumer on a
// slave's gRPC endpoint receives the master's messages (the master's
// handles, attempts and invisible times), acknowledges them and changes
// their invisible time, all on the master's pop state; a refusal of the
// master comes back with its meaning (an acknowledged handle is
// INVALID_RECEIPT_HANDLE).
func TestSlaveForwardsReceiveAckAndChangeToTheMaster(t *testing.T) {
	p := newPair(t, time.Second)
	for i, id := range []string{"0156F7E71C361B21BC024CCDBE00000001", "0156F7E71C361B21BC024CCDBE00000002", "0156F7E71C361B21BC024CCDBE00000003"} {
		if got := p.master.send("p1", msg("T", id, "m"+itoa(int32(i)))); code(got.Status) != v2.Code_OK {
			t.Fatalf("send to the master: %v", got.Status)
		}
	}
	p.master.awaitRecords("T", 3)
	s := p.slave
	ms := received(t, s.receive(s.ctx("c1"), anyReq()))
	if len(ms) != 3 {
		t.Fatalf("received %d messages through the slave, want 3", len(ms))
	}
	for _, m := range ms {
		sp := m.GetSystemProperties()
		if sp.GetReceiptHandle() == "" || sp.GetDeliveryAttempt() != 1 || m.GetTopic().GetName() != "T" || !strings.HasPrefix(string(m.Body), "m") ||
			sp.GetInvisibleDuration().AsDuration() != 30*time.Second || m.UserProperties["POP_CK"] != "" {
			t.Fatalf("message received through the slave: %+v", m)
		}
	}
	if n := p.master.b.PopInFlight(); len(n) != 1 || n[0].Messages != 3 {
		t.Fatalf("the master's in-flight messages: %+v", n)
	}

	// Acknowledge two (one of them twice) through the slave.
	ack, err := s.c.AckMessage(s.ctx("c1"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
		Entries: []*v2.AckMessageEntry{
			{MessageId: ms[0].SystemProperties.MessageId, ReceiptHandle: ms[0].SystemProperties.GetReceiptHandle()},
			{MessageId: ms[1].SystemProperties.MessageId, ReceiptHandle: ms[1].SystemProperties.GetReceiptHandle()},
		}})
	if err != nil || code(ack.Status) != v2.Code_OK {
		t.Fatalf("ack through the slave: %v %v", err, ack.GetStatus())
	}
	again, err := s.c.AckMessage(s.ctx("c1"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
		Entries: []*v2.AckMessageEntry{{MessageId: "x", ReceiptHandle: ms[0].SystemProperties.GetReceiptHandle()}, {MessageId: "y", ReceiptHandle: "not a handle"}}})
	if err != nil || len(again.Entries) != 2 || code(again.Entries[0].Status) != v2.Code_INVALID_RECEIPT_HANDLE ||
		!strings.Contains(again.Entries[0].Status.GetMessage(), "already acknowledged") || code(again.Entries[1].Status) != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("second ack through the slave: %v %v", err, again)
	}
	if n := p.master.b.PopInFlight(); len(n) != 1 || n[0].Messages != 1 {
		t.Fatalf("the master's in-flight messages after the acks: %+v", n)
	}

	// Change the third's invisible time to 0: visible again on the master.
	old := ms[2].SystemProperties.GetReceiptHandle()
	ch, err := s.c.ChangeInvisibleDuration(s.ctx("c1"), &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
		ReceiptHandle: old, InvisibleDuration: durpb(0), MessageId: ms[2].SystemProperties.MessageId})
	if err != nil || code(ch.Status) != v2.Code_OK || ch.ReceiptHandle == "" || ch.ReceiptHandle == old {
		t.Fatalf("change through the slave: %v %v", err, ch)
	}
	if _, err := p.master.b.ChangeInvisible("g1", "T", old, time.Second); broker.KindOf(err) != broker.KindInvalidReceiptHandle {
		t.Fatalf("the old handle on the master after the change: %v", err)
	}
	re := received(t, s.receive(s.ctx("c1"), anyReq()))
	if len(re) != 1 || re[0].SystemProperties.GetDeliveryAttempt() != 2 || re[0].SystemProperties.MessageId != ms[2].SystemProperties.MessageId {
		t.Fatalf("receive after the change: %v", re)
	}
	if err := p.master.b.AckPop("g1", "T", re[0].SystemProperties.GetReceiptHandle()); err != nil {
		t.Fatalf("ack on the master of the handle the slave handed out: %v", err)
	}
}

// TestSlaveForwardedReceiveLongPolls: a receive through the slave with
// nothing to take waits on the master: a message sent to the master then
// is its answer; with none, it ends at its long-poll window with
// MESSAGE_NOT_FOUND.
func TestSlaveForwardedReceiveLongPolls(t *testing.T) {
	p := newPair(t, 2*time.Second)
	s := p.slave
	s.telemetry("c1", consumerSettings("g1", "T", 5*time.Second))
	done := make(chan []*v2.ReceiveMessageResponse, 1)
	go func() { done <- s.receive(s.ctx("c1"), anyReq()) }()
	await(t, "the forwarded receive is parked on the master", func() bool { return p.master.b.ParkedPops() == 1 })
	p.master.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000009", "late"))
	ms := received(t, <-done)
	if len(ms) != 1 || string(ms[0].Body) != "late" {
		t.Fatalf("long-polled receive through the slave got %v", ms)
	}

	go func() { done <- s.receive(s.ctx("c1"), anyReq()) }()
	await(t, "the second receive is parked on the master", func() bool { return p.master.b.ParkedPops() == 1 })
	p.master.clk.Advance(5 * time.Second) // the master's wait ends (its clock)
	resps := <-done
	if len(resps) == 0 || code(resps[0].GetStatus()) != v2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("empty long-polled receive through the slave: %v", resps)
	}
}

// TestSlaveAnswersUnavailableWhenTheMasterIsDown: with the master's
// address unknown, its port closed, or the master not answering in time,
// receives, acks and changes through the slave are HA_NOT_AVAILABLE with a
// sentence that names the situation and no Go error chain.
func TestSlaveAnswersUnavailableWhenTheMasterIsDown(t *testing.T) {
	p := newPair(t, 300*time.Millisecond)
	p.master.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000001", "m"))
	p.master.awaitRecords("T", 1)
	s := p.slave
	s.telemetry("c1", consumerSettings("g1", "T", time.Second)) // a receive forwarded to a silent master waits 1 s + 300 ms
	ms := received(t, s.receive(s.ctx("c1"), anyReq()))
	handle := ms[0].SystemProperties.GetReceiptHandle()

	check := func(what, addrWord string) {
		t.Helper()
		resps := s.receive(s.ctx("c1"), anyReq())
		if len(resps) != 1 || code(resps[0].GetStatus()) != v2.Code_HA_NOT_AVAILABLE {
			t.Fatalf("%s: receive answered %v", what, resps)
		}
		ack, err := s.c.AckMessage(s.ctx("c1"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
			Entries: []*v2.AckMessageEntry{{MessageId: "x", ReceiptHandle: handle}}})
		if err != nil || code(ack.Entries[0].Status) != v2.Code_HA_NOT_AVAILABLE {
			t.Fatalf("%s: ack answered %v %v", what, err, ack)
		}
		ch, err := s.c.ChangeInvisibleDuration(s.ctx("c1"), &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
			ReceiptHandle: handle, InvisibleDuration: durpb(time.Second), MessageId: "x"})
		if err != nil || code(ch.Status) != v2.Code_HA_NOT_AVAILABLE || ch.ReceiptHandle != handle {
			t.Fatalf("%s: change answered %v %v", what, err, ch)
		}
		for _, m := range []string{resps[0].GetStatus().GetMessage(), ack.Entries[0].Status.GetMessage(), ch.Status.GetMessage()} {
			if !strings.Contains(m, "slave") || !strings.Contains(m, addrWord) || strings.Contains(m, "remoting:") || strings.Contains(m, "netx") {
				t.Fatalf("%s: status message %q", what, m)
			}
		}
	}

	p.masterOutages(check)

	// The message is still in flight on the master, unacknowledged.
	if n := p.master.b.PopInFlight(); len(n) != 1 || n[0].Messages != 1 {
		t.Fatalf("the master's in-flight messages: %+v", n)
	}
}

// TestSlaveBoundsForwardedReceivesAndAcksDoNotWaitBehindThem: receives
// parked on the master do not hold up acknowledgements (they go over
// another connection), and a receive beyond the slave's bound is
// TOO_MANY_REQUESTS at once.
func TestSlaveBoundsForwardedReceivesAndAcksDoNotWaitBehindThem(t *testing.T) {
	p := newPair(t, time.Second)
	p.slave.s.fwd.maxPolls = 1
	p.master.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000001", "m"))
	p.master.awaitRecords("T", 1)
	s := p.slave
	s.telemetry("c1", consumerSettings("g1", "T", 5*time.Second))
	ms := received(t, s.receive(s.ctx("c1"), anyReq()))

	done := make(chan []*v2.ReceiveMessageResponse, 1)
	go func() { done <- s.receive(s.ctx("c1"), anyReq()) }()
	await(t, "a forwarded receive is parked on the master", func() bool { return p.master.b.ParkedPops() == 1 })
	resps := s.receive(s.ctx("c1"), anyReq())
	if len(resps) != 1 || code(resps[0].GetStatus()) != v2.Code_TOO_MANY_REQUESTS || !strings.Contains(resps[0].GetStatus().GetMessage(), "waiting on its master") {
		t.Fatalf("receive beyond the bound: %v", resps)
	}
	ack, err := s.c.AckMessage(s.ctx("c1"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T"},
		Entries: []*v2.AckMessageEntry{{MessageId: "x", ReceiptHandle: ms[0].SystemProperties.GetReceiptHandle()}}})
	if err != nil || code(ack.Status) != v2.Code_OK {
		t.Fatalf("ack while a receive is parked: %v %v", err, ack)
	}
	if p.master.b.ParkedPops() != 1 {
		t.Fatalf("the parked receive ended before its time")
	}
	p.master.clk.Advance(5 * time.Second)
	if resps := <-done; len(resps) == 0 || code(resps[0].GetStatus()) != v2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("the parked receive answered %v", resps)
	}
}

// TestSlaveForwardsReceivesOfTopicsOnlyTheMasterKnows: the master's topic
// table is the source: a topic the slave does not know yet is received
// through it, and one the master does not know either is TOPIC_NOT_FOUND
// with the master's sentence.
func TestSlaveForwardsReceivesOfTopicsOnlyTheMasterKnows(t *testing.T) {
	p := newPair(t, time.Second)
	p.master.createTopic("U", 1)
	p.master.send("p1", msg("U", "0156F7E71C361B21BC024CCDBE00000001", "u"))
	p.master.awaitRecords("U", 1)
	s := p.slave
	req := anyReq()
	req.MessageQueue.Topic.Name = "U"
	ms := received(t, s.receive(s.ctx("c1"), req))
	if len(ms) != 1 || string(ms[0].Body) != "u" || ms[0].Topic.GetName() != "U" {
		t.Fatalf("receive of U through the slave: %v", ms)
	}
	req.MessageQueue.Topic.Name = "Nowhere"
	resps := s.receive(s.ctx("c1"), req)
	if len(resps) != 1 || code(resps[0].GetStatus()) != v2.Code_TOPIC_NOT_FOUND || !strings.Contains(resps[0].GetStatus().GetMessage(), `"Nowhere"`) {
		t.Fatalf("receive of an unknown topic through the slave: %v", resps)
	}
}

// TestPromotedSlaveServesReceivesItself: the role is read on every call:
// once the slave's broker is a master, its front pops from its own state.
func TestPromotedSlaveServesReceivesItself(t *testing.T) {
	p := newPair(t, time.Second)
	p.srv.Close() // the old master is gone
	s := p.slave
	s.b.SetRole(broker.RoleMaster)
	s.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000001", "own"))
	s.awaitRecords("T", 1)
	ms := received(t, s.receive(s.ctx("c1"), anyReq()))
	if len(ms) != 1 || string(ms[0].Body) != "own" {
		t.Fatalf("receive on the promoted slave: %v", ms)
	}
}

// masterOutages runs check (what happened, a word its answers must hold)
// through each way the slave can lose its master, in turn: the master does
// not answer (a partition blackholes the connection), its port is closed,
// no master is known. The master stays unreachable afterwards.
func (p *pair) masterOutages(check func(what, words string)) {
	p.mem.Partition("master", "slave")
	check("partitioned", "master:10911")
	p.mem.Heal("master", "slave")
	p.mem.Reset("master", "slave")
	p.srv.Close()
	check("master down", "master:10911")
	none := ""
	p.masterAddr.Store(&none)
	check("address unknown", "does not yet know the address")
}
