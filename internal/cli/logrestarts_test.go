package cli

import (
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestFillReplicationReadsLogRestarts: a slave's runtime info says how
// often its log started over; cluster list carries it (JSON logRestarts).
func TestFillReplicationReadsLogRestarts(t *testing.T) {
	var s BrokerStatus
	fillReplication(&s, map[string]string{rmq.RuntimeRole: "slave", rmq.RuntimeEpoch: "2", rmq.RuntimeCommitPoint: "10", rmq.RuntimeLogRestarts: "3"})
	if s.Replication == nil || s.Replication.LogRestarts != 3 || s.Role != "SLAVE" {
		t.Fatalf("replication %+v role %q, want 3 log restarts on a SLAVE", s.Replication, s.Role)
	}
}
