package broker

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestGroupUpdateRetryMaxTimesReachesTheNextSendBack: a running 4.x member
// whose send-back names no maxReconsumeTimes dead-letters by the group's
// current retryMaxTimes, changed while it runs; one that names its own
// keeps it (as RocketMQ).
func TestGroupUpdateRetryMaxTimesReachesTheNextSendBack(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.subscribe(1, "c1", "g", "T", "*") // first heartbeat: default config, 16
	e.send("T", 0, "work")
	m := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")).recs[0]
	res, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g"})
	if err != nil || res.DLQ || res.Attempts != 1 {
		t.Fatalf("first send-back with the default 16: %+v %v", res, err)
	}
	g, _ := e.b.Group("g")
	g.RetryMaxTimes = 0
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	res, err = e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g"})
	if err != nil || !res.DLQ || res.Topic != DLQGroupTopicPrefix+"g" {
		t.Fatalf("send-back after retryMaxTimes 0: %+v %v, want the DLQ", res, err)
	}
	res, err = e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g", MaxReconsumeTimes: 5})
	if err != nil || res.DLQ {
		t.Fatalf("send-back naming its own 5: %+v %v, want a retry", res, err)
	}
}

// TestGroupConsumeDisabledStopsParkedPullsAndPops: consumeEnable=false
// refuses new pulls and pops, and a pull and a pop parked before the
// change get NO_PERMISSION instead of the message that wakes them.
func TestGroupConsumeDisabledStopsParkedPullsAndPops(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.subscribe(1, "c1", "g", "T", "*")
	pull := e.startPull(context.Background(), suspendReq("g", "T", 0, 0, 1))
	e.env.waitParked(1)
	req := popReq("g", "T", 1)
	req.Wait = time.Minute
	popped := make(chan error, 1)
	go func() {
		got, err := e.b.Pop(context.Background(), req)
		if err == nil {
			err = fmt.Errorf("the parked pop answered %d messages and no error", len(got))
		}
		popped <- err
	}()
	e.waitPopParked()

	g, _ := e.b.Group("g")
	g.ConsumeEnable = false
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	e.send("T", 0, "after disable")
	select {
	case <-pull.done:
	case <-time.After(waitLimit):
		t.Fatal("the parked pull was not answered")
	}
	wantKind(t, pull.err, KindNoPermission, "consumeEnable is false")
	select {
	case err := <-popped:
		wantKind(t, err, KindNoPermission, "consumeEnable is false")
	case <-time.After(waitLimit):
		t.Fatal("the parked pop was not answered")
	}
	_, err := e.b.Pop(context.Background(), popReq("g", "T", 1))
	wantKind(t, err, KindNoPermission)
	_, err = e.pull(pullReq("g", "T", 0, 0).withSub("*"))
	wantKind(t, err, KindNoPermission)

	// Enabled again: the message is there.
	g.ConsumeEnable = true
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	if got := e.pop(popReq("g", "T", 1)); len(got) != 1 {
		t.Fatalf("after re-enabling: %d messages, want 1", len(got))
	}
}

// TestDeleteGroupWithCleanOffset: the config, the committed offsets and the
// pop positions go (durably: also after a restart); without cleanOffset
// only the config; the hooks hear both.
func TestDeleteGroupWithCleanOffset(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	var changed []string
	e.b.OnGroupChanged(func(g string) { changed = append(changed, g) })
	for _, name := range []string{"g", "keep"} {
		g := DefaultGroup(name)
		g.ConsumeMessageOrderly = true
		if err := e.b.UpdateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		e.send("T", 0, "m"+string(rune('0'+i)))
	}
	for _, name := range []string{"g", "keep"} {
		got := e.pop(&PopRequest{Group: name, Topic: "T", MaxMsgs: 2, Invisible: time.Minute})
		if err := e.b.AckPop(name, "T", got[0].Handle); err != nil {
			t.Fatal(err)
		}
		e.b.UpdateConsumerOffset(name, "T", 0, 1)
	}
	if err := e.b.DeleteGroup("g", true); err != nil {
		t.Fatal(err)
	}
	if err := e.b.DeleteGroup("keep", false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"g", "keep", "g", "keep"}; len(changed) != 4 || changed[2] != "g" || changed[3] != "keep" {
		t.Fatalf("hooks heard %v, want %v", changed, want)
	}
	check := func(when string) {
		t.Helper()
		if _, ok := e.b.Group("g"); ok {
			t.Fatalf("%s: g's config is still there", when)
		}
		if _, ok := e.b.Group("keep"); ok {
			t.Fatalf("%s: keep's config is still there", when)
		}
		if _, ok := e.b.meta.Offset("g", "T", 0); ok {
			t.Fatalf("%s: g's offset is still there", when)
		}
		if off, ok := e.b.meta.Offset("keep", "T", 0); !ok || off != 1 {
			t.Fatalf("%s: keep's offset %d %v, want 1 kept", when, off, ok)
		}
		if n := e.b.pops.st.InFlight("g"); n != 0 {
			t.Fatalf("%s: g holds %d in flight", when, n)
		}
		if n := e.b.pops.st.InFlight("keep"); n != 1 {
			t.Fatalf("%s: keep holds %d in flight, want 1", when, n)
		}
	}
	check("after the delete")
	e.restartPop()
	check("after a restart")
	// g starts afresh: a young queue from its first message.
	if got := bodies(t, e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 3, Invisible: time.Minute})); len(got) != 3 || got[0] != "m0" {
		t.Fatalf("g after the delete received %v, want all 3 from m0", got)
	}
	if err := e.b.DeleteGroup("", true); err == nil {
		t.Fatal("deleting an empty group name: no error")
	}
}

func TestUpdateGroupRefusesBadConfigs(t *testing.T) {
	e := newEnv(t)
	for _, g := range []GroupConfig{
		{Name: ""}, {Name: "a b"}, {Name: "%DLQ%x"}, {Name: "g", RetryMaxTimes: -1},
		{Name: "g", GroupRetryPolicy: &RetryPolicy{Type: "X"}},
	} {
		wantKind(t, e.b.UpdateGroup(g), KindMessageIllegal)
	}
	if len(e.b.Groups()) != 0 {
		t.Fatalf("refused configs were stored: %v", e.b.Groups())
	}
}

// TestGroupBroadcastDisabledRefusesBroadcastMembers: consumeBroadcastEnable
// false refuses pulls of a member that consumes by broadcast, not those of
// a clustering member, as RocketMQ's pull processor.
func TestGroupBroadcastDisabledRefusesBroadcastMembers(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	g := DefaultGroup("g")
	g.ConsumeBroadcastEnable = false
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	sub := []Subscription{{Topic: "T", Expression: "*", ExpressionType: "TAG"}}
	e.b.Heartbeat(1, Heartbeat{ClientID: "B", Consumers: []ConsumerData{{Group: "g", MessageModel: "BROADCASTING", Subscriptions: sub}}})
	e.b.Heartbeat(2, Heartbeat{ClientID: "C", Consumers: []ConsumerData{{Group: "g", MessageModel: "CLUSTERING", Subscriptions: sub}}})
	r := pullReq("g", "T", 0, 0)
	_, err := e.pull(r)
	wantKind(t, err, KindNoPermission, "broadcast")
	r = pullReq("g", "T", 0, 0)
	r.Conn = 2
	if p := e.mustPull(r); len(p.bodies) != 1 {
		t.Fatalf("clustering member got %v", p.bodies)
	}
	g.ConsumeBroadcastEnable = true
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	if p := e.mustPull(pullReq("g", "T", 0, 0)); len(p.bodies) != 1 {
		t.Fatalf("broadcast member after enabling got %v", p.bodies)
	}
}
