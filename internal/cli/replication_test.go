package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
)

// TestClusterListShowsEveryReplica: a master and its slave registered with
// one name server are two rows with their ids and roles, each with its
// epoch and commit point; the slave's lag and in-sync state are the
// master's view of it (the slave's own report is the fallback).
func TestClusterListShowsEveryReplica(t *testing.T) {
	c := startCluster(t, func(bc *broker.Config) {
		bc.ReplicationStatus = func() broker.ReplicationInfo {
			return broker.ReplicationInfo{Epoch: 3, CommitPoint: 4096,
				Replicas: []broker.ReplicaInfo{{ID: 1, LagBytes: 2048, Lag: 1500 * time.Millisecond, InSync: true}}}
		}
	})
	cfg := daemontest.Config()
	cfg.NameServers = []string{c.ns.Addr().String()}
	cfg.Broker.BrokerID, cfg.Broker.Role = 1, broker.RoleSlave
	cfg.Broker.ReplicationStatus = func() broker.ReplicationInfo {
		return broker.ReplicationInfo{Epoch: 3, CommitPoint: 4000, Replicas: []broker.ReplicaInfo{{ID: 1, LagBytes: 99, InSync: false}}}
	}
	slave, err := daemon.StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })

	var got struct {
		Brokers []BrokerStatus `json:"brokers"`
	}
	c.mustJSON(&got, func(cl *CLI) error { return cl.ClusterList(bg) })
	if len(got.Brokers) != 2 {
		t.Fatalf("brokers %+v, want the master and the slave", got.Brokers)
	}
	m, s := got.Brokers[0], got.Brokers[1]
	if m.ID != 0 || m.Role != "MASTER" || m.Replication == nil || m.Replication.Epoch != 3 || m.Replication.CommitPoint != 4096 || m.Replication.InSync != nil {
		t.Fatalf("master row %+v %+v", m, m.Replication)
	}
	if s.ID != 1 || s.Role != "SLAVE" || s.Address != slave.Advertised() || s.Replication == nil || s.Replication.CommitPoint != 4000 ||
		s.Replication.LagBytes != 2048 || s.Replication.LagSeconds != 1.5 || s.Replication.InSync == nil || !*s.Replication.InSync {
		t.Fatalf("slave row %+v %+v, want the master's view: 2048 bytes, 1.5 s, in sync", s, s.Replication)
	}
	table := c.must(OutputTable, func(cl *CLI) error { return cl.ClusterList(bg) })
	for _, want := range []string{"EPOCH", "COMMIT POINT", "IN SYNC", "2.0 KiB / 1.5s", "yes", "SLAVE"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
}

// replAnswer is a broker.Replicator that answers every wait with err.
type replAnswer struct{ err error }

func (r replAnswer) WaitReplicated(context.Context, int64) error { return r.err }

// TestSendReportsTheReplicationStatus: `petrel send` to a sync master whose
// slaves do not confirm reports the stored message with status
// FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE, not an error.
func TestSendReportsTheReplicationStatus(t *testing.T) {
	for err, want := range map[error]string{
		broker.ErrReplicationTimeout: "FLUSH_SLAVE_TIMEOUT",
		broker.ErrNotEnoughReplicas:  "SLAVE_NOT_AVAILABLE",
	} {
		c := startCluster(t, func(b *broker.Config) { b.Replicator = replAnswer{err} })
		var res SendResult
		c.mustJSON(&res, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Fresh", Body: []byte("x")}) })
		if res.Status != want || res.OffsetID == "" {
			t.Fatalf("replicator answer %v: %+v, want status %s with the stored message's id", err, res, want)
		}
	}
}
