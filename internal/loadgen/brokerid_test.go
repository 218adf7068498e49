package loadgen

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/namesrv"
)

// startPair runs a name server, a master (async replication) and its
// slave (broker id 1), in process over in-memory stores.
func startPair(t *testing.T) (ns string, master, slave *daemon.Broker) {
	t.Helper()
	n, err := daemon.StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	start := func(edit func(*daemon.BrokerConfig)) *daemon.Broker {
		cfg := daemontest.Config()
		cfg.NameServers = []string{n.Addr().String()}
		edit(&cfg)
		b, err := daemon.StartBroker(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	master = start(func(c *daemon.BrokerConfig) {
		c.HA = daemon.HAConfig{Listen: "127.0.0.1:0"}
		c.Broker.ReplicationAsync = true
	})
	slave = start(func(c *daemon.BrokerConfig) { c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave })
	return n.Addr().String(), master, slave
}

// TestConsumeFromASlaveReadsEveryMessageThere: with BrokerID 1 every
// message produced to the master is drained from its slave, once each,
// and none from the master; offsets are committed to the master (a second
// run of the group from the slave finds nothing left).
func TestConsumeFromASlaveReadsEveryMessageThere(t *testing.T) {
	ns, master, slave := startPair(t)
	const n, size, topic = 1000, 100, "SlaveRead"
	if _, err := Produce(testContext(t), ProduceConfig{NameServers: []string{ns}, Topic: topic, Queues: 2, BodyBytes: size, InFlight: 8, Count: n}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	res, seen := drain(t, ConsumeConfig{NameServers: []string{ns}, Topic: topic, Group: "G", Count: n, BrokerID: 1}, topic, size)
	if res.Msgs != n || len(seen) != n || res.Errors != 0 {
		t.Fatalf("drain from the slave: %d messages, %d distinct, %d errors (%s); want %d", res.Msgs, len(seen), res.Errors, res.FirstError, n)
	}
	for seq, k := range seen {
		if k != 1 {
			t.Fatalf("message %d seen %d times", seq, k)
		}
	}
	if got := slave.Core().TotalTraffic().GetMsgs; got != n {
		t.Fatalf("the slave served %d messages, want %d", got, n)
	}
	if got := master.Core().TotalTraffic().GetMsgs; got != 0 {
		t.Fatalf("the master served %d messages, want 0", got)
	}
	if off, ok := master.Core().QueryConsumerOffset("G", topic, 0); !ok || off == 0 {
		t.Fatalf("the master has offset %d (%v) of queue 0 for the group; want the drained one", off, ok)
	}
}

// TestConsumeFromABrokerIDTheRouteLacksIsRefused: a broker id no group
// lists is refused naming the broker and the ids listed.
func TestConsumeFromABrokerIDTheRouteLacksIsRefused(t *testing.T) {
	ns := startCluster(t)
	if _, err := Produce(testContext(t), ProduceConfig{NameServers: []string{ns}, Topic: "OnlyMaster", Queues: 1, BodyBytes: 10, Count: 1}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	_, err := Consume(testContext(t), ConsumeConfig{NameServers: []string{ns}, Topic: "OnlyMaster", BrokerID: 2, RouteWait: 1})
	if !errors.Is(err, ErrNoRoute) || !strings.Contains(err.Error(), "broker id 2") || !strings.Contains(err.Error(), "[0]") {
		t.Fatalf("consume from broker id 2: %v, want ErrNoRoute naming broker id 2 and the listed [0]", err)
	}
	_, err = Consume(testContext(t), ConsumeConfig{NameServers: []string{ns}, Topic: "OnlyMaster", BrokerID: -1})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("broker id -1: %v, want ErrConfig", err)
	}
}
