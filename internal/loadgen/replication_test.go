package loadgen

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
)

// cyclingReplicator answers its waits in turn: covered,
// SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT.
type cyclingReplicator struct{ n atomic.Int64 }

func (r *cyclingReplicator) WaitReplicated(ctx context.Context, end int64) error {
	switch r.n.Add(1) % 3 {
	case 1:
		return broker.ErrNotEnoughReplicas
	case 2:
		return broker.ErrReplicationTimeout
	}
	return nil
}

// A send the master stored but did not confirm replicated (codes 11 and
// 12) is an outcome of its own: counted in NotReplicated, in the line and
// the JSON, neither in Msgs nor as a failure, and it does not stop the run
// at MaxErrors.
func TestNotReplicatedSendsAreTheirOwnOutcome(t *testing.T) {
	rep := &cyclingReplicator{}
	ns := startClusterWith(t, func(c *daemon.BrokerConfig) { c.Broker.Replicator = rep })
	res, err := Produce(testContext(t), ProduceConfig{
		NameServers: []string{ns}, Topic: "Repl", BodyBytes: 64, InFlight: 1, Count: 90, MaxErrors: 2,
	})
	if err != nil {
		t.Fatalf("produce: %v (result %+v)", err, res)
	}
	if res.Errors != 0 || res.NotReplicated != 60 || res.Msgs != 30 {
		t.Fatalf("msgs %d, not replicated %d, errors %d (%s); want 30, 60, 0", res.Msgs, res.NotReplicated, res.Errors, res.FirstError)
	}
	f := parseLine(t, res.Line(), "produce", 64, append(append([]string{}, produceKeys...), "not_replicated")...)
	if f["not_replicated"] != 60 || f["msgs"] != 30 {
		t.Fatalf("line %q", res.Line())
	}
	raw, err := json.Marshal(res.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back["not_replicated"] != float64(60) || back["errors"] != float64(0) {
		t.Fatalf("JSON %s", raw)
	}
}
