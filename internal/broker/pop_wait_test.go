package broker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// parkPop runs a long-polling pop and waits until it sleeps.
func (e *popEnv) parkPop(req *PopRequest) chan []PoppedMessage {
	e.t.Helper()
	done := make(chan []PoppedMessage, 1)
	b := e.b // e.b is cleared by the cleanup, which may run first after a Fatal
	go func() {
		got, err := b.Pop(context.Background(), req)
		if err != nil {
			e.t.Error(err)
		}
		done <- got
	}()
	e.waitPopParked()
	return done
}

func waitPop(t *testing.T, what string, done chan []PoppedMessage) []PoppedMessage {
	t.Helper()
	select {
	case got := <-done:
		return got
	case <-time.After(waitLimit):
		t.Fatalf("%s: the parked pop was not answered", what)
	}
	return nil
}

func longPop(group, topic string, fifo bool) *PopRequest {
	r := popReq(group, topic, 4)
	r.Wait, r.FIFO = 20*time.Second, fifo
	return r
}

// popWakes returns the wakes handed to parked pops so far.
func (e *popEnv) popWakes() int64 { return e.b.pops.polls.woken.Load() }

// TestPopArrivalWakesOnlyThePopsThatCanTakeIt: a message on queue 1 wakes
// one pop of each group that can take it: not the second parked pop of
// the group, not a FIFO pop whose queue 1 holds a message in flight.
func TestPopArrivalWakesOnlyThePopsThatCanTakeIt(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	e.send("T", 1, "held")
	if got := e.pop(&PopRequest{Group: "f", Topic: "T", MaxMsgs: 1, Invisible: time.Minute, FIFO: true}); len(got) != 1 {
		t.Fatalf("FIFO group popped %d, want 1", len(got))
	}
	// Group g starts at the end of the queues.
	e.pop(popReq("g", "T", 32))
	fifo := e.parkPop(longPop("f", "T", true))
	g1 := e.parkPop(longPop("g", "T", false))
	g2 := e.parkPop(longPop("g", "T", false))
	before := e.popWakes()

	e.send("T", 1, "m1")
	got := waitPop(t, "g", g1)
	if b := bodies(t, got); len(b) != 1 || b[0] != "m1" {
		t.Fatalf("the oldest pop of g got %v, want m1", b)
	}
	if n := e.popWakes() - before; n != 1 {
		t.Fatalf("one message on queue 1 woke %d pops, want 1 (the FIFO pop's queue 1 is held, g's second pop is not needed)", n)
	}
	if e.b.ParkedPops() != 2 {
		t.Fatalf("parked pops %d, want 2 (f and g's second)", e.b.ParkedPops())
	}
	// Queue 0 is free for the FIFO group: it wakes there, and g's second
	// pop takes its copy.
	e.send("T", 0, "m0")
	if b := bodies(t, waitPop(t, "f", fifo)); len(b) != 1 || b[0] != "m0" {
		t.Fatalf("FIFO pop got %v, want m0", b)
	}
	if b := bodies(t, waitPop(t, "g second", g2)); len(b) != 1 || b[0] != "m0" {
		t.Fatalf("g's second pop got %v, want m0", b)
	}
}

// TestPopAckWakesOnlyItsGroup: a parked FIFO pop of group a waits for its
// queue to be freed; an ack of group b does not wake it, its own group's
// ack does.
func TestPopAckWakesOnlyItsGroup(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m1")
	e.send("T", 0, "m2")
	fifoReq := func(g string) *PopRequest {
		return &PopRequest{Group: g, Topic: "T", MaxMsgs: 1, Invisible: time.Minute, FIFO: true}
	}
	a := e.pop(fifoReq("a"))
	b := e.pop(fifoReq("b"))
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("popped %d and %d, want 1 each", len(a), len(b))
	}
	parked := e.parkPop(longPop("a", "T", true))
	before := e.popWakes()
	e.ack("b", "T", b[0].Handle)
	if n := e.popWakes() - before; n != 0 || e.b.ParkedPops() != 1 {
		t.Fatalf("an ack of group b woke %d pops (parked %d); want group a's pop left asleep", n, e.b.ParkedPops())
	}
	e.ack("a", "T", a[0].Handle)
	if got := bodies(t, waitPop(t, "a", parked)); len(got) != 1 || got[0] != "m2" {
		t.Fatalf("group a's pop got %v after its ack, want m2", got)
	}
}

// TestPopChangeInvisibleWakesOnlyItsGroup: a message of group a made
// visible sooner wakes group a's parked pop at that time (injected clock),
// not group b's.
func TestPopChangeInvisibleWakesOnlyItsGroup(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	a := e.pop(popReq("a", "T", 1)) // invisible for 10 s
	e.pop(popReq("b", "T", 1))
	pa := e.parkPop(longPop("a", "T", false))
	pb := e.parkPop(longPop("b", "T", false))
	before := e.popWakes()
	if _, err := e.b.ChangeInvisible("a", "T", a[0].Handle, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Second)
	got := waitPop(t, "a", pa)
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("group a's pop got %d messages, want m again", len(got))
	}
	select {
	case got := <-pb:
		t.Fatalf("group b's pop answered %d messages on group a's change", len(got))
	default:
	}
	if e.b.ParkedPops() != 1 || e.popWakes() != before {
		t.Fatalf("parked %d, wakes %d; want b's pop asleep and no event wake (a's came by its deadline)", e.b.ParkedPops(), e.popWakes()-before)
	}
	// Visible at once: woken without the clock moving.
	pa = e.parkPop(longPop("a", "T", false))
	if _, err := e.b.ChangeInvisible("a", "T", got[0].Handle, 0); err != nil {
		t.Fatal(err)
	}
	if got := waitPop(t, "a again", pa); len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("group a's pop got %d messages after a change to 0, want m a third time", len(got))
	}
	e.clk.Advance(8 * time.Second) // b's copy becomes visible
	if got := waitPop(t, "b", pb); len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("group b's pop got %d messages at its redelivery", len(got))
	}
}

// TestPopWokenButCancelledPassesTheWakeOn: the oldest pop of a group
// ends as a message arrives; whether it left the table first or was woken
// and passes the wake on, the next pop of its group gets the message.
func TestPopWokenButCancelledPassesTheWakeOn(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan []PoppedMessage, 1)
	go func() {
		got, _ := e.b.Pop(ctx, longPop("g", "T", false))
		first <- got
	}()
	e.waitPopParked()
	second := e.parkPop(longPop("g", "T", false))
	cancel()
	e.send("T", 0, "m")
	if got := waitPop(t, "cancelled", first); len(got) != 0 {
		t.Fatalf("the cancelled pop got %v", bodies(t, got))
	}
	if b := bodies(t, waitPop(t, "second", second)); len(b) != 1 || b[0] != "m" {
		t.Fatalf("second pop got %v, want m", b)
	}
}

// TestAckBatchOneSync: the acknowledgements of one batch share one fsync
// of the pop state, and a bad entry fails alone.
func TestAckBatchOneSync(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	const n = 8
	for i := range n {
		e.send("T", int32(i%2), "m")
	}
	got := e.pop(popReq("g", "T", 32))
	if len(got) != n {
		t.Fatalf("popped %d, want %d", len(got), n)
	}
	var syncs, fail atomic.Int64
	e.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.Contains(p, "pop/log-") {
			syncs.Add(1)
			if fail.Load() > 0 {
				return errors.New("injected sync failure")
			}
		}
		return nil
	})
	reqs := []AckRequest{{Group: "g", Topic: "T", Handle: "not-a-handle"}}
	for _, m := range got {
		reqs = append(reqs, AckRequest{Group: "g", Topic: "T", Handle: m.Handle})
	}
	reqs = append(reqs, AckRequest{Group: "other", Topic: "T", Handle: got[0].Handle}, AckRequest{Group: "g", Topic: "T", Handle: got[1].Handle})
	errs := e.b.AckBatch(reqs)
	if syncs.Load() != 1 {
		t.Fatalf("a batch of %d acks made %d syncs of the pop log, want 1", len(reqs), syncs.Load())
	}
	if len(errs) != len(reqs) {
		t.Fatalf("%d errors for %d requests", len(errs), len(reqs))
	}
	wantKind(t, errs[0], KindInvalidReceiptHandle, "not one this broker issued")
	for i := 1; i <= n; i++ {
		if errs[i] != nil {
			t.Fatalf("entry %d: %v", i, errs[i])
		}
	}
	wantKind(t, errs[n+1], KindInvalidReceiptHandle, "another consumer group")
	wantKind(t, errs[n+2], KindInvalidReceiptHandle, "already acknowledged")
	if infl := e.b.pops.st.InFlight("g"); infl != 0 {
		t.Fatalf("%d still in flight", infl)
	}
	// A failed sync fails every entry it was to make durable, and only
	// those.
	e.send("T", 0, "x")
	got = e.pop(popReq("g", "T", 1))
	fail.Store(1)
	errs = e.b.AckBatch([]AckRequest{{Group: "g", Topic: "T", Handle: got[0].Handle}, {Group: "g", Topic: "T", Handle: "bad"}})
	wantKind(t, errs[0], KindSystemError, "could not write")
	wantKind(t, errs[1], KindInvalidReceiptHandle)
}
