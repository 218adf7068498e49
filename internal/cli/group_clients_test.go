package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
)

func TestGroupClientsListsConnectedConsumers(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Jobs", ReadQueues: 1, WriteQueues: 1}) })
	c.b.Core().Heartbeat(1<<62+9, broker.Heartbeat{ClientID: "worker-1", Consumers: []broker.ConsumerData{{
		Group: "workers", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		Subscriptions: []broker.Subscription{{Topic: "Jobs", Expression: "a || b", ExpressionType: "TAG"}},
		Language:      "JAVA", Version: 453, ClientAddr: "10.1.2.4:6666",
	}}})
	var g GroupClients
	c.mustJSON(&g, func(cl *CLI) error { return cl.GroupClients(bg, "workers") })
	if len(g.Clients) != 1 || g.Clients[0].ClientID != "worker-1" || g.Clients[0].Language != "JAVA" || g.Clients[0].Version != 453 || g.Clients[0].Address != "10.1.2.4:6666" {
		t.Fatalf("clients %+v; want worker-1 JAVA 453 at 10.1.2.4:6666", g.Clients)
	}
	if g.ConsumeType != "CONSUME_PASSIVELY" || g.MessageModel != "CLUSTERING" || len(g.Subscriptions) != 1 || g.Subscriptions[0].Expression != "a || b" {
		t.Fatalf("group clients %+v; want CONSUME_PASSIVELY CLUSTERING subscribed to Jobs 'a || b'", g)
	}
	out := c.must(OutputTable, func(cl *CLI) error { return cl.GroupClients(bg, "workers") })
	for _, want := range []string{"worker-1", "10.1.2.4:6666", "JAVA", "a || b", "CLUSTERING"} {
		if !strings.Contains(out, want) {
			t.Fatalf("group clients output lacks %q:\n%s", want, out)
		}
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.GroupClients(bg, "nobody") })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("clients of an unknown group: %v, want ErrNotFound", err)
	}
}
