package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
)

// TestPopInFlightGauge: petrel_pop_inflight_messages{group,topic} counts
// what a simple-consumer group received and has neither acknowledged nor
// let expire.
func TestPopInFlightGauge(t *testing.T) {
	e := newEnv(t)
	e.m.Attach(Source{Broker: e.b})
	if err := e.b.CreateTopic(broker.TopicConfig{Name: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.send(sendReq("T", 0, "body", nil))
	}
	await(t, "dispatch of the sends", func() bool { return e.b.MaxOffset("T", 0) == 3 })
	got, err := e.b.Pop(context.Background(), &broker.PopRequest{Group: "G", Topic: "T", MaxMsgs: 3, Invisible: time.Minute})
	if err != nil || len(got) != 3 {
		t.Fatalf("pop: %d, %v", len(got), err)
	}
	if err := e.b.AckPop("G", "T", got[0].Handle); err != nil {
		t.Fatal(err)
	}
	if v := value(t, e.scrape(), "petrel_pop_inflight_messages", "group", "G", "topic", "T"); v != 2 {
		t.Fatalf("petrel_pop_inflight_messages = %v, want 2", v)
	}
}
