package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// TestSendAnswersRecallHandle: a single delayed send is answered with the
// v1 recall handle of its real topic, the broker, its due time (plus one,
// as RocketMQ writes it) and its UNIQ_KEY; a message sent for now, a
// delayed batch item, a delayed message to a %RETRY% topic and a resend
// the dedup window answers carry none.
func TestSendAnswersRecallHandle(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.createTopic(RetryGroupTopicPrefix+"g", 1)
	ctx := context.Background()

	res := e.delayed("T", "later", PropertyTimerDelaySec, "30", "UNIQ_KEY", "R1")
	h, err := message.DecodeRecallHandle(res.RecallHandle)
	if err != nil {
		t.Fatalf("recall handle %q: %v", res.RecallHandle, err)
	}
	due := t0.Add(30 * time.Second).UnixMilli()
	want := message.RecallHandle{Topic: "T", BrokerName: e.b.Config().BrokerName, Timestamp: strconv.FormatInt(due+1, 10), At: due + 1, UniqID: "R1"}
	if h != want {
		t.Fatalf("recall handle decodes to %+v, want %+v", h, want)
	}

	if res := e.send("T", 0, "now", "UNIQ_KEY", "R2"); res.RecallHandle != "" {
		t.Errorf("a message sent for now has recall handle %q", res.RecallHandle)
	}
	r := sendReq("T", 0, "")
	r.Batch = true
	r.Body = message.EncodeBatch([]message.BatchItem{{Body: []byte("later"), Properties: "UNIQ_KEY\x01R3\x02"}})
	r.ItemDelays = []message.Delay{{After: 2 * time.Second}}
	if res, err := e.b.Send(ctx, r); err != nil || res.RecallHandle != "" {
		t.Errorf("a delayed batch item: %v, recall handle %q; want none", err, res.RecallHandle)
	}
	if res := e.delayed(RetryGroupTopicPrefix+"g", "retry", "DELAY", "3", "UNIQ_KEY", "R4"); res.RecallHandle != "" {
		t.Errorf("a delayed message to a retry topic has recall handle %q", res.RecallHandle)
	}
	dup := e.delayed("T", "later", PropertyTimerDelaySec, "30", "UNIQ_KEY", "R1")
	if dup.MsgID != res.MsgID {
		t.Fatalf("the resend was stored again (%s, first %s); the dedup window should answer it", dup.MsgID, res.MsgID)
	}
	if dup.RecallHandle != "" {
		t.Errorf("the dedup answer has recall handle %q; the window does not know the due time", dup.RecallHandle)
	}
	e.waitPending(3)
}

// TestRecall: the handle of a delayed send recalls it (it is never
// delivered, also after a restart) while another delayed message is; a
// second recall of it succeeds again. A handle for another topic or
// broker, one that does not decode, one whose time passed or is beyond
// MaxTimerDelay, and a recall of an unknown topic are refused with their
// kinds; a well-formed handle of a message this broker never delayed is
// not found.
func TestRecall(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.MaxTimerDelay = time.Hour })
	e.createTopic("T", 1)
	e.createTopic("U", 1)
	ctx := context.Background()
	gone := e.delayed("T", "recalled", PropertyTimerDelaySec, "10", "UNIQ_KEY", "G1")
	kept := e.delayed("T", "kept", PropertyTimerDelaySec, "10", "UNIQ_KEY", "K1")
	e.waitPending(2)
	name := e.b.Config().BrokerName
	due := t0.Add(10 * time.Second).UnixMilli()

	for _, tc := range []struct {
		topic, handle string
		kind          Kind
		says          string
	}{
		{"nope", gone.RecallHandle, KindTopicNotExist, "does not exist"},
		{"T", "not base64!", KindIllegalOperation, "invalid"},
		{"T", message.EncodeRecallHandle("T", name, due, "G1")[:8], KindIllegalOperation, "invalid"},
		{"U", gone.RecallHandle, KindIllegalOperation, "names topic"},
		{"T", message.EncodeRecallHandle("T", "other", due, "G1"), KindIllegalOperation, "names broker"},
		{"T", message.EncodeRecallHandle("T", name, t0.UnixMilli()-1, "G1"), KindIllegalOperation, "time is invalid"},
		{"T", message.EncodeRecallHandle("T", name, t0.Add(time.Hour).UnixMilli(), "G1"), KindIllegalOperation, "time is invalid"},
		{"T", message.EncodeRecallHandle("T", name, due, "NEVER"), KindQueryNotFound, "no delayed message"},
		// A message of T named with topic U's handle: not U's.
		{"U", message.EncodeRecallHandle("U", name, due, "G1"), KindQueryNotFound, "in topic \"U\""},
	} {
		_, err := e.b.Recall(ctx, tc.topic, tc.handle)
		wantKind(t, err, tc.kind, tc.says)
	}
	for range 2 {
		id, err := e.b.Recall(ctx, "T", gone.RecallHandle)
		if err != nil || id != "G1" {
			t.Fatalf("recall: %q, %v; want G1", id, err)
		}
	}
	e.restart()
	e.clk.Advance(10 * time.Second)
	e.waitMax("T", 0, 1)
	e.waitPending(0)
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if len(p.bodies) != 1 || p.bodies[0] != "kept" {
		t.Fatalf("delivered %v, want only kept", p.bodies)
	}
	// At its due time the handle's time (due+1) has not passed: the
	// recalled message is recalled again, the delivered one is due and
	// refused. A millisecond later the handles are out of time.
	if _, err := e.b.Recall(ctx, "T", gone.RecallHandle); err != nil {
		t.Fatalf("recall again at the due time: %v", err)
	}
	_, err := e.b.Recall(ctx, "T", kept.RecallHandle)
	wantKind(t, err, KindMessageIllegal, "cannot be cancelled")
	wantKind(t, e.b.CancelDelayed(ctx, "G1"), KindQueryNotFound, "cancelled already")
	e.clk.Advance(time.Millisecond)
	_, err = e.b.Recall(ctx, "T", gone.RecallHandle)
	wantKind(t, err, KindIllegalOperation, "time is invalid")
}
