package broker

import (
	"testing"
	"time"
)

// TestResetOffsetIsHonouredByPops: a reset of a pop group's offsets moves
// its pop position too. Back to the earliest, acknowledged messages are
// received again (attempt 1) and the committed offset stays where the
// reset put it; to the latest, what was in flight is forgotten (its
// handles no longer acknowledge) and only new messages come.
func TestResetOffsetIsHonouredByPops(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for _, b := range []string{"a", "b", "c"} {
		e.send("T", 0, b)
	}
	got := e.pop(popReq("g", "T", 32))
	if b := bodies(t, got); !sameSet(b, "a", "b", "c") {
		t.Fatalf("popped %v, want a b c", b)
	}
	for _, m := range got {
		e.ack("g", "T", m.Handle)
	}
	if off, _ := e.b.meta.Offset("g", "T", 0); off != 3 {
		t.Fatalf("committed offset %d after acking all, want 3", off)
	}

	offs, err := e.b.ResetOffset("g", "T", 0)
	if err != nil || offs[0] != 0 {
		t.Fatalf("reset to the earliest: %v %v", offs, err)
	}
	// An empty pop of another topic does not matter; a pop of T must not
	// put the old position back.
	again := e.pop(popReq("g", "T", 32))
	if b := bodies(t, again); !sameSet(b, "a", "b", "c") {
		t.Fatalf("after the reset popped %v, want a b c again", b)
	}
	for _, m := range again {
		if m.Attempt != 1 {
			t.Fatalf("redelivery after a reset has attempt %d, want 1", m.Attempt)
		}
	}
	if off, _ := e.b.meta.Offset("g", "T", 0); off != 0 {
		t.Fatalf("committed offset %d with everything in flight again, want 0", off)
	}

	// To the latest while in flight: forgotten.
	if _, err := e.b.ResetOffset("g", "T", -1); err != nil {
		t.Fatal(err)
	}
	if err := e.b.AckPop("g", "T", again[0].Handle); err == nil {
		t.Fatal("a handle issued before the reset still acknowledged")
	}
	e.clk.Advance(time.Minute) // past the old invisible time: nothing comes back
	if b := bodies(t, e.pop(popReq("g", "T", 32))); len(b) != 0 {
		t.Fatalf("after a reset to the latest popped %v, want nothing", b)
	}
	if off, _ := e.b.meta.Offset("g", "T", 0); off != 3 {
		t.Fatalf("committed offset %d after the reset to the latest, want 3", off)
	}
	e.send("T", 0, "d")
	if b := bodies(t, e.pop(popReq("g", "T", 32))); len(b) != 1 || b[0] != "d" {
		t.Fatalf("popped %v, want the new message d", b)
	}
}
