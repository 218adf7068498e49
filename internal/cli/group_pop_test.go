package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
)

// TestGroupDescribeShowsSimpleConsumers: a 5.x member (registered by the
// gRPC front with its language, version and address) is described with
// them, and a 5.x group's queues show how many messages are in flight.
func TestGroupDescribeShowsSimpleConsumers(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Jobs", ReadQueues: 1, WriteQueues: 1}) })
	for range 3 {
		c.must(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Jobs", Body: []byte("job")}) })
	}
	c.dispatched()
	b := c.b.Core()
	// What the gRPC front registers for a simple consumer (its connection
	// ids start at 1<<62).
	b.Heartbeat(1<<62+7, broker.Heartbeat{ClientID: "sc-1", Consumers: []broker.ConsumerData{{
		Group: "simple", ConsumeType: "CONSUME_POP", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		Subscriptions: []broker.Subscription{{Topic: "Jobs", Expression: "*", ExpressionType: "TAG"}},
		Language:      "GO", Version: 437, ClientAddr: "10.1.2.3:5555",
	}}})
	got, err := b.Pop(bg, &broker.PopRequest{Group: "simple", Topic: "Jobs", MaxMsgs: 2, Invisible: time.Minute})
	if err != nil || len(got) != 2 {
		t.Fatalf("pop: %d messages, %v", len(got), err)
	}
	var d GroupDescription
	c.mustJSON(&d, func(cl *CLI) error { return cl.GroupDescribe(bg, "simple") })
	if len(d.Members) != 1 {
		t.Fatalf("members %+v, want one", d.Members)
	}
	if m := d.Members[0]; m.Language != "GO" || m.Version != 437 || m.Address != "10.1.2.3:5555" {
		t.Fatalf("member %+v; want GO, 437, 10.1.2.3:5555", m)
	}
	if len(d.Queues) != 1 || d.Queues[0].InFlight != 2 || d.Queues[0].ConsumerOffset != 0 || d.TotalInFlight != 2 {
		t.Fatalf("queues %+v, total in flight %d; want queue 0 with 2 in flight at consumer offset 0", d.Queues, d.TotalInFlight)
	}
	out := c.must(OutputTable, func(cl *CLI) error { return cl.GroupDescribe(bg, "simple") })
	for _, want := range []string{"10.1.2.3:5555  GO        437", "IN FLIGHT"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe output lacks %q:\n%s", want, out)
		}
	}
	golden(t, "group_describe_simple", out)
}
