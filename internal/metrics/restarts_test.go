package metrics

import (
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestReplicationRestartsSeries: a slave reports how often its log started
// over from the master's first retained byte; a master has no such series.
func TestReplicationRestartsSeries(t *testing.T) {
	for _, role := range []broker.Role{broker.RoleMaster, broker.RoleSlave} {
		logger := storetest.Logger(t)
		m := New(Options{Logger: logger})
		clk := clock.NewManual(t0)
		st, err := store.Open(storetest.SmallConfig(vfs.NewMem(), clk, logger))
		if err != nil {
			t.Fatal(err)
		}
		bcfg := broker.DefaultConfig()
		bcfg.Clock, bcfg.Logger = clk, logger
		bcfg.Role = role
		if role == broker.RoleSlave {
			bcfg.BrokerID = 1
		}
		bcfg.ReplicationStatus = func() broker.ReplicationInfo {
			return broker.ReplicationInfo{Epoch: 2, LogRestarts: 2, Replicas: []broker.ReplicaInfo{{ID: 1, InSync: true}}}
		}
		e := startEnv(t, m, st, bcfg)
		m.Attach(Source{Broker: e.b})
		fams := e.scrape()
		if role == broker.RoleMaster {
			if fams["petrel_replication_restarts_total"] != nil {
				t.Error("a master reports petrel_replication_restarts_total")
			}
			continue
		}
		if got := value(t, fams, "petrel_replication_restarts_total"); got != 2 {
			t.Errorf("petrel_replication_restarts_total = %v, want 2", got)
		}
	}
}
