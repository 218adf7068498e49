package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/memstore"
)

// TestSlaveLogResetMovesConsumersToTheNewStart: on a slave whose store
// starts over at its master's first retained byte (ResetAt), a pull parked
// on the old queue is answered once the master's records reach the queue
// again, with OFFSET_MOVED to the queue's new start (the master's first
// retained queue offset); a consumer whose offset lies below it is moved
// there too, and reads the master's records from there: nothing retained
// is skipped.
func TestSlaveLogResetMovesConsumersToTheNewStart(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.BrokerID = 1; c.Role = RoleSlave })
	rep, ok := e.st.(store.Replica)
	if !ok {
		t.Fatalf("%T is not a store.Replica", e.st)
	}
	master := memstore.New(e.scfg)
	defer master.Close()
	msg := func(i int) *message.Message {
		return &message.Message{Topic: "R", QueueID: 1, Body: fmt.Appendf(nil, "m%d", i), BornHost: e.scfg.StoreHost}
	}
	for i := range 10 {
		if err := master.Put(msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The slave holds the first three.
	b, err := master.ReadRaw(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	first, err := master.ReadMessage(0)
	if err != nil {
		t.Fatal(err)
	}
	size := int(first.TotalSize()) // the records are all of one size
	n := 3 * size
	if err := rep.AppendRaw(0, b[:n]); err != nil {
		t.Fatal(err)
	}
	e.waitMax("R", 1, 3)
	e.subscribe(1, "c1", "G", "R", "*")
	parked := e.startPull(context.Background(), suspendReq("G", "R", 1, 3, 1))
	e.waitParked(1)

	// The master's retention removed records 0..5 while the slave lagged.
	start := int64(6 * size)
	master.RemoveBefore(start)
	if err := rep.ResetAt(start); err != nil {
		t.Fatal(err)
	}
	if parked.answered() {
		t.Fatal("the parked pull was answered before the queue had records again")
	}
	rest, err := master.ReadRaw(start, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.AppendRaw(start, rest); err != nil {
		t.Fatal(err)
	}
	p := parked.wait(t)
	if p.res.Status != PullOffsetMoved || p.res.NextBeginOffset != 6 {
		t.Fatalf("the parked pull: %v next %d, want PullOffsetMoved to 6", p.res.Status, p.res.NextBeginOffset)
	}
	p = e.mustPull(pullReq("G", "R", 1, 0).withSub("*"))
	if p.res.Status != PullOffsetMoved || p.res.NextBeginOffset != 6 {
		t.Fatalf("a pull at 0: %v next %d, want PullOffsetMoved to 6", p.res.Status, p.res.NextBeginOffset)
	}
	p = e.mustPull(pullReq("G", "R", 1, 6).withSub("*"))
	if len(p.bodies) != 4 || p.bodies[0] != "m6" || p.bodies[3] != "m9" {
		t.Fatalf("the slave serves %v from 6, want m6..m9", p.bodies)
	}
}
