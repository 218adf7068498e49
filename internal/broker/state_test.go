package broker

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// The state stream over two memstore twins: the test ships the master's
// raw log to the slave (as the ha fetcher does) and has the slave apply.

func stateMember(role Role) func(*store.Config, *Config) {
	return func(_ *store.Config, c *Config) {
		c.StateReplication = true
		c.Role = role
		c.BrokerID = int64(role)
	}
}

func newStatePair(t *testing.T, slaveOpts ...func(*store.Config, *Config)) (m, s *env) {
	t.Helper()
	m = newEnv(t, stateMember(RoleMaster))
	s = newEnv(t, append([]func(*store.Config, *Config){stateMember(RoleSlave)}, slaveOpts...)...)
	return m, s
}

// flushState has the master emit its changed offsets and returns once
// everything queued before is in its log.
func flushState(t *testing.T, m *env) {
	t.Helper()
	m.b.emitOffsetDiff()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := m.b.emitStateSync(ctx, stateKindBarrier, nil); err != nil {
		t.Fatalf("state barrier: %v", err)
	}
}

// ship copies the master's raw log the slave does not have, then has the
// slave apply its state records.
func ship(t *testing.T, m, s *env) {
	t.Helper()
	src, dst := m.st.(store.Replica), s.st.(store.Replica)
	off := dst.Written()
	if off == 0 {
		off = src.CommitLogMinOffset() // a fresh slave copies from the master's first retained byte
	}
	for off < src.Written() {
		b, err := src.ReadRaw(off, 64<<10)
		if err != nil {
			t.Fatalf("read raw at %d: %v", off, err)
		}
		if err := dst.AppendRaw(off, b); err != nil {
			t.Fatalf("append raw at %d: %v", off, err)
		}
		off += int64(len(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.st.WaitDispatched(ctx); err != nil {
		t.Fatalf("the slave's dispatch: %v", err)
	}
	s.b.applyState()
}

type tables struct {
	Topics  []meta.Topic
	Groups  []meta.Group
	Offsets []meta.OffsetEntry
}

func tablesOf(md meta.Tables) tables {
	var offs []meta.OffsetEntry
	for _, e := range md.AllOffsets() {
		// The transaction manager's own progress is each broker's.
		if !reservedGroup(e.Group) && !strings.HasPrefix(e.Group, "CID_RMQ_SYS_") {
			offs = append(offs, e)
		}
	}
	slices.SortFunc(offs, func(a, b meta.OffsetEntry) int {
		return compareOffsetEntry(OffsetEntry(a), OffsetEntry(b))
	})
	return tables{Topics: md.Topics(), Groups: md.Groups(), Offsets: offs}
}

func sameTables(t *testing.T, m, s *env, when string) {
	t.Helper()
	a, b := tablesOf(m.md), tablesOf(s.md)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: the slave's tables differ from the master's\nmaster %+v\nslave  %+v", when, a, b)
	}
}

func group(name string) GroupConfig { return DefaultGroup(name) }

func TestStateStreamReplicatesTopicsGroupsOffsets(t *testing.T) {
	m, s := newStatePair(t)
	m.createTopic("A", 4)
	m.createTopic("B", 2)
	if err := m.b.UpdateGroup(group("g1")); err != nil {
		t.Fatal(err)
	}
	g2 := group("g2")
	g2.RetryMaxTimes = 3
	if err := m.b.UpdateGroup(g2); err != nil {
		t.Fatal(err)
	}
	m.subscribe(1, "c1", "hb", "A", "*") // a heartbeat creates group hb and topic %RETRY%hb
	m.b.UpdateConsumerOffset("g1", "A", 0, 10)
	m.b.UpdateConsumerOffset("g1", "A", 3, 1<<33)
	m.b.UpdateConsumerOffset("g2", "B", 1, 7)
	m.b.UpdateConsumerOffset("g2", "A", 1, 8)
	flushState(t, m)
	ship(t, m, s)
	sameTables(t, m, s, "after the creates")
	if _, ok := s.b.Topic("A"); !ok {
		t.Fatal("the slave does not know topic A") // guards against two empty tables comparing equal
	}
	if _, ok := s.b.Group("hb"); !ok {
		t.Fatal("the slave does not know group hb, created by a heartbeat on the master")
	}
	if off, ok := s.b.QueryConsumerOffset("g1", "A", 3); !ok || off != 1<<33 {
		t.Fatalf("slave's offset g1/A/3 = %d %v", off, ok)
	}

	// Changes and deletions.
	if err := m.b.CreateTopic(topicCfg("A", 8, 6)); err != nil {
		t.Fatal(err)
	}
	if err := m.b.DeleteTopic("B"); err != nil {
		t.Fatal(err)
	}
	if err := m.b.DeleteGroup("g2", true); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g1", "A", 0, 11)
	flushState(t, m)
	ship(t, m, s)
	sameTables(t, m, s, "after the changes")
	if tc, _ := s.b.Topic("A"); tc.WriteQueueNums != 8 {
		t.Fatalf("slave's topic A has %d write queues, want 8", tc.WriteQueueNums)
	}
	if _, ok := s.b.Topic("B"); ok {
		t.Fatal("topic B is still on the slave")
	}
	if _, ok := s.md.Offset("g2", "A", 1); ok {
		t.Fatal("g2's offsets are still on the slave")
	}
}

// TestStateStreamOffsetsGoOutPerFlushInterval: commits are not emitted one
// by one but with the next flush interval (by the broker's clock), as one
// record of the entries changed.
func TestStateStreamOffsetsGoOutPerFlushInterval(t *testing.T) {
	m, s := newStatePair(t)
	m.createTopic("A", 2)
	flushState(t, m)
	before := m.st.MaxOffset(StateTopic, 0)
	for i := range int64(100) {
		m.b.UpdateConsumerOffset("g", "A", int32(i%2), i)
	}
	if got := m.st.MaxOffset(StateTopic, 0); got != before {
		t.Fatalf("commits were emitted before the flush interval: state topic %d → %d", before, got)
	}
	m.clk.Advance(m.b.cfg.StateFlushInterval)
	m.waitMax(StateTopic, 0, before+1)
	ship(t, m, s)
	sameTables(t, m, s, "after one flush interval")
	if off, _ := s.md.Offset("g", "A", 1); off != 99 {
		t.Fatalf("slave's offset %d, want 99", off)
	}
}

// TestStateStreamSlaveRestartMidStream: a slave restarted part-way
// through the stream goes on from its persisted cursor; and re-applying
// from an older cursor (a cursor not yet durable at a crash) ends with the
// same tables: replay is idempotent.
func TestStateStreamSlaveRestartMidStream(t *testing.T) {
	m, s := newStatePair(t)
	m.createTopic("A", 1)
	if err := m.b.UpdateGroup(group("g")); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g", "A", 0, 5)
	flushState(t, m)
	ship(t, m, s)
	mid := s.b.stateCursor()
	if mid == 0 {
		t.Fatal("the slave's cursor did not move")
	}
	s.restart()
	if got := s.b.stateCursor(); got != mid {
		t.Fatalf("cursor after restart %d, want %d", got, mid)
	}
	m.createTopic("C", 2)
	if err := m.b.DeleteTopic("A"); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g", "C", 1, 9)
	flushState(t, m)
	ship(t, m, s)
	sameTables(t, m, s, "after the restart")

	// Replay everything from the start: same tables.
	s.md.CommitOffset(stateCursorGroup, StateTopic, 0, 0)
	s.restart()
	s.b.applyState()
	sameTables(t, m, s, "after a replay from the start")
	if _, ok := s.b.Topic("A"); ok {
		t.Fatal("the replay brought back deleted topic A")
	}
}

// TestStateStreamSnapshotAfterRetention: a fresh slave that starts from a
// log whose beginning (with the config records) retention removed
// rebuilds the tables from the snapshot written after half a segment of
// growth; a stale table of a slave is replaced (a topic the master no
// longer has goes).
func TestStateStreamSnapshotAfterRetention(t *testing.T) {
	m, s := newStatePair(t)
	// The slave has a stale topic of an earlier life.
	if err := s.md.PutTopic(meta.Topic{Name: "Stale", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	s.md.CommitOffset("old", "Stale", 0, 3)
	m.createTopic("A", 2)
	if err := m.b.UpdateGroup(group("g")); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g", "A", 1, 4)
	flushState(t, m)
	cut := m.st.Durable() // everything so far will be removed
	m.createTopic("Big", 1)
	body := strings.Repeat("x", 16<<10)
	half := m.st.Config().SegmentBytes / 2
	for m.st.Durable()-cut <= half {
		m.send("Big", 0, body)
	}
	snaps := m.b.state.snapID.Load()
	m.clk.Advance(m.b.cfg.StateFlushInterval) // the writer looks whether a snapshot is due
	flushState(t, m)
	if m.b.state.snapID.Load() != snaps+1 {
		t.Fatalf("snapshots %d → %d after half a segment of growth, want one more", snaps, m.b.state.snapID.Load())
	}
	m.stores.Mem.RemoveBefore(cut + 1)
	if m.st.CommitLogMinOffset() <= cut {
		t.Fatalf("retention left the log from %d", m.st.CommitLogMinOffset())
	}
	ship(t, m, s)
	sameTables(t, m, s, "after the snapshot")
	if _, ok := s.b.Topic("A"); !ok {
		t.Fatal("topic A (created before the cut) is not on the slave")
	}
}

// TestStateStreamHandBack: the rule for offsets committed on a slave.
func TestStateStreamHandBack(t *testing.T) {
	var m *env
	reachable := true
	hand := func(_ *store.Config, c *Config) {
		c.HandBackOffsets = func(ctx context.Context, offs []OffsetEntry) (HandBack, error) {
			if !reachable {
				return HandBack{}, errors.New("master unreachable")
			}
			return m.b.TakeHandedBackOffsets(ctx, offs)
		}
	}
	m, s := newStatePair(t, hand)
	m.createTopic("T", 2)
	if err := m.b.UpdateGroup(group("g")); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g", "T", 0, 5)  // the slave will be ahead here
	m.b.UpdateConsumerOffset("g", "T", 1, 20) // the master will be ahead here
	flushState(t, m)
	ship(t, m, s)

	// The master is away: commits on the slave (one of them by a pull's
	// commit-offset flag) are stored there and pending.
	reachable = false
	s.b.UpdateConsumerOffset("g", "T", 0, 10)
	m.subscribe(1, "c1", "g", "T", "*") // clients heartbeat to every broker: both create %RETRY%g
	s.subscribe(1, "c1", "g", "T", "*")
	pr := pullReq("g", "T", 1, 0)
	pr.SysFlag |= PullFlagCommitOffset
	pr.CommitOffset = 7
	if _, err := s.pull(pr); err != nil {
		t.Fatal(err)
	}
	if off, _ := s.b.QueryConsumerOffset("g", "T", 0); off != 10 {
		t.Fatalf("the slave answers %d for its own commit of 10", off)
	}
	want := []OffsetEntry{{"g", "T", 0, 10}, {"g", "T", 1, 7}}
	if got := s.b.PendingOffsets(); !slices.Equal(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
	s.b.handBackPending()
	if got := s.b.PendingOffsets(); !slices.Equal(got, want) {
		t.Fatalf("pending after a failed hand-back %v, want them kept: %v", got, want)
	}
	// The master's stream, carrying its older 5, does not lower the slave's 10.
	m.b.state.offMu.Lock()
	delete(m.b.state.last, offKey{"g", "T", 0}) // re-emit the 5
	m.b.state.offMu.Unlock()
	flushState(t, m)
	ship(t, m, s)
	if off, _ := s.md.Offset("g", "T", 0); off != 10 {
		t.Fatalf("the master's stream lowered the slave's pending 10 to %d", off)
	}
	if got := s.b.PendingOffsets(); !slices.Equal(got, want) {
		t.Fatalf("pending after the master's older offsets arrived %v, want %v", got, want)
	}

	// The master is back.
	reachable = true
	s.b.handBackPending()
	if off, _ := m.md.Offset("g", "T", 0); off != 10 {
		t.Fatalf("master's offset %d: the slave's 10 is ahead of its 5 and must be taken", off)
	}
	if off, _ := m.md.Offset("g", "T", 1); off != 20 {
		t.Fatalf("master's offset %d: its own 20 is ahead of the slave's 7 and must stay", off)
	}
	if off, _ := s.md.Offset("g", "T", 1); off != 20 {
		t.Fatalf("slave's offset %d after the master answered 20", off)
	}
	if len(s.b.PendingOffsets()) != 2 {
		t.Fatalf("pending %v: dropped before the slave applied the master's answer", s.b.PendingOffsets())
	}
	ship(t, m, s)
	s.b.handBackPending()
	if p := s.b.PendingOffsets(); len(p) != 0 {
		t.Fatalf("pending %v after the master confirmed and the stream was applied", p)
	}
	sameTables(t, m, s, "after the hand-back")
}

// TestSetRoleMasterDrainsTheState: a slave promoted applies every state
// record it holds before it answers as master, then writes its own
// snapshot.
func TestSetRoleMasterDrainsTheState(t *testing.T) {
	m, s := newStatePair(t)
	m.createTopic("A", 3)
	m.b.UpdateConsumerOffset("g", "A", 2, 42)
	flushState(t, m)
	src, dst := m.st.(store.Replica), s.st.(store.Replica)
	b, err := src.ReadRaw(0, int(src.Written()))
	if err != nil || int64(len(b)) != src.Written() {
		t.Fatalf("read raw: %d bytes, %v", len(b), err)
	}
	if err := dst.AppendRaw(0, b); err != nil {
		t.Fatal(err)
	}
	snaps := s.b.state.snapID.Load()
	s.b.SetRole(RoleMaster)
	sameTables(t, m, s, "right after SetRole(master)")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.b.emitStateSync(ctx, stateKindBarrier, nil); err != nil {
		t.Fatal(err)
	}
	if s.b.state.snapID.Load() != snaps+1 {
		t.Fatalf("the promoted slave wrote %d snapshots, want 1", s.b.state.snapID.Load()-snaps)
	}
}

// TestNoStateWithoutReplication: a broker that is not a replicated group
// member writes no state record.
func TestNoStateWithoutReplication(t *testing.T) {
	e := newEnv(t)
	e.createTopic("A", 1)
	if err := e.b.UpdateGroup(group("g")); err != nil {
		t.Fatal(err)
	}
	e.b.UpdateConsumerOffset("g", "A", 0, 3)
	e.clk.Advance(10 * e.b.cfg.StateFlushInterval)
	if err := e.st.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.st.MaxOffset(StateTopic, 0); n != 0 {
		t.Fatalf("a single broker wrote %d state messages", n)
	}
	for _, tc := range e.b.SystemTopics() {
		if tc.Name == StateTopic {
			t.Fatal("a single broker lists the state topic")
		}
	}
}

// TestStateTopicIsASystemTopic: clients cannot send to it, it is listed,
// and a slave does not serve it as a replicated user topic.
func TestStateTopicIsASystemTopic(t *testing.T) {
	m, s := newStatePair(t)
	flushState(t, m)
	_, err := m.b.Send(context.Background(), sendReq(StateTopic, 0, "forged"))
	wantKind(t, err, KindMessageIllegal, "system topic")
	listed := false
	for _, tc := range m.b.SystemTopics() {
		listed = listed || tc.Name == StateTopic && tc.Perm == PermRead
	}
	if !listed {
		t.Fatal("SystemTopics does not list the state topic read-only")
	}
	ship(t, m, s)
	if s.st.MaxOffset(StateTopic, 0) == 0 {
		t.Fatal("the slave holds no state records")
	}
	if _, ok := s.b.replicatedTopic(StateTopic); ok {
		t.Fatal("a slave serves the state topic as a replicated user topic")
	}
}

// TestStateApplierSkipsMalformedAndUnknown: garbage in the state topic
// (only the master writes it, but a log is a log) is logged and skipped.
func TestStateApplierSkipsMalformedAndUnknown(t *testing.T) {
	m, s := newStatePair(t)
	bad := m.b.stateMessage([]byte{9, 9, 9})
	if err := m.st.Put(bad); err != nil {
		t.Fatal(err)
	}
	unknown := m.b.stateMessage(staterec.AppendBatch(nil, staterec.Record{Kind: 99, Payload: []byte("?")},
		staterec.Record{Kind: staterec.KindTopicPut, Payload: []byte("{not json")}))
	if err := m.st.Put(unknown); err != nil {
		t.Fatal(err)
	}
	m.createTopic("After", 1)
	flushState(t, m)
	ship(t, m, s)
	if _, ok := s.b.Topic("After"); !ok {
		t.Fatal("records after malformed ones were not applied")
	}
}

// TestStateStreamPendingSurvivesSlaveRestart: the pending set is durable
// with the offsets: a slave restarted while its master is away still
// answers its own commit, does not let the master's older snapshot lower
// it, and hands it back later.
func TestStateStreamPendingSurvivesSlaveRestart(t *testing.T) {
	var m *env
	hand := func(_ *store.Config, c *Config) {
		c.HandBackOffsets = func(ctx context.Context, offs []OffsetEntry) (HandBack, error) {
			return m.b.TakeHandedBackOffsets(ctx, offs)
		}
	}
	m, s := newStatePair(t, hand)
	m.createTopic("T", 2)
	m.b.UpdateConsumerOffset("g", "T", 0, 3)
	m.b.UpdateConsumerOffset("g", "T", 1, 3)
	flushState(t, m)
	ship(t, m, s)
	s.b.UpdateConsumerOffset("g", "T", 0, 30)
	s.b.UpdateConsumerOffset("g", "T", 1, 31)
	s.restart()
	want := []OffsetEntry{{"g", "T", 0, 30}, {"g", "T", 1, 31}}
	if got := s.b.PendingOffsets(); !slices.Equal(got, want) {
		t.Fatalf("pending after the restart %v, want %v", got, want)
	}
	// The master restarts too: its start snapshot carries its 3s.
	m.restart()
	flushState(t, m)
	ship(t, m, s)
	if off, _ := s.md.Offset("g", "T", 1); off != 31 {
		t.Fatalf("the master's snapshot lowered the slave's pending 31 to %d", off)
	}
	s.b.handBackPending()
	ship(t, m, s)
	s.b.handBackPending()
	if p := s.b.PendingOffsets(); len(p) != 0 {
		t.Fatalf("pending %v after the hand-back", p)
	}
	if got := s.md.GroupOffsets(statePendingGroup); len(got) != 0 {
		t.Fatalf("the persisted pending set still holds %v", got)
	}
	for q, want := range []int64{30, 31} {
		if off, _ := m.md.Offset("g", "T", int32(q)); off != want {
			t.Fatalf("master's offset of queue %d is %d, want the slave's %d", q, off, want)
		}
	}
	sameTables(t, m, s, "after the hand-back")
}

// TestTakeHandedBackOffsetsRefusals: a slave refuses a hand-back, a master
// refuses an oversized one and answers -1 for entries it cannot take.
func TestTakeHandedBackOffsetsRefusals(t *testing.T) {
	m, s := newStatePair(t)
	ctx := context.Background()
	_, err := s.b.TakeHandedBackOffsets(ctx, []OffsetEntry{{"g", "T", 0, 1}})
	wantKind(t, err, KindSystemError, "slave")
	_, err = m.b.TakeHandedBackOffsets(ctx, make([]OffsetEntry, MaxHandBack+1))
	wantKind(t, err, KindMessageIllegal, "limit")
	ans, err := m.b.TakeHandedBackOffsets(ctx, []OffsetEntry{
		{"", "T", 0, 1}, {"g", "T", -1, 1}, {stateCursorGroup, StateTopic, 0, 99}, {"g", "T", 0, -2}, {"g", "T", 0, 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ans.Offsets, []int64{-1, -1, -1, -1, 4}) {
		t.Fatalf("answers %v", ans.Offsets)
	}
	if ans.StateEnd != m.st.MaxOffset(StateTopic, 0) || ans.StateEnd == 0 {
		t.Fatalf("state end %d, state topic end %d", ans.StateEnd, m.st.MaxOffset(StateTopic, 0))
	}
	if _, ok := m.md.Offset(stateCursorGroup, StateTopic, 0); ok {
		t.Fatal("a hand-back wrote the master's reserved cursor entry")
	}
}

// TestStateStreamOnTheFileStore: the same stream between two file stores
// (segments, consume queues of the state topic, the slave's restart).
func TestStateStreamOnTheFileStore(t *testing.T) {
	m := newDiskEnv(t, stateMember(RoleMaster))
	s := newDiskEnv(t, stateMember(RoleSlave))
	m.createTopic("A", 2)
	if err := m.b.UpdateGroup(group("g")); err != nil {
		t.Fatal(err)
	}
	m.b.UpdateConsumerOffset("g", "A", 1, 12)
	flushState(t, m)
	ship(t, m, s)
	sameTables(t, m, s, "file stores")
	if _, ok := s.b.Topic("A"); !ok {
		t.Fatal("the slave does not know topic A")
	}
	s.restart()
	if err := m.b.DeleteTopic("A"); err != nil {
		t.Fatal(err)
	}
	flushState(t, m)
	ship(t, m, s)
	sameTables(t, m, s, "file stores, after the slave's restart")
}
