package pop

import (
	"slices"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestInFlightCountsInvisibleDeliveries: a queue's in-flight count is its
// deliveries neither acknowledged nor past their invisible time; the
// per-topic sums add a group's queues, 0 for a group with none.
func TestInFlightCountsInvisibleDeliveries(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	kB := Key{Group: "g", Topic: "t", QueueID: 1}
	kC := Key{Group: "h", Topic: "u", QueueID: 0}
	got := popNew(t, s, kA, 3, t0, 10*time.Second)
	popNew(t, s, kB, 2, t0, time.Minute)
	popNew(t, s, kC, 1, t0, time.Second)
	_, tk, err := s.Ack("g", "t", HandleOf(kA, got[0]), t0)
	if err != nil || s.Sync(tk) != nil {
		t.Fatalf("ack: %v", err)
	}
	if n, cursor, ok := s.QueueInFlight(kA, t0); !ok || n != 2 || cursor != 3 {
		t.Fatalf("queue 0: %d in flight, cursor %d, known %v; want 2, 3, true", n, cursor, ok)
	}
	if _, _, ok := s.QueueInFlight(Key{Group: "g", Topic: "t", QueueID: 7}, t0); ok {
		t.Fatal("an unknown queue is known")
	}
	want := []TopicInFlight{{Group: "g", Topic: "t", Messages: 4}, {Group: "h", Topic: "u", Messages: 1}}
	if all := s.InFlightByTopic(t0); !slices.Equal(all, want) {
		t.Fatalf("in flight by topic %v, want %v", all, want)
	}
	// Past queue 0's invisible time (10 s) and h's (1 s): only queue 1's 2.
	later := t0.Add(20 * time.Second)
	if n, _, _ := s.QueueInFlight(kA, later); n != 0 {
		t.Fatalf("queue 0: %d in flight after the invisible time, want 0", n)
	}
	want = []TopicInFlight{{Group: "g", Topic: "t", Messages: 2}, {Group: "h", Topic: "u", Messages: 0}}
	if all := s.InFlightByTopic(later); !slices.Equal(all, want) {
		t.Fatalf("in flight by topic later %v, want %v", all, want)
	}
}
