package grpcfront

import (
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

// TestDrainedBrokerRoutesItsQueuesReadOnly: with brokerPermission 4 (a
// drain set on the broker) the gRPC front lists its queues READ, so
// 5.x producers send elsewhere; 6 lists them READ_WRITE again.
func TestDrainedBrokerRoutesItsQueuesReadOnly(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	for _, c := range []struct {
		perm int32
		want v2.Permission
	}{{broker.PermRead, v2.Permission_READ}, {broker.PermRead | broker.PermWrite, v2.Permission_READ_WRITE}} {
		if _, err := e.b.SetPermission(c.perm); err != nil {
			t.Fatal(err)
		}
		resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T"}})
		if err != nil || code(resp.Status) != v2.Code_OK || len(resp.MessageQueues) != 2 {
			t.Fatalf("route: %v %v", err, resp)
		}
		for _, q := range resp.MessageQueues {
			if q.Permission != c.want {
				t.Fatalf("brokerPermission %d: queue permission %v, want %v", c.perm, q.Permission, c.want)
			}
		}
	}
}
