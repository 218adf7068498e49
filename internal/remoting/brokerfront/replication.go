package brokerfront

import (
	"strconv"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// addReplicationInfo adds the role, and for a replicated broker its epoch,
// commit point and replicas, to a runtime info table.
func addReplicationInfo(b *broker.Broker, table map[string]string) {
	table[rmq.RuntimeRole] = b.Role().String()
	info, ok := b.ReplicationStatus()
	if !ok {
		return
	}
	table[rmq.RuntimeEpoch] = strconv.FormatUint(uint64(info.Epoch), 10)
	table[rmq.RuntimeCommitPoint] = strconv.FormatInt(info.CommitPoint, 10)
	rs := make([]rmq.ReplicaState, len(info.Replicas))
	for i, r := range info.Replicas {
		rs[i] = rmq.ReplicaState{ID: r.ID, LagBytes: r.LagBytes, LagSeconds: r.Lag.Seconds(), InSync: r.InSync}
	}
	table[rmq.RuntimeReplicas] = rmq.FormatReplicas(rs)
	if b.Role() == broker.RoleSlave {
		table[rmq.RuntimeLogRestarts] = strconv.FormatInt(info.LogRestarts, 10)
	}
}
