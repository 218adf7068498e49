package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrelmq/petrel/internal/broker"
)

// Replication series, from the broker's ReplicationStatus (left out on a
// broker that is not replicated). On a master, one series per slave it
// tracks; on a slave, its own.
var (
	descReplLagBytes = prometheus.NewDesc("petrel_replication_lag_bytes",
		"Bytes of commit log a slave is behind its master's log end.", []string{"slave"}, nil)
	descReplLagSeconds = prometheus.NewDesc("petrel_replication_lag_seconds",
		"How long a slave has been behind its master's log end.", []string{"slave"}, nil)
	descReplInSync = prometheus.NewDesc("petrel_replication_in_sync",
		"1 while a slave is in sync (within the lag bounds), else 0.", []string{"slave"}, nil)
	descReplFallOuts = prometheus.NewDesc("petrel_replication_out_of_sync_total",
		"Times a slave fell out of sync since the master started.", []string{"slave"}, nil)
	descCommitPoint = prometheus.NewDesc("petrel_commit_point_offset",
		"The commit point: the commit-log offset below which records are held by the master and the in-sync slaves it needs (nothing above it is dispatched).", nil, nil)
	descReplEpoch = prometheus.NewDesc("petrel_replication_epoch",
		"The master epoch this broker knows.", nil, nil)
	descReplRestarts = prometheus.NewDesc("petrel_replication_restarts_total",
		"Times this slave's log started over from its master's first retained byte because it ended below it (since the broker started).", nil, nil)
	descLeaseRefusals = prometheus.NewDesc("petrel_broker_lease_refusals_total",
		"Sends refused, or stored and answered FLUSH_SLAVE_TIMEOUT instead of SEND_OK, because this master's lease from the controller had expired (since the broker started; only with a controller).", nil, nil)
)

var replicationDescs = []*prometheus.Desc{descReplLagBytes, descReplLagSeconds, descReplInSync, descReplFallOuts, descCommitPoint, descReplEpoch, descReplRestarts, descLeaseRefusals}

// collectReplication reports the replication series of b.
func collectReplication(b *broker.Broker, gauge, counter func(*prometheus.Desc, float64, ...string)) {
	if b.Config().Lease != nil {
		counter(descLeaseRefusals, float64(b.LeaseRefusals()))
	}
	info, ok := b.ReplicationStatus()
	if !ok {
		return
	}
	gauge(descCommitPoint, float64(info.CommitPoint))
	gauge(descReplEpoch, float64(info.Epoch))
	if b.Role() == broker.RoleSlave {
		counter(descReplRestarts, float64(info.LogRestarts))
	}
	for _, r := range info.Replicas {
		id := strconv.FormatInt(r.ID, 10)
		gauge(descReplLagBytes, float64(r.LagBytes), id)
		gauge(descReplLagSeconds, r.Lag.Seconds(), id)
		in := 0.0
		if r.InSync {
			in = 1
		}
		gauge(descReplInSync, in, id)
		counter(descReplFallOuts, float64(r.FallOuts), id)
	}
}
