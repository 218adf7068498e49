package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// The tests of this file hold a send's commit-log fsync (MemFS.HoldSync)
// under sync flush, the store's default, and check that nothing of the
// broker acts on the written but unsynced message: pulls, pops and long
// polls, timers and transactions see it only once its fsync returned
// (RocketMQ #8239; replication will rely on the same rule).

// heldSend is a Send whose commit-log fsync is held.
type heldSend struct {
	hold *vfs.SyncHold
	// before is the commit log's written end before the send: the
	// record's commit-log offset.
	before int64
	done   chan struct{}
	res    SendResult
	err    error
}

// sendHeld holds the commit log's fsyncs, starts req and returns once the
// message is written, its fsync waits, and the dispatcher has fed all it
// takes as durable (so whatever the checks after it look at has already
// happened). The hold is released at the end of the test at the latest.
func (e *env) sendHeld(req *SendRequest) *heldSend {
	e.t.Helper()
	prefix := strings.TrimSuffix(e.scfg.Dir, "/") + "/commitlog/"
	h := &heldSend{
		hold:   e.fs.HoldSync(func(name string) bool { return strings.HasPrefix(name, prefix) }),
		before: e.file.Written(),
		done:   make(chan struct{}),
	}
	e.t.Cleanup(h.hold.Release) // before the env's close, which waits for the fsync
	go func() {
		defer close(h.done)
		h.res, h.err = e.b.Send(context.Background(), req)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.hold.WaitBlocked(ctx, 1); err != nil {
		e.t.Fatalf("the send's fsync never started: %v", err)
	}
	if w := e.file.Written(); w <= h.before {
		e.t.Fatalf("fsync held but the commit log's written end %d has not passed %d", w, h.before)
	}
	if err := e.st.WaitDispatched(ctx); err != nil {
		e.t.Fatal(err)
	}
	return h
}

// what names the moment in failure messages.
func (h *heldSend) what(e *env) string {
	return fmt.Sprintf("while the fsync of [%d, %d) is held", h.before, e.file.Written())
}

func (h *heldSend) answered() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// release lets the fsync return and waits for the send's answer.
func (h *heldSend) release(t *testing.T) SendResult {
	t.Helper()
	h.hold.Release()
	select {
	case <-h.done:
	case <-time.After(waitLimit):
		t.Fatalf("send not answered within %v of the fsync's release", waitLimit)
	}
	if h.err != nil || h.res.Status != SendOK {
		t.Fatalf("send after the fsync: %v %v", h.res.Status, h.err)
	}
	return h.res
}

// crashClone opens a broker and store on what the disk holds now (a power
// loss: only synced data), sharing e's clock. Close it with close.
func (e *env) crashClone() *env {
	e.t.Helper()
	c := &env{t: e.t, fs: e.fs.CrashClone(vfs.CrashOptions{}), clk: e.clk, stores: storetest.Stores{Disk: true}, scfg: e.scfg, bcfg: e.bcfg}
	c.scfg.FS = c.fs
	c.open()
	e.t.Cleanup(c.close)
	return c
}

// asyncPop is a Pop running on its own goroutine.
type asyncPop struct {
	done chan struct{}
	got  []PoppedMessage
	err  error
}

func (e *popEnv) startPop(req *PopRequest) *asyncPop {
	a := &asyncPop{done: make(chan struct{})}
	b := e.b
	go func() {
		defer close(a.done)
		a.got, a.err = b.Pop(context.Background(), req)
	}()
	return a
}

func (a *asyncPop) answered() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// TestHeldFsyncHidesASendFromPullPopAndLongPoll: while a send's fsync is
// held, a pull and a pop find nothing, a long-polling pull and a
// long-polling pop stay parked, the queue's max offset, the key and
// unique-id index and a lookup by commit-log offset do not include it,
// and a crash at that moment loses it; once the fsync returns the parked
// pull and pop get it and every lookup finds it.
func TestHeldFsyncHidesASendFromPullPopAndLongPoll(t *testing.T) {
	e := newDiskPopEnv(t)
	e.createTopic("T", 1)
	parkedPull := e.startPull(context.Background(), suspendReq("g-long", "T", 0, 0, 1))
	e.waitParked(1)
	parkedPop := e.startPop(&PopRequest{Group: "g-pop-long", Topic: "T", MaxMsgs: 32, Invisible: 10 * time.Second, Wait: 20 * time.Second})
	e.waitPopParked()

	h := e.sendHeld(sendReq("T", 0, "held", "KEYS", "k-held", "UNIQ_KEY", "U-held"))
	held := h.what(e.env)
	if parkedPull.answered() || e.b.ParkedPulls() != 1 {
		t.Errorf("the long-polling pull was woken %s (parked pulls %d, answered %v)", held, e.b.ParkedPulls(), parkedPull.answered())
	}
	if parkedPop.answered() || e.b.ParkedPops() != 1 {
		t.Errorf("the long-polling pop was woken %s (parked pops %d, answered %v)", held, e.b.ParkedPops(), parkedPop.answered())
	}
	p := e.mustPull(pullReq("g-pull", "T", 0, 0).withSub("*"))
	if p.res.Status == PullFound || len(p.bodies) != 0 || p.res.MaxOffset != 0 {
		t.Errorf("a pull %s: %v %v max offset %d, want no message and max offset 0", held, p.res.Status, p.bodies, p.res.MaxOffset)
	}
	if got := e.pop(popReq("g-pop", "T", 32)); len(got) != 0 {
		t.Errorf("a pop %s received %v, want nothing", held, bodies(t, got))
	}
	if got := e.b.MaxOffset("T", 0); got != 0 {
		t.Errorf("max offset of T/0 %s = %d, want 0", held, got)
	}
	for _, key := range []string{"k-held", "U-held"} {
		recs, err := e.b.QueryByKey("T", key, 0, math.MaxInt64, 16)
		var be *Error
		if !errors.As(err, &be) || be.Kind != KindQueryNotFound {
			t.Errorf("query by key %q %s: %d records, err %v; want KindQueryNotFound", key, held, len(recs), err)
		}
	}
	if r, err := e.b.ViewByOffset(h.before); err == nil {
		t.Errorf("view by commit-log offset %d %s found %q, want an error", h.before, held, r.Body())
	}
	if h.answered() {
		t.Fatalf("send answered (%v %v) before its fsync returned", h.res, h.err)
	}

	// A crash now loses the message: no consumer above saw it.
	c := e.crashClone()
	if got := c.b.MaxOffset("T", 0); got != 0 {
		t.Errorf("after a crash during the held fsync max offset of T/0 = %d, want 0", got)
	}
	if q := c.mustPull(pullReq("g-pull", "T", 0, 0).withSub("*")); len(q.bodies) != 0 {
		t.Errorf("after a crash during the held fsync a pull got %v, want nothing", q.bodies)
	}
	if _, err := c.b.QueryByKey("T", "U-held", 0, math.MaxInt64, 16); err == nil {
		t.Error("after a crash during the held fsync the index finds the message")
	}
	c.close()

	res := h.release(t)
	if res.QueueOffset != 0 || res.MsgID != message.OffsetID(e.st.Config().StoreHost, h.before) {
		t.Fatalf("send result: queue offset %d id %s, want 0 and the offset id of %d", res.QueueOffset, res.MsgID, h.before)
	}
	if q := parkedPull.wait(t); q.res.Status != PullFound || len(q.bodies) != 1 || q.bodies[0] != "held" {
		t.Fatalf("the long-polling pull after the fsync: %v %v, want [held]", q.res.Status, q.bodies)
	}
	select {
	case <-parkedPop.done:
	case <-time.After(waitLimit):
		t.Fatalf("the long-polling pop was not answered within %v of the fsync", waitLimit)
	}
	if parkedPop.err != nil || !sameSet(bodies(t, parkedPop.got), "held") {
		t.Fatalf("the long-polling pop after the fsync: %v %v, want [held]", bodies(t, parkedPop.got), parkedPop.err)
	}
	if got := e.b.MaxOffset("T", 0); got != 1 {
		t.Fatalf("max offset of T/0 after the fsync = %d, want 1", got)
	}
	if got := e.pop(popReq("g-pop", "T", 32)); !sameSet(bodies(t, got), "held") {
		t.Fatalf("a pop after the fsync received %v, want [held]", bodies(t, got))
	}
	for _, key := range []string{"k-held", "U-held"} {
		recs, err := e.b.QueryByKey("T", key, 0, math.MaxInt64, 16)
		if err != nil || len(recs) != 1 || string(recs[0].Body()) != "held" {
			t.Fatalf("query by key %q after the fsync: %d records, %v", key, len(recs), err)
		}
	}
	if r, err := e.b.ViewByOffset(h.before); err != nil || string(r.Body()) != "held" {
		t.Fatalf("view by offset %d after the fsync: %v", h.before, err)
	}
}

// TestHeldFsyncHidesADelayedMessageFromTheTimers: a delayed message whose
// fsync is held is not in the timer topic's queue nor in the timer store
// (so no timer fires for it), and a crash at that moment loses it; after
// the fsync it is scheduled and delivered at its time.
func TestHeldFsyncHidesADelayedMessageFromTheTimers(t *testing.T) {
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	h := e.sendHeld(sendReq("T", 0, "later", "DELAY", "2", "UNIQ_KEY", "U-later"))
	held := h.what(e)
	// The feeder has taken in every timer record the store shows.
	e.waitTimers("the timer feeder to catch up", func() bool { return e.b.timers.fed.Load() >= e.st.MaxOffset(TimerTopic, 0) })
	if got := e.st.MaxOffset(TimerTopic, 0); got != 0 {
		t.Errorf("max offset of the timer topic %s = %d, want 0", held, got)
	}
	if got := e.b.PendingTimers(); got != 0 {
		t.Errorf("the timer store holds %d timers %s, want 0: it would fire for an unsynced message", got, held)
	}
	c := e.crashClone()
	if c.st.MaxOffset(TimerTopic, 0) != 0 || c.b.PendingTimers() != 0 {
		t.Errorf("after a crash during the held fsync: timer topic max offset %d, pending %d; want 0 0", c.st.MaxOffset(TimerTopic, 0), c.b.PendingTimers())
	}
	c.close()

	h.release(t)
	e.waitPending(1)
	e.clk.Advance(5*time.Second - time.Millisecond)
	if got := e.st.MaxOffset("T", 0); got != 0 {
		t.Fatalf("delivered %d messages before the delay passed", got)
	}
	e.clk.Advance(time.Millisecond)
	e.waitMax("T", 0, 1)
	if p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")); len(p.bodies) != 1 || p.bodies[0] != "later" {
		t.Fatalf("pulled %v after the delay, want [later]", p.bodies)
	}
}

// TestHeldFsyncHidesAHalfMessageFromTransactions: a half message whose
// fsync is held cannot be read, committed or rolled back (END_TRANSACTION
// does not find it), and a crash at that moment loses it; after the fsync
// a commit delivers it.
func TestHeldFsyncHidesAHalfMessageFromTransactions(t *testing.T) {
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	h := e.sendHeld(sendReq("T", 0, "half", "TRAN_MSG", "true", "PGROUP", "pg", "UNIQ_KEY", "U-half"))
	held := h.what(e)
	if r, err := e.b.ViewByOffset(h.before); err == nil {
		// End finds it too, and then waits to store the commit behind the
		// held fsync: endWithin below fails after waitLimit.
		t.Errorf("the half at commit-log offset %d is readable %s (%q)", h.before, held, r.Body())
	}
	if got := e.st.MaxOffset(txn.HalfTopic, 0); got != 0 {
		t.Errorf("max offset of the half topic %s = %d, want 0", held, got)
	}
	end := EndTransactionRequest{ProducerGroup: "pg", TranStateTableOffset: 0, CommitLogOffset: h.before, CommitOrRollback: txn.EndCommit}
	for _, kind := range []int32{txn.EndCommit, txn.EndRollback} {
		req := end
		req.CommitOrRollback = kind
		if err := endWithin(t, e.b, req); !errors.Is(err, txn.ErrHalfNotFound) {
			t.Errorf("end transaction (type %d) of the half %s: %v, want ErrHalfNotFound", kind, held, err)
		}
	}
	if e.b.OpenTransactions() != 0 {
		t.Errorf("%d open transactions %s, want 0", e.b.OpenTransactions(), held)
	}
	c := e.crashClone()
	if got := c.st.MaxOffset(txn.HalfTopic, 0); got != 0 {
		t.Errorf("after a crash during the held fsync the half topic's max offset is %d, want 0", got)
	}
	if err := endWithin(t, c.b, end); !errors.Is(err, txn.ErrHalfNotFound) {
		t.Errorf("after a crash during the held fsync, end transaction: %v, want ErrHalfNotFound", err)
	}
	c.close()

	h.release(t)
	if err := endWithin(t, e.b, end); err != nil {
		t.Fatalf("commit after the fsync: %v", err)
	}
	e.waitMax("T", 0, 1)
	if p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")); len(p.bodies) != 1 || p.bodies[0] != "half" {
		t.Fatalf("pulled %v after the commit, want [half]", p.bodies)
	}
}

// endWithin runs EndTransaction and fails the test if it does not return
// within waitLimit (a commit of an unsynced half would wait for ever behind
// the held fsync).
func endWithin(t *testing.T, b *Broker, req EndTransactionRequest) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.EndTransaction(req) }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("EndTransaction %+v did not return within %v: it found the half and waits to store its records", req, waitLimit)
		return nil
	}
}
