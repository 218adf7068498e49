package grpcfront

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
)

// sendReq sends msgs in one SendMessage through e and returns the answer.
func (e *env) sendMany(clientID string, msgs ...*v2.Message) *v2.SendMessageResponse {
	e.t.Helper()
	resp, err := e.c.SendMessage(e.ctx(clientID), &v2.SendMessageRequest{Messages: msgs})
	if err != nil {
		e.t.Fatalf("send: %v", err)
	}
	if len(resp.Entries) != len(msgs) {
		e.t.Fatalf("send of %d: %d entries (status %v)", len(msgs), len(resp.Entries), resp.Status)
	}
	return resp
}

// onBoth runs f on the master and on the slave (a master while f runs:
// a slave takes topics only from its master's log, which these tests do
// not replicate).
func (p *pair) onBoth(f func(e *env)) {
	f(p.master)
	p.slave.b.SetRole(broker.RoleMaster)
	defer p.slave.b.SetRole(broker.RoleSlave)
	f(p.slave)
}

// only returns the one record of topic on e, failing unless there is
// exactly one.
func only(t *testing.T, e *env, topic string) message.Record {
	t.Helper()
	var out []message.Record
	for _, rs := range e.awaitRecords(topic, 1) {
		out = append(out, rs...)
	}
	if len(out) != 1 {
		t.Fatalf("topic %s holds %d records, want 1", topic, len(out))
	}
	return out[0]
}

// TestSlaveForwardsSendsOfEveryType: NORMAL (tag, keys, user properties,
// trace context), FIFO, DELAY and TRANSACTION messages sent to a slave's
// gRPC endpoint are stored on the master with the properties the master's
// own front would store, and answered with the master's offset; the slave
// stores nothing.
func TestSlaveForwardsSendsOfEveryType(t *testing.T) {
	p := newPair(t, time.Second)
	s, m := p.slave, p.master
	p.onBoth(func(e *env) {
		e.createTopic("N", 1)
		e.createTopic("F", 8)
		e.createTopic("D", 1)
		e.createTopic("X", 1)
	})

	// NORMAL.
	n := msg("N", "0156F7E71C361B21BC024CCDBE00000001", "hello")
	n.SystemProperties.Tag = ptr("TagA")
	n.SystemProperties.Keys = []string{"k1", "k2"}
	n.SystemProperties.TraceContext = ptr("00-trace")
	n.UserProperties = map[string]string{"color": "blue"}
	got := s.send("p1", n)
	if code(got.Status) != v2.Code_OK || got.MessageId != n.SystemProperties.MessageId || got.TransactionId != got.MessageId {
		t.Fatalf("normal send through the slave: %v", got)
	}
	r := only(t, m, "N")
	if string(r.Body()) != "hello" || prop(r, message.PropertyUniqKey) != n.SystemProperties.MessageId || prop(r, message.PropertyTags) != "TagA" ||
		prop(r, message.PropertyKeys) != "k1 k2" || prop(r, "color") != "blue" || prop(r, propertyTraceContext) != "00-trace" ||
		r.QueueOffset() != got.Offset || r.BornTimestamp() != t0.UnixMilli() {
		t.Fatalf("stored on the master: body %q properties %q offset %d (entry %d)", r.Body(), r.Properties(), r.QueueOffset(), got.Offset)
	}
	if back := toMessage(r, n.Topic).SystemProperties; back.MessageType != v2.MessageType_NORMAL {
		t.Fatalf("stored normal message reads back as %v", back.MessageType)
	}
	if again := s.send("p1", n); code(again.Status) != v2.Code_OK || again.Offset != got.Offset {
		t.Fatalf("resend of the same id through the slave: %v, want the original's offset %d", again, got.Offset)
	}

	// FIFO: each group on its queue of the topic's 8, in order.
	groups := []string{"order-1", "order-2", "order-3"}
	for i := range 4 {
		for _, g := range groups {
			f := msg("F", fmt.Sprintf("0156F7E71C361B21BC024CCDBE1%s%d", g[len(g)-1:], i), fmt.Sprintf("%s/%d", g, i))
			f.SystemProperties.MessageType = v2.MessageType_FIFO
			f.SystemProperties.MessageGroup = ptr(g)
			if got := s.send("p1", f); code(got.Status) != v2.Code_OK {
				t.Fatalf("FIFO send through the slave: %v", got.Status)
			}
		}
	}
	recs := m.awaitRecords("F", 12)
	for _, g := range groups {
		var seq []string
		for qid, rs := range recs {
			for _, r := range rs {
				if prop(r, propertyShardingKey) != g {
					continue
				}
				if want := broker.ShardQueue(g, 8); qid != want {
					t.Fatalf("group %s stored on queue %d, want %d", g, qid, want)
				}
				seq = append(seq, string(r.Body()))
			}
		}
		if want := []string{g + "/0", g + "/1", g + "/2", g + "/3"}; strings.Join(seq, " ") != strings.Join(want, " ") {
			t.Fatalf("group %s stored %v, want %v", g, seq, want)
		}
	}

	// DELAY: held by the master's timer until its time.
	d := msg("D", "0156F7E71C361B21BC024CCDBE00000002", "later")
	d.SystemProperties.MessageType = v2.MessageType_DELAY
	d.SystemProperties.DeliveryTimestamp = tspb(t0.Add(5 * time.Second))
	if got := s.send("p1", d); code(got.Status) != v2.Code_OK {
		t.Fatalf("delay send through the slave: %v", got.Status)
	}
	await(t, "the master's timer holds the delayed message", func() bool { return m.b.PendingTimers() == 1 })
	if n := m.st.MaxOffset("D", 0); n != 0 {
		t.Fatalf("the delayed message is visible at once (%d records)", n)
	}
	m.clk.Advance(5 * time.Second)
	if r := only(t, m, "D"); string(r.Body()) != "later" || prop(r, message.PropertyUniqKey) != d.SystemProperties.MessageId {
		t.Fatalf("delivered %q %q", r.Body(), r.Properties())
	}

	// TRANSACTION: a half on the master until the end through the slave
	// commits it.
	x := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000003", "commit me"))
	if code(x.Status) != v2.Code_OK || x.TransactionId != "0156F7E71C361B21BC024CCDBE00000003" {
		t.Fatalf("transactional send through the slave: %v", x)
	}
	await(t, "the master holds the half", func() bool { return m.st.MaxOffset(txn.HalfTopic, 0) == 1 })
	if n := m.st.MaxOffset("X", 0); n != 0 {
		t.Fatalf("the half is visible on the master (%d records of X)", n)
	}
	if st := s.end("X", x.MessageId, x.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("commit through the slave: %v", st)
	}
	r = only(t, m, "X")
	if string(r.Body()) != "commit me" || prop(r, "__transactionId__") != x.TransactionId {
		t.Fatalf("committed on the master: %q %q", r.Body(), r.Properties())
	}
	if got := toMessage(r, &v2.Resource{Name: "X"}).SystemProperties.MessageType; got != v2.MessageType_TRANSACTION {
		t.Fatalf("committed message type %v", got)
	}

	if s.st.Durable() != 0 {
		t.Fatalf("the slave stored %d bytes itself", s.st.Durable())
	}
}

// TestSlaveForwardsBatchesWithPerEntryResults: a request of several
// messages through the slave is stored on the master with each entry's
// own offset; an entry the topic refuses (its type, decided on the slave
// from the replicated topic table, or the master's refusal) fails alone.
func TestSlaveForwardsBatchesWithPerEntryResults(t *testing.T) {
	p := newPair(t, time.Second, func(o *envOptions) { o.broker = func(c *broker.Config) { c.AutoCreateTopics = false } })
	s, m := p.slave, p.master
	p.onBoth(func(e *env) {
		if err := e.b.CreateTopic(broker.TopicConfig{Name: "OnlyNormal", ReadQueueNums: 2, WriteQueueNums: 2,
			Perm: broker.PermRead | broker.PermWrite, Attributes: map[string]string{broker.TopicTypeAttribute: "NORMAL"}}); err != nil {
			t.Fatal(err)
		}
	})
	var batch []*v2.Message
	for i := range 6 {
		batch = append(batch, msg("OnlyNormal", fmt.Sprintf("0156F7E71C361B21BC024CCDBE0000001%d", i), fmt.Sprintf("b%d", i)))
	}
	resp := s.sendMany("p1", batch...)
	if code(resp.Status) != v2.Code_OK {
		t.Fatalf("batch through the slave: %v", resp.Status)
	}
	stored := m.awaitRecords("OnlyNormal", 6)
	byID := map[string]message.Record{}
	for _, rs := range stored {
		for _, r := range rs {
			byID[prop(r, message.PropertyUniqKey)] = r
		}
	}
	for i, e := range resp.Entries {
		r, ok := byID[batch[i].SystemProperties.MessageId]
		if code(e.Status) != v2.Code_OK || !ok || r.QueueOffset() != e.Offset || string(r.Body()) != fmt.Sprintf("b%d", i) {
			t.Fatalf("entry %d %v: stored %v", i, e, ok)
		}
	}
	if len(stored[0]) == 0 || len(stored[1]) == 0 {
		t.Fatalf("the batch's messages all went to one queue: %d and %d", len(stored[0]), len(stored[1]))
	}

	// A FIFO message to the NORMAL topic, and one to a topic the master
	// does not have (the slave does).
	p.slave.b.SetRole(broker.RoleMaster)
	s.createTopic("SlaveOnly", 1)
	p.slave.b.SetRole(broker.RoleSlave)
	bad := msg("OnlyNormal", "0156F7E71C361B21BC024CCDBE00000020", "fifo")
	bad.SystemProperties.MessageType = v2.MessageType_FIFO
	bad.SystemProperties.MessageGroup = ptr("g")
	good := msg("OnlyNormal", "0156F7E71C361B21BC024CCDBE00000021", "fine")
	noMaster := msg("SlaveOnly", "0156F7E71C361B21BC024CCDBE00000022", "x")
	resp = s.sendMany("p1", bad, good, noMaster)
	if code(resp.Status) != v2.Code_MULTIPLE_RESULTS || code(resp.Entries[0].Status) != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE ||
		code(resp.Entries[1].Status) != v2.Code_OK || code(resp.Entries[2].Status) != v2.Code_TOPIC_NOT_FOUND ||
		!strings.Contains(resp.Entries[2].Status.GetMessage(), "SlaveOnly") {
		t.Fatalf("mixed batch through the slave: %v", resp)
	}
}
