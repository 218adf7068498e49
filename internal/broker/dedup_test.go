package broker

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store"
)

// TestResendWithinTheWindowIsNotStoredTwice: a resend with the same
// UNIQ_KEY gets the original result and stores nothing — Send or SendBatch,
// after a restart too — until the window has passed; another topic, a
// batch-free message without a key and a window of -1 are not deduplicated.
func TestResendWithinTheWindowIsNotStoredTwice(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.createTopic("U", 1)
	first := e.send("T", 0, "one", "UNIQ_KEY", "K1")
	again, err := e.b.Send(context.Background(), sendReq("T", 0, "one", "UNIQ_KEY", "K1"))
	if err != nil || again != first {
		t.Fatalf("resend answered %+v %v, want the original %+v", again, err, first)
	}
	got := make(chan SendResult, 1)
	e.b.SendBatch(context.Background(), []*SendRequest{sendReq("T", 0, "one", "UNIQ_KEY", "K1")}, func(_ int, r SendResult, err error) {
		if err != nil {
			t.Error(err)
		}
		got <- r
	})
	if r := <-got; r != first {
		t.Fatalf("batch resend answered %+v, want %+v", r, first)
	}
	e.send("U", 0, "one", "UNIQ_KEY", "K1") // another topic: a new message
	e.restart()
	again, err = e.b.Send(context.Background(), sendReq("T", 0, "one", "UNIQ_KEY", "K1"))
	if err != nil || again != first {
		t.Fatalf("resend after a restart answered %+v %v, want %+v", again, err, first)
	}
	if n := e.st.MaxOffset("T", 0); n != 1 {
		t.Fatalf("topic T holds %d messages, want 1", n)
	}
	e.clk.Advance(10 * time.Minute)
	e.send("T", 0, "one", "UNIQ_KEY", "K1")
	if n := e.st.MaxOffset("T", 0); n != 2 {
		t.Fatalf("after the window topic T holds %d messages, want 2", n)
	}
}

// TestDedupDisabled: with a negative window every send is stored.
func TestDedupDisabled(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.DedupWindow = -1 })
	e.createTopic("T", 1)
	e.send("T", 0, "one", "UNIQ_KEY", "K1")
	e.send("T", 0, "one", "UNIQ_KEY", "K1")
	if n := e.st.MaxOffset("T", 0); n != 2 {
		t.Fatalf("topic T holds %d messages, want 2", n)
	}
}
