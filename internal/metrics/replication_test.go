package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestReplicationSeries: a replicated broker's status becomes the lag,
// in-sync, out-of-sync, commit point and epoch series, one per slave; a
// broker that is not replicated has none of them.
func TestReplicationSeries(t *testing.T) {
	plain := newEnv(t)
	plain.m.Attach(Source{Broker: plain.b})
	if fams := plain.scrape(); fams["petrel_commit_point_offset"] != nil || fams["petrel_replication_lag_bytes"] != nil ||
		fams["petrel_broker_lease_refusals_total"] != nil {
		t.Fatal("replication series on a broker that is not replicated")
	}

	logger := storetest.Logger(t)
	m := New(Options{Logger: logger})
	clk := clock.NewManual(t0)
	st, err := store.Open(storetest.SmallConfig(vfs.NewMem(), clk, logger))
	if err != nil {
		t.Fatal(err)
	}
	bcfg := broker.DefaultConfig()
	bcfg.Clock, bcfg.Logger = clk, logger
	bcfg.ReplicationStatus = func() broker.ReplicationInfo {
		return broker.ReplicationInfo{Epoch: 2, CommitPoint: 3 << 31, Replicas: []broker.ReplicaInfo{
			{ID: 1, LagBytes: 0, InSync: true},
			{ID: 2, LagBytes: 1 << 20, Lag: 2500 * time.Millisecond, InSync: false, FallOuts: 3},
		}}
	}
	bcfg.Lease = broker.NewLeaseClock(clk) // never granted: every send refused
	e := startEnv(t, m, st, bcfg)
	m.Attach(Source{Broker: e.b})
	if _, err := e.b.Send(context.Background(), &broker.SendRequest{Topic: "T", QueueID: -1, Body: []byte("x")}); broker.KindOf(err) != broker.KindServiceUnavailable {
		t.Fatalf("send without a lease: %v, want refused", err)
	}
	fams := e.scrape()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"petrel_commit_point_offset", nil, 3 << 31},
		{"petrel_replication_epoch", nil, 2},
		{"petrel_replication_in_sync", []string{"slave", "1"}, 1},
		{"petrel_replication_in_sync", []string{"slave", "2"}, 0},
		{"petrel_replication_lag_bytes", []string{"slave", "2"}, 1 << 20},
		{"petrel_replication_lag_seconds", []string{"slave", "2"}, 2.5},
		{"petrel_replication_out_of_sync_total", []string{"slave", "2"}, 3},
		{"petrel_broker_lease_refusals_total", nil, 1},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
