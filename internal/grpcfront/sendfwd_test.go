package grpcfront

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/store/storetest"
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

	// A retry topic is not created by a send, as on the master.
	if got := s.send("p1", msg("%RETRY%g9", "0156F7E71C361B21BC024CCDBE00000004", "r")); code(got.Status) != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("send to a retry topic through the slave: %v", got.Status)
	}
	if _, ok := m.b.Topic("%RETRY%g9"); ok {
		t.Fatal("the master created the retry topic")
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

// TestSlaveForwardsTransactionEnds: commits and rollbacks through the
// slave resolve the master's halves; an id the slave cannot place is
// INVALID_TRANSACTION_ID, as on a master.
func TestSlaveForwardsTransactionEnds(t *testing.T) {
	p := newPair(t, time.Second)
	s, m := p.slave, p.master
	p.onBoth(func(e *env) { e.createTopic("X", 1) })
	s.telemetry("p1", producerSettings("X"))
	keep := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000031", "keep"))
	drop := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000032", "drop"))
	if code(keep.Status) != v2.Code_OK || code(drop.Status) != v2.Code_OK {
		t.Fatalf("transactional sends through the slave: %v %v", keep, drop)
	}
	if st := s.end("X", drop.MessageId, drop.TransactionId, v2.TransactionResolution_ROLLBACK); code(st) != v2.Code_OK {
		t.Fatalf("rollback through the slave: %v", st)
	}
	if st := s.end("X", keep.MessageId, keep.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("commit through the slave: %v", st)
	}
	if st := s.end("X", keep.MessageId, keep.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("repeated commit through the slave: %v", st)
	}
	if r := only(t, m, "X"); string(r.Body()) != "keep" {
		t.Fatalf("the master committed %q", r.Body())
	}
	st := s.end("X", "x", "0156F7E71C361B21BC024CCDBE00000039", v2.TransactionResolution_COMMIT)
	if code(st) != v2.Code_INVALID_TRANSACTION_ID || !strings.Contains(st.GetMessage(), "names no half message") {
		t.Fatalf("end of an unknown transaction through the slave: %v", st)
	}
	if m.st.MaxOffset("X", 0) != 1 {
		t.Fatalf("the master's topic holds %d records, want the committed one", m.st.MaxOffset("X", 0))
	}
}

// TestSlaveForwardedSendsKeepTheSyncReplicationStatuses: the master's
// FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE reach a producer on the
// slave as SLAVE_PERSISTENCE_TIMEOUT and HA_NOT_AVAILABLE, as they reach
// one on the master.
func TestSlaveForwardedSendsKeepTheSyncReplicationStatuses(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want v2.Code
	}{
		{nil, v2.Code_OK},
		{broker.ErrReplicationTimeout, v2.Code_SLAVE_PERSISTENCE_TIMEOUT},
		{broker.ErrNotEnoughReplicas, v2.Code_HA_NOT_AVAILABLE},
	} {
		p := newPair(t, time.Second, func(o *envOptions) { o.broker = func(c *broker.Config) { c.Replicator = replAnswer{tc.err} } })
		onMaster := p.master.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000041", "m"))
		got := p.slave.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000042", "s"))
		if code(got.Status) != tc.want || code(onMaster.Status) != tc.want || got.Status.GetMessage() != onMaster.Status.GetMessage() {
			t.Fatalf("replicator answer %v: through the slave %v, on the master %v, want %v", tc.err, got.Status, onMaster.Status, tc.want)
		}
	}
}

// TestSlaveAnswersUnavailableToSendsWhenTheMasterIsDown: with the master
// partitioned away, its port closed, or its address unknown, sends and
// transaction ends through the slave are HA_NOT_AVAILABLE with a sentence
// that names the situation and no Go error chain.
func TestSlaveAnswersUnavailableToSendsWhenTheMasterIsDown(t *testing.T) {
	p := newPair(t, 200*time.Millisecond)
	s := p.slave
	p.onBoth(func(e *env) { e.createTopic("X", 1) })
	half := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000051", "h"))
	if code(half.Status) != v2.Code_OK {
		t.Fatalf("transactional send through the slave: %v", half)
	}
	check := func(what, words string) {
		t.Helper()
		got := s.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000052", "m"))
		st := s.end("X", half.MessageId, half.TransactionId, v2.TransactionResolution_COMMIT)
		for _, st := range []*v2.Status{got.Status, st} {
			m := st.GetMessage()
			if code(st) != v2.Code_HA_NOT_AVAILABLE || !strings.Contains(m, "slave") || !strings.Contains(m, words) ||
				strings.Contains(m, "remoting:") || strings.Contains(m, "netx") {
				t.Fatalf("%s: %v", what, st)
			}
		}
	}
	p.masterOutages(check)
	if n := p.master.st.MaxOffset("X", 0); n != 0 {
		t.Fatalf("the half was committed (%d records)", n)
	}
}

// replBlock is a replicator whose slaves never confirm until release is
// closed (a master paused in the middle of a send, as its clients see
// it); called gets a value per wait.
type replBlock struct {
	called  chan struct{}
	release chan struct{}
}

func (r replBlock) WaitReplicated(ctx context.Context, _ int64) error {
	select {
	case r.called <- struct{}{}:
	default:
	}
	select {
	case <-r.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSlaveAbandonsAForwardWhenTheMasterMoves: a send the slave forwarded
// to a master that does not answer ends as soon as the group's master
// changes (Config.MasterMoved), HA_NOT_AVAILABLE with a sentence saying
// so, instead of waiting out the forward timeout on the old master; the
// client's retry then reaches the new master.
func TestSlaveAbandonsAForwardWhenTheMasterMoves(t *testing.T) {
	block := replBlock{called: make(chan struct{}, 1), release: make(chan struct{})}
	p := newPair(t, time.Minute, func(o *envOptions) {
		o.broker = func(c *broker.Config) { c.Replicator, c.ReplicationTimeout = block, time.Minute }
	})
	defer close(block.release)
	s := p.slave
	done := make(chan *v2.SendMessageResponse, 1)
	go func() {
		resp, err := s.c.SendMessage(s.ctx("p1"), &v2.SendMessageRequest{Messages: []*v2.Message{msg("T", "0156F7E71C361B21BC024CCDBE00000071", "m")}})
		if err != nil {
			t.Errorf("send: %v", err)
		}
		done <- resp
	}()
	select {
	case <-block.called: // the master holds the forwarded send
	case <-time.After(waitLimit):
		t.Fatal("the forwarded send did not reach the master")
	}
	p.moveMaster("")
	s.b.SetRole(broker.RoleMaster) // this slave was elected
	var resp *v2.SendMessageResponse
	select {
	case resp = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the forward still waits on the old master after the master moved")
	}
	if st := resp.GetStatus(); code(st) != v2.Code_HA_NOT_AVAILABLE || !strings.Contains(st.GetMessage(), "master changed") ||
		strings.Contains(st.GetMessage(), "grpcfront:") {
		t.Fatalf("abandoned forward answered %v, want HA_NOT_AVAILABLE saying the master changed", st)
	}
	if got := s.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000071", "m")); code(got.Status) != v2.Code_OK {
		t.Fatalf("the retry on the promoted slave: %v", got.Status)
	}
}

// TestPromotedSlaveStoresSendsItself: the role is read on every call:
// once the slave's broker is a master, its front stores sends and ends
// transactions itself, with its old master gone.
func TestPromotedSlaveStoresSendsItself(t *testing.T) {
	p := newPair(t, time.Second)
	p.onBoth(func(e *env) { e.createTopic("X", 1) })
	p.srv.Close()
	s := p.slave
	s.b.SetRole(broker.RoleMaster)
	if got := s.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000061", "own")); code(got.Status) != v2.Code_OK {
		t.Fatalf("send on the promoted slave: %v", got.Status)
	}
	x := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000062", "own half"))
	if st := s.end("X", x.MessageId, x.TransactionId, v2.TransactionResolution_COMMIT); code(x.Status) != v2.Code_OK || code(st) != v2.Code_OK {
		t.Fatalf("transaction on the promoted slave: %v %v", x.Status, st)
	}
	if r := only(t, s, "X"); string(r.Body()) != "own half" {
		t.Fatalf("the promoted slave committed %q", r.Body())
	}
	s.awaitRecords("T", 1)
	if p.master.st.Durable() != 0 {
		t.Fatalf("the old master stored %d bytes", p.master.st.Durable())
	}
}

// TestSlaveRelaysCheckBacksToItsProducers: the master checks an
// undecided half back with producers connected to it; the slave's front
// registered itself there as a producer of the half's group, so the check
// reaches the producer on the slave's endpoint (its Telemetry stream), and
// its EndTransaction through the slave resolves the half with the offsets
// the check named (the slave forgot the send's).
func TestSlaveRelaysCheckBacksToItsProducers(t *testing.T) {
	p := newPair(t, time.Second)
	s, m := p.slave, p.master
	p.onBoth(func(e *env) { e.createTopic("X", 1) })
	onSlave, _ := s.telemetry("p1", producerSettings("X"))
	slaveCmds := commands(t, onSlave)
	x := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000071", "undecided"))
	if code(x.Status) != v2.Code_OK {
		t.Fatalf("transactional send through the slave: %v", x.Status)
	}
	if got := m.b.ProducerConns("X"); len(got) != 1 {
		t.Fatalf("the master knows %d producers of X, want the slave's front", len(got))
	}
	await(t, "the master holds the half", func() bool { return m.st.MaxOffset(txn.HalfTopic, 0) == 1 })
	s.s.fwd.halves.reset()
	m.clk.Advance(m.b.Config().TransactionCheckInterval)
	var chk *v2.RecoverOrphanedTransactionCommand
	select {
	case cmd := <-slaveCmds:
		chk = cmd.GetRecoverOrphanedTransactionCommand()
	case <-time.After(waitLimit):
		t.Fatal("no check-back reached the producer on the slave")
	}
	if chk == nil || chk.TransactionId != x.TransactionId || string(chk.Message.GetBody()) != "undecided" ||
		chk.Message.GetSystemProperties().GetMessageId() != x.MessageId {
		t.Fatalf("check-back on the slave: %v", chk)
	}
	resp, err := s.c.EndTransaction(s.ctx("p1"), &v2.EndTransactionRequest{Topic: &v2.Resource{Name: "X"}, MessageId: x.MessageId,
		TransactionId: chk.TransactionId, Resolution: v2.TransactionResolution_COMMIT, Source: v2.TransactionSource_SOURCE_SERVER_CHECK})
	if err != nil || code(resp.Status) != v2.Code_OK {
		t.Fatalf("commit of the check through the slave: %v %v", err, resp.GetStatus())
	}
	if r := only(t, m, "X"); string(r.Body()) != "undecided" {
		t.Fatalf("committed %q", r.Body())
	}
}

// TestSlaveRelayRegistersAgainWithARestartedMaster: the relay renews its
// registration before the master's ClientExpiry drops it, and a master that
// lost the relay's connection (restarted) learns the slave's producer
// groups again at the relay's next renewal; a group without a producer on
// the slave any more is no longer renewed.
func TestSlaveRelayRegistersAgainWithARestartedMaster(t *testing.T) {
	p := newPair(t, time.Second)
	s, m := p.slave, p.master
	p.onBoth(func(e *env) { e.createTopic("X", 1) })
	s.telemetry("p1", producerSettings("X"))
	x := s.send("p1", txnMsg("X", "0156F7E71C361B21BC024CCDBE00000081", "h"))
	if st := s.end("X", x.MessageId, x.TransactionId, v2.TransactionResolution_COMMIT); code(x.Status) != v2.Code_OK || code(st) != v2.Code_OK {
		t.Fatalf("transaction through the slave: %v %v", x.Status, st)
	}
	// The producer stays alive on the slave (whose ClientExpiry is 30 s).
	alive := func() {
		t.Helper()
		if r, err := s.c.Heartbeat(s.ctx("p1"), &v2.HeartbeatRequest{}); err != nil || code(r.Status) != v2.Code_OK {
			t.Fatalf("heartbeat: %v %v", err, r.GetStatus())
		}
	}
	advanceMaster := func(d time.Duration) { // in steps, so that each of the master's sweeps runs
		for ; d > 0; d -= 5 * time.Second {
			m.clk.Advance(min(d, 5*time.Second))
		}
	}
	renewal := func() { // the relay's next renewal, the producer alive
		t.Helper()
		alive()
		s.clk.Advance(relayAnnounceEvery / 2)
		alive()
		s.clk.Advance(relayAnnounceEvery / 2)
	}
	if got := m.b.ProducerConns("X"); len(got) != 1 {
		t.Fatalf("the master knows %d producers of X, want 1", len(got))
	}
	// Renewed before the master's ClientExpiry drops it.
	advanceMaster(m.b.Config().ClientExpiry - time.Second)
	renewal()
	advanceMaster(m.b.Config().ClientExpiry - time.Second)
	if got := m.b.ProducerConns("X"); len(got) != 1 {
		t.Fatalf("the master knows %d producers of X after renewals, want 1", len(got))
	}
	p.mem.Reset("master", "slave") // the connections break
	await(t, "the master dropped the relay's registration", func() bool { return len(m.b.ProducerConns("X")) == 0 })
	renewal()
	await(t, "the relay registered again", func() bool { return len(m.b.ProducerConns("X")) == 1 })

	s.s.sessions.drop("p1", nil) // the slave's producer left
	s.clk.Advance(relayAnnounceEvery)
	advanceMaster(m.b.Config().ClientExpiry + 15*time.Second) // its sweeps run every 10 s
	await(t, "the master expired the group", func() bool { return len(m.b.ProducerConns("X")) == 0 })
}

// commands delivers what a Telemetry stream receives.
func commands(t *testing.T, stream v2.MessagingService_TelemetryClient) <-chan *v2.TelemetryCommand {
	ch := make(chan *v2.TelemetryCommand, 16)
	go func() {
		defer close(ch)
		for {
			cmd, err := stream.Recv()
			if err != nil {
				return
			}
			ch <- cmd
		}
	}()
	return ch
}

// TestSlaveRoutesAreWritableOnlyWhenItForwards: a slave that forwards
// lists its queues READ_WRITE (its endpoint takes sends), one without a
// master to forward to READ.
func TestSlaveRoutesAreWritableOnlyWhenItForwards(t *testing.T) {
	p := newPair(t, time.Second)
	alone := newEnv(t, func(o *envOptions) { o.broker = func(c *broker.Config) { c.BrokerID = 1 } })
	alone.createTopic("T", 2)
	alone.b.SetRole(broker.RoleSlave)
	for _, c := range []struct {
		e    *env
		want v2.Permission
	}{{p.slave, v2.Permission_READ_WRITE}, {alone, v2.Permission_READ}} {
		resp, err := c.e.c.QueryRoute(c.e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T"}})
		if err != nil || code(resp.Status) != v2.Code_OK || len(resp.MessageQueues) != 2 {
			t.Fatalf("route: %v %v", err, resp)
		}
		for _, q := range resp.MessageQueues {
			if q.Permission != c.want || q.Broker.GetId() != 0 {
				t.Fatalf("queue %v, want permission %v", q, c.want)
			}
		}
	}
}

// TestSlaveForwardsAFIFOBatchInOrder: the messages of one FIFO group in
// one request are stored on the master in request order (they are sent
// one after the other; other messages of the request go alongside).
func TestSlaveForwardsAFIFOBatchInOrder(t *testing.T) {
	p := newPair(t, time.Second)
	p.onBoth(func(e *env) { e.createTopic("F", 4) })
	var batch []*v2.Message
	for i := range 40 {
		g := fmt.Sprintf("g%d", i%2)
		m := msg("F", fmt.Sprintf("0156F7E71C361B21BC024CCDBE000001%02d", i), fmt.Sprintf("%s/%02d", g, i))
		m.SystemProperties.MessageType = v2.MessageType_FIFO
		m.SystemProperties.MessageGroup = ptr(g)
		batch = append(batch, m)
	}
	batch = append(batch, msg("F", "0156F7E71C361B21BC024CCDBE00000199", "plain"))
	if resp := p.slave.sendMany("p1", batch...); code(resp.Status) != v2.Code_OK {
		t.Fatalf("FIFO batch through the slave: %v", resp.Status)
	}
	recs := p.master.awaitRecords("F", 41)
	for _, g := range []string{"g0", "g1"} {
		var seq []string
		for _, r := range recs[broker.ShardQueue(g, 4)] {
			if prop(r, propertyShardingKey) == g {
				seq = append(seq, string(r.Body()))
			}
		}
		if len(seq) != 20 || !slices.IsSorted(seq) {
			t.Fatalf("group %s stored %v, want its 20 messages in request order", g, seq)
		}
	}
}

// TestSlaveMarksItsForwardedSends: a send the slave forwards carries
// rmq.ExtForwarded, so a slave at the other end (a view that still names
// it master, or one not yet promoted) refuses it instead of passing it on
// to the master it replaces: one hop, never a chain to a paused master.
func TestSlaveMarksItsForwardedSends(t *testing.T) {
	p := newPair(t, time.Second)
	marks := make(chan string, 1)
	srv := remoting.NewServer(remoting.ServerOptions{Logger: storetest.Logger(t)})
	srv.Handle(rmq.CodeSendMessageV2, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		marks <- req.Ext(rmq.ExtForwarded)
		return rmq.EncodeSendResponse(req, rmq.RespSuccess, rmq.SendResponse{MsgID: "7F00000100002A9F0000000000000000", QueueID: 0, Region: "DefaultRegion"})
	})
	ln, err := p.mem.Host("other").Listen("other:10911")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.moveMaster(ln.Addr().String())
	if got := p.slave.send("p1", msg("T", "0156F7E71C361B21BC024CCDBE00000081", "m")); code(got.Status) != v2.Code_OK {
		t.Fatalf("forwarded send: %v", got.Status)
	}
	select {
	case m := <-marks:
		if m != "true" {
			t.Fatalf("the forwarded send has %s=%q, want \"true\"", rmq.ExtForwarded, m)
		}
	case <-time.After(waitLimit):
		t.Fatal("the send was not forwarded")
	}
}
