package grpcfront

import (
	"context"
	"strconv"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// pushReceive is a receive as the Java 5.x PushConsumer sends it:
// auto_renew and no invisible duration.
func pushReceive(group, topic string) *v2.ReceiveMessageRequest {
	req := receiveReq(group, topic, 8, 0)
	req.InvisibleDuration, req.AutoRenew = nil, true
	req.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}
	return req
}

// A push consumer's receive (auto_renew, no invisible duration) is served,
// and its message stays invisible past one invisible time while the
// client holds it: the server renews it, and the client's ack with the
// first receipt handle acknowledges it. Before, such a receive was
// refused ILLEGAL_INVISIBLE_TIME and the Java PushConsumer got nothing.
func TestPushConsumerReceiveIsRenewedUntilAcked(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	e.storedRecord("T1", "ID-1", "held", "")
	resps := e.receive(e.ctx("push1"), pushReceive("g1", "T1"))
	var got *v2.Message
	for _, r := range resps {
		if m := r.GetMessage(); m != nil {
			got = m
		}
	}
	if got == nil || code(resps[0].GetStatus()) != v2.Code_OK {
		t.Fatalf("push receive: %v", resps)
	}
	handle := got.GetSystemProperties().GetReceiptHandle()
	if e.s.renew.held() != 1 {
		t.Fatalf("%d messages renewed, want 1", e.s.renew.held())
	}
	// Three invisible times pass in renewal steps; another member of the
	// group gets nothing meanwhile.
	for range 3 * int(autoRenewInvisible/renewEvery) {
		e.clk.Advance(renewEvery)
	}
	short, cancel := context.WithTimeout(e.ctx("push2"), time.Second)
	defer cancel()
	for _, r := range e.receive(short, pushReceive("g1", "T1")) {
		if m := r.GetMessage(); m != nil {
			t.Fatalf("a renewed message was delivered again after %v: %v", 3*autoRenewInvisible, m.GetSystemProperties().GetMessageId())
		}
	}
	resp, err := e.c.AckMessage(e.ctx("push1"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T1"},
		Entries: []*v2.AckMessageEntry{{MessageId: got.GetSystemProperties().GetMessageId(), ReceiptHandle: handle}}})
	if err != nil || code(resp.GetStatus()) != v2.Code_OK {
		t.Fatalf("ack with the first handle after renewals: %v %v", resp, err)
	}
	if e.s.renew.held() != 0 {
		t.Fatalf("%d messages still renewed after the ack", e.s.renew.held())
	}
}

// The renewer hands an ack or a nack the current handle, stops renewing a
// client's messages when it leaves, and bounds what it holds.
func TestRenewerHandles(t *testing.T) {
	e := newEnv(t)
	f := e.fakePop()
	now := e.clk.Now()
	e.s.renew.add("c1", "g", "T", "H1", now)
	e.s.renew.add("c1", "g", "T", "H2", now)
	e.s.renew.add("c2", "g", "T", "H3", now)
	for range int((autoRenewInvisible - renewAhead) / renewEvery) {
		e.clk.Advance(renewEvery)
	}
	f.mu.Lock()
	renewed := len(f.changes)
	f.mu.Unlock()
	if renewed != 3 {
		t.Fatalf("%d renewals after %v, want 3", renewed, autoRenewInvisible-renewAhead)
	}
	if h := e.s.renew.take("H1"); h != "H1-next" {
		t.Fatalf("take H1 = %q, want the renewed handle H1-next", h)
	}
	if h := e.s.renew.take("H1"); h != "H1" {
		t.Fatalf("a second take = %q, want the handle itself", h)
	}
	e.s.renew.dropClient("c1")
	if n := e.s.renew.held(); n != 1 {
		t.Fatalf("%d held after c1 left, want c2's 1", n)
	}
	for i := range maxRenewals + 10 {
		e.s.renew.add("c3", "g", "T", "X"+strconv.Itoa(i), now)
	}
	if n := e.s.renew.held(); n > maxRenewals {
		t.Fatalf("%d held, over the bound %d", n, maxRenewals)
	}
}
