// Package metatest is the conformance suite of meta.Tables: the file store
// (meta.Store) and its in-memory twin (meta.Mem) both pass it, so a broker
// test may run on either. It covers every method of the interface; what
// only a file store has (reopen, crash safety, group commit of writes) is
// tested in package meta itself.
package metatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Open returns a new, empty Tables whose versions take their time from
// clk. It registers its own cleanup (closing a file store) with t.
type Open func(t *testing.T, clk clock.Clock) meta.Tables

// Epoch is the manual clock's start in every test of the suite.
var Epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// Run runs the suite against the Tables that open makes, one fresh
// instance per test.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, meta.Tables, *clock.Manual)
	}{
		{"TopicsPutGetRemove", testTopicsPutGetRemove},
		{"TopicsAreOwned", testTopicsAreOwned},
		{"TopicsStaySortedAcrossChanges", testTopicsStaySorted},
		{"UpdateAndEnsureTopic", testUpdateAndEnsureTopic},
		{"TopicsAtIsOneRead", testTopicsAtIsOneRead},
		{"VersionsCountChanges", testVersions},
		{"InvalidNames", testInvalidNames},
		{"GroupsPutGetDelete", testGroupsPutGetDelete},
		{"GroupRocketMQ5FieldsAreOwned", testGroupFieldsOwned},
		{"Durability", testDurability},
		{"UsersPutGetRemove", testUsers},
		{"AclsPutGetRemoveOwned", testAcls},
		{"Offsets", testOffsets},
		{"ConcurrentOffsets", testConcurrentOffsets},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(Epoch)
			tc.fn(t, open(t, clk), clk)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func topic(name string, queues int32) meta.Topic {
	return meta.Topic{Name: name, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: meta.PermRead | meta.PermWrite, TopicFilterType: "SINGLE_TAG"}
}

func testTopicsPutGetRemove(t *testing.T, s meta.Tables, _ *clock.Manual) {
	if ts := s.Topics(); len(ts) != 0 {
		t.Fatalf("fresh Topics() = %+v", ts)
	}
	a := topic("A", 4)
	a.Attributes = map[string]string{"persistent": "false"}
	b := topic("B", 8)
	b.Order = true
	c := topic("C", 1)
	must(t, s.PutTopic(c))
	must(t, s.PutTopic(b))
	must(t, s.PutTopic(a))
	if existed, err := s.RemoveTopic("C"); err != nil || !existed {
		t.Fatalf("RemoveTopic(C) = %v, %v", existed, err)
	}
	if existed, err := s.RemoveTopic("missing"); err != nil || existed {
		t.Fatalf("RemoveTopic(missing) = %v, %v", existed, err)
	}
	want := []meta.Topic{a, b}
	if got := s.Topics(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Topics() = %+v, want %+v", got, want)
	}
	if got, ok := s.Topic("B"); !ok || !reflect.DeepEqual(got, b) {
		t.Fatalf("Topic(B) = %+v, %v", got, ok)
	}
	if got, ok := s.Topic("C"); ok {
		t.Fatalf("removed topic C still there: %+v", got)
	}
	got, ok, v := s.TopicAt("A")
	if !ok || !reflect.DeepEqual(got, a) || v != s.TopicsVersion() {
		t.Fatalf("TopicAt(A) = %+v, %v, %+v (version %+v)", got, ok, v, s.TopicsVersion())
	}
	if _, ok, v := s.TopicAt("C"); ok || v != s.TopicsVersion() {
		t.Fatalf("TopicAt(C) = %v at %+v", ok, v)
	}
	b.WriteQueueNums = 2 // replacing
	must(t, s.PutTopic(b))
	if got, _ := s.Topic("B"); !reflect.DeepEqual(got, b) {
		t.Fatalf("replaced Topic(B) = %+v, want %+v", got, b)
	}
}

func testTopicsAreOwned(t *testing.T, s meta.Tables, _ *clock.Manual) {
	a := topic("A", 4)
	a.Attributes = map[string]string{"persistent": "false"}
	must(t, s.PutTopic(a))
	a.Attributes["persistent"] = "true"
	if got, _ := s.Topic("A"); got.Attributes["persistent"] != "false" {
		t.Fatalf("stored attributes follow the caller's map after PutTopic: %v", got.Attributes)
	}
	b := topic("B", 1)
	b.Attributes = map[string]string{"k": "v"}
	if _, err := s.UpdateTopic(b); err != nil {
		t.Fatal(err)
	}
	b.Attributes["k"] = "changed"
	if got, _ := s.Topic("B"); got.Attributes["k"] != "v" {
		t.Fatalf("stored attributes follow the caller's map after UpdateTopic: %v", got.Attributes)
	}
	c := topic("C", 1)
	c.Attributes = map[string]string{"k": "v"}
	if _, _, err := s.EnsureTopic(c); err != nil {
		t.Fatal(err)
	}
	c.Attributes["k"] = "changed"
	if got, _ := s.Topic("C"); got.Attributes["k"] != "v" {
		t.Fatalf("stored attributes follow the caller's map after EnsureTopic: %v", got.Attributes)
	}
	// An empty map is stored as none, so a value compares equal to what a
	// reload gives.
	d := topic("D", 1)
	d.Attributes = map[string]string{}
	must(t, s.PutTopic(d))
	if got, _ := s.Topic("D"); got.Attributes != nil {
		t.Fatalf("empty attributes stored as %#v, want nil", got.Attributes)
	}
	// The caller owns the slices Topics and TopicsAt return.
	ts := s.Topics()
	ts[0].Name = "scribbled"
	ts2, _ := s.TopicsAt()
	ts2[1].Name = "scribbled"
	if got := s.Topics(); got[0].Name != "A" || got[1].Name != "B" {
		t.Fatalf("Topics() after the caller wrote to earlier results: %+v", got)
	}
}

// testTopicsStaySorted checks Topics and TopicsAt against a model through
// random puts, removals and batches of every size, and that the version
// comes with the same state.
func testTopicsStaySorted(t *testing.T, s meta.Tables, _ *clock.Manual) {
	r := rand.New(rand.NewSource(1))
	want := map[string]meta.Topic{}
	for round := range 100 {
		for range r.Intn([]int{1, 5, 50, 200}[r.Intn(4)]) {
			name := fmt.Sprintf("t%04d", r.Intn(300))
			if r.Intn(3) == 0 {
				_, had := want[name]
				existed, err := s.RemoveTopic(name)
				must(t, err)
				if existed != had {
					t.Fatalf("RemoveTopic(%s) existed = %v, want %v", name, existed, had)
				}
				delete(want, name)
				continue
			}
			tp := topic(name, int32(1+r.Intn(8)))
			must(t, s.PutTopic(tp))
			want[name] = tp
		}
		got, v := s.TopicsAt()
		exp := slices.SortedFunc(maps.Values(want), func(a, b meta.Topic) int { return strings.Compare(a.Name, b.Name) })
		if !sameTopics(got, exp) {
			t.Fatalf("round %d: TopicsAt has %d entries, want %d:\n%+v\nwant %+v", round, len(got), len(exp), got, exp)
		}
		if v != s.TopicsVersion() {
			t.Fatalf("round %d: version %+v, want %+v", round, v, s.TopicsVersion())
		}
		if plain := s.Topics(); !sameTopics(plain, exp) {
			t.Fatalf("round %d: Topics() = %+v, want %+v", round, plain, exp)
		}
		if len(got) > 0 {
			got[0].Name = "scribbled" // the caller owns the slice
		}
	}
}

// sameTopics compares two results of Topics; nil and empty are the same.
func sameTopics(a, b []meta.Topic) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func testUpdateAndEnsureTopic(t *testing.T, s meta.Tables, _ *clock.Manual) {
	for i, c := range []struct {
		t       meta.Topic
		changed bool
	}{{topic("A", 1), true}, {topic("A", 1), false}, {topic("A", 2), true}} {
		changed, err := s.UpdateTopic(c.t)
		must(t, err)
		if changed != c.changed {
			t.Fatalf("UpdateTopic #%d changed = %v, want %v", i, changed, c.changed)
		}
	}
	cur, created, err := s.EnsureTopic(topic("A", 8))
	must(t, err)
	if created || !reflect.DeepEqual(cur, topic("A", 2)) {
		t.Fatalf("EnsureTopic of an existing topic: %+v created %v", cur, created)
	}
	if got, _ := s.Topic("A"); !reflect.DeepEqual(got, topic("A", 2)) {
		t.Fatalf("EnsureTopic of an existing topic changed it to %+v", got)
	}
	// Concurrent callers: exactly one creates, all see its config.
	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	creators := 0
	for i := range n {
		wg.Go(func() {
			cur, created, err := s.EnsureTopic(topic("B", int32(1+i)))
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := s.Topic("B")
			if !reflect.DeepEqual(cur, got) {
				t.Errorf("EnsureTopic returned %+v, stored is %+v", cur, got)
			}
			if created {
				mu.Lock()
				creators++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if creators != 1 {
		t.Fatalf("%d concurrent EnsureTopic calls created the topic %d times", n, creators)
	}
	if v := s.TopicsVersion().Counter; v != 3 {
		t.Fatalf("version counter %d, want 3", v)
	}
	// Concurrent UpdateTopic of one new config: exactly one sees changed.
	changers := 0
	for range n {
		wg.Go(func() {
			changed, err := s.UpdateTopic(topic("B", 99))
			if err != nil {
				t.Error(err)
				return
			}
			if changed {
				mu.Lock()
				changers++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if changers != 1 {
		t.Fatalf("%d concurrent identical UpdateTopic calls reported %d changes", n, changers)
	}
	for i, want := range []bool{true, false} {
		existed, err := s.RemoveTopic("B")
		must(t, err)
		if existed != want {
			t.Fatalf("RemoveTopic #%d existed = %v, want %v", i, existed, want)
		}
	}
}

// testTopicsAtIsOneRead: while topics are added concurrently (each add one
// change), every TopicsAt answer holds exactly as many topics as its
// version counts changes, and TopicAt of an added topic finds it at a
// version that includes its change.
func testTopicsAtIsOneRead(t *testing.T, s meta.Tables, _ *clock.Manual) {
	base := s.TopicsVersion().Counter
	const writers, each = 4, 50
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("T%d-%d", w, i)
				if err := s.PutTopic(topic(name, 1)); err != nil {
					t.Error(err)
					return
				}
				_, ok, v := s.TopicAt(name)
				if !ok || v.Counter < base+1 {
					t.Errorf("TopicAt(%s) after its put: found %v at version %+v", name, ok, v)
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	for {
		ts, v := s.TopicsAt()
		if int64(len(ts)) != v.Counter-base {
			t.Fatalf("TopicsAt: %d topics at version %+v, which counts %d changes", len(ts), v, v.Counter-base)
		}
		select {
		case <-done:
			if ts, v := s.TopicsAt(); len(ts) != writers*each || v.Counter-base != writers*each {
				t.Fatalf("at the end: %d topics at version %+v", len(ts), v)
			}
			if _, ok, _ := s.TopicAt("missing"); ok {
				t.Fatal("TopicAt found a topic never added")
			}
			return
		default:
		}
	}
}

func testVersions(t *testing.T, s meta.Tables, clk *clock.Manual) {
	if v := s.TopicsVersion(); v != (meta.DataVersion{}) {
		t.Fatalf("fresh TopicsVersion = %+v", v)
	}
	if v := s.GroupsVersion(); v != (meta.DataVersion{}) {
		t.Fatalf("fresh GroupsVersion = %+v", v)
	}
	must(t, s.PutTopic(topic("A", 4)))
	want := meta.DataVersion{Timestamp: Epoch.UnixMilli(), Counter: 1}
	if v := s.TopicsVersion(); v != want {
		t.Fatalf("TopicsVersion = %+v, want %+v", v, want)
	}
	step := func(what string, change func()) {
		t.Helper()
		clk.Advance(1500 * time.Millisecond)
		change()
		want = meta.DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: want.Counter + 1}
		if v := s.TopicsVersion(); v != want {
			t.Fatalf("after %s TopicsVersion = %+v, want %+v", what, v, want)
		}
		if _, v := s.TopicsAt(); v != want {
			t.Fatalf("after %s TopicsAt version = %+v, want %+v", what, v, want)
		}
	}
	step("UpdateTopic", func() { _, err := s.UpdateTopic(topic("B", 1)); must(t, err) })
	step("EnsureTopic", func() { _, _, err := s.EnsureTopic(topic("C", 1)); must(t, err) })
	step("PutTopic of a changed config", func() { must(t, s.PutTopic(topic("A", 5))) })
	step("RemoveTopic", func() { _, err := s.RemoveTopic("C"); must(t, err) })

	// No-ops do not bump.
	clk.Advance(time.Second)
	must(t, s.PutTopic(topic("A", 5)))
	if _, err := s.UpdateTopic(topic("B", 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EnsureTopic(topic("B", 7)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveTopic("nope"); err != nil {
		t.Fatal(err)
	}
	if v := s.TopicsVersion(); v != want {
		t.Fatalf("no-ops changed TopicsVersion to %+v, want %+v", v, want)
	}
	wantT := want

	must(t, s.PutGroup(meta.Group{Name: "g"}))
	wantG := meta.DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 1}
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("GroupsVersion = %+v, want %+v", v, wantG)
	}
	if v := s.TopicsVersion(); v != wantT {
		t.Fatalf("a group change moved TopicsVersion to %+v", v)
	}
	clk.Advance(time.Second)
	must(t, s.PutGroup(meta.Group{Name: "g"}))
	must(t, s.DeleteGroup("nope"))
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("group no-ops changed GroupsVersion to %+v", v)
	}
	must(t, s.PutGroup(meta.Group{Name: "g", RetryMaxTimes: 3}))
	wantG = meta.DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 2}
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("GroupsVersion after a changed group = %+v, want %+v", v, wantG)
	}
	clk.Advance(time.Minute)
	must(t, s.DeleteGroup("g"))
	wantG = meta.DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 3}
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("GroupsVersion after DeleteGroup = %+v, want %+v", v, wantG)
	}
	if v := s.TopicsVersion(); v != wantT {
		t.Fatalf("group changes moved TopicsVersion to %+v", v)
	}
	// Offsets are not versioned with the tables.
	s.CommitOffset("g", "A", 0, 1)
	s.DeleteTopicOffsets("A")
	if s.TopicsVersion() != wantT || s.GroupsVersion() != wantG {
		t.Fatalf("offset changes moved the versions to %+v %+v", s.TopicsVersion(), s.GroupsVersion())
	}
	// The clock going back does not make the counter go back.
	clk.Set(Epoch)
	must(t, s.PutTopic(topic("Z", 1)))
	if v := s.TopicsVersion(); v.Counter != wantT.Counter+1 {
		t.Fatalf("TopicsVersion after the clock went back = %+v, want counter %d", v, wantT.Counter+1)
	}
}

func testInvalidNames(t *testing.T, s meta.Tables, _ *clock.Manual) {
	_, err1 := s.UpdateTopic(meta.Topic{})
	_, _, err2 := s.EnsureTopic(meta.Topic{})
	for name, err := range map[string]error{
		"PutTopic":    s.PutTopic(meta.Topic{}),
		"UpdateTopic": err1,
		"EnsureTopic": err2,
		"PutGroup":    s.PutGroup(meta.Group{}),
	} {
		if !errors.Is(err, meta.ErrInvalidName) {
			t.Errorf("%s with an empty name: %v, want ErrInvalidName", name, err)
		}
	}
	if len(s.Topics()) != 0 || len(s.Groups()) != 0 {
		t.Fatalf("a rejected put stored %+v %+v", s.Topics(), s.Groups())
	}
	if s.TopicsVersion() != (meta.DataVersion{}) || s.GroupsVersion() != (meta.DataVersion{}) {
		t.Fatalf("a rejected put moved the versions to %+v %+v", s.TopicsVersion(), s.GroupsVersion())
	}
}

func testGroupsPutGetDelete(t *testing.T, s meta.Tables, _ *clock.Manual) {
	if gs := s.Groups(); len(gs) != 0 {
		t.Fatalf("fresh Groups() = %+v", gs)
	}
	g1 := meta.Group{Name: "g1", ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryMaxTimes: 16, RetryQueueNums: 1, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIDsChangedEnable: true, Attributes: map[string]string{"k": "v"}}
	g2 := meta.Group{Name: "g2", RetryMaxTimes: 3, BrokerID: 2}
	g3 := meta.Group{Name: "g3"}
	must(t, s.PutGroup(g2))
	must(t, s.PutGroup(g1))
	must(t, s.PutGroup(g3))
	must(t, s.DeleteGroup("g3"))
	must(t, s.DeleteGroup("missing"))
	if got, want := s.Groups(), []meta.Group{g1, g2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Groups() = %+v, want %+v", got, want)
	}
	if got, ok := s.Group("g1"); !ok || !reflect.DeepEqual(got, g1) {
		t.Fatalf("Group(g1) = %+v, %v", got, ok)
	}
	if _, ok := s.Group("g3"); ok {
		t.Fatal("deleted group g3 still there")
	}
	g1.Attributes["k"] = "changed"
	if got, _ := s.Group("g1"); got.Attributes["k"] != "v" {
		t.Fatalf("stored group attributes follow the caller's map: %v", got.Attributes)
	}
	gs := s.Groups()
	gs[0].Name = "scribbled"
	if got := s.Groups(); got[0].Name != "g1" {
		t.Fatalf("Groups() after the caller wrote to an earlier result: %+v", got)
	}
}

// rmq5Group is a group with every RocketMQ 5 field set.
func rmq5Group() meta.Group {
	return meta.Group{Name: "g", ConsumeEnable: true, ConsumeMessageOrderly: true, RetryMaxTimes: 2, GroupSysFlag: 1,
		ConsumeTimeoutMinute: 15,
		GroupRetryPolicy: &meta.RetryPolicy{Type: "CUSTOMIZED", Customized: &meta.CustomizedRetry{Next: []int64{1000, 5000}},
			Exponential: &meta.ExponentialRetry{Initial: 1, Max: 2, Multiplier: 3}},
		SubscriptionDataSet: []meta.SimpleSubscription{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 7}}}
}

// testGroupFieldsOwned: the store keeps its own copy of a group's retry
// policy and subscription set, an identical group is no change, and a
// change of any RocketMQ 5 field is a change.
func testGroupFieldsOwned(t *testing.T, s meta.Tables, _ *clock.Manual) {
	g := rmq5Group()
	must(t, s.PutGroup(g))
	v := s.GroupsVersion()
	g.GroupRetryPolicy.Customized.Next[0] = 9
	g.GroupRetryPolicy.Exponential.Max = 9
	g.SubscriptionDataSet[0].Topic = "U"
	if got, _ := s.Group("g"); !reflect.DeepEqual(got, rmq5Group()) {
		t.Fatalf("stored group follows the caller's values: %+v", got)
	}
	must(t, s.PutGroup(rmq5Group()))
	if s.GroupsVersion() != v {
		t.Fatalf("an identical group bumped the version %+v -> %+v", v, s.GroupsVersion())
	}
	for _, c := range []struct {
		name   string
		change func(*meta.Group)
	}{
		{"orderly", func(h *meta.Group) { h.ConsumeMessageOrderly = false }},
		{"sysflag", func(h *meta.Group) { h.GroupSysFlag = 0 }},
		{"timeout", func(h *meta.Group) { h.ConsumeTimeoutMinute = 1 }},
		{"policy", func(h *meta.Group) { h.GroupRetryPolicy = &meta.RetryPolicy{Type: "EXPONENTIAL"} }},
		{"policy steps", func(h *meta.Group) { h.GroupRetryPolicy.Customized.Next[1] = 6000 }},
		{"subs", func(h *meta.Group) { h.SubscriptionDataSet = nil }},
	} {
		h := rmq5Group()
		c.change(&h)
		before := s.GroupsVersion()
		must(t, s.PutGroup(h))
		if s.GroupsVersion() == before {
			t.Fatalf("changing %s is not a change", c.name)
		}
		if got, _ := s.Group("g"); !reflect.DeepEqual(got, h) {
			t.Fatalf("after changing %s: %+v, want %+v", c.name, got, h)
		}
		must(t, s.PutGroup(rmq5Group()))
	}
	if got, _ := s.Group("g"); !reflect.DeepEqual(got, rmq5Group()) {
		t.Fatalf("at the end %+v, want %+v", got, rmq5Group())
	}
}

// testDurability: a change is durable when its method returns, and the
// syncs succeed (at once when nothing is pending).
func testDurability(t *testing.T, s meta.Tables, _ *clock.Manual) {
	ctx := context.Background()
	if !s.TopicsDurable() {
		t.Fatal("a fresh store's topics are not durable")
	}
	must(t, s.SyncTopics(ctx))
	must(t, s.PutTopic(topic("A", 1)))
	if !s.TopicsDurable() {
		t.Fatal("topics not durable after PutTopic returned")
	}
	if _, err := s.UpdateTopic(topic("A", 2)); err != nil {
		t.Fatal(err)
	}
	if !s.TopicsDurable() {
		t.Fatal("topics not durable after UpdateTopic returned")
	}
	if _, _, err := s.EnsureTopic(topic("B", 1)); err != nil {
		t.Fatal(err)
	}
	if !s.TopicsDurable() {
		t.Fatal("topics not durable after EnsureTopic returned")
	}
	if _, err := s.RemoveTopic("B"); err != nil {
		t.Fatal(err)
	}
	if !s.TopicsDurable() {
		t.Fatal("topics not durable after RemoveTopic returned")
	}
	must(t, s.SyncTopics(ctx))
	if !s.TopicsDurable() {
		t.Fatal("topics not durable after SyncTopics returned")
	}
	s.CommitOffset("g", "A", 0, 5)
	must(t, s.SyncOffsets(ctx))
	must(t, s.SyncOffsets(ctx)) // nothing new
	if off, ok := s.Offset("g", "A", 0); !ok || off != 5 {
		t.Fatalf("Offset after SyncOffsets = %d, %v", off, ok)
	}
	// With nothing to write, a done context does not matter.
	done, cancel := context.WithCancel(ctx)
	cancel()
	must(t, s.SyncTopics(done))
	must(t, s.SyncOffsets(done))
}

// offsetMap flattens AllOffsets for comparison.
func offsetMap(es []meta.OffsetEntry) map[meta.OffsetEntry]int {
	out := map[meta.OffsetEntry]int{}
	for _, e := range es {
		out[e]++
	}
	return out
}

func testOffsets(t *testing.T, s meta.Tables, _ *clock.Manual) {
	if es := s.AllOffsets(); len(es) != 0 {
		t.Fatalf("fresh AllOffsets() = %+v", es)
	}
	s.CommitOffset("g1", "t1", 0, 10)
	s.CommitOffset("g1", "t1", 1, 11)
	s.CommitOffset("g1", "t2", 0, 20)
	s.CommitOffset("g2", "t1", 0, 30)
	s.CommitOffset("g1", "t1", 0, 12) // overwrite
	if off, ok := s.Offset("g1", "t1", 0); !ok || off != 12 {
		t.Fatalf("Offset = %d, %v", off, ok)
	}
	if _, ok := s.Offset("g1", "t1", 7); ok {
		t.Fatal("Offset of an uncommitted queue found")
	}
	if _, ok := s.Offset("g3", "t1", 0); ok {
		t.Fatal("Offset of an unknown group found")
	}
	got := s.GroupOffsets("g1")
	want := map[string]map[int32]int64{"t1": {0: 12, 1: 11}, "t2": {0: 20}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupOffsets = %v, want %v", got, want)
	}
	got["t1"][0] = 999 // a copy
	delete(got, "t2")
	if off, _ := s.Offset("g1", "t1", 0); off != 12 {
		t.Fatal("GroupOffsets returned the store's own map")
	}
	if g := s.GroupOffsets("nobody"); g == nil || len(g) != 0 {
		t.Fatalf("GroupOffsets(nobody) = %v", g)
	}
	all := s.AllOffsets()
	wantAll := map[meta.OffsetEntry]int{
		{Group: "g1", Topic: "t1", QueueID: 0, Offset: 12}: 1,
		{Group: "g1", Topic: "t1", QueueID: 1, Offset: 11}: 1,
		{Group: "g1", Topic: "t2", QueueID: 0, Offset: 20}: 1,
		{Group: "g2", Topic: "t1", QueueID: 0, Offset: 30}: 1,
	}
	if m := offsetMap(all); !reflect.DeepEqual(m, wantAll) {
		t.Fatalf("AllOffsets = %+v", all)
	}
	all[0].Offset = -1 // a copy
	if m := offsetMap(s.AllOffsets()); !reflect.DeepEqual(m, wantAll) {
		t.Fatalf("AllOffsets after the caller wrote to an earlier result: %+v", m)
	}

	s.DeleteOffsets("g1", "t2")
	if got, want := s.GroupOffsets("g1"), (map[string]map[int32]int64{"t1": {0: 12, 1: 11}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteOffsets(g1, t2): %v", got)
	}
	s.DeleteOffsets("g1", "missing")
	s.DeleteOffsets("missing", "")
	if n := len(s.AllOffsets()); n != 3 {
		t.Fatalf("deleting missing offsets changed them: %+v", s.AllOffsets())
	}
	s.CommitOffset("g3", "t1", 5, 50)
	s.CommitOffset("g3", "t3", 5, 51)
	s.DeleteTopicOffsets("t1")
	if m, want := offsetMap(s.AllOffsets()), (map[meta.OffsetEntry]int{{Group: "g3", Topic: "t3", QueueID: 5, Offset: 51}: 1}); !reflect.DeepEqual(m, want) {
		t.Fatalf("after DeleteTopicOffsets(t1): %+v", m)
	}
	s.CommitOffset("g1", "t9", 0, 1)
	s.CommitOffset("g1", "t8", 0, 1)
	s.CommitOffset("g2", "t9", 0, 1)
	s.DeleteOffsets("g1", "")
	wantLeft := map[meta.OffsetEntry]int{
		{Group: "g2", Topic: "t9", QueueID: 0, Offset: 1}:  1,
		{Group: "g3", Topic: "t3", QueueID: 5, Offset: 51}: 1,
	}
	if m := offsetMap(s.AllOffsets()); !reflect.DeepEqual(m, wantLeft) {
		t.Fatalf("after DeleteOffsets(g1, \"\"): %+v", m)
	}
	// A deleted offset can be committed again; an offset may go back
	// (a reset) and be negative.
	s.CommitOffset("g1", "t9", 0, 7)
	s.CommitOffset("g1", "t9", 0, 3)
	s.CommitOffset("g1", "t9", 1, -1)
	if got, want := s.GroupOffsets("g1"), (map[string]map[int32]int64{"t9": {0: 3, 1: -1}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after recommitting: %v", got)
	}
	// Topic and group configs do not own offsets: removing them leaves
	// the offsets.
	must(t, s.PutTopic(topic("t9", 1)))
	must(t, s.PutGroup(meta.Group{Name: "g1"}))
	if _, err := s.RemoveTopic("t9"); err != nil {
		t.Fatal(err)
	}
	must(t, s.DeleteGroup("g1"))
	if off, ok := s.Offset("g1", "t9", 0); !ok || off != 3 {
		t.Fatalf("removing the topic and group config took the offset: %d, %v", off, ok)
	}
}

// testConcurrentOffsets commits from several goroutines while others read
// and delete, and checks the final state (and, under -race, the locking).
func testConcurrentOffsets(t *testing.T, s meta.Tables, _ *clock.Manual) {
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			group := fmt.Sprintf("g%d", w)
			for i := range each {
				s.CommitOffset(group, "t", int32(i%4), int64(i))
				if i%50 == 0 {
					s.DeleteOffsets(group, "gone")
					_ = s.GroupOffsets(group)
					_ = s.AllOffsets()
				}
			}
		})
	}
	wg.Go(func() {
		for range each {
			s.DeleteTopicOffsets("gone")
			if err := s.SyncOffsets(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	for w := range writers {
		got := s.GroupOffsets(fmt.Sprintf("g%d", w))
		want := map[string]map[int32]int64{"t": {0: each - 4, 1: each - 3, 2: each - 2, 3: each - 1}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("g%d offsets %v, want %v", w, got, want)
		}
	}
	if n := len(s.AllOffsets()); n != writers*4 {
		t.Fatalf("%d offsets, want %d", n, writers*4)
	}
}

func testUsers(t *testing.T, s meta.Tables, _ *clock.Manual) {
	if us := s.Users(); len(us) != 0 {
		t.Fatalf("fresh Users() = %+v", us)
	}
	if err := s.PutUser(meta.User{Secret: "x"}); !errors.Is(err, meta.ErrInvalidName) {
		t.Fatalf("PutUser without a name: %v, want ErrInvalidName", err)
	}
	bob := meta.User{Name: "bob", Secret: "b-secret", Type: "Normal", Status: "enable"}
	alice := meta.User{Name: "alice", Secret: "a-secret", Type: "Super", Status: "enable"}
	must(t, s.PutUser(bob))
	must(t, s.PutUser(alice))
	if got := s.Users(); !reflect.DeepEqual(got, []meta.User{alice, bob}) {
		t.Fatalf("Users() = %+v, want alice then bob", got)
	}
	bob.Status = "disable"
	must(t, s.PutUser(bob))
	if got, ok := s.User("bob"); !ok || got != bob {
		t.Fatalf("User(bob) after replace = %+v %v", got, ok)
	}
	if existed, err := s.RemoveUser("bob"); err != nil || !existed {
		t.Fatalf("RemoveUser(bob) = %v %v", existed, err)
	}
	if existed, err := s.RemoveUser("bob"); err != nil || existed {
		t.Fatalf("RemoveUser(bob) again = %v %v", existed, err)
	}
	if _, ok := s.User("bob"); ok {
		t.Fatal("bob is still there")
	}
}

func testAcl(subject string) meta.Acl {
	return meta.Acl{Subject: subject, Policies: []meta.AclPolicy{{Type: "Custom", Entries: []meta.AclEntry{
		{Resource: "Topic:orders", Actions: []string{"Pub", "Sub"}, SourceIPs: []string{"10.0.0.0/8"}, Decision: "Allow"},
		{Resource: "Group:*", Actions: []string{"All"}, Decision: "Deny"},
	}}}}
}

func testAcls(t *testing.T, s meta.Tables, _ *clock.Manual) {
	if as := s.Acls(); len(as) != 0 {
		t.Fatalf("fresh Acls() = %+v", as)
	}
	if err := s.PutAcl(meta.Acl{}); !errors.Is(err, meta.ErrInvalidName) {
		t.Fatalf("PutAcl without a subject: %v, want ErrInvalidName", err)
	}
	a, b := testAcl("User:a"), testAcl("User:b")
	must(t, s.PutAcl(b))
	must(t, s.PutAcl(a))
	// The caller's slices are not the store's.
	a.Policies[0].Entries[0].Actions[0] = "Get"
	a.Policies[0].Entries[0].SourceIPs[0] = "1.2.3.4"
	if got, _ := s.Acl("User:a"); !reflect.DeepEqual(got, testAcl("User:a")) {
		t.Fatalf("the store shares the caller's slices: %+v", got)
	}
	if got := s.Acls(); !reflect.DeepEqual(got, []meta.Acl{testAcl("User:a"), testAcl("User:b")}) {
		t.Fatalf("Acls() = %+v", got)
	}
	repl := meta.Acl{Subject: "User:b", Policies: []meta.AclPolicy{{Type: "Default", Entries: []meta.AclEntry{{Resource: "*", Actions: []string{"Get"}, Decision: "Allow"}}}}}
	must(t, s.PutAcl(repl))
	if got, ok := s.Acl("User:b"); !ok || !reflect.DeepEqual(got, repl) {
		t.Fatalf("Acl(User:b) after replace = %+v %v", got, ok)
	}
	if existed, err := s.RemoveAcl("User:a"); err != nil || !existed {
		t.Fatalf("RemoveAcl = %v %v", existed, err)
	}
	if existed, err := s.RemoveAcl("User:a"); err != nil || existed {
		t.Fatalf("RemoveAcl again = %v %v", existed, err)
	}
	if got := s.Acls(); len(got) != 1 || got[0].Subject != "User:b" {
		t.Fatalf("Acls() after remove = %+v", got)
	}
}
