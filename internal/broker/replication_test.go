package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
)

// fakeRepl is a Replicator whose commit point the test moves. Each check
// of a wait is reported on polled (the end it waits for).
type fakeRepl struct {
	mu        sync.Mutex
	hw        int64
	notEnough bool
	changed   chan struct{}
	polled    chan int64
}

func newFakeRepl() *fakeRepl {
	return &fakeRepl{changed: make(chan struct{}), polled: make(chan int64, 64)}
}

func (f *fakeRepl) WaitReplicated(ctx context.Context, end int64) error {
	for {
		f.mu.Lock()
		hw, notEnough, ch := f.hw, f.notEnough, f.changed
		f.mu.Unlock()
		if hw >= end {
			return nil
		}
		if notEnough {
			return ErrNotEnoughReplicas
		}
		f.polled <- end
		select {
		case <-ch:
		case <-ctx.Done():
			return ErrReplicationTimeout
		}
	}
}

func (f *fakeRepl) set(hw int64, notEnough bool) {
	f.mu.Lock()
	f.hw, f.notEnough = hw, notEnough
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// nextPoll is the end of the next check of a wait.
func (f *fakeRepl) nextPoll(t *testing.T) int64 {
	t.Helper()
	select {
	case end := <-f.polled:
		return end
	case <-time.After(waitLimit):
		t.Fatal("the broker did not wait for the replicator")
		return 0
	}
}

type sendAnswer struct {
	res SendResult
	err error
}

// sendAsync sends req and returns where its answer arrives.
func sendAsync(b *Broker, req *SendRequest) <-chan sendAnswer {
	ch := make(chan sendAnswer, 1)
	b.SendBatch(context.Background(), []*SendRequest{req}, func(_ int, res SendResult, err error) { ch <- sendAnswer{res, err} })
	return ch
}

func awaitAnswer(t *testing.T, ch <-chan sendAnswer) sendAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitLimit):
		t.Fatal("the send was not answered")
		return sendAnswer{}
	}
}

func notAnswered(t *testing.T, ch <-chan sendAnswer, when string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s the send was answered: %+v %v", when, a.res, a.err)
	default:
	}
}

func withRepl(r Replicator) func(*store.Config, *Config) {
	return func(_ *store.Config, c *Config) { c.Replicator = r }
}

// TestSyncReplicationAnswersOnceTheCommitPointCoversTheSend: the send is
// durable locally first, then waits for WaitReplicated with the end of its
// record, and is answered SEND_OK only once the commit point reaches that
// end (not one byte before).
func TestSyncReplicationAnswersOnceTheCommitPointCoversTheSend(t *testing.T) {
	f := newFakeRepl()
	e := newEnv(t, withRepl(f))
	e.createTopic("T", 1)
	ch := sendAsync(e.b, sendReq("T", 0, "replicate me"))
	end := f.nextPoll(t)
	if d := e.st.Durable(); end != d {
		t.Fatalf("waited for end %d; the store's durable end after the one send is %d", end, d)
	}
	notAnswered(t, ch, "before the commit point moved")
	f.set(end-1, false)
	if again := f.nextPoll(t); again != end {
		t.Fatalf("re-check waited for %d, want %d", again, end)
	}
	notAnswered(t, ch, "with the commit point one byte short")
	f.set(end, false)
	a := awaitAnswer(t, ch)
	if a.err != nil || a.res.Status != SendOK {
		t.Fatalf("answer %+v %v, want SEND_OK", a.res, a.err)
	}
	// A batch's wait covers its last record.
	batch := &SendRequest{Topic: "T", QueueID: 0, Batch: true,
		Body: message.EncodeBatch([]message.BatchItem{{Body: []byte("a")}, {Body: []byte("b")}})}
	ch = sendAsync(e.b, batch)
	if end2 := f.nextPoll(t); end2 != e.st.Durable() || end2 <= end {
		t.Fatalf("batch waited for %d; durable end %d, previous end %d", end2, e.st.Durable(), end)
	}
	f.set(e.st.Durable(), false)
	if a := awaitAnswer(t, ch); a.err != nil || a.res.Status != SendOK {
		t.Fatalf("batch answer %+v %v", a.res, a.err)
	}
}

// TestSyncReplicationTimeoutIsFlushSlaveTimeout: with the commit point
// stuck, the send is answered FLUSH_SLAVE_TIMEOUT after
// ReplicationTimeout by the broker's clock; the message is stored.
func TestSyncReplicationTimeoutIsFlushSlaveTimeout(t *testing.T) {
	f := newFakeRepl()
	e := newEnv(t, withRepl(f), func(_ *store.Config, c *Config) { c.ReplicationTimeout = 2 * time.Second })
	e.createTopic("T", 1)
	ch := sendAsync(e.b, sendReq("T", 0, "stuck"))
	f.nextPoll(t)
	e.clk.Advance(2*time.Second - time.Millisecond)
	notAnswered(t, ch, "before the timeout")
	e.clk.Advance(time.Millisecond)
	a := awaitAnswer(t, ch)
	if a.err != nil || a.res.Status != SendFlushSlaveTimeout || a.res.MsgID == "" {
		t.Fatalf("answer %+v %v, want FLUSH_SLAVE_TIMEOUT with the stored message's id", a.res, a.err)
	}
	if n := e.st.MaxOffset("T", 0); n != 1 {
		t.Fatalf("queue holds %d messages, want the stored one", n)
	}
}

// TestSyncReplicationWithoutEnoughSlavesIsSlaveNotAvailable: the
// replicator's ErrNotEnoughReplicas answers SLAVE_NOT_AVAILABLE at once
// (never a silent SEND_OK), and a resend of it inside the dedup window is
// answered SEND_OK only once the commit point covers it.
func TestSyncReplicationWithoutEnoughSlavesIsSlaveNotAvailable(t *testing.T) {
	f := newFakeRepl()
	f.set(0, true)
	e := newEnv(t, withRepl(f))
	e.createTopic("T", 1)
	req := sendReq("T", 0, "alone", message.PropertyUniqKey, "UK-1")
	a := awaitAnswer(t, sendAsync(e.b, req))
	if a.err != nil || a.res.Status != SendSlaveNotAvailable {
		t.Fatalf("answer %+v %v, want SLAVE_NOT_AVAILABLE", a.res, a.err)
	}
	// The resend is not stored again, and is not acknowledged while the
	// slaves are out.
	a = awaitAnswer(t, sendAsync(e.b, sendReq("T", 0, "alone", message.PropertyUniqKey, "UK-1")))
	if a.err != nil || a.res.Status != SendSlaveNotAvailable {
		t.Fatalf("resend answer %+v %v, want SLAVE_NOT_AVAILABLE", a.res, a.err)
	}
	f.set(e.st.Durable(), false)
	a = awaitAnswer(t, sendAsync(e.b, sendReq("T", 0, "alone", message.PropertyUniqKey, "UK-1")))
	if a.err != nil || a.res.Status != SendOK {
		t.Fatalf("resend after the slaves caught up: %+v %v, want SEND_OK", a.res, a.err)
	}
	if n := e.st.MaxOffset("T", 0); n != 1 {
		t.Fatalf("queue holds %d messages, want 1 (resends deduplicated)", n)
	}
}

// TestAsyncReplicationAndNoReplicatorDoNotWait: under async replication,
// and with no Replicator (a single broker), a send is answered after the
// local flush and the replicator is never asked.
func TestAsyncReplicationAndNoReplicatorDoNotWait(t *testing.T) {
	f := newFakeRepl() // commit point 0: a wait would never end
	for name, opt := range map[string]func(*store.Config, *Config){
		"async":         func(_ *store.Config, c *Config) { c.Replicator, c.ReplicationAsync = f, true },
		"no replicator": func(*store.Config, *Config) {},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, opt)
			e.createTopic("T", 1)
			if e.b.repl != nil {
				t.Fatal("a replication waiter runs")
			}
			if res := e.send("T", 0, "x"); res.Status != SendOK {
				t.Fatalf("status %v", res.Status)
			}
			select {
			case end := <-f.polled:
				t.Fatalf("the replicator was asked for %d", end)
			default:
			}
		})
	}
}

// TestCloseAnswersSendsWaitingForSlaves: Close ends the waits under way;
// their sends are answered FLUSH_SLAVE_TIMEOUT (stored, not known
// replicated), and sends after Close are refused.
func TestCloseAnswersSendsWaitingForSlaves(t *testing.T) {
	f := newFakeRepl()
	e := newEnv(t, withRepl(f))
	e.createTopic("T", 1)
	ch := sendAsync(e.b, sendReq("T", 0, "pending"))
	f.nextPoll(t)
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	if a := awaitAnswer(t, ch); a.err != nil || a.res.Status != SendFlushSlaveTimeout {
		t.Fatalf("answer %+v %v, want FLUSH_SLAVE_TIMEOUT", a.res, a.err)
	}
	a := awaitAnswer(t, sendAsync(e.b, sendReq("T", 0, "late")))
	wantKind(t, a.err, KindServiceUnavailable)
}

// TestSlaveRefusesWritesAndServesReads: a slave refuses sends
// (SERVICE_NOT_AVAILABLE, ErrNotMaster in the chain), send-backs,
// transaction ends, pops, and topic/group admin writes and offset resets
// (SYSTEM_ERROR, as RocketMQ's admin processor on a slave); it serves
// pulls — also of a topic its metadata does not know but its store holds
// (replicated) — and takes consumer offset commits, as RocketMQ does.
func TestSlaveRefusesWritesAndServesReads(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.BrokerID = 1; c.Role = RoleSlave })
	if e.b.Role() != RoleSlave {
		t.Fatalf("role %v", e.b.Role())
	}
	// What replication appended: records in the store, unknown to meta.
	for i := range 3 {
		m := &message.Message{Topic: "Replicated", QueueID: 1, Body: []byte{byte('a' + i)}, BornHost: e.scfg.StoreHost, StoreHost: e.scfg.StoreHost}
		if err := e.st.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	e.waitMax("Replicated", 1, 3)

	_, err := e.b.Send(context.Background(), sendReq("Replicated", 1, "no"))
	wantKind(t, err, KindServiceUnavailable, "slave")
	if !errors.Is(err, ErrNotMaster) {
		t.Fatalf("send refusal %v lacks ErrNotMaster", err)
	}
	wantKind(t, e.b.CreateTopic(TopicConfig{Name: "New", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}), KindSystemError, "slave")
	wantKind(t, e.b.DeleteTopic("Replicated"), KindSystemError, "slave")
	wantKind(t, e.b.UpdateGroup(GroupConfig{Name: "G", ConsumeEnable: true}), KindSystemError, "slave")
	wantKind(t, e.b.DeleteGroup("G", true), KindSystemError, "slave")
	_, err = e.b.ResetOffset("G", "Replicated", 0)
	wantKind(t, err, KindSystemError, "slave")
	_, err = e.b.SendBack(context.Background(), &SendBackRequest{Group: "G", Offset: 0})
	wantKind(t, err, KindServiceUnavailable, "slave")
	wantKind(t, e.b.EndTransaction(EndTransactionRequest{}), KindServiceUnavailable, "slave")
	_, err = e.b.Pop(context.Background(), &PopRequest{Group: "G", Topic: "Replicated", MaxMsgs: 1})
	wantKind(t, err, KindServiceUnavailable, "slave")
	wantKind(t, e.b.AckBatch([]AckRequest{{Group: "G", Topic: "Replicated", Handle: "h"}})[0], KindServiceUnavailable, "slave")

	e.subscribe(1, "c1", "G", "Replicated", "*") // a heartbeat is taken
	p := e.mustPull(pullReq("G", "Replicated", 1, 0))
	if len(p.bodies) != 3 || p.bodies[0] != "a" {
		t.Fatalf("pull from the slave: %+v", p)
	}
	e.b.UpdateConsumerOffset("G", "Replicated", 1, 2)
	if off, ok := e.b.QueryConsumerOffset("G", "Replicated", 1); !ok || off != 2 {
		t.Fatalf("offset committed on the slave: %d %v", off, ok)
	}

	// Promoted, it takes sends again.
	e.b.SetRole(RoleMaster)
	e.createTopic("T", 1)
	if res := e.send("T", 0, "now"); res.Status != SendOK {
		t.Fatalf("send after promotion: %v", res.Status)
	}
}

func TestRoleForID(t *testing.T) {
	if RoleForID(0) != RoleMaster || RoleForID(1) != RoleSlave || RoleForID(7) != RoleSlave {
		t.Fatal("broker id 0 is the master, others slaves")
	}
	if RoleMaster.String() != "master" || RoleSlave.String() != "slave" {
		t.Fatal("role names")
	}
	c := DefaultConfig()
	c.Role = Role(5)
	if err := c.Validate(); err == nil {
		t.Fatal("an unknown role passed Validate")
	}
}

// trackRepl is the daemon's adapter in small: a track.Tracker as the
// broker's Replicator.
type trackRepl struct{ *track.Tracker }

func (r trackRepl) WaitReplicated(ctx context.Context, end int64) error { return r.Wait(ctx, end) }

// TestSyncReplicationOverTheTracker: with ha/track's tracker as the
// Replicator (one sync replica), a send is SLAVE_NOT_AVAILABLE while no
// slave is in sync, waits once one is, and is SEND_OK only when the
// slave's durable ack covers its record, not when the master's does.
func TestSyncReplicationOverTheTracker(t *testing.T) {
	clk := clock.NewManual(t0)
	cfg := track.DefaultConfig()
	cfg.SyncReplicas = 1
	tr := track.New(cfg, clk, storetest.Logger(t))
	e := newEnv(t, func(_ *store.Config, c *Config) { c.Clock = clk; c.Replicator = trackRepl{tr} })
	e.createTopic("T", 1)
	if a := awaitAnswer(t, sendAsync(e.b, sendReq("T", 0, "nobody"))); a.err != nil || a.res.Status != SendSlaveNotAvailable {
		t.Fatalf("without a slave: %+v %v, want SLAVE_NOT_AVAILABLE", a.res, a.err)
	}
	d := e.st.Durable()
	tr.MasterProgress(d, d)
	if err := tr.SlaveProgress(1, d, d); err != nil {
		t.Fatal(err)
	}
	ch := sendAsync(e.b, sendReq("T", 0, "replicated"))
	e.waitMax("T", 0, 2) // stored (and durable) on the master
	end := e.st.Durable()
	tr.MasterProgress(end, end)
	notAnswered(t, ch, "with only the master holding the record")
	if err := tr.SlaveProgress(1, end, end-1); err != nil {
		t.Fatal(err)
	}
	notAnswered(t, ch, "with the slave's durable end one byte short")
	if err := tr.SlaveProgress(1, end, end); err != nil {
		t.Fatal(err)
	}
	if a := awaitAnswer(t, ch); a.err != nil || a.res.Status != SendOK {
		t.Fatalf("after the slave's ack: %+v %v, want SEND_OK", a.res, a.err)
	}
}

// TestSendBackWaitsForTheSlaves: under sync replication a consumer's
// send-back is answered once the commit point covers its retry copy; when
// the slaves cannot confirm it, it is refused (SYSTEM_ERROR, as RocketMQ
// answers a send-back whose put was not PUT_OK) so the consumer sends the
// retry itself.
func TestSendBackWaitsForTheSlaves(t *testing.T) {
	f := newFakeRepl()
	f.set(1<<40, false)
	e := newEnv(t, withRepl(f))
	e.createTopic("T", 1)
	e.send("T", 0, "work", "UNIQ_KEY", "ID1")
	orig := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")).recs[0]
	f.set(e.st.Durable(), false) // the retry copy will be above the commit point
	back := func() chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: orig.PhysicalOffset, Group: "g", MaxReconsumeTimes: 2, OriginMsgID: "ID1"})
			ch <- err
		}()
		return ch
	}
	ch := back()
	end := f.nextPoll(t)
	select {
	case err := <-ch:
		t.Fatalf("send-back answered (%v) before the commit point covered its copy", err)
	default:
	}
	f.set(end, false)
	if err := <-ch; err != nil {
		t.Fatalf("send-back after the slaves confirmed: %v", err)
	}
	f.set(e.st.Durable(), true)
	wantKind(t, <-back(), KindSystemError, "SLAVE_NOT_AVAILABLE")
}

// coveringRepl is a fakeRepl that tells how far its commit point reaches.
type coveringRepl struct{ *fakeRepl }

func (c coveringRepl) Covered() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hw
}

// TestSendsTheCommitPointCoversNeedOneWait: sends queued behind a wait
// are answered, once the commit point covers them all, without asking the
// Replicator again when it tells how far the commit point reaches — and
// each send still only once it is covered.
func TestSendsTheCommitPointCoversNeedOneWait(t *testing.T) {
	f := coveringRepl{newFakeRepl()}
	e := newEnv(t, withRepl(f))
	e.createTopic("T", 1)
	first := sendAsync(e.b, sendReq("T", 0, "one"))
	end := f.nextPoll(t)
	var later []<-chan sendAnswer
	for _, body := range []string{"two", "three"} {
		later = append(later, sendAsync(e.b, sendReq("T", 0, body)))
	}
	// Both are stored and queued behind the first one's wait.
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		e.b.repl.mu.Lock()
		n := len(e.b.repl.q)
		e.b.repl.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sends queued behind the first wait, want 2", n)
		}
	}
	notAnswered(t, first, "before the commit point moved")
	if d := e.st.Durable(); end >= d {
		t.Fatalf("the first wait is for %d, the three sends end at %d", end, d)
	}
	f.set(e.st.Durable(), false)
	for i, ch := range append([]<-chan sendAnswer{first}, later...) {
		if a := awaitAnswer(t, ch); a.err != nil || a.res.Status != SendOK {
			t.Fatalf("send %d: %+v %v, want SEND_OK", i, a.res, a.err)
		}
	}
	if n := e.b.repl.waits.Load(); n != 1 {
		t.Fatalf("%d waits for three sends one commit point covers, want 1", n)
	}
}

// TestSetBrokerIDNamesTheRefusingSlave: in controller mode the broker id
// comes from the controller at run time (0 as master, the replica id as a
// slave); a slave's refusal names the id it has now, not the one it was
// configured with (an interop run saw "a slave (broker id 0)").
func TestSetBrokerIDNamesTheRefusingSlave(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.BrokerID = 0; c.Role = RoleSlave })
	e.b.SetBrokerID(3)
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "no"))
	if err == nil || !strings.Contains(err.Error(), "broker id 3") {
		t.Fatalf("refusal %v; want it to name broker id 3", err)
	}
}
