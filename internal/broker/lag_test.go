package broker

import (
	"slices"
	"testing"
)

func TestConsumerLag(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	e.createTopic("A", 1)
	for range 3 {
		e.send("T", 1, "m")
	}
	e.send("A", 0, "m")
	e.waitMax("T", 1, 3)
	e.waitMax("A", 0, 1)
	if got := e.b.ConsumerLag("g"); len(got) != 0 {
		t.Fatalf("lag of a group with no offsets: %+v", got)
	}
	e.b.UpdateConsumerOffset("g", "T", 1, 1)
	e.b.UpdateConsumerOffset("g", "T", 0, 0)
	e.b.UpdateConsumerOffset("g", "A", 0, 1)
	e.b.UpdateConsumerOffset("other", "T", 1, 0)
	want := []QueueLag{
		{Group: "g", Topic: "A", QueueID: 0, Committed: 1, MaxOffset: 1, Lag: 0},
		{Group: "g", Topic: "T", QueueID: 0, Committed: 0, MaxOffset: 0, Lag: 0},
		{Group: "g", Topic: "T", QueueID: 1, Committed: 1, MaxOffset: 3, Lag: 2},
	}
	if got := e.b.ConsumerLag("g"); !slices.Equal(got, want) {
		t.Fatalf("lag\n got %+v\nwant %+v", got, want)
	}
	all := append(slices.Clone(want), QueueLag{Group: "other", Topic: "T", QueueID: 1, Committed: 0, MaxOffset: 3, Lag: 3})
	if got := e.b.AllConsumerLag(); !slices.Equal(got, all) {
		t.Fatalf("all lags\n got %+v\nwant %+v", got, all)
	}
}
