package broker

import (
	"context"
	"testing"
	"time"
)

// TestAckBatchByOffsetAndUntil: an acknowledgement without the handle
// names the delivery by queue, offset and InvisibleUntil (RocketMQ's batch
// ack): it takes the message, after which its handle is refused as
// acknowledged; a stale time, an offset never popped and a second ack are
// refused each on its own; a message of the group's retry topic is found
// under the asked topic; the offsets commit as with handles.
func TestAckBatchByOffsetAndUntil(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for _, b := range []string{"a", "b", "c"} {
		e.send("T", 0, b)
	}
	got := e.pop(popReq("g", "T", 32))
	if len(got) != 3 {
		t.Fatalf("popped %d, want 3", len(got))
	}
	at := func(i int) AckRequest {
		return AckRequest{Group: "g", Topic: "T", ByOffset: true, QueueID: got[i].Record.QueueID(), Offset: got[i].Record.QueueOffset(), Until: got[i].InvisibleUntil}
	}
	stale := at(1)
	stale.Until = stale.Until.Add(time.Millisecond)
	never := at(2)
	never.Offset = 7
	errs := e.b.AckBatch([]AckRequest{at(0), stale, never, at(2), at(2)})
	if errs[0] != nil || errs[3] != nil {
		t.Fatalf("acks by offset: %v, %v", errs[0], errs[3])
	}
	wantKind(t, errs[1], KindInvalidReceiptHandle, "replaced")
	wantKind(t, errs[2], KindInvalidReceiptHandle, "never received")
	wantKind(t, errs[4], KindInvalidReceiptHandle, "already acknowledged")
	wantKind(t, e.b.AckPop("g", "T", got[0].Handle), KindInvalidReceiptHandle, "already acknowledged")
	if off, _ := e.b.QueryConsumerOffset("g", "T", 0); off != 1 {
		t.Fatalf("committed offset %d, want 1 (offset 1 in flight)", off)
	}
	if errs := e.b.AckBatch([]AckRequest{at(1)}); errs[0] != nil {
		t.Fatalf("ack of offset 1: %v", errs[0])
	}
	if off, _ := e.b.QueryConsumerOffset("g", "T", 0); off != 3 {
		t.Fatalf("committed offset %d, want 3", off)
	}

	// The group's retry topic: queue 0 offset 0 there too.
	e.send("T", 0, "failed by 4.x")
	e.sendBackOne("g", "T", 3)
	r := e.pop(popReq("g", "T", 32))
	if len(r) != 2 {
		t.Fatalf("popped %v, want the original and its copy in the retry topic", bodies(t, r))
	}
	if string(r[0].Record.Topic()) == "T" {
		r[0], r[1] = r[1], r[0]
	}
	if string(r[0].Record.Topic()) != RetryGroupTopicPrefix+"g" {
		t.Fatalf("no message of the retry topic popped")
	}
	e.ack("g", "T", r[1].Handle) // the original, offset 3 of T
	retry := AckRequest{Group: "g", Topic: "T", ByOffset: true, QueueID: 0, Offset: r[0].Record.QueueOffset(), Until: r[0].InvisibleUntil}
	if errs := e.b.AckBatch([]AckRequest{retry}); errs[0] != nil {
		t.Fatalf("ack of the retry topic's message under the asked topic: %v", errs[0])
	}
	if n := e.b.pops.st.InFlight("g"); n != 0 {
		t.Fatalf("%d in flight, want 0", n)
	}
	// Past its time a delivery is expired, not looked for elsewhere.
	e.send("T", 0, "late")
	late := e.pop(popReq("g", "T", 32))
	e.clk.Advance(11 * time.Second)
	req := AckRequest{Group: "g", Topic: "T", ByOffset: true, QueueID: 0, Offset: late[0].Record.QueueOffset(), Until: late[0].InvisibleUntil}
	wantKind(t, e.b.AckBatch([]AckRequest{req})[0], KindReceiptHandleExpired)
}

// TestPeekPopTakesNothing: a peek answers what the group's next pops
// would take new, from each queue's position (unpopped queues where a
// first pop starts), and the messages left; it changes nothing: a pop
// after it gets the same messages, and a peek after that pop the rest.
func TestPeekPopTakesNothing(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	e.send("T", 0, "a0")
	e.send("T", 0, "b0")
	e.send("T", 1, "a1")
	peek := func(q int32, n int) PeekResult {
		t.Helper()
		r, err := e.b.PeekPop(PeekRequest{Group: "g", Topic: "T", QueueID: q, MaxMsgs: n})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	recBodies := func(r PeekResult) []string {
		var pm []PoppedMessage
		for _, rec := range r.Records {
			pm = append(pm, PoppedMessage{Record: rec})
		}
		return bodies(t, pm)
	}
	if r := peek(-1, 32); !sameSet(recBodies(r), "a0", "b0", "a1") || r.RestNum != 3 {
		t.Fatalf("peek of every queue: %v rest %d", recBodies(r), r.RestNum)
	}
	if r := peek(1, 32); !sameSet(recBodies(r), "a1") || r.RestNum != 1 {
		t.Fatalf("peek of queue 1: %v rest %d", recBodies(r), r.RestNum)
	}
	if r := peek(-1, 1); len(r.Records) != 1 || r.RestNum != 3 {
		t.Fatalf("peek of one: %d records, rest %d", len(r.Records), r.RestNum)
	}
	if r := peek(5, 32); len(r.Records) != 0 || r.RestNum != 0 {
		t.Fatalf("peek of a queue the topic lacks: %+v", r)
	}
	got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 32, Invisible: time.Minute})
	if !sameSet(bodies(t, got), "a0", "b0", "a1") {
		t.Fatalf("pop after the peeks: %v", bodies(t, got))
	}
	if r := peek(-1, 32); len(r.Records) != 0 || r.RestNum != 0 {
		t.Fatalf("peek after the pop: %v rest %d", recBodies(r), r.RestNum)
	}
	e.send("T", 1, "c1")
	if r := peek(-1, 32); !sameSet(recBodies(r), "c1") || r.RestNum != 1 {
		t.Fatalf("peek of the new message: %v rest %d", recBodies(r), r.RestNum)
	}
	if _, err := e.b.PeekPop(PeekRequest{Group: "g", Topic: "Nope", QueueID: -1}); err == nil {
		t.Fatal("peek of an unknown topic")
	} else {
		wantKind(t, err, KindTopicNotExist)
	}
}

// notify runs a PopNotify in the background.
func (e *popEnv) notify(ctx context.Context, req NotifyRequest) chan bool {
	done := make(chan bool, 1)
	b := e.b
	go func() {
		has, err := b.PopNotify(ctx, req)
		if err != nil {
			e.t.Error(err)
		}
		done <- has
	}()
	return done
}

func waitNotify(t *testing.T, what string, done chan bool) bool {
	t.Helper()
	select {
	case has := <-done:
		return has
	case <-time.After(waitLimit):
		t.Fatalf("%s: the notification was not answered", what)
	}
	return false
}

// TestPopNotifyWaitsForAMessage: a notification answers at once when a
// pop would find a message (a new one, or one whose invisible time
// passed), false at once without a wait; a parked one answers true when a
// message arrives and passes the wake on to a pop of the group parked
// behind it, which takes the message; it answers false at the end of its
// wait and when its ctx ends; PollingPops counts the parked pops, not the
// notifications; a FIFO notification is not woken by its held queue.
func TestPopNotifyWaitsForAMessage(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	ctx := context.Background()
	req := NotifyRequest{Group: "g", Topic: "T"}
	if has, err := e.b.PopNotify(ctx, req); err != nil || has {
		t.Fatalf("nothing sent: %v %v", has, err)
	}
	e.send("T", 0, "m0")
	if has, err := e.b.PopNotify(ctx, req); err != nil || !has {
		t.Fatalf("a message sent: %v %v", has, err)
	}
	got := e.pop(popReq("g", "T", 32))
	if has, _ := e.b.PopNotify(ctx, req); has || len(got) != 1 {
		t.Fatalf("after the pop took it: %v", has)
	}

	req.Wait = 20 * time.Second
	n := e.notify(ctx, req)
	e.waitPopParked()
	p := e.parkPop(longPop("g", "T", false))
	if c, err := e.b.PollingPops("g", "T"); err != nil || c != 1 || e.b.ParkedPops() != 2 {
		t.Fatalf("polling pops %d, %v (parked %d), want 1 pop (and the notification)", c, err, e.b.ParkedPops())
	}
	if _, err := e.b.PollingPops("g", "NoSuchTopic"); KindOf(err) != KindTopicNotExist {
		t.Fatalf("polling pops of a missing topic: %v", err)
	}
	e.send("T", 1, "m1")
	if !waitNotify(t, "arrival", n) {
		t.Fatal("the notification answered false on an arrival")
	}
	if b := bodies(t, waitPop(t, "pop behind the notification", p)); len(b) != 1 || b[0] != "m1" {
		t.Fatalf("the pop parked behind the notification got %v, want m1", b)
	}

	// An expired in-flight message is there for a pop.
	e.clk.Advance(11 * time.Second)
	if has, _ := e.b.PopNotify(ctx, NotifyRequest{Group: "g", Topic: "T"}); !has {
		t.Fatal("messages past their invisible time: no message")
	}
	e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 32, Invisible: time.Hour})

	// The end of the wait, and a ctx that ends.
	n = e.notify(ctx, req)
	e.waitPopParked()
	e.clk.Advance(20 * time.Second)
	if waitNotify(t, "wait over", n) {
		t.Fatal("true at the end of the wait with nothing sent")
	}
	cctx, cancel := context.WithCancel(ctx)
	n = e.notify(cctx, req)
	e.waitPopParked()
	cancel()
	if waitNotify(t, "ctx ended", n) {
		t.Fatal("true after the ctx ended")
	}
	if e.b.ParkedPops() != 0 {
		t.Fatalf("%d parked after the notifications ended", e.b.ParkedPops())
	}

	// FIFO: queue 0 holds a message in flight; an arrival there does not
	// make it poppable, one on queue 1 does.
	// Group f, new, takes every message (queue 0's m0, queue 1's m1) and
	// acknowledges queue 1's.
	fifo := e.pop(&PopRequest{Group: "f", Topic: "T", MaxMsgs: 32, Invisible: time.Hour, FIFO: true})
	for _, m := range fifo {
		if m.Record.QueueID() == 1 {
			e.ack("f", "T", m.Handle)
		}
	}
	if len(fifo) != 2 {
		t.Fatalf("FIFO pop %v", bodies(t, fifo))
	}
	n = e.notify(ctx, NotifyRequest{Group: "f", Topic: "T", Wait: 20 * time.Second, FIFO: true})
	e.waitPopParked()
	before := e.popWakes()
	e.send("T", 0, "f0b")
	if d := e.popWakes() - before; d != 0 {
		t.Fatalf("an arrival on the held queue woke %d", d)
	}
	e.send("T", 1, "f1")
	if !waitNotify(t, "FIFO arrival", n) {
		t.Fatal("FIFO notification false after an arrival on a free queue")
	}
}
