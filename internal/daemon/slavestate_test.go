package daemon

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

func sendWithID(topic, id string, body []byte) *remoting.Command {
	req := sendRequest(topic, body)
	req.ExtFields["properties"] = "UNIQ_KEY\x01" + id + "\x02"
	return req
}

// TestPopStateReachesThePromotedSlave: over real replication (the ha
// fetcher and the state stream through the daemon), the messages a
// simple consumer received and acknowledged on the master are known to
// its slave: promoted after the master is gone, the slave takes the
// master's receipt handles and delivers only what the master never
// delivered.
func TestPopStateReachesThePromotedSlave(t *testing.T) {
	master, slave, cl := replicatedPair(t, 1, false)
	start := time.Now()
	// A sync send right after the slave joined may answer
	// SLAVE_NOT_AVAILABLE (11) for some seconds, and on a loaded machine
	// SYSTEM_BUSY (2: the disk is not keeping up, nothing stored): both
	// are retried, as a client does.
	deadline := start.Add(30 * time.Second)
	for i := 0; i < 6; {
		ictx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := cl.Invoke(ictx, master.Advertised(), sendWithID("Orders", fmt.Sprintf("ID-%d", i), []byte(fmt.Sprintf("m%d", i))))
		cancel()
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		switch {
		case resp.Code == 0:
			i++
		case (resp.Code != 11 && resp.Code != 2) || time.Now().After(deadline):
			t.Fatalf("send %d: code %d %q", i, resp.Code, resp.Remark)
		}
	}
	t.Logf("sends answered after %v", time.Since(start))
	ctx := context.Background()
	// The sends are answered once stored; their consume queue entries
	// come a moment later, so pop until the four are there.
	var got []broker.PoppedMessage
	for len(got) < 4 {
		more, err := master.b.Pop(ctx, &broker.PopRequest{Group: "G", Topic: "Orders", MaxMsgs: 4 - len(got), Invisible: time.Minute, Wait: time.Second})
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("pop on the master: %d messages, %v", len(got)+len(more), err)
		}
		got = append(got, more...)
	}
	if err := master.b.AckPop("G", "Orders", got[0].Handle); err != nil {
		t.Fatal(err)
	}
	inFlight := func(b *Broker) int {
		for _, f := range b.b.PopInFlight() {
			if f.Group == "G" && f.Topic == "Orders" {
				return f.Messages
			}
		}
		return -1
	}
	for inFlight(slave) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the slave holds %d messages in flight, the master 3", inFlight(slave))
		}
		runtime.Gosched()
	}
	t.Logf("pop state on the slave after %v", time.Since(start))
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	slave.b.SetRole(broker.RoleMaster)
	if err := slave.b.AckPop("G", "Orders", got[1].Handle); err != nil {
		t.Fatalf("the master's handle on the promoted slave: %v", err)
	}
	if err := slave.b.AckPop("G", "Orders", got[0].Handle); err == nil {
		t.Fatal("a handle the master acknowledged acknowledged again on the promoted slave")
	}
	rest, err := slave.b.Pop(ctx, &broker.PopRequest{Group: "G", Topic: "Orders", MaxMsgs: 32, Invisible: time.Minute})
	if err != nil || len(rest) != 2 {
		t.Fatalf("pop on the promoted slave: %d messages (want the 2 never delivered), %v", len(rest), err)
	}
	for _, m := range rest {
		for _, old := range got {
			if m.Record.QueueOffset() == old.Record.QueueOffset() && m.Record.QueueID() == old.Record.QueueID() {
				t.Fatalf("the promoted slave redelivered queue %d offset %d", m.Record.QueueID(), m.Record.QueueOffset())
			}
		}
	}
}
