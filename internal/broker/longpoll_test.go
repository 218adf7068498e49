package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store"
)

func suspendReq(group, topic string, qid int32, off int64, conn uint64) *PullRequest {
	r := pullReq(group, topic, qid, off).withSub("*")
	r.SysFlag |= PullFlagSuspend
	r.SuspendTimeout = 20 * time.Second
	r.Conn = conn
	return r
}

func TestLongPollAnsweredByArrivalOnItsQueue(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	e.send("T", 0, "old")
	a := e.startPull(context.Background(), suspendReq("g", "T", 0, 1, 1))
	e.waitParked(1)
	reads := e.b.reads.Load()

	// A message for another queue does not answer it.
	e.send("T", 1, "other queue")
	if a.answered() || e.b.ParkedPulls() != 1 {
		t.Fatal("a message for queue 1 answered a pull parked on queue 0")
	}
	if got := e.b.reads.Load(); got != reads {
		t.Fatalf("store read %d times while nothing arrived for the queue", got-reads)
	}
	e.send("T", 0, "new")
	p := a.wait(t)
	if p.res.Status != PullFound || len(p.bodies) != 1 || p.bodies[0] != "new" || p.res.NextBeginOffset != 2 {
		t.Fatalf("woken pull: %v %v next %d", p.res.Status, p.bodies, p.res.NextBeginOffset)
	}
	if e.b.ParkedPulls() != 0 {
		t.Fatalf("%d pulls still parked", e.b.ParkedPulls())
	}
}

func TestLongPollTimeoutWithoutBusyLoop(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m0")
	a := e.startPull(context.Background(), suspendReq("g", "T", 0, 1, 1))
	e.waitParked(1)
	e.clk.Advance(19 * time.Second)
	if a.answered() {
		t.Fatal("answered before the suspend timeout")
	}
	e.clk.Advance(time.Second)
	p := a.wait(t)
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 1 || p.res.MaxOffset != 1 {
		t.Fatalf("timed-out pull: %v next %d max %d, want NO_NEW_MSG next 1 max 1", p.res.Status, p.res.NextBeginOffset, p.res.MaxOffset)
	}
	if n := e.b.reads.Load(); n != 1 {
		t.Fatalf("a parked pull read the store %d times, want 1 (no busy polling)", n)
	}
}

func TestLongPollEmptyQueueAtZero(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	a := e.startPull(context.Background(), suspendReq("g", "T", 0, 0, 1))
	e.waitParked(1)
	e.send("T", 0, "first")
	p := a.wait(t)
	if p.res.Status != PullFound || p.bodies[0] != "first" {
		t.Fatalf("pull parked on an empty queue: %v %v", p.res.Status, p.bodies)
	}
}

func TestLongPollReparksWhenNothingMatches(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	r := suspendReq("g", "T", 0, 0, 1)
	r.Subscription = "A"
	a := e.startPull(context.Background(), r)
	e.waitParked(1)
	e.send("T", 0, "b", "TAGS", "B")
	e.waitParked(1) // re-read found no match and parked again
	if a.answered() {
		t.Fatal("a non-matching message answered the pull")
	}
	e.send("T", 0, "a", "TAGS", "A")
	p := a.wait(t)
	if p.res.Status != PullFound || len(p.bodies) != 1 || p.bodies[0] != "a" || p.res.NextBeginOffset != 2 {
		t.Fatalf("pull: %v %v next %d, want only the A message, next 2", p.res.Status, p.bodies, p.res.NextBeginOffset)
	}

	// At the timeout, the skipped non-matching message is not offered again.
	a = e.startPull(context.Background(), r2(r, 2))
	e.waitParked(1)
	e.send("T", 0, "c", "TAGS", "C")
	e.waitParked(1)
	e.clk.Advance(20 * time.Second)
	p = a.wait(t)
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 3 {
		t.Fatalf("timed out after a skipped message: %v next %d, want NO_NEW_MSG next 3", p.res.Status, p.res.NextBeginOffset)
	}
}

func r2(r *PullRequest, off int64) *PullRequest {
	c := *r
	c.Offset = off
	return &c
}

func TestLongPollNoMatchAtEndParks(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "b", "TAGS", "B")
	r := suspendReq("g", "T", 0, 0, 1)
	r.Subscription = "A"
	a := e.startPull(context.Background(), r)
	e.waitParked(1)
	e.clk.Advance(20 * time.Second)
	p := a.wait(t)
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 1 {
		t.Fatalf("%v next %d, want NO_NEW_MSG next 1", p.res.Status, p.res.NextBeginOffset)
	}
	// Without the suspend bit it is NO_MATCHED at once.
	r.SysFlag &^= PullFlagSuspend
	q := e.mustPull(r)
	if q.res.Status != PullNoMatched || q.res.NextBeginOffset != 1 {
		t.Fatalf("%v next %d, want NO_MATCHED next 1", q.res.Status, q.res.NextBeginOffset)
	}
}

func TestLongPollBounds(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.LongPollMaxTotal, c.LongPollMaxPerConn = 3, 2 })
	e.createTopic("T", 1)
	var parked []*asyncPull
	for _, conn := range []uint64{1, 1} {
		parked = append(parked, e.startPull(context.Background(), suspendReq("g", "T", 0, 0, conn)))
		e.waitParked(1)
	}
	_, err := e.b.Pull(context.Background(), suspendReq("g", "T", 0, 0, 1))
	wantKind(t, err, KindServiceUnavailable, "LongPollMaxPerConn=2")
	parked = append(parked, e.startPull(context.Background(), suspendReq("g", "T", 0, 0, 2)))
	e.waitParked(1)
	_, err = e.b.Pull(context.Background(), suspendReq("g", "T", 0, 0, 3))
	wantKind(t, err, KindServiceUnavailable, "LongPollMaxTotal=3")
	// Without the suspend bit a pull is answered at once even when full.
	r := suspendReq("g", "T", 0, 0, 3)
	r.SysFlag &^= PullFlagSuspend
	if p := e.mustPull(r); p.res.Status != PullNoNewMsg {
		t.Fatalf("%v", p.res.Status)
	}
	e.send("T", 0, "x")
	for _, a := range parked {
		if p := a.wait(t); p.res.Status != PullFound {
			t.Fatalf("%v", p.res.Status)
		}
	}
}

func TestConnClosedAnswersItsParkedPulls(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	mine := e.startPull(context.Background(), suspendReq("g", "T", 0, 0, 7))
	other := e.startPull(context.Background(), suspendReq("g", "T", 0, 0, 8))
	e.waitParked(2)
	e.b.ConnClosed(7)
	p := mine.wait(t)
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 0 {
		t.Fatalf("%v next %d", p.res.Status, p.res.NextBeginOffset)
	}
	if other.answered() || e.b.ParkedPulls() != 1 {
		t.Fatal("closing connection 7 answered connection 8's pull")
	}
	e.b.Close()
	if p := other.wait(t); p.res.Status != PullNoNewMsg {
		t.Fatalf("Close answered with %v", p.res.Status)
	}
	if e.b.ParkedPulls() != 0 {
		t.Fatal("pulls parked after Close")
	}
}

func TestLongPollContextCancel(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	ctx, cancel := context.WithCancel(context.Background())
	a := e.startPull(ctx, suspendReq("g", "T", 0, 0, 1))
	e.waitParked(1)
	cancel()
	if p := a.wait(t); p.res.Status != PullNoNewMsg {
		t.Fatalf("%v", p.res.Status)
	}
	if e.b.ParkedPulls() != 0 {
		t.Fatal("cancelled pull still parked")
	}
}

func TestLongPollManyWaitersAndDeadlines(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 4)
	// Different timeouts: the timer must follow the earliest deadline.
	var as []*asyncPull
	for i, d := range []time.Duration{30 * time.Second, 5 * time.Second, 10 * time.Second} {
		r := suspendReq("g", "T", int32(i), 0, uint64(i+1))
		r.SuspendTimeout = d
		as = append(as, e.startPull(context.Background(), r))
		e.waitParked(1)
	}
	e.clk.Advance(5 * time.Second)
	as[1].wait(t)
	if as[0].answered() || as[2].answered() {
		t.Fatal("answered early")
	}
	e.clk.Advance(5 * time.Second)
	as[2].wait(t)
	if as[0].answered() {
		t.Fatal("answered early")
	}
	e.clk.Advance(20 * time.Second)
	as[0].wait(t)
}

// TestLongPollConcurrentNoLostWakeups runs producers and long-polling
// consumers at once: every consumer must receive every message of its
// queue in order. A lost wake-up leaves a pull parked (the manual clock
// never times it out) and fails the test at its deadline.
func TestLongPollConcurrentNoLostWakeups(t *testing.T) {
	e := newEnv(t)
	const queues, perQueue = 4, 200
	e.createTopic("T", queues)
	e.b.polls.testHookParked = nil // parks are not counted here
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	errs := make(chan error, 2*queues)
	for q := range int32(queues) {
		go func() {
			next := int64(0)
			for next < perQueue {
				r := suspendReq("g", "T", q, next, uint64(q+1))
				p, err := pullOn(e.b, ctx, r)
				if err != nil {
					errs <- err
					return
				}
				if ctx.Err() != nil {
					errs <- fmt.Errorf("queue %d: stuck at offset %d", q, next)
					return
				}
				for i, m := range p.recs {
					if m.QueueOffset != next+int64(i) || string(m.Body) != fmt.Sprint(q, "-", next+int64(i)) {
						errs <- fmt.Errorf("queue %d: got %q at %d, want offset %d", q, m.Body, m.QueueOffset, next+int64(i))
						return
					}
				}
				next = p.res.NextBeginOffset
			}
			errs <- nil
		}()
		go func() {
			for i := range perQueue {
				if _, err := e.b.Send(context.Background(), sendReq("T", q, fmt.Sprint(q, "-", i))); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 * queues {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
