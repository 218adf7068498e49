package broker

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// putReplicated stores n records of topic/qid as replication appends them
// on a slave (records in the store, no send).
func (e *env) putReplicated(topic string, qid int32, n int) {
	e.t.Helper()
	for range n {
		m := &message.Message{Topic: topic, QueueID: qid, Body: []byte("r"), BornHost: e.scfg.StoreHost, StoreHost: e.scfg.StoreHost}
		if err := e.st.Put(m); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestSlaveDoesNotMoveAConsumersOffsetBack: a consumer ahead of a slave's
// queue (it read further on the master, which the slave has not
// dispatched yet — async replication, or a slave still catching up after
// a failover) is not told PULL_OFFSET_MOVED back to the slave's end, which
// the official clients take as a new committed offset (re-reading what
// they had consumed, after a 10 s pause): the slave answers "nothing new"
// at the consumer's offset and long-polls until it has the message there,
// as RocketMQ's slave does not correct offsets (offsetCheckInSlave off).
// The same for a queue the slave has no message of yet. A master still
// corrects (its offsets are the group's).
func TestSlaveDoesNotMoveAConsumersOffsetBack(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.BrokerID, c.Role = 1, RoleSlave })
	// The topic as the master's state stream gives it to the slave.
	if err := e.md.PutTopic(meta.Topic{Name: "Orders", ReadQueueNums: 2, WriteQueueNums: 2, Perm: meta.PermRead | meta.PermWrite}); err != nil {
		t.Fatal(err)
	}
	e.putReplicated("Orders", 0, 3)
	e.waitMax("Orders", 0, 3)
	e.subscribe(1, "c1", "G", "Orders", "*")

	p := e.mustPull(pullReq("G", "Orders", 0, 5))
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 5 {
		t.Fatalf("slave, pull at 5 of a queue of 3: %v next %d, want NO_NEW_MSG at 5", p.res.Status, p.res.NextBeginOffset)
	}
	p = e.mustPull(pullReq("G", "Orders", 1, 7))
	if p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 7 {
		t.Fatalf("slave, pull at 7 of an empty queue: %v next %d, want NO_NEW_MSG at 7", p.res.Status, p.res.NextBeginOffset)
	}

	// Long-polled, it is answered once the slave holds offset 5.
	req := pullReq("G", "Orders", 0, 5)
	req.SysFlag, req.SuspendTimeout = PullFlagSuspend, time.Minute
	got := make(chan pulled, 1)
	go func() {
		p, err := e.pull(req)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	e.waitParked(1)
	e.putReplicated("Orders", 0, 2) // offsets 3, 4: still before 5
	e.waitMax("Orders", 0, 5)
	if err := e.st.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		t.Fatalf("answered before offset 5 was there: %v next %d", p.res.Status, p.res.NextBeginOffset)
	default:
	}
	e.putReplicated("Orders", 0, 1) // offset 5
	select {
	case p := <-got:
		if p.res.Status != PullFound || len(p.recs) != 1 || p.recs[0].QueueOffset != 5 {
			t.Fatalf("after offset 5 arrived: %v, %d records", p.res.Status, len(p.recs))
		}
	case <-time.After(waitLimit):
		t.Fatal("the parked pull was not answered when offset 5 arrived")
	}

	m := newEnv(t)
	m.createTopic("Orders", 2)
	for range 3 {
		m.send("Orders", 0, "x")
	}
	m.subscribe(1, "c1", "G", "Orders", "*")
	p = m.mustPull(pullReq("G", "Orders", 0, 5))
	if p.res.Status != PullOffsetMoved {
		t.Fatalf("master, pull at 5 of a queue of 3: %v next %d, want OFFSET_MOVED", p.res.Status, p.res.NextBeginOffset)
	}
}
