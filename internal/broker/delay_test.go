package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// waitTimers waits until cond holds. The timer store and the feeder work
// on goroutines of their own and do not announce every change (pending
// drops after the broker's Fire returns), so besides their hook the
// condition is also checked every few milliseconds.
func (e *env) waitTimers(what string, cond func() bool) {
	e.t.Helper()
	changed := make(chan struct{}, 1)
	hook := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	e.b.timers.hook.Store(&hook)
	defer e.b.timers.hook.Store(nil)
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-changed:
		case <-e.arrived:
		case <-tick.C:
		case <-deadline.C:
			e.t.Fatalf("timers: %s not within %v", what, waitLimit)
		}
	}
}

// waitPending waits until the timer store holds n timers and the feeder
// has taken in every timer record stored so far.
func (e *env) waitPending(n int64) {
	e.t.Helper()
	e.waitTimers(fmt.Sprintf("%d pending", n), func() bool {
		return e.b.TimersCaughtUp() && e.b.PendingTimers() == n
	})
}

// delayed sends a message that is not due yet; it lands in the timer
// topic, not in its own.
func (e *env) delayed(topic string, body string, kv ...string) SendResult {
	e.t.Helper()
	res, err := e.b.Send(context.Background(), sendReq(topic, 0, body, kv...))
	if err != nil {
		e.t.Fatalf("delayed send: %v", err)
	}
	return res
}

// TestDelayLevelIsNeverEarly: a level-2 message (5 s) is stored in the
// timer topic, not visible in its own topic a millisecond before it is
// due, delivered at 5 s with the timer properties gone and its id kept.
func TestDelayLevelIsNeverEarly(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.delayed("T", "later", "DELAY", "2", "UNIQ_KEY", "U1")
	e.waitPending(1)
	e.clk.Advance(5*time.Second - time.Millisecond)
	if got := e.st.MaxOffset("T", 0); got != 0 || e.b.PendingTimers() != 1 {
		t.Fatalf("before its time: topic max offset %d, pending %d", got, e.b.PendingTimers())
	}
	e.clk.Advance(time.Millisecond)
	e.waitMax("T", 0, 1)
	m := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")).recs[0]
	if string(m.Body) != "later" || m.Property(message.PropertyUniqKey) != "U1" || m.Property("DELAY") != "" ||
		m.Property(message.PropertyRealTopic) != "" || m.Property(PropertyTimerOutMS) != "" || m.QueueID != 0 {
		t.Fatalf("delivered %q props %q queue %d", m.Body, m.Properties, m.QueueID)
	}
	e.waitPending(0)
}

// TestTimerPropertiesAndCap: 5.x delivery times (absolute and relative)
// fire at their time; one beyond MaxTimerDelay is refused naming the cap;
// one already due is stored at once.
func TestTimerPropertiesAndCap(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.MaxTimerDelay = time.Hour })
	e.createTopic("T", 1)
	at := t0.Add(3 * time.Second).UnixMilli()
	e.delayed("T", "abs", message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
	e.delayed("T", "rel", PropertyTimerDelaySec, "4")
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "far", PropertyTimerDelaySec, "7200"))
	wantKind(t, err, KindMessageIllegal, "1h0m0s", "MaxTimerDelay")
	_, err = e.b.Send(context.Background(), sendReq("T", 0, "far", message.PropertyTimerDeliverMS, fmt.Sprint(t0.Add(2*time.Hour).UnixMilli())))
	wantKind(t, err, KindMessageIllegal, "MaxTimerDelay")
	e.send("T", 0, "past", message.PropertyTimerDeliverMS, fmt.Sprint(t0.Add(-time.Second).UnixMilli()))
	e.waitPending(2)
	e.clk.Advance(3 * time.Second)
	e.waitMax("T", 0, 2)
	e.clk.Advance(time.Second)
	e.waitMax("T", 0, 3)
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if fmt.Sprint(p.bodies) != "[past abs rel]" {
		t.Fatalf("delivery order %v", p.bodies)
	}
	// The delivered message keeps the sender's TIMER_DELIVER_MS (a 5.x
	// consumer's delivery timestamp); the timer's own properties are gone.
	if m := p.recs[1]; m.Property(message.PropertyTimerDeliverMS) != strconv.FormatInt(at, 10) ||
		m.Property(PropertyTimerOutMS) != "" || m.Property(message.PropertyRealTopic) != "" {
		t.Fatalf("delivered abs with properties %q; want TIMER_DELIVER_MS=%d and no timer properties", m.Properties, at)
	}
	if m := p.recs[2]; m.Property(PropertyTimerDelaySec) != "" || m.Property(PropertyTimerOutMS) != "" {
		t.Fatalf("delivered rel with properties %q; want no timer properties", m.Properties)
	}
}

// TestPendingDelaysSurviveRestart: a delayed message pending at a restart
// is delivered once, at its time, after it.
func TestPendingDelaysSurviveRestart(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.delayed("T", "d1", "DELAY", "3") // 10 s
	e.waitPending(1)
	e.restart()
	e.waitPending(1)
	e.clk.Advance(9 * time.Second)
	if e.st.MaxOffset("T", 0) != 0 {
		t.Fatal("delivered early after a restart")
	}
	e.clk.Advance(time.Second)
	e.waitMax("T", 0, 1)
	e.waitPending(0)
	e.restart()
	e.clk.Advance(time.Minute)
	if got := e.st.MaxOffset("T", 0); got != 1 {
		t.Fatalf("after a second restart the topic holds %d messages, want 1", got)
	}
}

// TestSendBackRetriesThenDeadLetters: a failed message comes back through
// %RETRY%<group> after 10 s, then 30 s, with its attempt count, original
// topic and id; beyond the maximum it goes to %DLQ%<group> at once, from
// where it can be resent to its topic.
func TestSendBackRetriesThenDeadLetters(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "work", "UNIQ_KEY", "ID1")
	orig := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")).recs[0]
	retry := RetryGroupTopicPrefix + "g"
	back := func(m *message.Message, wantAttempts int32, wantLevel int32) SendBackResult {
		t.Helper()
		res, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g", MaxReconsumeTimes: 2, OriginMsgID: "ID1"})
		if err != nil || res.Attempts != wantAttempts || res.DelayLevel != wantLevel {
			t.Fatalf("send back: %+v %v, want attempts %d level %d", res, err, wantAttempts, wantLevel)
		}
		return res
	}
	steps := []struct {
		wait     time.Duration
		attempts int32
	}{{10 * time.Second, 1}, {30 * time.Second, 2}}
	m := orig
	for i, s := range steps {
		back(m, s.attempts, 3+int32(i))
		e.waitPending(1)
		e.clk.Advance(s.wait - time.Millisecond)
		if e.st.MaxOffset(retry, 0) != int64(i) {
			t.Fatalf("retry %d visible before its back-off", i+1)
		}
		e.clk.Advance(time.Millisecond)
		e.waitMax(retry, 0, int64(i)+1)
		m = e.mustPull(pullReq("g", retry, 0, int64(i)).withSub("*")).recs[0]
		if string(m.Body) != "work" || m.ReconsumeTimes != s.attempts || m.Property(message.PropertyRetryTopic) != "T" ||
			m.Property(message.PropertyOriginMessageID) != "ID1" || m.Property(message.PropertyUniqKey) != "ID1" {
			t.Fatalf("retry %d: body %q attempts %d props %q", i+1, m.Body, m.ReconsumeTimes, m.Properties)
		}
	}
	res := back(m, 3, 0)
	dlq := DLQGroupTopicPrefix + "g"
	if !res.DLQ || res.Topic != dlq {
		t.Fatalf("third failure went to %+v, want the DLQ", res)
	}
	e.waitMax(dlq, 0, 1)
	d := e.mustPull(pullReq("ops", dlq, 0, 0).withSub("*")).recs[0]
	if string(d.Body) != "work" || d.ReconsumeTimes != 3 || d.Property(message.PropertyRetryTopic) != "T" {
		t.Fatalf("DLQ message: %q attempts %d props %q", d.Body, d.ReconsumeTimes, d.Properties)
	}
	// A negative level goes straight to the DLQ.
	if res, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: orig.PhysicalOffset, Group: "g", DelayLevel: -1}); err != nil || !res.DLQ {
		t.Fatalf("level -1: %+v %v", res, err)
	}
	// Resend from the DLQ: a fresh message in T.
	r, err := e.b.ResendDLQ(context.Background(), "g", d.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMax("T", 0, 2)
	again := e.mustPull(pullReq("g", "T", 0, 1).withSub("*")).recs[0]
	if string(again.Body) != "work" || again.ReconsumeTimes != 0 || again.Property(message.PropertyRetryTopic) != "" || r.QueueOffset != 1 {
		t.Fatalf("resent: %q attempts %d props %q result %+v", again.Body, again.ReconsumeTimes, again.Properties, r)
	}
	if _, err := e.b.ResendDLQ(context.Background(), "other", d.PhysicalOffset); err == nil {
		t.Fatal("resent a message that is not in that group's DLQ")
	}
}

// TestLongDelayRollsItsRecordForward: a delay longer than half the commit
// log's reserve time fires early to store a fresh copy of its record (so
// retention never takes it), and the message is still delivered at its
// time, once.
func TestLongDelayRollsItsRecordForward(t *testing.T) {
	e := newEnv(t, func(s *store.Config, _ *Config) { s.FileReservedTime = 2 * time.Minute })
	e.createTopic("T", 1)
	e.delayed("T", "five minutes", PropertyTimerDelaySec, "300")
	e.waitPending(1)
	for i := 1; i <= 4; i++ {
		e.clk.Advance(time.Minute) // a roll every minute
		e.waitMax(TimerTopic, 0, int64(i)+1)
		e.waitPending(1)
		if e.st.MaxOffset("T", 0) != 0 {
			t.Fatalf("delivered after %d min, before its 5 min", i)
		}
	}
	e.clk.Advance(time.Minute)
	e.waitMax("T", 0, 1)
	e.waitPending(0)
	if e.st.MaxOffset("T", 0) != 1 {
		t.Fatalf("delivered %d times", e.st.MaxOffset("T", 0))
	}
}

// TestCancelDelayed: a delayed message cancelled by its id before its time
// is never delivered — also after a restart, and when its record was being
// rolled forward; an unknown id or one already delivered is refused.
func TestCancelDelayed(t *testing.T) {
	e := newEnv(t, func(s *store.Config, _ *Config) { s.FileReservedTime = 2 * time.Minute })
	e.createTopic("T", 1)
	e.delayed("T", "short", "DELAY", "3", "UNIQ_KEY", "C1")                // 10 s
	e.delayed("T", "long", PropertyTimerDelaySec, "300", "UNIQ_KEY", "C2") // rolls every minute
	e.delayed("T", "kept", "DELAY", "3", "UNIQ_KEY", "C3")
	e.waitPending(3)
	for _, id := range []string{"C1", "C2"} {
		if err := e.b.CancelDelayed(context.Background(), id); err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
	wantKind(t, e.b.CancelDelayed(context.Background(), "nope"), KindQueryNotFound, "no delayed message")
	e.restart()
	e.clk.Advance(10 * time.Second)
	e.waitMax("T", 0, 1)
	for range 5 {
		e.clk.Advance(time.Minute)
	}
	e.waitPending(0)
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if len(p.bodies) != 1 || p.bodies[0] != "kept" {
		t.Fatalf("delivered %v, want only kept", p.bodies)
	}
	wantKind(t, e.b.CancelDelayed(context.Background(), "C3"), KindMessageIllegal, "cannot be cancelled")
}
