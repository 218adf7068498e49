package broker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/broker/timer"
	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// ssSlave makes a broker a slave of its group (broker id 1).
func ssSlave(_ *store.Config, c *Config) { c.BrokerID = 1; c.Role = RoleSlave }

// ssReplicate copies the master's commit log from the slave's end to the
// master's written end, byte for byte, as the ha fetcher does, and waits
// until the slave has dispatched it.
func ssReplicate(t *testing.T, master, slave *env) {
	t.Helper()
	for off := slave.file.Written(); off < master.file.Written(); {
		b, err := master.file.ReadRaw(off, 1<<20)
		if err != nil {
			t.Fatalf("read the master's log at %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("no bytes at %d below the master's end %d", off, master.file.Written())
		}
		if err := slave.file.AppendRaw(off, b); err != nil {
			t.Fatalf("append at %d on the slave: %v", off, err)
		}
		off += int64(len(b))
	}
	if err := slave.st.WaitDispatched(t.Context()); err != nil {
		t.Fatalf("slave dispatch: %v", err)
	}
}

// TestSlaveRunsNoTransactionCheckBacks: a half replicated to a slave is
// never checked back from the slave (the master does it), even with its
// producer registered there and the check long due; the slave stores
// nothing of its own (no re-stored half, no op record).
func TestSlaveRunsNoTransactionCheckBacks(t *testing.T) {
	m := newDiskEnv(t)
	m.createTopic("T1", 1)
	m.sendHalf("T1", "pg", "TX-SLAVE", "ask the master")
	m.waitMax(txn.HalfTopic, 0, 1)

	s := newDiskEnv(t, ssSlave)
	tc := newTestConns(s.b)
	s.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "producer", Producers: []string{"pg"}})
	ssReplicate(t, m, s)
	s.waitMax(txn.HalfTopic, 0, 1)
	end := s.file.Written()
	for range 40 {
		s.advance(5 * time.Second)
	}
	if c, _ := tc.handler(1).state(); len(c) != 0 {
		t.Fatalf("the slave sent %d check-backs: %+v", len(c), c[0])
	}
	if got := s.file.Written(); got != end {
		t.Fatalf("the slave's log grew from %d to %d by itself", end, got)
	}
}

// ssPair is a master and a slave of one group with state replication, on
// file stores; sync ships the master's log to the slave and applies it.
type ssPair struct {
	t    *testing.T
	m, s *env
}

func ssStateOn(_ *store.Config, c *Config) { c.StateReplication = true }

// ssNoSweep keeps the commit log's flush-timeout sweep out of the tests'
// clock jumps: the log measures how long an append waits for its sync on
// the manual clock, so an Advance while any append waited (a timer's
// delivery fired by that same Advance, on a loaded machine) aged it past
// the 1 s busy mark, and the log refused appends until a next sweep that
// no later Advance ran; the state writer then waited for its retry
// forever (a 10-min hang in a clean CI run).
func ssNoSweep(c *store.Config, _ *Config) { c.SyncFlushTimeout = time.Hour }

func newSSPair(t *testing.T, opts ...func(*store.Config, *Config)) *ssPair {
	m := newDiskEnv(t, append([]func(*store.Config, *Config){ssStateOn, ssNoSweep}, opts...)...)
	s := newDiskEnv(t, append([]func(*store.Config, *Config){ssStateOn, ssNoSweep, ssSlave}, opts...)...)
	return &ssPair{t: t, m: m, s: s}
}

// sync waits until the master stored every state record emitted so far,
// copies its log to the slave and has the slave apply the state records.
func (p *ssPair) sync() {
	p.t.Helper()
	if err := p.m.b.emitStateSync(p.t.Context(), stateKindBarrier, nil); err != nil {
		p.t.Fatalf("state barrier: %v", err)
	}
	ssReplicate(p.t, p.m, p.s)
	p.s.b.applyState()
	if cur, end := p.s.b.stateCursor(), p.s.st.MaxOffset(StateTopic, 0); cur != end {
		p.t.Fatalf("the slave applied the state topic up to %d of %d", cur, end)
	}
}

// advance moves e's clock by d once every state record e emitted so far
// is stored (nothing, on a slave). The commit log measures how long an
// append waits for its sync on this clock: a jump while a state record's
// append waits would age it by d, answer it as a flush timeout and mark
// the log busy until the next sweep, which a manual clock never reaches.
func (e *env) advance(d time.Duration) {
	e.t.Helper()
	if err := e.b.emitStateSync(e.t.Context(), stateKindBarrier, nil); err != nil {
		e.t.Fatalf("state barrier: %v", err)
	}
	e.clk.Advance(d)
}

func popOn(t *testing.T, e *env, req *PopRequest) []PoppedMessage {
	t.Helper()
	got, err := e.b.Pop(context.Background(), req)
	if err != nil {
		t.Fatalf("pop %+v: %v", *req, err)
	}
	return got
}

// TestSlavePopStateFollowsTheMaster: after pops, acks and changes of
// invisible time on the master, the slave's pop store equals the
// master's (cursors, in-flight messages with their generations, attempts
// and invisible times). Promoted, the slave takes the master's receipt
// handles and delivers only what the master never delivered.
func TestSlavePopStateFollowsTheMaster(t *testing.T) {
	p := newSSPair(t)
	p.m.createTopic("T", 2)
	for i := range 12 {
		p.m.send("T", int32(i%2), fmt.Sprintf("m%d", i))
	}
	first := popOn(t, p.m, popReq("G", "T", 4))
	second := popOn(t, p.m, popReq("G", "T", 3))
	if len(first) != 4 || len(second) != 3 {
		t.Fatalf("popped %d and %d messages", len(first), len(second))
	}
	for _, m := range first[:2] {
		if err := p.m.b.AckPop("G", "T", m.Handle); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := p.m.b.ChangeInvisible("G", "T", first[2].Handle, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p.m.advance(time.Second)
	p.s.advance(time.Second)
	p.sync()
	want, got := p.m.b.pops.st.Queues(), p.s.b.pops.st.Queues()
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("slave's pop state\n%+v\nmaster's\n%+v", got, want)
	}

	p.s.b.SetRole(RoleMaster)
	if err := p.s.b.AckPop("G", "T", changed); err != nil {
		t.Fatalf("the master's changed handle on the promoted slave: %v", err)
	}
	if err := p.s.b.AckPop("G", "T", first[2].Handle); err == nil {
		t.Fatal("the handle a change replaced acknowledged on the promoted slave")
	}
	if err := p.s.b.AckPop("G", "T", second[0].Handle); err != nil {
		t.Fatalf("the master's handle on the promoted slave: %v", err)
	}
	rest := popOn(t, p.s, popReq("G", "T", 32))
	var seen []string
	for _, m := range append(append(first, second...), rest...) {
		seen = append(seen, bodies(t, []PoppedMessage{m})...)
	}
	slices.Sort(seen)
	if len(rest) != 5 || len(slices.Compact(seen)) != 12 {
		t.Fatalf("the promoted slave delivered %v; with the master's deliveries: %v, want each of 12 once", bodies(t, rest), seen)
	}
}

// TestSlavePopStateFromASnapshot: a slave that starts after the master's
// pops (its log copied whole, the master's startup snapshot in it) and one
// with stale pop state of its own both end with the master's state.
func TestSlavePopStateFromASnapshot(t *testing.T) {
	p := newSSPair(t)
	// Stale state on the slave, which the snapshot replaces.
	k := pop.Key{Group: "stale", Topic: "X"}
	if _, tk, err := p.s.b.pops.st.Claim(pop.Claim{Key: k, From: 0, To: 2, New: []int64{0, 1}, Until: t0.Add(time.Hour)}); err != nil || p.s.b.pops.st.Sync(tk) != nil {
		t.Fatalf("stale claim: %v", err)
	}
	p.m.createTopic("T", 1)
	for i := range 4 {
		p.m.send("T", 0, fmt.Sprintf("m%d", i))
	}
	popOn(t, p.m, popReq("G", "T", 3))
	// A new snapshot after the pops, as the master writes when its log grew.
	p.m.b.stateRoleChanged(RoleMaster)
	p.sync()
	if want, got := p.m.b.pops.st.Queues(), p.s.b.pops.st.Queues(); len(want) != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("slave's pop state\n%+v\nmaster's\n%+v", got, want)
	}
}

// TestPromotedSlaveFiresOnlyTheTimersTheMasterDidNot: the master fires
// the timers due while it runs; its slave passes those its clock reaches
// (and only those the master fired), and, promoted, skips the others the
// master fired and delivers only the rest, each once and none early.
func TestPromotedSlaveFiresOnlyTheTimersTheMasterDidNot(t *testing.T) {
	p := newSSPair(t)
	p.m.createTopic("T", 1)
	for i := range 2 {
		p.m.delayed("T", fmt.Sprintf("first%d", i), PropertyTimerDelaySec, "2", message.PropertyUniqKey, fmt.Sprintf("F%d", i))
		p.m.delayed("T", fmt.Sprintf("mid%d", i), PropertyTimerDelaySec, "8", message.PropertyUniqKey, fmt.Sprintf("M%d", i))
		p.m.delayed("T", fmt.Sprintf("late%d", i), PropertyTimerDelaySec, "60", message.PropertyUniqKey, fmt.Sprintf("L%d", i))
	}
	p.m.waitPending(6)
	p.sync()
	p.s.waitPending(6)

	// Both clocks reach the first timers; the master fires them, the
	// slave waits for the master's word and then passes them.
	p.m.advance(3 * time.Second)
	p.s.advance(3 * time.Second)
	p.m.waitMax("T", 0, 2)
	p.m.waitPending(4)
	if got := p.s.b.PendingTimers(); got != 6 {
		t.Fatalf("the slave passed %d timers before its master fired them", 6-got)
	}
	p.sync()
	p.s.waitPending(4)

	// The master fires the mid timers; the slave's clock lags behind.
	p.m.advance(6 * time.Second)
	p.m.waitMax("T", 0, 4)
	p.m.waitPending(2)
	p.sync()
	if got := p.s.st.MaxOffset("T", 0); got != 4 {
		t.Fatalf("the slave's topic holds %d messages, want the master's 4", got)
	}

	// The master is gone; the slave takes over.
	p.s.b.SetRole(RoleMaster)
	p.s.advance(10 * time.Second)
	p.s.waitPending(2) // the mid timers skipped: the master fired them
	p.s.advance(40 * time.Second)
	if got := p.s.st.MaxOffset("T", 0); got != 4 {
		t.Fatalf("the promoted slave delivered %d messages before their time", got-4)
	}
	p.s.advance(10 * time.Second)
	p.s.waitMax("T", 0, 6)
	p.s.waitPending(0)
	got := p.s.mustPull(pullReq("g", "T", 0, 0).withSub("*")).bodies
	slices.Sort(got)
	if want := []string{"first0", "first1", "late0", "late1", "mid0", "mid1"}; !slices.Equal(got, want) || p.s.st.MaxOffset("T", 0) != 6 {
		t.Fatalf("delivered %v (%d messages), want each of %v once", got, p.s.st.MaxOffset("T", 0), want)
	}
}

// TestPromotedSlaveAnswersAResendAsTheOriginal: a message the master
// acknowledged, resent to the promoted slave with the same UNIQ_KEY (the
// producer's retry after the master died), is answered with the original
// send's queue and offsets and stored no second time.
func TestPromotedSlaveAnswersAResendAsTheOriginal(t *testing.T) {
	p := newSSPair(t)
	p.m.createTopic("T", 1)
	p.m.send("T", 0, "before")
	orig := p.m.send("T", 0, "once", message.PropertyUniqKey, "U-ONCE")
	p.sync()

	p.s.b.SetRole(RoleMaster)
	again, err := p.s.b.Send(context.Background(), sendReq("T", 0, "once", message.PropertyUniqKey, "U-ONCE"))
	if err != nil {
		t.Fatalf("resend to the promoted slave: %v", err)
	}
	_, origPhys, _ := message.ParseOffsetID(orig.MsgID)
	_, againPhys, _ := message.ParseOffsetID(again.MsgID)
	if again.Status != SendOK || again.QueueID != orig.QueueID || again.QueueOffset != orig.QueueOffset || againPhys != origPhys {
		t.Fatalf("resend answered %+v, want the original %+v", again, orig)
	}
	if got := p.s.st.MaxOffset("T", 0); got != 2 {
		t.Fatalf("the promoted slave's topic holds %d messages, want 2 (no second copy)", got)
	}
	// A new id is stored.
	if res := p.s.send("T", 0, "new", message.PropertyUniqKey, "U-NEW"); res.QueueOffset != 2 {
		t.Fatalf("a new message at queue offset %d, want 2", res.QueueOffset)
	}
}

// TestPromotedSlaveKnowsWhichHalvesAreResolved: halves committed and
// rolled back on the master are resolved on its promoted slave: only the
// undecided one is checked back, a second commit of the committed one is
// ignored (no second copy), and the undecided one can be committed there.
func TestPromotedSlaveKnowsWhichHalvesAreResolved(t *testing.T) {
	p := newSSPair(t)
	p.m.createTopic("T1", 1)
	end := func(b *Broker, id string, how int32) error {
		t.Helper()
		phys, qo, err := p.m.b.FindHalf(context.Background(), "pg", id)
		if err != nil {
			t.Fatalf("find %s: %v", id, err)
		}
		return b.EndTransaction(EndTransactionRequest{ProducerGroup: "pg", TranStateTableOffset: qo, CommitLogOffset: phys, CommitOrRollback: how})
	}
	for _, id := range []string{"TX-COMMIT", "TX-ROLLBACK", "TX-OPEN"} {
		p.m.sendHalf("T1", "pg", id, id)
	}
	p.m.waitMax(txn.HalfTopic, 0, 3)
	if err := end(p.m.b, "TX-COMMIT", txn.EndCommit); err != nil {
		t.Fatal(err)
	}
	if err := end(p.m.b, "TX-ROLLBACK", txn.EndRollback); err != nil {
		t.Fatal(err)
	}
	p.m.waitMax("T1", 0, 1)
	p.m.waitMax(txn.OpTopic, 0, 2)
	p.sync()

	tc := newTestConns(p.s.b)
	p.s.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "producer", Producers: []string{"pg"}})
	p.s.b.SetRole(RoleMaster)
	for range 4 {
		p.s.advance(5 * time.Second)
	}
	checks, _ := tc.handler(1).state()
	if len(checks) == 0 {
		t.Fatal("the promoted slave checked back no transaction")
	}
	for _, c := range checks {
		if c.Header.TransactionID != "TX-OPEN" {
			t.Fatalf("the promoted slave checked back %s, a transaction the master resolved", c.Header.TransactionID)
		}
	}
	if n := p.s.b.OpenTransactions(); n != 1 {
		t.Fatalf("the promoted slave has %d open transactions, want 1", n)
	}
	if err := end(p.s.b, "TX-COMMIT", txn.EndCommit); err != nil {
		t.Fatalf("a second commit: %v", err)
	}
	if err := end(p.s.b, "TX-OPEN", txn.EndCommit); err != nil {
		t.Fatalf("commit of the open transaction on the promoted slave: %v", err)
	}
	p.s.waitMax("T1", 0, 2)
	got := p.s.mustPull(pullReq("g", "T1", 0, 0).withSub("*")).bodies
	if !slices.Equal(got, []string{"TX-COMMIT", "TX-OPEN"}) {
		t.Fatalf("T1 on the promoted slave holds %v, want TX-COMMIT once and TX-OPEN", got)
	}
}

// TestSlavePassesTimersWhoseRecordIsGone: on a slave, a due timer whose
// record retention removed is passed whether or not the master's word
// came (nobody can deliver it); one whose record is there waits for it.
func TestSlavePassesTimersWhoseRecordIsGone(t *testing.T) {
	s := newDiskEnv(t, ssStateOn, ssSlave, func(sc *store.Config, _ *Config) {
		sc.SegmentBytes = 8 << 10
		sc.MaxMessageBytes = 4 << 10
		sc.RetentionInterval = 1000 * sc.FileReservedTime
	})
	for i := range 60 {
		m := &message.Message{Topic: "Replicated", Body: []byte(fmt.Sprint(strings.Repeat("p", 500), i)), BornHost: s.scfg.StoreHost, StoreHost: s.scfg.StoreHost}
		if err := s.st.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMax("Replicated", 0, 60)
	u, _ := s.fs.Usage("/")
	s.fs.SetCapacity(int64(float64(u.UsedBytes) / 0.85))
	if rep, err := s.file.RunRetention(); err != nil || rep.SegmentsRemoved == 0 {
		t.Fatalf("retention: %+v %v", rep, err)
	}
	s.fs.SetCapacity(0)
	floor := s.st.CommitLogMinOffset()
	if floor == 0 {
		t.Fatal("retention removed nothing")
	}
	gone := []timer.Entry{{Offset: 0}, {Offset: floor - 1}}
	if err := s.b.firedOnSlave(gone); err != nil {
		t.Fatalf("timers whose records are gone: %v", err)
	}
	if err := s.b.firedOnSlave(append(gone, timer.Entry{Offset: floor})); !errors.Is(err, timer.ErrWait) {
		t.Fatalf("a timer the master did not fire: %v, want ErrWait", err)
	}
	if err := s.b.applyTimersFired(timer.EncodeFiredBatch([]int64{floor})); err != nil {
		t.Fatal(err)
	}
	if err := s.b.firedOnSlave(append(gone, timer.Entry{Offset: floor})); err != nil {
		t.Fatalf("once the master fired it: %v", err)
	}
}

// TestSlaveStateSurvivesARestart: a slave restarted between syncs keeps
// the pop state and the master's fired timers it applied, goes on from
// there, and once promoted neither redelivers what the master acked nor
// fires what the master fired.
func TestSlaveStateSurvivesARestart(t *testing.T) {
	p := newSSPair(t)
	p.m.createTopic("T", 1)
	p.m.createTopic("D", 1)
	for i := range 6 {
		p.m.send("T", 0, fmt.Sprintf("m%d", i))
	}
	p.m.delayed("D", "due", PropertyTimerDelaySec, "5", message.PropertyUniqKey, "DUE")
	p.m.delayed("D", "later", PropertyTimerDelaySec, "50", message.PropertyUniqKey, "LATER")
	p.m.waitPending(2)
	got := popOn(t, p.m, popReq("G", "T", 4))
	p.sync()
	p.s.restart()

	for _, m := range got[:3] {
		if err := p.m.b.AckPop("G", "T", m.Handle); err != nil {
			t.Fatal(err)
		}
	}
	p.m.advance(10 * time.Second)
	p.m.waitMax("D", 0, 1)
	p.m.waitPending(1)
	p.sync()
	p.s.restart()
	if want, have := p.m.b.pops.st.Queues(), p.s.b.pops.st.Queues(); !reflect.DeepEqual(have, want) {
		t.Fatalf("slave's pop state after restarts\n%+v\nmaster's\n%+v", have, want)
	}

	p.s.b.SetRole(RoleMaster)
	p.s.advance(time.Minute) // past every invisible time and timer
	p.s.waitMax("D", 0, 2)
	p.s.waitPending(0)
	if d := p.s.mustPull(pullReq("g", "D", 0, 0).withSub("*")).bodies; !slices.Equal(d, []string{"due", "later"}) {
		t.Fatalf("D on the promoted slave holds %v, want due (the master's) and later (its own)", d)
	}
	rest := bodies(t, popOn(t, p.s, popReq("G", "T", 32)))
	slices.Sort(rest)
	// m0..m2 acked on the master; m3 in flight and visible again; m4, m5
	// never popped.
	if !slices.Equal(rest, []string{"m3", "m4", "m5"}) {
		t.Fatalf("the promoted slave delivered %v, want m3 m4 m5", rest)
	}
}
