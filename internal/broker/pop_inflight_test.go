package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/pop"
)

// TestConsumeStatsAndPopInFlightOfASimpleConsumerGroup: a pop group's
// stats show per queue what is in flight (received, neither acknowledged
// nor past its invisible time) and how far its receives reached (the pull
// offset); PopInFlight sums them per group and topic for the metric.
func TestConsumeStatsAndPopInFlightOfASimpleConsumerGroup(t *testing.T) {
	e := newPopEnv(t)
	e.createTopic("T", 1)
	for _, b := range []string{"a", "b", "c", "d"} {
		e.send("T", 0, b)
	}
	got := e.pop(popReq("g", "T", 3))
	if len(got) != 3 {
		t.Fatalf("popped %d, want 3", len(got))
	}
	e.ack("g", "T", got[0].Handle)
	stats, err := e.b.ConsumeStats("g", "T")
	if err != nil || len(stats) != 1 {
		t.Fatalf("consume stats: %v %v", stats, err)
	}
	s := stats[0]
	if s.InFlight != 2 || s.PullOffset != 3 || s.ConsumerOffset != 1 || s.BrokerOffset != 4 {
		t.Fatalf("stats %+v; want 2 in flight, pull offset 3, consumer offset 1, broker offset 4", s)
	}
	if all := e.b.PopInFlight(); !slices.Equal(all, []pop.TopicInFlight{{Group: "g", Topic: "T", Messages: 2}}) {
		t.Fatalf("pop in flight %v, want g/T 2", all)
	}
	e.clk.Advance(11 * time.Second) // past the invisible time: not in flight
	stats, _ = e.b.ConsumeStats("g", "T")
	if all := e.b.PopInFlight(); stats[0].InFlight != 0 || !slices.Equal(all, []pop.TopicInFlight{{Group: "g", Topic: "T", Messages: 0}}) {
		t.Fatalf("after the invisible time: stats %+v, pop in flight %v; want none", stats[0], all)
	}
	// A 4.x group's pull offset is its consumer offset, with nothing in flight.
	e.b.UpdateConsumerOffset("pull", "T", 0, 2)
	stats, _ = e.b.ConsumeStats("pull", "T")
	if stats[0].InFlight != 0 || stats[0].PullOffset != 2 {
		t.Fatalf("4.x group stats %+v, want pull offset 2 and nothing in flight", stats[0])
	}
}
