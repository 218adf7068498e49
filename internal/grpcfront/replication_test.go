package grpcfront

import (
	"context"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

// replAnswer is a broker.Replicator that answers every wait with err.
type replAnswer struct{ err error }

func (r replAnswer) WaitReplicated(context.Context, int64) error { return r.err }

// TestSendUnderSyncReplicationMapsTheProxyCodes: a send the slaves did not
// confirm in time is SLAVE_PERSISTENCE_TIMEOUT, one without enough in-sync
// slaves HA_NOT_AVAILABLE (RocketMQ's proxy maps FLUSH_SLAVE_TIMEOUT and
// SLAVE_NOT_AVAILABLE so), one they confirmed OK.
func TestSendUnderSyncReplicationMapsTheProxyCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want v2.Code
	}{
		{nil, v2.Code_OK},
		{broker.ErrReplicationTimeout, v2.Code_SLAVE_PERSISTENCE_TIMEOUT},
		{broker.ErrNotEnoughReplicas, v2.Code_HA_NOT_AVAILABLE},
	} {
		e := newEnv(t, func(o *envOptions) { o.broker = func(c *broker.Config) { c.Replicator = replAnswer{tc.err} } })
		e.createTopic("T", 1)
		got := e.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000001", "x"))
		if code(got.Status) != tc.want {
			t.Fatalf("replicator answer %v: status %v, want %v", tc.err, got.Status, tc.want)
		}
	}
}

// TestSlaveRefusesSendsWithForbidden: a slave's gRPC front refuses a send
// with FORBIDDEN and a message naming the slave; nothing is stored.
func TestSlaveRefusesSendsWithForbidden(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.broker = func(c *broker.Config) { c.BrokerID, c.Role = 1, broker.RoleSlave }
	})
	got := e.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000001", "x"))
	if code(got.Status) != v2.Code_FORBIDDEN {
		t.Fatalf("status %v, want FORBIDDEN", got.Status)
	}
	if e.st.Durable() != 0 {
		t.Fatalf("the slave stored %d bytes", e.st.Durable())
	}
}
