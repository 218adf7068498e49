package meta

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func TestTopicsPutGetDeleteAcrossReopen(t *testing.T) {
	fsys := vfs.NewMem()
	s := openT(t, fsys, clock.NewManual(epoch))
	a := topic("A", 4)
	a.Attributes = map[string]string{"persistent": "false"}
	b := topic("B", 8)
	b.Order = true
	c := topic("C", 1)
	must(t, s.PutTopic(c))
	must(t, s.PutTopics([]Topic{b, a}))
	must(t, s.DeleteTopic("C"))
	must(t, s.DeleteTopic("missing"))

	// The store owns its copy of the attributes.
	a.Attributes["persistent"] = "true"
	if got, _ := s.Topic("A"); got.Attributes["persistent"] != "false" {
		t.Fatalf("stored attributes follow the caller's map: %v", got.Attributes)
	}
	a.Attributes["persistent"] = "false"

	want := []Topic{a, b}
	if got := s.Topics(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Topics() = %+v, want %+v", got, want)
	}
	if _, ok := s.Topic("C"); ok {
		t.Fatal("deleted topic C still there")
	}
	must(t, s.Close())

	s = openT(t, fsys, clock.NewManual(epoch))
	defer s.Close()
	if got := s.Topics(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen Topics() = %+v, want %+v", got, want)
	}
	if got, ok := s.Topic("B"); !ok || !reflect.DeepEqual(got, b) {
		t.Fatalf("Topic(B) = %+v, %v", got, ok)
	}
}

func TestGroupsPutGetDeleteAcrossReopen(t *testing.T) {
	fsys := vfs.NewMem()
	s := openT(t, fsys, clock.NewManual(epoch))
	g1 := Group{Name: "g1", ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryMaxTimes: 16, RetryQueueNums: 1, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIDsChangedEnable: true, Attributes: map[string]string{"k": "v"}}
	g2 := Group{Name: "g2", RetryMaxTimes: 3, BrokerID: 2}
	g3 := Group{Name: "g3"}
	must(t, s.PutGroup(g2))
	must(t, s.PutGroup(g1))
	must(t, s.PutGroup(g3))
	must(t, s.DeleteGroup("g3"))
	must(t, s.Close())

	s = openT(t, fsys, clock.NewManual(epoch))
	defer s.Close()
	if got, want := s.Groups(), []Group{g1, g2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Groups() = %+v, want %+v", got, want)
	}
	if _, ok := s.Group("g3"); ok {
		t.Fatal("deleted group g3 still there")
	}
}

// TestGroupRocketMQ5FieldsPersistAndAreOwned: the RocketMQ 5 fields of a
// group survive a reopen, a change to any of them is a change (version
// bump), and the store keeps its own copy of the policy and the set.
func TestGroupRocketMQ5FieldsPersistAndAreOwned(t *testing.T) {
	fsys := vfs.NewMem()
	s := openT(t, fsys, clock.NewManual(epoch))
	g := Group{Name: "g", ConsumeEnable: true, ConsumeMessageOrderly: true, RetryMaxTimes: 2, GroupSysFlag: 1,
		ConsumeTimeoutMinute: 15,
		GroupRetryPolicy: &RetryPolicy{Type: "CUSTOMIZED", Customized: &CustomizedRetry{Next: []int64{1000, 5000}},
			Exponential: &ExponentialRetry{Initial: 1, Max: 2, Multiplier: 3}},
		SubscriptionDataSet: []SimpleSubscription{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 7}}}
	must(t, s.PutGroup(g))
	v := s.GroupsVersion()
	g.GroupRetryPolicy.Customized.Next[0] = 9
	g.SubscriptionDataSet[0].Topic = "U"
	if got, _ := s.Group("g"); got.GroupRetryPolicy.Customized.Next[0] != 1000 || got.SubscriptionDataSet[0].Topic != "T" {
		t.Fatalf("stored group follows the caller's values: %+v", got)
	}
	g.GroupRetryPolicy.Customized.Next[0] = 1000
	g.SubscriptionDataSet[0].Topic = "T"
	must(t, s.PutGroup(g))
	if s.GroupsVersion() != v {
		t.Fatalf("an identical group bumped the version %+v -> %+v", v, s.GroupsVersion())
	}
	for name, change := range map[string]func(*Group){
		"orderly": func(h *Group) { h.ConsumeMessageOrderly = false },
		"sysflag": func(h *Group) { h.GroupSysFlag = 0 },
		"timeout": func(h *Group) { h.ConsumeTimeoutMinute = 1 },
		"policy":  func(h *Group) { h.GroupRetryPolicy = &RetryPolicy{Type: "EXPONENTIAL"} },
		"subs":    func(h *Group) { h.SubscriptionDataSet = nil },
	} {
		h := g.own()
		change(&h)
		before := s.GroupsVersion()
		must(t, s.PutGroup(h))
		if s.GroupsVersion() == before {
			t.Fatalf("changing %s is not a change", name)
		}
		must(t, s.PutGroup(g))
	}
	must(t, s.Close())
	s = openT(t, fsys, clock.NewManual(epoch))
	defer s.Close()
	if got, _ := s.Group("g"); !reflect.DeepEqual(got, g) {
		t.Fatalf("after reopen %+v, want %+v", got, g)
	}
}

func TestFileLayoutUsesRocketMQFieldNames(t *testing.T) {
	fsys := vfs.NewMem()
	s := openT(t, fsys, clock.NewManual(epoch))
	must(t, s.PutTopic(topic("T", 2)))
	must(t, s.PutGroup(Group{Name: "G", NotifyConsumerIDsChangedEnable: true}))
	s.CommitOffset("G", "T", 1, 42)
	must(t, s.Close())
	for file, wants := range map[string][]string{
		topicsFileName:  {`"topicConfigTable":{"T":{"topicName":"T","readQueueNums":2,"writeQueueNums":2,"perm":6`, `"dataVersion":{"timestamp":`},
		groupsFileName:  {`"subscriptionGroupTable":{"G":{"groupName":"G"`, `"notifyConsumerIdsChangedEnable":true`, `"brokerId":0`},
		offsetsFileName: {`{"offsetTable":{"G":{"T":{"1":42}}}}`},
	} {
		data, ok, err := vfs.ReadFile(fsys, path.Join(testDir, file))
		if err != nil || !ok {
			t.Fatalf("read %s: %v %v", file, ok, err)
		}
		for _, w := range wants {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s = %s\nwant it to contain %s", file, data, w)
			}
		}
	}
}

func TestVersionsBumpAndPersist(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(epoch)
	s := openT(t, fsys, clk)
	if v := s.TopicsVersion(); v != (DataVersion{}) {
		t.Fatalf("fresh TopicsVersion = %+v", v)
	}
	must(t, s.PutTopic(topic("A", 4)))
	want := DataVersion{Timestamp: epoch.UnixMilli(), Counter: 1}
	if v := s.TopicsVersion(); v != want {
		t.Fatalf("TopicsVersion = %+v, want %+v", v, want)
	}
	clk.Advance(1500 * time.Millisecond)
	must(t, s.PutTopics([]Topic{topic("B", 1), topic("C", 1)})) // one change
	want = DataVersion{Timestamp: epoch.Add(1500 * time.Millisecond).UnixMilli(), Counter: 2}
	if v := s.TopicsVersion(); v != want {
		t.Fatalf("TopicsVersion = %+v, want %+v", v, want)
	}
	// No-ops do not bump.
	clk.Advance(time.Second)
	must(t, s.PutTopic(topic("A", 4)))
	must(t, s.DeleteTopic("nope"))
	if v := s.TopicsVersion(); v != want {
		t.Fatalf("no-op changed TopicsVersion to %+v", v)
	}
	must(t, s.DeleteTopic("C"))
	wantT := DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 3}
	if v := s.TopicsVersion(); v != wantT {
		t.Fatalf("TopicsVersion = %+v, want %+v", v, wantT)
	}

	must(t, s.PutGroup(Group{Name: "g"}))
	wantG := DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 1}
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("GroupsVersion = %+v, want %+v", v, wantG)
	}
	if v := s.TopicsVersion(); v != wantT {
		t.Fatalf("a group change moved TopicsVersion to %+v", v)
	}
	must(t, s.Close())

	s = openT(t, fsys, clk)
	if v := s.TopicsVersion(); v != wantT {
		t.Fatalf("reopened TopicsVersion = %+v, want %+v", v, wantT)
	}
	if v := s.GroupsVersion(); v != wantG {
		t.Fatalf("reopened GroupsVersion = %+v, want %+v", v, wantG)
	}
	clk.Advance(time.Minute)
	must(t, s.DeleteGroup("g"))
	if v := s.GroupsVersion(); v != (DataVersion{Timestamp: clk.Now().UnixMilli(), Counter: 2}) {
		t.Fatalf("GroupsVersion after reopen and delete = %+v", v)
	}
	must(t, s.Close())
}

func TestInvalidNames(t *testing.T) {
	s := openT(t, vfs.NewMem(), clock.NewManual(epoch))
	defer s.Close()
	for name, err := range map[string]error{
		"PutTopic":  s.PutTopic(Topic{}),
		"PutTopics": s.PutTopics([]Topic{topic("ok", 1), {}}),
		"PutGroup":  s.PutGroup(Group{}),
	} {
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("%s with empty name: %v, want ErrInvalidName", name, err)
		}
	}
	if len(s.Topics()) != 0 {
		t.Fatalf("a rejected PutTopics stored %+v", s.Topics())
	}
}

func TestOffsetsCommitFlushReopen(t *testing.T) {
	fsys := vfs.NewMem()
	var cnt opCounter
	h := &hookFS{FS: fsys}
	h.setHook(cnt.hook)
	s := openT(t, h, clock.NewManual(epoch))
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
	if cnt.renames(offsetsFileName) != 0 {
		t.Fatal("CommitOffset wrote a file")
	}
	must(t, s.FlushOffsets())
	must(t, s.FlushOffsets()) // nothing changed: no write
	if n := cnt.renames(offsetsFileName); n != 1 {
		t.Fatalf("%d offsets writes, want 1", n)
	}
	got := s.GroupOffsets("g1")
	want := map[string]map[int32]int64{"t1": {0: 12, 1: 11}, "t2": {0: 20}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupOffsets = %v, want %v", got, want)
	}
	got["t1"][0] = 999 // a copy
	if off, _ := s.Offset("g1", "t1", 0); off != 12 {
		t.Fatal("GroupOffsets returned the store's own map")
	}
	if g := s.GroupOffsets("nobody"); g == nil || len(g) != 0 {
		t.Fatalf("GroupOffsets(nobody) = %v", g)
	}
	must(t, s.Close())

	s = openT(t, fsys, clock.NewManual(epoch))
	if got := s.GroupOffsets("g1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened GroupOffsets = %v, want %v", got, want)
	}
	if off, ok := s.Offset("g2", "t1", 0); !ok || off != 30 {
		t.Fatalf("reopened Offset(g2) = %d, %v", off, ok)
	}

	s.DeleteOffsets("g1", "t2")
	if got, want := s.GroupOffsets("g1"), (map[string]map[int32]int64{"t1": {0: 12, 1: 11}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteOffsets(g1, t2): %v", got)
	}
	s.CommitOffset("g3", "t1", 5, 50)
	s.DeleteTopicOffsets("t1")
	if got := allOffsets(s); len(got) != 0 {
		t.Fatalf("after DeleteTopicOffsets(t1): %v", got)
	}
	s.CommitOffset("g1", "t9", 0, 1)
	s.CommitOffset("g1", "t8", 0, 1)
	s.CommitOffset("g2", "t9", 0, 1)
	s.DeleteOffsets("g1", "")
	if got, want := allOffsets(s), (map[offsetKey]int64{{"g2", "t9", 0}: 1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteOffsets(g1, \"\"): %v", got)
	}
	must(t, s.Close()) // Close flushes

	s = openT(t, fsys, clock.NewManual(epoch))
	defer s.Close()
	if got, want := allOffsets(s), (map[offsetKey]int64{{"g2", "t9", 0}: 1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("deletions not persisted by Close: %v", got)
	}
}

func TestBackgroundFlushFiresOnAdvance(t *testing.T) {
	mem := vfs.NewMem()
	var cnt opCounter
	h := &hookFS{FS: mem}
	h.setHook(cnt.hook)
	clk := clock.NewManual(epoch)
	s, err := Open(h, testDir, Options{Clock: clk, OffsetFlushInterval: 5 * time.Second, Logger: testLogger(t)})
	must(t, err)

	s.CommitOffset("g", "t", 0, 1)
	clk.Advance(5*time.Second - time.Millisecond)
	if n := cnt.renames(offsetsFileName); n != 0 {
		t.Fatalf("flushed before the interval: %d writes", n)
	}
	clk.Advance(time.Millisecond)
	if n := cnt.renames(offsetsFileName); n != 1 {
		t.Fatalf("%d writes after the interval, want 1", n)
	}
	// What the background flush wrote is durable.
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	if off, ok := c.Offset("g", "t", 0); !ok || off != 1 {
		t.Fatalf("after crash Offset = %d, %v", off, ok)
	}
	must(t, c.Close())

	// Re-armed: the next interval flushes again, an idle one writes nothing.
	s.CommitOffset("g", "t", 0, 2)
	clk.Advance(5 * time.Second)
	clk.Advance(5 * time.Second)
	if n := cnt.renames(offsetsFileName); n != 2 {
		t.Fatalf("%d writes, want 2", n)
	}
	if clk.Pending() != 1 {
		t.Fatalf("%d timers pending, want 1", clk.Pending())
	}
	must(t, s.Close())
	if clk.Pending() != 0 {
		t.Fatalf("Close left %d timers", clk.Pending())
	}
	clk.Advance(time.Minute) // nothing fires after Close
	if n := cnt.renames(offsetsFileName); n != 2 {
		t.Fatalf("%d writes after Close, want 2", n)
	}
}

func TestBackgroundFlushFailureIsRetried(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	clk := clock.NewManual(epoch)
	s := openT(t, h, clk)
	fail := errors.New("injected")
	h.setHook(func(op vfs.Op, name string) error {
		if op == vfs.OpSync {
			return fail
		}
		return nil
	})
	s.CommitOffset("g", "t", 3, 33)
	clk.Advance(DefaultOffsetFlushInterval)
	h.setHook(nil)
	clk.Advance(DefaultOffsetFlushInterval)
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if off, ok := c.Offset("g", "t", 3); !ok || off != 33 {
		t.Fatalf("after a failed then a good flush: Offset = %d, %v", off, ok)
	}
	must(t, s.Close())
}

// blockFirst makes the first operation op on a file named base wait for
// release; entered is closed when it arrives.
func blockFirst(op vfs.Op, base string) (hook func(vfs.Op, string) error, entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook = func(o vfs.Op, name string) error {
		if o == op && path.Base(name) == base {
			first := false
			once.Do(func() { first = true })
			if first {
				close(entered)
				<-release
			}
		}
		return nil
	}
	return hook, entered, release
}

func TestSyncOffsetsGroupCommitsConcurrentCallers(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	s := openT(t, h, clock.NewManual(epoch))
	defer s.Close()
	hook, entered, release := blockFirst(vfs.OpSync, offsetsFileName+tmpSuffix)
	h.setHook(hook)

	// A first write starts and blocks in Sync.
	s.CommitOffset("g", "t", 0, 1)
	first := make(chan error, 1)
	go func() { first <- s.SyncOffsets(context.Background()) }()
	await(t, entered)

	// While it runs, CommitOffset and Offset do not wait for it.
	s.CommitOffset("g", "t", 0, 2)
	if off, _ := s.Offset("g", "t", 0); off != 2 {
		t.Fatalf("Offset = %d during a write", off)
	}

	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s.CommitOffset("g", "t", int32(i+1), int64(100+i))
			errs <- s.SyncOffsets(context.Background())
		}()
	}
	w := &s.offsets.w
	waitFor(t, "callers to park", func() bool { return w.waitingCount() == n })
	close(release)
	must(t, <-first)
	for range n {
		must(t, <-errs)
	}
	if a := w.attemptCount(); a != 2 {
		t.Fatalf("%d writes for 1 + %d concurrent SyncOffsets, want 2", a, n)
	}
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got, want := allOffsets(c), allOffsets(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after crash: %v, want %v", got, want)
	}
}

func TestSyncOffsetsHonoursContext(t *testing.T) {
	h := &hookFS{FS: vfs.NewMem()}
	s := openT(t, h, clock.NewManual(epoch))
	defer s.Close()
	hook, entered, release := blockFirst(vfs.OpSync, offsetsFileName+tmpSuffix)
	h.setHook(hook)
	s.CommitOffset("g", "t", 0, 1)
	first := make(chan error, 1)
	go func() { first <- s.FlushOffsets() }()
	await(t, entered)
	s.CommitOffset("g", "t", 0, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.SyncOffsets(ctx) }()
	waitFor(t, "SyncOffsets to park", func() bool { return s.offsets.w.waitingCount() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("SyncOffsets with a cancelled ctx: %v", err)
	}
	close(release)
	must(t, <-first)
	must(t, s.SyncOffsets(context.Background()))
}

func TestPutTopicGroupCommitsConcurrentCallers(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	s := openT(t, h, clock.NewManual(epoch))
	defer s.Close()
	hook, entered, release := blockFirst(vfs.OpSync, topicsFileName+tmpSuffix)
	h.setHook(hook)

	first := make(chan error, 1)
	go func() { first <- s.PutTopic(topic("first", 1)) }()
	await(t, entered)
	// Readers do not wait for the write.
	if _, ok := s.Topic("first"); !ok {
		t.Fatal("topic not visible while its write runs")
	}
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.PutTopic(topic(fmt.Sprintf("t%03d", i), 4)) }()
	}
	waitFor(t, "PutTopic callers to park", func() bool { return s.topics.w.waitingCount() == n })
	close(release)
	must(t, <-first)
	for range n {
		must(t, <-errs)
	}
	if a := s.topics.w.attemptCount(); a != 2 {
		t.Fatalf("%d topic writes for 1 + %d concurrent PutTopic, want 2", a, n)
	}
	if v := s.TopicsVersion(); v.Counter != n+1 {
		t.Fatalf("TopicsVersion.Counter = %d, want %d", v.Counter, n+1)
	}
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != n+1 {
		t.Fatalf("after crash %d topics, want %d", got, n+1)
	}
}

// TestManyConcurrentAutoCreates is the auto-create storm: every topic is
// durable when its PutTopic returns, and writes are shared.
func TestManyConcurrentAutoCreates(t *testing.T) {
	mem := vfs.NewMem()
	s := openT(t, mem, clock.NewManual(epoch))
	defer s.Close()
	const n = 2000
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { must(t, s.PutTopic(topic(fmt.Sprintf("auto-%05d", i), 4))) })
	}
	wg.Wait()
	t.Logf("%d PutTopic calls took %d writes", n, s.topics.w.attemptCount())
	if a := s.topics.w.attemptCount(); a > n {
		t.Fatalf("%d writes for %d topics", a, n)
	}
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != n {
		t.Fatalf("after crash %d topics, want %d", got, n)
	}
	if v := c.TopicsVersion(); v.Counter != n {
		t.Fatalf("after crash TopicsVersion.Counter = %d, want %d", v.Counter, n)
	}
}

func TestCloseIdempotent(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewManual(epoch)
	s := openT(t, mem, clk)
	s.CommitOffset("g", "t", 0, 7)
	must(t, s.Close())
	must(t, s.Close())
	for name, err := range map[string]error{
		"PutTopic":     s.PutTopic(topic("x", 1)),
		"PutTopics":    s.PutTopics([]Topic{topic("x", 1)}),
		"DeleteTopic":  s.DeleteTopic("x"),
		"PutGroup":     s.PutGroup(Group{Name: "x"}),
		"DeleteGroup":  s.DeleteGroup("x"),
		"FlushOffsets": s.FlushOffsets(),
		"SyncOffsets":  s.SyncOffsets(context.Background()),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if off, ok := s.Offset("g", "t", 0); !ok || off != 7 {
		t.Fatalf("reads after Close: %d, %v", off, ok)
	}
	// Close's flush is durable.
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clk)
	defer c.Close()
	if off, ok := c.Offset("g", "t", 0); !ok || off != 7 {
		t.Fatalf("Close did not flush offsets: %d, %v", off, ok)
	}
}

func TestConcurrentCloseWaitsForFirst(t *testing.T) {
	h := &hookFS{FS: vfs.NewMem()}
	s := openT(t, h, clock.NewManual(epoch))
	hook, entered, release := blockFirst(vfs.OpSync, offsetsFileName+tmpSuffix)
	h.setHook(hook)
	s.CommitOffset("g", "t", 0, 1)
	errs := make(chan error, 2)
	go func() { errs <- s.Close() }()
	await(t, entered)
	go func() { errs <- s.Close() }()
	select {
	case err := <-errs:
		t.Fatalf("a Close returned (%v) while the final flush was blocked", err)
	default:
	}
	close(release)
	must(t, <-errs)
	must(t, <-errs)
}

func TestOpenRejectsCorruptFiles(t *testing.T) {
	good := vfs.NewMem()
	s := openT(t, good, clock.NewManual(epoch))
	must(t, s.PutTopic(topic("A", 1)))
	must(t, s.PutGroup(Group{Name: "G"}))
	s.CommitOffset("G", "A", 0, 5)
	must(t, s.Close())

	for _, file := range []string{topicsFileName, groupsFileName, offsetsFileName} {
		p := path.Join(testDir, file)
		data, _, err := vfs.ReadFile(good, p)
		must(t, err)
		bad := map[string][]byte{
			"empty":    {},
			"garbage":  []byte("\x00\x01garbage"),
			"trailing": append(append([]byte{}, data...), []byte(" {}")...),
			"null":     []byte("null"),
		}
		// Every proper prefix of a good file: what a torn write would leave.
		for i := 0; i < len(data); i++ {
			bad[fmt.Sprintf("prefix%d", i)] = data[:i]
		}
		for name, content := range bad {
			fsys := good.CrashClone(vfs.CrashOptions{})
			writeRaw(t, fsys, p, content)
			_, err := Open(fsys, testDir, Options{Clock: clock.NewManual(epoch)})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
				t.Fatalf("%s %s: Open error %v, want ErrCorrupt naming %s", file, name, err, p)
			}
		}
	}
}

func TestOpenRejectsMismatchedNames(t *testing.T) {
	fsys := vfs.NewMem()
	must(t, fsys.MkdirAll(testDir))
	writeRaw(t, fsys, path.Join(testDir, topicsFileName),
		[]byte(`{"dataVersion":{"timestamp":1,"counter":1},"topicConfigTable":{"A":{"topicName":"B"}}}`))
	if _, err := Open(fsys, testDir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

func writeRaw(t *testing.T, fsys vfs.FS, p string, data []byte) {
	t.Helper()
	f, err := fsys.Create(p)
	must(t, err)
	if len(data) > 0 {
		_, err = f.WriteAt(data, 0)
		must(t, err)
	}
	must(t, f.Sync())
	must(t, f.Close())
	must(t, fsys.SyncDir(path.Dir(p)))
}

func TestOpenRemovesTempFiles(t *testing.T) {
	fsys := vfs.NewMem()
	s := openT(t, fsys, clock.NewManual(epoch))
	must(t, s.PutTopic(topic("A", 1)))
	must(t, s.Close())
	for _, f := range []string{topicsFileName, groupsFileName, offsetsFileName} {
		writeRaw(t, fsys, path.Join(testDir, f+tmpSuffix), []byte(`{"half`))
	}
	s = openT(t, fsys, clock.NewManual(epoch))
	defer s.Close()
	if _, ok := s.Topic("A"); !ok {
		t.Fatal("topic A lost")
	}
	names, err := fsys.ReadDir(testDir)
	must(t, err)
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			t.Fatalf("Open left %s", n)
		}
	}
}

func TestOpenRejectsNegativeInterval(t *testing.T) {
	_, err := Open(vfs.NewMem(), testDir, Options{OffsetFlushInterval: -time.Second})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "OffsetFlushInterval") {
		t.Fatalf("Open: %v", err)
	}
}

// TestOSFileSystem runs a round trip on the real file system.
func TestOSFileSystem(t *testing.T) {
	dir := path.Join(t.TempDir(), "a", "meta")
	s, err := Open(vfs.OS, dir, Options{Clock: clock.NewManual(epoch)})
	must(t, err)
	must(t, s.PutTopic(topic("A", 2)))
	must(t, s.PutGroup(Group{Name: "G", RetryMaxTimes: 5}))
	s.CommitOffset("G", "A", 1, 9)
	must(t, s.SyncOffsets(context.Background()))
	must(t, s.Close())
	s, err = Open(vfs.OS, dir, Options{})
	must(t, err)
	defer s.Close()
	if _, ok := s.Topic("A"); !ok {
		t.Fatal("topic lost")
	}
	if g, _ := s.Group("G"); g.RetryMaxTimes != 5 {
		t.Fatalf("group = %+v", g)
	}
	if off, _ := s.Offset("G", "A", 1); off != 9 {
		t.Fatalf("offset = %d", off)
	}
}
