package broker

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestHeartbeatRegistersGroupsAndRetryTopic(t *testing.T) {
	e := newEnv(t)
	var topicHooks hookLog
	e.b.OnTopicsChanged(func() { topicHooks.add("t") })
	e.b.Heartbeat(1, Heartbeat{ClientID: "10.0.0.2@100", Producers: []string{"pg"},
		Consumers: []ConsumerData{{Group: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "BROADCASTING",
			Subscriptions: []Subscription{{Topic: "T", Expression: "*"}}}}})
	rt, ok := e.b.Topic("%RETRY%cg")
	if !ok || rt.ReadQueueNums != 1 || rt.WriteQueueNums != 1 || rt.Perm != 6 {
		t.Fatalf("retry topic %+v %v", rt, ok)
	}
	if len(topicHooks.take()) != 1 {
		t.Fatal("creating the retry topic did not run the topic hook")
	}
	g, ok := e.b.meta.Group("cg")
	if !ok || !reflect.DeepEqual(g, DefaultGroup("cg").meta()) || g.RetryMaxTimes != 16 || !g.NotifyConsumerIDsChangedEnable {
		t.Fatalf("group config %+v %v", g, ok)
	}
	if ids := e.b.ConsumerIDs("cg"); !slices.Equal(ids, []string{"10.0.0.2@100"}) {
		t.Fatalf("consumer ids %v", ids)
	}
	if conns := e.b.ProducerConns("pg"); !slices.Equal(conns, []uint64{1}) {
		t.Fatalf("producer conns %v", conns)
	}
	if len(e.b.ConsumerIDs("unknown")) != 0 || len(e.b.ProducerConns("unknown")) != 0 {
		t.Fatal("unknown groups have members")
	}
	if gs := e.b.Groups(); len(gs) != 1 || gs[0].Name != "cg" {
		t.Fatalf("groups %+v", gs)
	}
	if cd := e.b.ConsumerMembers("cg"); len(cd) != 1 || cd[0].MessageModel != "BROADCASTING" {
		t.Fatalf("consumer data %+v", cd)
	}
	// A second heartbeat creates nothing new.
	e.b.Heartbeat(1, Heartbeat{ClientID: "10.0.0.2@100", Consumers: []ConsumerData{{Group: "cg"}}})
	if len(topicHooks.take()) != 0 {
		t.Fatal("topic hook ran for an existing retry topic")
	}
}

func TestConsumerIDsChangedNotifications(t *testing.T) {
	e := newEnv(t)
	tc := newTestConns(e.b)
	take := tc.log.take
	hb := func(n int, id string, groups ...string) {
		var cds []ConsumerData
		for _, g := range groups {
			cds = append(cds, ConsumerData{Group: g, Subscriptions: []Subscription{{Topic: "T", Expression: "*"}}})
		}
		e.b.Heartbeat(tc.id(n), Heartbeat{ClientID: id, Consumers: cds})
	}
	hb(1, "A", "g")
	if got := take(); len(got) != 0 {
		t.Fatalf("first member: notified %v, want nobody", got)
	}
	hb(2, "B", "g")
	if got := take(); !slices.Equal(got, []string{"g 1"}) {
		t.Fatalf("second member should notify the first only: %v", got)
	}
	hb(2, "B", "g")
	hb(1, "A", "g")
	if got := take(); len(got) != 0 {
		t.Fatalf("repeated heartbeats notified: %v", got)
	}
	hb(3, "C", "g")
	if got := take(); !slices.Equal(got, []string{"g 1", "g 2"}) {
		t.Fatalf("third member: %v", got)
	}
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"A", "B", "C"}) {
		t.Fatalf("ids %v", ids)
	}
	// The same client id on a second connection is no change.
	hb(4, "C", "g")
	if got := take(); len(got) != 0 {
		t.Fatalf("same client on another connection notified: %v", got)
	}
	e.b.ConnClosed(tc.id(4))
	if got := take(); len(got) != 0 {
		t.Fatalf("closing a duplicate connection notified: %v", got)
	}
	e.b.ConnClosed(tc.id(2))
	if got := take(); !slices.Equal(got, []string{"g 1", "g 3"}) {
		t.Fatalf("departure: %v", got)
	}
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"A", "C"}) {
		t.Fatalf("ids after close %v", ids)
	}
	e.b.ConnClosed(tc.id(2)) // twice: nothing
	if got := take(); len(got) != 0 {
		t.Fatalf("second close notified: %v", got)
	}
	// A group with notification disabled is not announced.
	hb(5, "D", "quiet")
	take()
	g, _ := e.b.meta.Group("quiet")
	g.NotifyConsumerIDsChangedEnable = false
	if err := e.b.meta.PutGroup(g); err != nil {
		t.Fatal(err)
	}
	hb(6, "E", "quiet")
	if got := take(); len(got) != 0 {
		t.Fatalf("notification disabled, got %v", got)
	}
}

func TestClientExpiry(t *testing.T) {
	e := newEnv(t)
	tc := newTestConns(e.b)
	take := tc.log.take
	sub := []Subscription{{Topic: "T", Expression: "*"}}
	e.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "A", Producers: []string{"pg"}, Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	e.clk.Advance(60 * time.Second)
	e.b.Heartbeat(tc.id(2), Heartbeat{ClientID: "B", Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
	take()
	e.clk.Advance(59 * time.Second) // A silent for 119 s
	if ids := e.b.ConsumerIDs("g"); len(ids) != 2 {
		t.Fatalf("expired too early: %v", ids)
	}
	e.clk.Advance(11 * time.Second) // 130 s: past expiry plus one sweep
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"B"}) {
		t.Fatalf("after 120 s silent: %v, want [B]", ids)
	}
	if got := take(); !slices.Equal(got, []string{"g 2"}) {
		t.Fatalf("expiry notifications %v", got)
	}
	if len(e.b.ProducerConns("pg")) != 0 {
		t.Fatal("producer did not expire")
	}
	// B keeps heart-beating and stays.
	for range 5 {
		e.b.Heartbeat(tc.id(2), Heartbeat{ClientID: "B", Consumers: []ConsumerData{{Group: "g", Subscriptions: sub}}})
		e.clk.Advance(30 * time.Second)
	}
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"B"}) {
		t.Fatalf("live client expired: %v", ids)
	}
	// Pulls of an expired group's subscription fail with SUBSCRIPTION_NOT_EXIST.
	e.clk.Advance(130 * time.Second)
	if len(e.b.ConsumerIDs("g")) != 0 {
		t.Fatal("B did not expire")
	}
	e.createTopic("T", 1)
	_, err := e.b.Pull(t.Context(), pullReq("g", "T", 0, 0))
	wantKind(t, err, KindSubscriptionNotExist)
}

func TestHeartbeatSubscriptionUpdates(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "a", "TAGS", "A")
	e.send("T", 0, "b", "TAGS", "B")
	hb := func(expr string, ver int64) {
		e.b.Heartbeat(1, Heartbeat{ClientID: "A", Consumers: []ConsumerData{{Group: "g",
			Subscriptions: []Subscription{{Topic: "T", Expression: expr, ExpressionType: "TAG", SubVersion: ver}}}}})
	}
	hb("A", 1)
	if p := e.mustPull(pullReq("g", "T", 0, 0)); !slices.Equal(p.bodies, []string{"a"}) {
		t.Fatalf("%v", p.bodies)
	}
	hb("B", 2)
	if p := e.mustPull(pullReq("g", "T", 0, 0)); !slices.Equal(p.bodies, []string{"b"}) {
		t.Fatalf("after resubscribe: %v", p.bodies)
	}
	// Tags only (no expression) are used too.
	e.b.Heartbeat(1, Heartbeat{ClientID: "A", Consumers: []ConsumerData{{Group: "g",
		Subscriptions: []Subscription{{Topic: "T", Tags: []string{"A", "B"}, SubVersion: 3}}}}})
	if p := e.mustPull(pullReq("g", "T", 0, 0)); len(p.bodies) != 2 {
		t.Fatalf("tags set: %v", p.bodies)
	}
}

func TestQueueLocks(t *testing.T) {
	e := newEnv(t)
	q := func(ids ...int32) []QueueRef {
		var out []QueueRef
		for _, id := range ids {
			out = append(out, QueueRef{Topic: "T", BrokerName: "broker-a", QueueID: id})
		}
		return out
	}
	if got := e.b.LockQueues("g", "A", q(0, 1)); !slices.Equal(got, q(0, 1)) {
		t.Fatalf("A locks %v", got)
	}
	if got := e.b.LockQueues("g", "B", q(1, 2)); !slices.Equal(got, q(2)) {
		t.Fatalf("B got %v, want only queue 2", got)
	}
	// Another group is independent.
	if got := e.b.LockQueues("other", "B", q(0)); !slices.Equal(got, q(0)) {
		t.Fatalf("other group: %v", got)
	}
	e.clk.Advance(40 * time.Second)
	if got := e.b.LockQueues("g", "A", q(0)); !slices.Equal(got, q(0)) { // renew 0 only
		t.Fatalf("A re-locks %v", got)
	}
	e.clk.Advance(21 * time.Second) // queue 1 not renewed for 61 s
	if got := e.b.LockQueues("g", "B", q(0, 1)); !slices.Equal(got, q(1)) {
		t.Fatalf("after expiry B got %v, want queue 1", got)
	}
	if h, _ := e.b.LockHolder("g", q(1)[0]); h != "B" {
		t.Fatalf("holder %q", h)
	}
	e.b.UnlockQueues("g", "B", q(0)) // not B's: no effect
	if h, ok := e.b.LockHolder("g", q(0)[0]); !ok || h != "A" {
		t.Fatalf("B unlocked A's queue: %q %v", h, ok)
	}
	e.b.UnlockQueues("g", "A", q(0))
	if got := e.b.LockQueues("g", "B", q(0)); !slices.Equal(got, q(0)) {
		t.Fatalf("after unlock B got %v", got)
	}
	// Expired locks are swept.
	e.clk.Advance(2 * time.Minute)
	e.b.locksMu.Lock()
	n := len(e.b.locks)
	e.b.locksMu.Unlock()
	if n != 0 {
		t.Fatalf("%d expired locks kept", n)
	}
}

func TestTopicAdmin(t *testing.T) {
	e := newEnv(t)
	var hooks hookLog
	e.b.OnTopicsChanged(func() { hooks.add("t") })
	if err := e.b.CreateTopic(TopicConfig{Name: "bad name", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); KindOf(err) != KindMessageIllegal {
		t.Fatalf("bad name: %v", err)
	}
	if err := e.b.CreateTopic(TopicConfig{Name: "T", ReadQueueNums: 0, WriteQueueNums: 1, Perm: 6}); KindOf(err) != KindMessageIllegal {
		t.Fatalf("zero queues: %v", err)
	}
	if err := e.b.CreateTopic(TopicConfig{Name: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 9}); KindOf(err) != KindMessageIllegal {
		t.Fatalf("bad perm: %v", err)
	}
	e.createTopic("T", 2)
	e.createTopic("T", 2) // unchanged: no hook
	if n := len(hooks.take()); n != 1 {
		t.Fatalf("hook ran %d times, want 1", n)
	}
	if got, _ := e.b.Topic("T"); got.TopicFilterType != "SINGLE_TAG" {
		t.Fatalf("filter type %q", got.TopicFilterType)
	}
	e.send("T", 0, "m")
	e.b.UpdateConsumerOffset("g", "T", 0, 1)
	if err := e.b.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.b.Topic("T"); ok {
		t.Fatal("topic still there")
	}
	if n := len(hooks.take()); n != 1 {
		t.Fatalf("delete hook ran %d times", n)
	}
	if _, ok := e.b.meta.Offset("g", "T", 0); ok {
		t.Fatal("offsets survive the topic")
	}
	if e.b.MaxOffset("T", 0) != 0 {
		t.Fatal("queues survive the topic")
	}
	if err := e.b.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	if n := len(hooks.take()); n != 0 {
		t.Fatal("deleting a missing topic ran the hook")
	}
	names := []string{}
	for _, tp := range e.b.Topics() {
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, []string{ReplyTopic(e.b.Config().ClusterName), TraceTopic, TemplateTopic}) {
		t.Fatalf("topics %v", names)
	}
}

func TestOffsetsAndTopicsSurviveRestart(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	for i := range 5 {
		e.send("T", 1, fmt.Sprint("m", i))
	}
	e.subscribe(1, "c", "g", "T", "*")
	e.b.UpdateConsumerOffset("g", "T", 1, 3)
	r := pullReq("g", "T", 0, 0)
	r.SysFlag, r.CommitOffset = PullFlagCommitOffset, 0
	e.mustPull(r)
	e.restart()
	if off, ok := e.b.QueryConsumerOffset("g", "T", 1); !ok || off != 3 {
		t.Fatalf("offset after restart %d %v, want 3", off, ok)
	}
	if got, ok := e.b.Topic("T"); !ok || got.WriteQueueNums != 2 {
		t.Fatalf("topic after restart %+v", got)
	}
	if _, ok := e.b.Topic("%RETRY%g"); !ok {
		t.Fatal("retry topic lost")
	}
	if _, ok := e.b.meta.Group("g"); !ok {
		t.Fatal("group config lost")
	}
	if len(e.b.ConsumerIDs("g")) != 0 {
		t.Fatal("client registrations must not survive a restart")
	}
	p := e.mustPull(pullReq("g", "T", 1, 3).withSub("*"))
	if !slices.Equal(p.bodies, []string{"m3", "m4"}) {
		t.Fatalf("after restart pulled %v", p.bodies)
	}
}

func TestConnectionChangesClientID(t *testing.T) {
	e := newEnv(t)
	tc := newTestConns(e.b)
	take := tc.log.take
	e.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "old", Producers: []string{"pg"}, Consumers: []ConsumerData{{Group: "g"}}})
	e.b.Heartbeat(tc.id(2), Heartbeat{ClientID: "peer", Consumers: []ConsumerData{{Group: "g"}}})
	take()
	e.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "new", Consumers: []ConsumerData{{Group: "g"}}})
	if ids := e.b.ConsumerIDs("g"); !slices.Equal(ids, []string{"new", "peer"}) {
		t.Fatalf("ids %v", ids)
	}
	if got := take(); !slices.Equal(got, []string{"g 2", "g 2"}) {
		t.Fatalf("notifications %v, want old's departure and new's arrival", got)
	}
	if len(e.b.ProducerConns("pg")) != 0 {
		t.Fatal("the old client's producer registration was kept")
	}
}
