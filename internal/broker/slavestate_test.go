package broker

import (
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/store"
)

// asSlave makes a broker a slave of its group (broker id 1).
func asSlave(_ *store.Config, c *Config) { c.BrokerID = 1; c.Role = RoleSlave }

// replicate copies the master's commit log from the slave's end to the
// master's written end, byte for byte, as the ha fetcher does, and waits
// until the slave has dispatched it.
func replicate(t *testing.T, master, slave *env) {
	t.Helper()
	for off := slave.file.Written(); off < master.file.Written(); {
		b, err := master.file.ReadRaw(off, 1<<20)
		if err != nil {
			t.Fatalf("read the master's log at %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("no bytes at %d below the master's end %d", off, master.file.Written())
		}
		if err := slave.file.AppendRaw(off, b); err != nil {
			t.Fatalf("append at %d on the slave: %v", off, err)
		}
		off += int64(len(b))
	}
	if err := slave.st.WaitDispatched(t.Context()); err != nil {
		t.Fatalf("slave dispatch: %v", err)
	}
}

// TestSlaveRunsNoTransactionCheckBacks: a half replicated to a slave is
// never checked back from the slave (the master does it), even with its
// producer registered there and the check long due; the slave stores
// nothing of its own (no re-stored half, no op record).
func TestSlaveRunsNoTransactionCheckBacks(t *testing.T) {
	m := newDiskEnv(t)
	m.createTopic("T1", 1)
	m.sendHalf("T1", "pg", "TX-SLAVE", "ask the master")
	m.waitMax(txn.HalfTopic, 0, 1)

	s := newDiskEnv(t, asSlave)
	tc := newTestConns(s.b)
	s.b.Heartbeat(tc.id(1), Heartbeat{ClientID: "producer", Producers: []string{"pg"}})
	replicate(t, m, s)
	s.waitMax(txn.HalfTopic, 0, 1)
	end := s.file.Written()
	for range 40 {
		s.clk.Advance(5 * time.Second)
	}
	if c, _ := tc.handler(1).state(); len(c) != 0 {
		t.Fatalf("the slave sent %d check-backs: %+v", len(c), c[0])
	}
	if got := s.file.Written(); got != end {
		t.Fatalf("the slave's log grew from %d to %d by itself", end, got)
	}
}
