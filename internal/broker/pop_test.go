package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// popEnv is an env whose broker reports parked pops on parked.
type popEnv struct {
	*env
	parked chan struct{}
}

func newPopEnv(t *testing.T, opts ...func(*store.Config, *Config)) *popEnv {
	e := &popEnv{env: newEnv(t, opts...)}
	e.hook()
	return e
}

// newDiskPopEnv is newPopEnv on the file store.
func newDiskPopEnv(t *testing.T, opts ...func(*store.Config, *Config)) *popEnv {
	e := &popEnv{env: newDiskEnv(t, opts...)}
	e.hook()
	return e
}

func (e *popEnv) hook() {
	e.parked = make(chan struct{}, 100)
	e.b.pops.testHookParked = func() { e.parked <- struct{}{} }
}

func (e *popEnv) restartPop() {
	e.restart()
	e.hook()
}

func (e *popEnv) waitPopParked() {
	e.t.Helper()
	select {
	case <-e.parked:
	case <-time.After(waitLimit):
		e.t.Fatalf("pop not parked within %v (parked: %d)", waitLimit, e.b.ParkedPops())
	}
}

func popReq(group, topic string, n int) *PopRequest {
	return &PopRequest{Group: group, Topic: topic, MaxMsgs: n, Invisible: 10 * time.Second}
}

func (e *popEnv) pop(req *PopRequest) []PoppedMessage {
	e.t.Helper()
	got, err := e.b.Pop(context.Background(), req)
	if err != nil {
		e.t.Fatalf("pop %+v: %v", *req, err)
	}
	return got
}

func bodies(t testing.TB, ms []PoppedMessage) []string {
	t.Helper()
	var out []string
	for _, m := range ms {
		d, _, err := message.Decode(m.Record)
		if err != nil {
			t.Fatalf("decode popped record: %v", err)
		}
		out = append(out, string(d.Body))
	}
	return out
}

func sameSet(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func (e *popEnv) ack(group, topic, handle string) {
	e.t.Helper()
	if err := e.b.AckPop(group, topic, handle); err != nil {
		e.t.Fatalf("ack: %v", err)
	}
}

func TestPopReceiveAndAck(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	e.send("T", 0, "a")
	e.send("T", 1, "b")
	e.send("T", 0, "c")
	got := e.pop(popReq("g", "T", 32))
	if b := bodies(t, got); !sameSet(b, "a", "b", "c") {
		t.Fatalf("popped %v, want a b c", b)
	}
	for _, m := range got {
		if m.Attempt != 1 || !m.InvisibleUntil.Equal(t0.Add(10*time.Second)) || len(m.Handle) == 0 {
			t.Fatalf("popped %+v", m)
		}
	}
	if again := e.pop(popReq("g", "T", 32)); len(again) != 0 {
		t.Fatalf("popped %v while all are invisible", bodies(t, again))
	}
	// Another group gets its own copy.
	if other := e.pop(popReq("g2", "T", 32)); len(other) != 3 {
		t.Fatalf("group g2 popped %d, want 3", len(other))
	}
	for _, m := range got {
		e.ack("g", "T", m.Handle)
	}
	e.clk.Advance(time.Minute)
	if again := e.pop(popReq("g", "T", 32)); len(again) != 0 {
		t.Fatalf("popped %v after all were acknowledged", bodies(t, again))
	}
	if tr := e.b.TotalTraffic(); tr.GetMsgs != 6 || tr.GetBytes == 0 {
		t.Fatalf("traffic %+v, want 6 messages got", tr)
	}
	for _, l := range e.b.ConsumerLag("g") {
		if l.Lag != 0 || l.Committed != l.MaxOffset {
			t.Fatalf("lag after acking everything: %+v", l)
		}
	}
}

func TestPopBatchSizeAndDefaults(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for i := range 40 {
		e.send("T", 0, fmt.Sprint(i))
	}
	got := e.pop(&PopRequest{Group: "g", Topic: "T"})
	if len(got) != 1 || !got[0].InvisibleUntil.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("default pop: %d messages, until %v", len(got), got[0].InvisibleUntil)
	}
	if got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 100}); len(got) != 32 {
		t.Fatalf("pop of 100: %d messages, want the cap 32", len(got))
	}
}

func TestPopRedeliversAfterInvisibleTime(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	first := e.pop(popReq("g", "T", 1))
	e.clk.Advance(9 * time.Second)
	if got := e.pop(popReq("g", "T", 1)); len(got) != 0 {
		t.Fatal("redelivered before the invisible time passed")
	}
	e.clk.Advance(time.Second)
	second := e.pop(popReq("g", "T", 1))
	if b := bodies(t, second); len(b) != 1 || b[0] != "m" || second[0].Attempt != 2 {
		t.Fatalf("redelivery: %v attempt %d", b, second[0].Attempt)
	}
	wantKind(t, e.b.AckPop("g", "T", first[0].Handle), KindReceiptHandleExpired, "expired")
	e.ack("g", "T", second[0].Handle)
	wantKind(t, e.b.AckPop("g", "T", second[0].Handle), KindInvalidReceiptHandle, "already acknowledged")
}

func TestPopAckAfterInvisibleTimeIsExpired(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	got := e.pop(popReq("g", "T", 1))
	e.clk.Advance(10 * time.Second)
	wantKind(t, e.b.AckPop("g", "T", got[0].Handle), KindReceiptHandleExpired)
	if _, err := e.b.ChangeInvisible("g", "T", got[0].Handle, time.Minute); KindOf(err) != KindReceiptHandleExpired {
		t.Fatalf("change after expiry: %v", err)
	}
}

func TestChangeInvisibleGivesANewHandle(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	got := e.pop(popReq("g", "T", 1))
	e.clk.Advance(5 * time.Second)
	h2, err := e.b.ChangeInvisible("g", "T", got[0].Handle, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h2 == got[0].Handle {
		t.Fatal("the new handle equals the old one")
	}
	wantKind(t, e.b.AckPop("g", "T", got[0].Handle), KindInvalidReceiptHandle, "replaced")
	e.clk.Advance(30 * time.Second) // past the first invisible time
	if again := e.pop(popReq("g", "T", 1)); len(again) != 0 {
		t.Fatal("redelivered though the invisible time was extended")
	}
	// Shortening works too: visible again at once.
	h3, err := e.b.ChangeInvisible("g", "T", h2, 0)
	if err != nil {
		t.Fatal(err)
	}
	again := e.pop(popReq("g", "T", 1))
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("after shortening to 0: %d messages", len(again))
	}
	wantKind(t, e.b.AckPop("g", "T", h3), KindReceiptHandleExpired)
	e.ack("g", "T", again[0].Handle)
}

func TestPopMaxAttemptsMovesToDLQ(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	sent := e.send("T", 0, "poison", message.PropertyTags, "x")
	req := popReq("g", "T", 1)
	req.MaxAttempts = 2
	for attempt := int32(1); attempt <= 2; attempt++ {
		got := e.pop(req)
		if len(got) != 1 || got[0].Attempt != attempt {
			t.Fatalf("attempt %d: %d messages", attempt, len(got))
		}
		e.clk.Advance(10 * time.Second)
	}
	if got := e.pop(req); len(got) != 0 {
		t.Fatalf("delivered a third time (attempt %d) with MaxAttempts 2", got[0].Attempt)
	}
	dlq := DLQGroupTopicPrefix + "g"
	e.waitMax(dlq, 0, 1)
	p := e.mustPull(pullReq("c", dlq, 0, 0).withSub("*"))
	if len(p.recs) != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", len(p.recs))
	}
	m := p.recs[0]
	if string(m.Body) != "poison" || m.Property(message.PropertyRetryTopic) != "T" || m.ReconsumeTimes != 2 ||
		m.Property(message.PropertyOriginMessageID) != sent.MsgID || m.Tags() != "x" {
		t.Fatalf("DLQ message: body %q props %q reconsume %d, want origin id %s", m.Body, m.Properties, m.ReconsumeTimes, sent.MsgID)
	}
	if e.b.pops.st.InFlight("g") != 0 {
		t.Fatalf("%d in flight after the DLQ move", e.b.pops.st.InFlight("g"))
	}
	// ResendDLQ works on it like on a send-back's dead letter.
	res, err := e.b.ResendDLQ(context.Background(), "g", m.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMax("T", res.QueueID, res.QueueOffset+1)
	if got := e.pop(req); len(got) != 1 || bodies(t, got)[0] != "poison" || got[0].Attempt != 1 {
		t.Fatal("the resent message was not popped as a fresh one")
	}
}

func TestForwardPopToDLQ(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "bad")
	got := e.pop(popReq("g", "T", 1))
	if err := e.b.ForwardPopToDLQ("g", "T", got[0].Handle); err != nil {
		t.Fatal(err)
	}
	dlq := DLQGroupTopicPrefix + "g"
	e.waitMax(dlq, 0, 1)
	if p := e.mustPull(pullReq("c", dlq, 0, 0).withSub("*")); len(p.recs) != 1 || p.recs[0].ReconsumeTimes != 1 {
		t.Fatalf("DLQ after forward: %d messages", len(p.recs))
	}
	wantKind(t, e.b.AckPop("g", "T", got[0].Handle), KindInvalidReceiptHandle, "already acknowledged")
	e.clk.Advance(time.Minute)
	if again := e.pop(popReq("g", "T", 1)); len(again) != 0 {
		t.Fatal("a forwarded message was delivered again")
	}
	wantKind(t, e.b.ForwardPopToDLQ("g", "T", "junk"), KindInvalidReceiptHandle)
}

func TestPopFIFOHoldsTheQueueWhileInFlight(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for _, b := range []string{"1", "2", "3"} {
		e.send("T", 0, b)
	}
	req := popReq("g", "T", 1)
	req.FIFO = true
	first := e.pop(req)
	if b := bodies(t, first); len(b) != 1 || b[0] != "1" {
		t.Fatalf("first FIFO pop: %v", b)
	}
	if got := e.pop(req); len(got) != 0 {
		t.Fatalf("FIFO pop delivered %v while 1 is in flight", bodies(t, got))
	}
	// Expiry redelivers 1 before 2.
	e.clk.Advance(10 * time.Second)
	again := e.pop(req)
	if b := bodies(t, again); len(b) != 1 || b[0] != "1" || again[0].Attempt != 2 {
		t.Fatalf("after expiry: %v", b)
	}
	e.ack("g", "T", again[0].Handle)
	req.MaxMsgs = 5
	if b := bodies(t, e.pop(req)); len(b) != 2 || b[0] != "2" || b[1] != "3" {
		t.Fatalf("after the ack: %v, want 2 3 in order", b)
	}
}

func TestPopFiltersByTagAndSQL(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "a1", message.PropertyTags, "A", "n", "1")
	e.send("T", 0, "b1", message.PropertyTags, "B", "n", "2")
	e.send("T", 0, "a2", message.PropertyTags, "A", "n", "3")
	tag := popReq("gt", "T", 32)
	tag.Expression = "A"
	if b := bodies(t, e.pop(tag)); !sameSet(b, "a1", "a2") {
		t.Fatalf("tag A: %v", b)
	}
	sql := popReq("gs", "T", 32)
	sql.Expression, sql.ExpressionType = "n >= 2", ExpressionSQL92
	if b := bodies(t, e.pop(sql)); !sameSet(b, "b1", "a2") {
		t.Fatalf("SQL n >= 2: %v", b)
	}
	bad := popReq("gs", "T", 1)
	bad.Expression, bad.ExpressionType = "n >>", ExpressionSQL92
	_, err := e.b.Pop(context.Background(), bad)
	wantKind(t, err, KindSubscriptionParseFailed)
	// A filtered-out message is skipped for good: the offset moves past it.
	for _, l := range e.b.ConsumerLag("gt") {
		if l.Committed != 0 {
			t.Fatalf("committed %d with a1 in flight", l.Committed)
		}
	}
}

func TestPopValidation(t *testing.T) {
	e := newPopEnv(t)
	_, err := e.b.Pop(context.Background(), popReq("g", "Nope", 1))
	wantKind(t, err, KindTopicNotExist)
	if err := e.b.CreateTopic(topicCfg("W", 1, 2)); err != nil { // write only
		t.Fatal(err)
	}
	_, err = e.b.Pop(context.Background(), popReq("g", "W", 1))
	wantKind(t, err, KindNoPermission)
}

func TestPopLongPollWakesOnArrival(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 2)
	req := popReq("g", "T", 4)
	req.Wait = 20 * time.Second
	done := make(chan []PoppedMessage, 1)
	go func() {
		got, err := e.b.Pop(context.Background(), req)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	e.waitPopParked()
	if e.b.ParkedPops() != 1 {
		t.Fatalf("parked pops %d, want 1", e.b.ParkedPops())
	}
	e.send("T", 1, "late")
	select {
	case got := <-done:
		if b := bodies(t, got); len(b) != 1 || b[0] != "late" {
			t.Fatalf("woken pop: %v", b)
		}
	case <-time.After(waitLimit):
		t.Fatal("a parked pop was not woken by a message")
	}
	if e.b.ParkedPops() != 0 {
		t.Fatalf("parked pops %d after the answer", e.b.ParkedPops())
	}
}

func TestPopLongPollWakesOnRedelivery(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	e.pop(popReq("g", "T", 1)) // invisible for 10 s
	req := popReq("g", "T", 1)
	req.Wait = 30 * time.Second
	done := make(chan []PoppedMessage, 1)
	go func() {
		got, _ := e.b.Pop(context.Background(), req)
		done <- got
	}()
	e.waitPopParked()
	e.clk.Advance(10 * time.Second)
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Attempt != 2 {
			t.Fatalf("woken pop: %d messages", len(got))
		}
	case <-time.After(waitLimit):
		t.Fatal("a parked pop was not woken when a message became visible again")
	}
}

func TestPopLongPollTimesOutEmpty(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	req := popReq("g", "T", 1)
	req.Wait = 20 * time.Second
	done := make(chan []PoppedMessage, 1)
	go func() {
		got, err := e.b.Pop(context.Background(), req)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	e.waitPopParked()
	e.clk.Advance(19 * time.Second)
	select {
	case <-done:
		t.Fatal("answered before the wait passed")
	default:
	}
	e.clk.Advance(time.Second)
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Fatalf("timed-out pop returned %d messages", len(got))
		}
	case <-time.After(waitLimit):
		t.Fatal("a parked pop was not answered at its deadline")
	}
}

func TestPopLongPollAnsweredOnCloseAndCancel(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	req := popReq("g", "T", 1)
	req.Wait = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		got []PoppedMessage
		err error
	}
	cancelled, closed := make(chan answer, 1), make(chan answer, 1)
	go func() { got, err := e.b.Pop(ctx, req); cancelled <- answer{got, err} }()
	e.waitPopParked()
	go func() { got, err := e.b.Pop(context.Background(), req); closed <- answer{got, err} }()
	e.waitPopParked()
	cancel()
	for name, ch := range map[string]chan answer{"cancel": cancelled, "close": closed} {
		if name == "close" {
			e.b.Close()
		}
		select {
		case a := <-ch:
			if a.err != nil || len(a.got) != 0 {
				t.Fatalf("%s: %d messages, %v", name, len(a.got), a.err)
			}
		case <-time.After(waitLimit):
			t.Fatalf("a parked pop was not answered on %s", name)
		}
	}
	_, err := e.b.Pop(context.Background(), req)
	wantKind(t, err, KindServiceUnavailable)
}

func TestPopStateSurvivesRestart(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "acked")
	e.send("T", 0, "held")
	got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 2, Invisible: time.Minute})
	if len(got) != 2 {
		t.Fatalf("popped %d", len(got))
	}
	handles := map[string]string{}
	for i, b := range bodies(t, got) {
		handles[b] = got[i].Handle
	}
	e.ack("g", "T", handles["acked"])
	e.restartPop()
	if again := e.pop(popReq("g", "T", 32)); len(again) != 0 {
		t.Fatalf("after restart, popped %v before the invisible time passed", bodies(t, again))
	}
	wantKind(t, e.b.AckPop("g", "T", handles["acked"]), KindInvalidReceiptHandle, "already acknowledged")
	e.clk.Advance(time.Minute)
	again := e.pop(popReq("g", "T", 32))
	if b := bodies(t, again); len(b) != 1 || b[0] != "held" || again[0].Attempt != 2 {
		t.Fatalf("after the invisible time: %v", b)
	}
	e.ack("g", "T", again[0].Handle)
}

// TestPopStateSurvivesCrash: what a Pop handed out and what AckPop
// confirmed is on disk when they return, whatever was not synced.
func TestPopStateSurvivesCrash(t *testing.T) {
	e := newDiskPopEnv(t)
	e.createTopic("T", 2)
	for i := range 6 {
		e.send("T", int32(i%2), fmt.Sprint(i))
	}
	got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 4, Invisible: time.Minute})
	e.ack("g", "T", got[0].Handle)
	acked := bodies(t, got[:1])[0]
	crashed := e.fs.CrashClone(vfs.CrashOptions{})
	e.close()
	e.fs, e.scfg.FS = crashed, crashed
	e.open()
	e.hook()
	rest := e.pop(popReq("g", "T", 32))
	if len(rest) != 2 {
		t.Fatalf("after the crash popped %v, want the 2 never popped", bodies(t, rest))
	}
	e.clk.Advance(time.Minute)
	again := e.pop(popReq("g", "T", 32))
	b := bodies(t, again)
	if len(b) != 5 {
		t.Fatalf("after the invisible time popped %v, want the 5 unacknowledged", b)
	}
	for _, x := range b {
		if x == acked {
			t.Fatalf("the message acknowledged before the crash (%s) was delivered again", acked)
		}
	}
}

func TestPopConcurrentReceiversNeverShareAMessage(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 4)
	const n = 200
	for i := range n {
		e.send("T", int32(i%4), fmt.Sprint(i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := e.b.Pop(context.Background(), &PopRequest{Group: "g", Topic: "T", MaxMsgs: 3, Invisible: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, b := range bodies(t, got) {
					seen[b]++
				}
				mu.Unlock()
				for i, m := range got {
					if i%2 == 0 {
						if err := e.b.AckPop("g", "T", m.Handle); err != nil {
							t.Error(err)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
	for b, c := range seen {
		if c != 1 {
			t.Fatalf("message %s handed out %d times while invisible", b, c)
		}
	}
}

func TestPopReceiptHandleErrors(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.createTopic("U", 1)
	e.send("T", 0, "m")
	got := e.pop(popReq("g", "T", 1))
	h := got[0].Handle
	for _, junk := range []string{"", "garbage", strings.Repeat("A", 60), h[:59] + "!",
		"f5aa2c9c 1700000000000 60000 0 0 broker-a 0 0"} {
		wantKind(t, e.b.AckPop("g", "T", junk), KindInvalidReceiptHandle)
		if _, err := e.b.ChangeInvisible("g", "T", junk, time.Second); KindOf(err) != KindInvalidReceiptHandle {
			t.Fatalf("change with %q: %v", junk, err)
		}
	}
	wantKind(t, e.b.AckPop("other", "T", h), KindInvalidReceiptHandle, "another consumer group")
	wantKind(t, e.b.AckPop("g", "U", h), KindInvalidReceiptHandle, "another topic")
	// A handle naming a message never received (valid bytes, made up).
	fake := pop.HandleOf(pop.Key{Group: "g", Topic: "T", QueueID: 0}, pop.Entry{Offset: 5, Until: t0.Add(time.Hour).UnixMilli(), Attempt: 1, Gen: 1})
	wantKind(t, e.b.AckPop("g", "T", fake), KindInvalidReceiptHandle, "never received")
	e.ack("g", "T", h)
}

func TestPopInFlightLimit(t *testing.T) {
	e := newPopEnv(t, func(_ *store.Config, c *Config) { c.PopMaxInFlight = 3 })
	e.createTopic("T", 1)
	for i := range 5 {
		e.send("T", 0, fmt.Sprint(i))
	}
	got := e.pop(popReq("g", "T", 32))
	if len(got) != 3 {
		t.Fatalf("popped %d with a limit of 3 in flight", len(got))
	}
	_, err := e.b.Pop(context.Background(), popReq("g", "T", 1))
	wantKind(t, err, KindServiceUnavailable, "PopMaxInFlight")
	e.ack("g", "T", got[0].Handle)
	if more := e.pop(popReq("g", "T", 32)); len(more) != 1 {
		t.Fatalf("popped %d after one ack, want 1", len(more))
	}
}

func TestPopNewGroupStart(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for i := range 4 {
		e.send("T", 0, fmt.Sprint(i))
	}
	// A young queue (min offset 0): from the beginning.
	if b := bodies(t, e.pop(popReq("fresh", "T", 32))); len(b) != 4 {
		t.Fatalf("new group popped %v, want all 4", b)
	}
	// A group with a committed offset starts there.
	e.b.UpdateConsumerOffset("known", "T", 0, 3)
	if b := bodies(t, e.pop(popReq("known", "T", 32))); len(b) != 1 || b[0] != "3" {
		t.Fatalf("group with offset 3 popped %v", b)
	}
	// The start is recorded: messages sent after the first empty pop are
	// not skipped.
	e.createTopic("E", 1)
	if got := e.pop(popReq("g", "E", 1)); len(got) != 0 {
		t.Fatal("popped from an empty topic")
	}
	e.send("E", 0, "x")
	e.send("E", 0, "y")
	if b := bodies(t, e.pop(popReq("g", "E", 32))); len(b) != 2 {
		t.Fatalf("popped %v, want x y", b)
	}
}

func TestPopFIFOParkedPopWakesOnAck(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "1")
	e.send("T", 0, "2")
	req := popReq("g", "T", 1)
	req.FIFO = true
	first := e.pop(req)
	waiting := *req
	waiting.Wait = 30 * time.Second
	done := make(chan []PoppedMessage, 1)
	go func() {
		got, _ := e.b.Pop(context.Background(), &waiting)
		done <- got
	}()
	e.waitPopParked()
	e.ack("g", "T", first[0].Handle)
	select {
	case got := <-done:
		if b := bodies(t, got); len(b) != 1 || b[0] != "2" {
			t.Fatalf("woken FIFO pop: %v", b)
		}
	case <-time.After(waitLimit):
		t.Fatal("a parked FIFO pop was not woken by the ack that unblocked its queue")
	}
}

// TestPopStateWriteFailureRefusesAndSays: when the pop state cannot be
// made durable, nothing is confirmed — the receive, the change of
// invisible time and the acknowledgement fail with a system error naming
// what failed — and later requests are refused until a restart.
func TestPopStateWriteFailureRefusesAndSays(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "a")
	e.send("T", 0, "b")
	got := e.pop(popReq("g", "T", 1))
	popDir := e.scfg.Dir + "/pop/"
	e.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.HasPrefix(p, popDir) {
			return fmt.Errorf("injected sync failure")
		}
		return nil
	})
	_, err := e.b.ChangeInvisible("g", "T", got[0].Handle, time.Minute)
	wantKind(t, err, KindSystemError, "change of invisible time", "until it is restarted")
	e.fs.InjectError(nil)
	wantKind(t, e.b.AckPop("g", "T", got[0].Handle), KindSystemError, "acknowledgement", "until it is restarted")
	more, err := e.b.Pop(context.Background(), popReq("g", "T", 1))
	if len(more) != 0 {
		t.Fatalf("a pop after a failed write of the state delivered %v", bodies(t, more))
	}
	wantKind(t, err, KindSystemError, "receive", "until it is restarted")
	// A restart reloads the state: the second message was never
	// delivered; the first is in flight (whether the change that failed
	// to sync reached the disk or not) and comes back once its invisible
	// time, at most the changed one, has passed.
	e.restartPop()
	if b := bodies(t, e.pop(popReq("g", "T", 32))); len(b) != 1 || b[0] != "b" {
		t.Fatalf("after the restart popped %v, want b", b)
	}
	e.clk.Advance(time.Minute)
	if again := e.pop(popReq("g", "T", 32)); len(again) != 2 || !sameSet(bodies(t, again), "a", "b") {
		t.Fatalf("after the invisible time popped %v, want a and b again", bodies(t, again))
	}
}

// TestPopDeletedTopicStartsAfresh: deleting a topic forgets where the pop
// groups stood on it and what they held, across a restart too, so a topic
// created again under the name is read from its first message.
func TestPopDeletedTopicStartsAfresh(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "old-1")
	e.send("T", 0, "old-2")
	if got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 1, Invisible: time.Minute}); len(got) != 1 {
		t.Fatalf("popped %d", len(got))
	}
	if err := e.b.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	e.restartPop()
	e.createTopic("T", 1)
	e.send("T", 0, "new-1")
	e.clk.Advance(2 * time.Minute) // the old delivery's invisible time is over
	got := e.pop(popReq("g", "T", 32))
	if b := bodies(t, got); len(b) != 1 || b[0] != "new-1" || got[0].Attempt != 1 {
		t.Fatalf("after the topic was deleted and created again, popped %v", b)
	}
}
