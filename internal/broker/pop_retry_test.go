package broker

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

// sendBackOne sends T's record at queue offset off of queue 0 back for
// group g (what a failing 4.x member does) and waits until the copy is in
// %RETRY%g after its 10 s back-off.
func (e *popEnv) sendBackOne(group, topic string, off int64) {
	e.t.Helper()
	m := e.mustPull(pullReq("puller", topic, 0, off).withSub("*")).recs[0]
	retry := RetryGroupTopicPrefix + group
	before := e.st.MaxOffset(retry, 0)
	if _, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: group,
		OriginMsgID: m.Property(message.PropertyUniqKey), OriginTopic: topic}); err != nil {
		e.t.Fatalf("send back: %v", err)
	}
	e.waitPending(1)
	e.clk.Advance(10 * time.Second)
	e.waitMax(retry, 0, before+1)
}

// TestPopReceivesTheGroupsRetryTopic: what a 4.x member of the group sent
// back to %RETRY%<group> reaches the group's simple consumers (not its
// FIFO ones, as RocketMQ), with the delivery attempt counting the 4.x
// attempts; it is acknowledged with the topic the consumer asked for and
// does not come again.
func TestPopReceivesTheGroupsRetryTopic(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "failed by 4.x", message.PropertyUniqKey, "ID-R")
	e.send("T", 0, "fine")
	// The 4.x member consumed both, failed the first, sent it back and
	// committed past them.
	e.sendBackOne("g", "T", 0)
	e.b.UpdateConsumerOffset("g", "T", 0, 2)

	if got := e.pop(&PopRequest{Group: "g", Topic: "T", MaxMsgs: 32, Invisible: 10 * time.Second, FIFO: true}); len(got) != 0 {
		t.Fatalf("a FIFO pop received %v; retry messages are not for FIFO groups", bodies(t, got))
	}
	got := e.pop(popReq("g", "T", 32))
	if b := bodies(t, got); len(b) != 1 || b[0] != "failed by 4.x" {
		t.Fatalf("popped %v, want the sent-back message", b)
	}
	r := got[0].Record
	if string(r.Topic()) != RetryGroupTopicPrefix+"g" || got[0].Attempt != 2 {
		t.Fatalf("popped from %q with attempt %d, want %%RETRY%%g and attempt 2 (one 4.x attempt before)", r.Topic(), got[0].Attempt)
	}
	if v, _ := r.Property(message.PropertyUniqKey); string(v) != "ID-R" {
		t.Fatalf("message id %q, want the original ID-R", v)
	}
	if _, err := e.b.ChangeInvisible("g", "T", got[0].Handle, 20*time.Second); err != nil {
		t.Fatalf("change invisible time with the asked topic: %v", err)
	}
	got = nil
	e.clk.Advance(21 * time.Second)
	got = e.pop(popReq("g", "T", 32))
	if len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("redelivery: %d messages, attempt %v; want one with attempt 3", len(got), got)
	}
	e.ack("g", "T", got[0].Handle)
	e.clk.Advance(time.Minute)
	if b := bodies(t, e.pop(popReq("g", "T", 32))); len(b) != 0 {
		t.Fatalf("popped %v after the acknowledgement", b)
	}
	if off, _ := e.b.meta.Offset("g", RetryGroupTopicPrefix+"g", 0); off != 1 {
		t.Fatalf("committed retry offset %d, want 1", off)
	}
}

// TestPopLongPollWakesOnSendBack: a parked receive of the group wakes when
// a send-back reaches its retry topic.
func TestPopLongPollWakesOnSendBack(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "retry me")
	e.b.UpdateConsumerOffset("g", "T", 0, 1)
	// The retry topic exists before the pop parks (created by a first
	// send-back, already consumed).
	e.sendBackOne("g", "T", 0)
	first := e.pop(popReq("g", "T", 32))
	if len(first) != 1 {
		t.Fatalf("popped %d, want the first send-back", len(first))
	}
	e.ack("g", "T", first[0].Handle)

	done := make(chan []PoppedMessage, 1)
	go func() {
		req := popReq("g", "T", 32)
		req.Wait = 30 * time.Second
		got, _ := e.b.Pop(context.Background(), req)
		done <- got
	}()
	e.waitPopParked()
	m := e.mustPull(pullReq("puller", "T", 0, 0).withSub("*")).recs[0]
	if _, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g", DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	// A DLQ send-back does not reach the retry topic; a second retry does.
	if _, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g"}); err != nil {
		t.Fatal(err)
	}
	e.waitPending(1)
	e.clk.Advance(10 * time.Second)
	select {
	case got := <-done:
		if len(got) != 1 {
			t.Fatalf("woken with %d messages, want the send-back", len(got))
		}
	case <-time.After(waitLimit):
		t.Fatal("the parked receive was not woken by the send-back")
	}
}
