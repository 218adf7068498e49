package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

// TestMessageCancelByIDAndHandle: a delayed message sent with `send
// --delay` is cancelled by its id (with and without --topic) and by the
// recall handle its send answered; a second cancel, a cancel in another
// topic and one of an unknown id say the message is not pending; a
// handle that is not one is a usage error, and one the broker refuses
// (another topic) fails with the broker's reason.
func TestMessageCancelByIDAndHandle(t *testing.T) {
	c := startCluster(t)
	for _, name := range []string{"Later", "Other"} {
		c.must(OutputTable, func(cl *CLI) error {
			return cl.TopicCreate(bg, TopicSpec{Name: name, ReadQueues: 1, WriteQueues: 1})
		})
	}
	send := func() SendResult {
		var r SendResult
		c.mustJSON(&r, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Later", Body: []byte("x"), Delay: time.Hour}) })
		if r.RecallHandle == "" {
			t.Fatalf("delayed send %+v has no recall handle", r)
		}
		return r
	}
	a, b, h := send(), send(), send()
	c.dispatched()

	out := c.must(OutputTable, func(cl *CLI) error { return cl.MessageCancel(bg, a.ID, "Later") })
	if !strings.Contains(out, "cancelled delayed message "+a.ID+" on "+a.Broker) {
		t.Fatalf("cancel by id:\n%s", out)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.MessageCancel(bg, a.ID, "Later") })
	wantErr(t, err, ErrNotFound, "not (or no longer) pending on the brokers of topic Later", "cancelled already")

	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.MessageCancel(bg, b.ID, "Other") })
	wantErr(t, err, ErrNotFound, "delayed message "+b.ID+" is not (or no longer) pending on the brokers of topic Other", "in topic \"Other\"")
	var res Cancelled
	c.mustJSON(&res, func(cl *CLI) error { return cl.MessageCancel(bg, b.ID, "") })
	if res.ID != b.ID || len(res.Brokers) != 1 || res.Brokers[0] != b.Broker {
		t.Fatalf("cancel without a topic: %+v", res)
	}
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.MessageCancel(bg, "0A0B0C0D9A1B2C3D4E5F60718293A4B5", "") })
	wantErr(t, err, ErrNotFound, "not (or no longer) pending on any broker of the cluster", "no delayed message")

	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.MessageRecall(bg, "not a handle", "") })
	wantErr(t, err, ErrUsage, "not a recall handle")
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.MessageRecall(bg, h.RecallHandle, "Other") })
	wantErr(t, err, ErrRefused, "names topic")
	out = c.must(OutputTable, func(cl *CLI) error { return cl.MessageRecall(bg, h.RecallHandle, "") })
	if !strings.Contains(out, "recalled delayed message "+h.ID+" on "+h.Broker) {
		t.Fatalf("recall by handle:\n%s", out)
	}
	// Recalled already: the broker's cancel record answers it again.
	c.must(OutputTable, func(cl *CLI) error { return cl.MessageRecall(bg, h.RecallHandle, "") })
	_, err = c.run(OutputTable, func(cl *CLI) error {
		return cl.MessageRecall(bg, message.EncodeRecallHandle("Later", h.Broker, time.Now().Add(time.Minute).UnixMilli(), "0A0B0C0D9A1B2C3D4E5F60718293A4B5"), "")
	})
	wantErr(t, err, ErrNotFound, "not (or no longer) pending")
	if err != nil && errors.Is(err, ErrRefused) {
		t.Fatalf("a handle of no pending message is reported refused: %v", err)
	}
}
