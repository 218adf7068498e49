package grpcfront

import (
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"

	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/message"
)

// recall calls RecallMessage (not in the generated client: its messages
// are pbcodec's).
func (e *env) recall(topic, handle string) *pbcodec.RecallMessageResponse {
	e.t.Helper()
	resp := new(pbcodec.RecallMessageResponse)
	req := &pbcodec.RecallMessageRequest{Topic: &v2.Resource{Name: topic}, RecallHandle: handle}
	if err := e.conn.Invoke(e.ctx("p1"), RecallMessageMethod, req, resp, grpc.ForceCodecV2(pbcodec.New())); err != nil {
		e.t.Fatalf("RecallMessage: %v", err)
	}
	return resp
}

// TestRecallMessage: a DELAY send's entry carries recall_handle (field 5)
// naming its topic, the broker and its message id; RecallMessage with it
// answers OK and the message id, and the message is never delivered while
// another one of the same time is. A normal send has no handle; a handle
// that does not decode, one of another topic, a missing handle and an
// unknown topic are refused with their codes.
func TestRecallMessage(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	e.createTopic("T2", 1)
	delayed := func(id, body string) *v2.SendResultEntry {
		m := msg("T1", id, body)
		m.SystemProperties.MessageType = v2.MessageType_DELAY
		m.SystemProperties.DeliveryTimestamp = tspb(t0.Add(5 * time.Second))
		got := e.send("p1", m)
		if code(got.Status) != v2.Code_OK {
			t.Fatalf("send %s: %v", id, got.Status)
		}
		return got
	}
	gone, kept := delayed("ID-GONE", "recalled"), delayed("ID-KEPT", "kept")
	handle := pbcodec.RecallHandle(gone)
	h, err := message.DecodeRecallHandle(handle)
	if err != nil || h.Topic != "T1" || h.BrokerName != e.b.Config().BrokerName || h.UniqID != "ID-GONE" || h.At != t0.Add(5*time.Second).UnixMilli()+1 {
		t.Fatalf("recall_handle %q decodes to %+v, %v", handle, h, err)
	}
	if pbcodec.RecallHandle(kept) == "" {
		t.Fatal("the second delayed send has no recall_handle")
	}
	if now := e.send("p1", msg("T2", "ID-NOW", "now")); pbcodec.RecallHandle(now) != "" {
		t.Fatalf("a normal send has recall_handle %q", pbcodec.RecallHandle(now))
	}

	for _, tc := range []struct {
		name, topic, handle string
		want                v2.Code
	}{
		{"unknown topic", "Nope", handle, v2.Code_TOPIC_NOT_FOUND},
		{"not a handle", "T1", "%%%", v2.Code_BAD_REQUEST},
		{"another topic", "T2", handle, v2.Code_BAD_REQUEST},
		{"no handle", "T1", "", v2.Code_BAD_REQUEST},
		{"no topic", "", handle, v2.Code_ILLEGAL_TOPIC},
	} {
		if r := e.recall(tc.topic, tc.handle); code(r.GetStatus()) != tc.want || r.MessageId != "" {
			t.Errorf("%s: %v, message id %q; want %v", tc.name, r.GetStatus(), r.MessageId, tc.want)
		}
	}
	r := e.recall("T1", handle)
	if code(r.GetStatus()) != v2.Code_OK || r.MessageId != "ID-GONE" {
		t.Fatalf("recall: %v, message id %q; want OK and ID-GONE", r.GetStatus(), r.MessageId)
	}
	await(t, "the timer holds both messages and applied the recall", func() bool { return e.b.TimersCaughtUp() && e.b.PendingTimers() == 2 })
	e.clk.Advance(5 * time.Second)
	recs := e.awaitRecords("T1", 1)
	await(t, "the timers fired", func() bool { return e.b.PendingTimers() == 0 })
	if got := e.records("T1", 0); len(got) != 1 || string(got[0].Body()) != "kept" || len(recs[0]) != 1 {
		t.Fatalf("delivered %d records (first %q), want only kept", len(got), got[0].Body())
	}
}

// TestSlaveForwardsRecalls: a delayed send through a slave's front gets
// the master's recall handle, and RecallMessage through the slave is
// forwarded to the master as RECALL_MESSAGE: OK with the message id, the
// master's refusals as their gRPC codes; the master never delivers the
// recalled message.
func TestSlaveForwardsRecalls(t *testing.T) {
	p := newPair(t, time.Second)
	s, m := p.slave, p.master
	d := msg("T", "ID-SLAVE-R", "recalled")
	d.SystemProperties.MessageType = v2.MessageType_DELAY
	d.SystemProperties.DeliveryTimestamp = tspb(t0.Add(5 * time.Second))
	got := s.send("p1", d)
	handle := pbcodec.RecallHandle(got)
	if code(got.Status) != v2.Code_OK || handle == "" {
		t.Fatalf("delayed send through the slave: %v, recall handle %q", got.Status, handle)
	}
	if r := s.recall("T", message.EncodeRecallHandle("T", "elsewhere", t0.Add(5*time.Second).UnixMilli(), "ID-SLAVE-R")); code(r.GetStatus()) != v2.Code_BAD_REQUEST {
		t.Errorf("recall of another broker's handle through the slave: %v; want BAD_REQUEST", r.GetStatus())
	}
	if r := s.recall("T", message.EncodeRecallHandle("T", m.b.Config().BrokerName, t0.Add(5*time.Second).UnixMilli(), "NEVER")); code(r.GetStatus()) != v2.Code_NOT_FOUND {
		t.Errorf("recall of a message never delayed through the slave: %v; want NOT_FOUND", r.GetStatus())
	}
	if r := s.recall("T", handle); code(r.GetStatus()) != v2.Code_OK || r.MessageId != "ID-SLAVE-R" {
		t.Fatalf("recall through the slave: %v, message id %q", r.GetStatus(), r.MessageId)
	}
	await(t, "the master holds the timer and applied the recall", func() bool { return m.b.TimersCaughtUp() && m.b.PendingTimers() == 1 })
	m.clk.Advance(5 * time.Second)
	await(t, "the master's timer fired", func() bool { return m.b.PendingTimers() == 0 })
	if n := m.st.MaxOffset("T", 0) + m.st.MaxOffset("T", 1); n != 0 {
		t.Fatalf("the master delivered %d messages of T, want none", n)
	}
}
