package broker

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// mapReq is a send as the gRPC front makes it: map properties, typed
// fields, the broker choosing the queue.
func mapReq(topic, id, body string) *SendRequest {
	return &SendRequest{Topic: topic, QueueID: -1, BornTimestamp: t0.UnixMilli(), Body: []byte(body),
		BornHost: netip.MustParseAddrPort("10.0.0.3:40000"), DefaultTopicQueueNums: 4, NoGroupTopicCreate: true,
		Properties: message.MapProperties(map[string]string{message.PropertyUniqKey: id})}
}

// TestAutoCreateIsOneRuleForBothFronts: a 4.x-shaped send and a
// gRPC-shaped one create their topics alike (template permissions, 4
// queues capped by the template); neither creates a topic when
// auto-creation is off; the gRPC-shaped one never creates a retry or
// dead-letter topic, the 4.x one still does.
func TestAutoCreateIsOneRuleForBothFronts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	four := sendReq("Via4x", -1, "a")
	four.DefaultTopicQueueNums = 0 // the default, 4
	if _, err := e.b.Send(ctx, four); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Send(ctx, mapReq("ViaGRPC", "ID-1", "b")); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := e.b.Topic(TemplateTopic)
	for _, name := range []string{"Via4x", "ViaGRPC"} {
		got, ok := e.b.Topic(name)
		want := min(int32(4), tmpl.WriteQueueNums)
		if !ok || got.ReadQueueNums != want || got.WriteQueueNums != want || got.Perm != tmpl.Perm&^meta.PermInherit || got.TopicFilterType != "SINGLE_TAG" {
			t.Fatalf("%s: %+v (found %v), want %d queues and perm %d", name, got, ok, want, tmpl.Perm&^meta.PermInherit)
		}
	}
	_, err := e.b.Send(ctx, mapReq(RetryGroupTopicPrefix+"g", "ID-2", "c"))
	wantKind(t, err, KindTopicNotExist, RetryGroupTopicPrefix+"g")
	_, err = e.b.Send(ctx, mapReq(DLQGroupTopicPrefix+"g", "ID-3", "c"))
	wantKind(t, err, KindTopicNotExist, DLQGroupTopicPrefix+"g")
	if _, err := e.b.Send(ctx, sendReq(RetryGroupTopicPrefix+"g", 0, "d")); err != nil {
		t.Fatalf("4.x send to a new retry topic: %v", err)
	}

	off := newEnv(t, func(_ *store.Config, c *Config) { c.AutoCreateTopics = false })
	_, err = off.b.Send(ctx, sendReq("Nope", 0, "x"))
	wantKind(t, err, KindTopicNotExist, "auto-creation is off")
	_, err = off.b.Send(ctx, mapReq("Nope", "ID-4", "x"))
	wantKind(t, err, KindTopicNotExist, "auto-creation is off")
}

// TestMessageTypeAcceptance: a declared type must be one the topic's
// message.type attribute accepts (MIXED, none: all); an undeclared type
// (4.x) is inferred (here NORMAL); a refused send stores nothing.
func TestMessageTypeAcceptance(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for name, attr := range map[string]string{"Fifo": "FIFO", "Mixed": "MIXED", "Plain": "", "Normal": "normal"} {
		tc := topicCfg(name, 2, 6)
		if attr != "" {
			tc.Attributes = map[string]string{TopicTypeAttribute: attr}
		}
		if err := e.b.CreateTopic(tc); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		topic string
		typ   MessageType
		ok    bool
	}{
		{"Fifo", MessageTypeFIFO, true},
		{"Fifo", MessageTypeNormal, false},
		{"Fifo", MessageTypeDelay, false},
		{"Fifo", MessageTypeUnspecified, false},
		{"Normal", MessageTypeNormal, true},
		{"Normal", MessageTypeTransaction, false},
		{"Mixed", MessageTypeTransaction, true},
		{"Plain", MessageTypeDelay, true},
	} {
		r := mapReq(tc.topic, "ID-"+tc.topic+tc.typ.String(), "x")
		r.MessageType = tc.typ
		if tc.typ == MessageTypeFIFO {
			r.ShardingKey = "g"
		}
		_, err := e.b.Send(ctx, r)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%v to %s: %v", tc.typ, tc.topic, err)
		case !tc.ok && (!errors.Is(err, ErrMessageType) || KindOf(err) != KindMessageIllegal):
			t.Errorf("%v to %s: %v, want KindMessageIllegal with ErrMessageType", tc.typ, tc.topic, err)
		}
	}
	_, err := e.b.Send(ctx, func() *SendRequest { r := mapReq("Fifo", "ID-N", "x"); r.MessageType = MessageTypeNormal; return r }())
	wantKind(t, err, KindMessageIllegal, `topic "Fifo" accepts [FIFO] messages, not NORMAL`)
	if got := AcceptedTypes(TopicConfig{}); len(got) != 4 {
		t.Fatalf("a topic without the attribute accepts %v", got)
	}
	// Only the accepted sends were stored: Fifo holds the FIFO one
	// (counted once dispatch has caught up with the log).
	if err := e.st.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	var n int64
	for q := range int32(2) {
		n += e.st.MaxOffset("Fifo", q)
	}
	if n != 1 {
		t.Fatalf("Fifo holds %d messages, want the 1 accepted", n)
	}
}

// TestMessageTypeOf4xSends: a 4.x send declares no type; it is inferred
// in RocketMQ 5's order (transaction, delay, sharding key, else NORMAL)
// and checked against a topic's message.type, with a remark naming the
// topic's type, the message's and why; retry and dead-letter topics and
// TRANSFER_FLAG messages are not checked, a topic without the attribute
// takes everything, and NoTopicMessageTypeCheck turns the check off.
func TestMessageTypeOf4xSends(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for name, attr := range map[string]string{"N": "NORMAL", "F": "FIFO", "D": "DELAY", "X": "TRANSACTION", "Plain": ""} {
		tc := topicCfg(name, 2, 6)
		if attr != "" {
			tc.Attributes = map[string]string{TopicTypeAttribute: attr}
		}
		if err := e.b.CreateTopic(tc); err != nil {
			t.Fatal(err)
		}
	}
	later := strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10)
	kinds := map[string][]string{
		"NORMAL":      nil,
		"DELAY":       {"DELAY", "2"},
		"DELIVER_MS":  {message.PropertyTimerDeliverMS, later},
		"DELAY_SEC":   {PropertyTimerDelaySec, "5"},
		"FIFO":        {PropertyShardingKey, "order-1"},
		"TRANSACTION": {message.PropertyTransactionFlag, "true", message.PropertyProducerGroup, "pg"},
		// A delay wins over a sharding key, as in RocketMQ.
		"DELAY+FIFO": {"DELAY", "1", PropertyShardingKey, "order-1"},
	}
	accepts := map[string]map[string]bool{
		"N": {"NORMAL": true},
		"F": {"FIFO": true},
		"D": {"DELAY": true, "DELIVER_MS": true, "DELAY_SEC": true, "DELAY+FIFO": true},
		"X": {"TRANSACTION": true},
	}
	for topic, ok := range accepts {
		for kind, kv := range kinds {
			_, err := e.b.Send(ctx, sendReq(topic, 0, kind, kv...))
			switch {
			case ok[kind] && err != nil:
				t.Errorf("%s message to %s: %v", kind, topic, err)
			case !ok[kind] && (!errors.Is(err, ErrMessageType) || KindOf(err) != KindMessageIllegal):
				t.Errorf("%s message to %s: %v, want KindMessageIllegal with ErrMessageType", kind, topic, err)
			}
		}
	}
	_, err := e.b.Send(ctx, sendReq("N", 0, "x", "DELAY", "3"))
	wantKind(t, err, KindMessageIllegal, `topic "N" accepts NORMAL messages only (its message.type), and this is a DELAY message (it has a delivery delay)`, "MIXED")
	_, err = e.b.Send(ctx, sendReq("D", 0, "x"))
	wantKind(t, err, KindMessageIllegal, `topic "D" accepts DELAY messages only`, "this is a NORMAL message")

	// Not checked: no attribute, retry and dead-letter topics, TRANSFER_FLAG.
	for _, r := range []*SendRequest{
		sendReq("Plain", 0, "x", "DELAY", "3"),
		sendReq("N", 0, "x", "DELAY", "3", PropertyTransferFlag, "true"),
		sendReq(RetryGroupTopicPrefix+"g", 0, "x", "DELAY", "3"),
		sendReq(DLQGroupTopicPrefix+"g", 0, "x", PropertyShardingKey, "k"),
	} {
		if _, err := e.b.Send(ctx, r); err != nil {
			t.Errorf("send to %s (%q): %v", r.Topic, r.Properties.Encoded(), err)
		}
	}
	for _, topic := range []string{RetryGroupTopicPrefix + "g", DLQGroupTopicPrefix + "g"} {
		tc := topicCfg(topic, 1, 6)
		tc.Attributes = map[string]string{TopicTypeAttribute: "NORMAL"}
		if err := e.b.CreateTopic(tc); err != nil {
			t.Fatal(err)
		}
		if _, err := e.b.Send(ctx, sendReq(topic, 0, "x", "DELAY", "3")); err != nil {
			t.Errorf("send to %s with message.type NORMAL: %v; group topics are not checked", topic, err)
		}
	}

	off := newEnv(t, func(_ *store.Config, c *Config) { c.NoTopicMessageTypeCheck = true })
	tc := topicCfg("N", 1, 6)
	tc.Attributes = map[string]string{TopicTypeAttribute: "NORMAL"}
	if err := off.b.CreateTopic(tc); err != nil {
		t.Fatal(err)
	}
	r := mapReq("N", "ID-F", "x")
	r.MessageType, r.ShardingKey = MessageTypeFIFO, "k"
	for _, r := range []*SendRequest{sendReq("N", 0, "x", "DELAY", "3"), r} {
		if _, err := off.b.Send(ctx, r); err != nil {
			t.Errorf("with NoTopicMessageTypeCheck, send %v to a NORMAL topic: %v", r.MessageType, err)
		}
	}
}

// TestShardingKeyPicksTheQueue: with no queue named, one sharding key
// always lands on one queue (ShardQueue of the write queues), in order;
// a named queue wins; without a key the queues are used in turn.
func TestShardingKeyPicksTheQueue(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 8)
	ctx := context.Background()
	for i := range 3 {
		for _, key := range []string{"order-1", "order-2"} {
			r := mapReq("T", key+"-"+strconv.Itoa(i), key+"/"+strconv.Itoa(i))
			r.ShardingKey = key
			res, err := e.b.Send(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if res.QueueID != ShardQueue(key, 8) {
				t.Fatalf("%s went to queue %d, want %d", key, res.QueueID, ShardQueue(key, 8))
			}
		}
	}
	q := ShardQueue("order-1", 8)
	e.waitMax("T", q, 3)
	p := e.mustPull(pullReq("g", "T", q, 0).withSub("*"))
	var seq []string
	for _, m := range p.recs {
		if m.Property(PropertyShardingKey) == "order-1" {
			seq = append(seq, string(m.Body))
		}
	}
	if len(seq) != 3 || seq[0] != "order-1/0" || seq[2] != "order-1/2" {
		t.Fatalf("queue %d holds %v for order-1, want its three in order", q, seq)
	}
	r := mapReq("T", "ID-NAMED", "named")
	r.ShardingKey, r.QueueID = "order-1", int32((q+1)%8)
	if res, err := e.b.Send(ctx, r); err != nil || res.QueueID != (q+1)%8 {
		t.Fatalf("named queue: %+v, %v", res, err)
	}
	seen := map[int32]bool{}
	for i := range 8 {
		res, err := e.b.Send(ctx, mapReq("T", "ID-RR-"+strconv.Itoa(i), "rr"))
		if err != nil {
			t.Fatal(err)
		}
		seen[res.QueueID] = true
	}
	if len(seen) != 8 {
		t.Fatalf("keyless sends used queues %v, want all 8 in turn", seen)
	}
	if ShardQueue("k", 0) != 0 || ShardQueue("k", 1) != 0 || ShardQueue("order-1", 8) != ShardQueue("order-1", 8) {
		t.Fatal("ShardQueue is not a stable index in range")
	}
}

// TestDelayCaps: every form of delay is held to MaxTimerDelay (refused
// with ErrDeliveryTime, nothing stored); a level above the last is the
// last; a time not in the future is delivered at once.
func TestDelayCaps(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.MaxTimerDelay = time.Hour })
	e.createTopic("T", 1)
	ctx := context.Background()
	for _, d := range []message.Delay{
		{AtMS: t0.Add(time.Hour + time.Second).UnixMilli()},
		{After: time.Hour + time.Millisecond},
		{After: 1<<63 - 1},
	} {
		r := mapReq("T", "ID-FAR", "far")
		r.Delay = d
		_, err := e.b.Send(ctx, r)
		if !errors.Is(err, ErrDeliveryTime) {
			t.Errorf("delay %+v: %v, want ErrDeliveryTime", d, err)
		}
		wantKind(t, err, KindMessageIllegal, "MaxTimerDelay")
	}
	for _, d := range []message.Delay{{AtMS: t0.Add(time.Hour).UnixMilli()}, {After: time.Hour}} {
		r := mapReq("T", "ID-EDGE-"+strconv.FormatInt(d.AtMS, 10), "edge")
		r.Delay = d
		if _, err := e.b.Send(ctx, r); err != nil {
			t.Errorf("delay %+v at the limit: %v", d, err)
		}
	}
	def := newEnv(t) // MaxTimerDelay above the last level
	last := def.b.cfg.DelayLevels[len(def.b.cfg.DelayLevels)-1]
	at, ok, err := def.b.dueAt(message.Delay{Level: 1000})
	if err != nil || !ok || at != t0.Add(last).UnixMilli() {
		t.Fatalf("level 1000: due %d %v %v, want the last level (%v)", at, ok, err, last)
	}
	if _, ok, err := e.b.dueAt(message.Delay{AtMS: t0.UnixMilli()}); ok || err != nil {
		t.Fatalf("a due time of now is delayed (%v, %v)", ok, err)
	}
	if _, ok, err := e.b.dueAt(message.Delay{AtMS: -5}); ok || err != nil {
		t.Fatalf("a due time in the past is delayed (%v, %v)", ok, err)
	}
	if n := e.st.MaxOffset("T", 0); n != 0 {
		t.Fatalf("%d messages stored in T, want none (refused or held)", n)
	}
}

// TestMapPropertiesGetTheTypedFields: for map properties the broker
// writes the typed fields (TRAN_MSG, PGROUP, __SHARDINGKEY,
// TIMER_DELIVER_MS); encoded properties are stored as given, with their
// sysflag bits (compressed) kept and never read: a prepared bit without
// Transactional is no half.
func TestMapPropertiesGetTheTypedFields(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	ctx := context.Background()

	fifo := mapReq("T", "ID-F", "fifo")
	fifo.ShardingKey = "g1"
	past := mapReq("T", "ID-P", "past")
	past.Delay = message.Delay{AtMS: t0.Add(-time.Second).UnixMilli()}
	for _, r := range []*SendRequest{fifo, past} {
		if _, err := e.b.Send(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	raw := sendReq("T", 0, "raw", "UNIQ_KEY", "ID-R", "TAGS", "A")
	raw.SysFlag = message.SysFlagCompressed | message.SysFlagTxPrepared
	if _, err := e.b.Send(ctx, raw); err != nil {
		t.Fatal(err)
	}
	e.waitMax("T", 0, 3)
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if len(p.recs) != 3 {
		t.Fatalf("pulled %d, want 3", len(p.recs))
	}
	if m := p.recs[0]; m.Property(PropertyShardingKey) != "g1" || m.Property(message.PropertyUniqKey) != "ID-F" {
		t.Fatalf("FIFO record properties %q", m.Properties)
	}
	if m := p.recs[1]; m.Property(message.PropertyTimerDeliverMS) != strconv.FormatInt(past.Delay.AtMS, 10) {
		t.Fatalf("past-delay record properties %q", m.Properties)
	}
	if m := p.recs[2]; m.SysFlag != raw.SysFlag || m.Property(message.PropertyTimerDeliverMS) != "" ||
		m.Property(message.PropertyTransactionFlag) != "" || m.Properties[:len(raw.Properties.Encoded())] != raw.Properties.Encoded() {
		t.Fatalf("encoded record: sysflag %#x properties %q, want %#x and %q as sent", m.SysFlag, m.Properties, raw.SysFlag, raw.Properties.Encoded())
	}

	half := mapReq("T", "ID-H", "half")
	half.Transactional, half.ProducerGroup = true, "T"
	res, err := e.b.Send(ctx, half)
	if err != nil {
		t.Fatal(err)
	}
	_, phys, err := message.ParseOffsetID(res.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.st.ReadMessage(phys)
	if err != nil {
		t.Fatal(err)
	}
	hm, _, err := message.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if hm.Topic != txn.HalfTopic || hm.Property(message.PropertyTransactionFlag) != "true" ||
		hm.Property(message.PropertyProducerGroup) != "T" || hm.Property(PropertyTransactionID) != "ID-H" || hm.SysFlag&message.SysFlagTxMask != 0 {
		t.Fatalf("half: topic %s sysflag %#x properties %q", hm.Topic, hm.SysFlag, hm.Properties)
	}
	batchHalf := sendReq("T", 0, "b")
	batchHalf.Batch, batchHalf.Transactional = true, true
	batchHalf.Body = message.EncodeBatch([]message.BatchItem{{Body: []byte("a")}})
	_, err = e.b.Send(ctx, batchHalf)
	wantKind(t, err, KindMessageIllegal, "batch cannot be a transactional")
}

// TestBatchItemDelays: a batch's items are delayed by ItemDelays, each
// on its own.
func TestBatchItemDelays(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	r := sendReq("T", 0, "")
	r.Batch = true
	r.Body = message.EncodeBatch([]message.BatchItem{{Body: []byte("now")}, {Body: []byte("later")}, {Body: []byte("also now")}})
	r.ItemDelays = []message.Delay{{}, {After: 2 * time.Second}}
	if _, err := e.b.Send(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	e.waitMax("T", 0, 2)
	e.waitPending(1)
	e.clk.Advance(2 * time.Second)
	e.waitMax("T", 0, 3)
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if len(p.bodies) != 3 || p.bodies[0] != "now" || p.bodies[1] != "also now" || p.bodies[2] != "later" {
		t.Fatalf("delivered %v", p.bodies)
	}
}
