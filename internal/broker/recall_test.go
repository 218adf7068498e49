package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
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
