package grpcfront

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/message"
)

func TestSendNormalStoresTheClientsIDAndProperties(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 4)
	m := msg("T1", "0156F7E71C361B21BC024CCDBE00000001", "hello")
	m.SystemProperties.Tag = ptr("TagA")
	m.SystemProperties.Keys = []string{"k1", "k2"}
	m.UserProperties = map[string]string{"color": "blue"}
	got := e.send("p1", m)
	// RocketMQ's proxy answers the message id as the transaction id of
	// every send (the broker's SendMessageResponseHeader.transactionId).
	if code(got.Status) != v2.Code_OK || got.MessageId != "0156F7E71C361B21BC024CCDBE00000001" || got.TransactionId != got.MessageId {
		t.Fatalf("entry %v, want OK with the message id as transaction id", got)
	}
	recs := e.awaitRecords("T1", 1)
	var r message.Record
	for _, rs := range recs {
		if len(rs) > 0 {
			r = rs[0]
		}
	}
	if string(r.Body()) != "hello" || prop(r, message.PropertyUniqKey) != m.SystemProperties.MessageId ||
		prop(r, message.PropertyTags) != "TagA" || prop(r, message.PropertyKeys) != "k1 k2" || prop(r, "color") != "blue" {
		t.Fatalf("stored body %q properties %q", r.Body(), r.Properties())
	}
	if r.QueueOffset() != got.Offset {
		t.Fatalf("entry offset %d, stored at %d", got.Offset, r.QueueOffset())
	}
	// The record converts back to what was sent.
	back := toMessage(r, m.Topic)
	sp := back.SystemProperties
	if sp.MessageId != m.SystemProperties.MessageId || sp.GetTag() != "TagA" || strings.Join(sp.Keys, ",") != "k1,k2" ||
		sp.MessageType != v2.MessageType_NORMAL || back.UserProperties["color"] != "blue" || len(back.UserProperties) != 1 ||
		sp.BodyEncoding != v2.Encoding_IDENTITY || sp.BodyDigest.GetType() != v2.DigestType_MD5 || sp.GetQueueOffset() != got.Offset {
		t.Fatalf("converted back: %v user %v", sp, back.UserProperties)
	}
}

func TestSendRetryWithTheSameIDIsStoredOnce(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	first := e.send("p1", msg("T1", "ID-DUP", "once"))
	second := e.send("p1", msg("T1", "ID-DUP", "once"))
	if code(first.Status) != v2.Code_OK || code(second.Status) != v2.Code_OK || first.Offset != second.Offset {
		t.Fatalf("first %v second %v: want both OK at one offset", first, second)
	}
	e.dispatched()
	if n := e.st.MaxOffset("T1", 0); n != 1 {
		t.Fatalf("%d records stored, want 1", n)
	}
}

func TestSendFIFOKeepsAGroupOnOneQueueInOrder(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 8)
	groups := []string{"order-1", "order-2", "order-3"}
	for i := range 5 {
		for _, g := range groups {
			m := msg("T1", fmt.Sprintf("ID-%s-%d", g, i), fmt.Sprintf("%s/%d", g, i))
			m.SystemProperties.MessageType = v2.MessageType_FIFO
			m.SystemProperties.MessageGroup = ptr(g)
			if got := e.send("p1", m); code(got.Status) != v2.Code_OK {
				t.Fatalf("send: %v", got.Status)
			}
		}
	}
	recs := e.awaitRecords("T1", 15)
	for _, g := range groups {
		q := broker.ShardQueue(g, 8)
		var seq []string
		for qid, rs := range recs {
			for _, r := range rs {
				if prop(r, propertyShardingKey) != g {
					continue
				}
				if qid != q {
					t.Fatalf("group %s message on queue %d, want %d", g, qid, q)
				}
				seq = append(seq, string(r.Body()))
			}
		}
		want := []string{g + "/0", g + "/1", g + "/2", g + "/3", g + "/4"}
		if strings.Join(seq, " ") != strings.Join(want, " ") {
			t.Fatalf("group %s stored %v, want %v", g, seq, want)
		}
	}
	if broker.ShardQueue("order-1", 8) != broker.ShardQueue("order-1", 8) {
		t.Fatal("ShardQueue is not stable")
	}
}

func TestSendDelayIsHeldUntilTheDeliveryTime(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	m := msg("T1", "ID-DELAY", "later")
	m.SystemProperties.MessageType = v2.MessageType_DELAY
	m.SystemProperties.DeliveryTimestamp = tspb(t0.Add(5 * time.Second))
	if got := e.send("p1", m); code(got.Status) != v2.Code_OK {
		t.Fatalf("send: %v", got.Status)
	}
	e.dispatched()
	if n := e.st.MaxOffset("T1", 0); n != 0 {
		t.Fatalf("delayed message visible at once (%d records)", n)
	}
	await(t, "the timer holds the delayed message", func() bool { return e.b.PendingTimers() == 1 })
	e.clk.Advance(5*time.Second - time.Millisecond)
	if n := e.st.MaxOffset("T1", 0); n != 0 {
		t.Fatalf("delayed message visible before its time (%d records)", n)
	}
	e.clk.Advance(time.Millisecond)
	recs := e.awaitRecords("T1", 1)
	r := recs[0][0]
	if string(r.Body()) != "later" || prop(r, message.PropertyUniqKey) != "ID-DELAY" {
		t.Fatalf("delivered %q %q", r.Body(), r.Properties())
	}
	// A consumer receives it as RocketMQ's proxy delivers a fired timer
	// message: type DELAY with the delivery timestamp it was sent with.
	req := receiveReq("g1", "T1", 4, 10*time.Second)
	req.MessageQueue.Id = 0
	req.FilterExpression.Expression = "*"
	var got []*v2.Message
	for _, resp := range e.receive(e.ctx("c1"), req) {
		if m := resp.GetMessage(); m != nil {
			got = append(got, m)
		}
	}
	if len(got) != 1 {
		t.Fatalf("received %d messages, want the delayed one", len(got))
	}
	if sp := got[0].GetSystemProperties(); sp.GetMessageId() != "ID-DELAY" || sp.GetMessageType() != v2.MessageType_DELAY ||
		!sp.GetDeliveryTimestamp().AsTime().Equal(t0.Add(5*time.Second)) {
		t.Fatalf("received id %s type %v delivery timestamp %v; want ID-DELAY, DELAY, %v",
			sp.GetMessageId(), sp.GetMessageType(), sp.GetDeliveryTimestamp().AsTime(), t0.Add(5*time.Second))
	}
	// A delivery time already passed is not delayed, and the record keeps
	// it (the timer removes it from the ones it delivers).
	past := msg("T1", "ID-PAST", "now")
	past.SystemProperties.MessageType = v2.MessageType_DELAY
	past.SystemProperties.DeliveryTimestamp = tspb(t0)
	if got := e.send("p1", past); code(got.Status) != v2.Code_OK {
		t.Fatalf("send: %v", got.Status)
	}
	r = e.awaitRecords("T1", 2)[0][1]
	if got := toMessage(r, m.Topic).SystemProperties; got.MessageType != v2.MessageType_DELAY || !got.DeliveryTimestamp.AsTime().Equal(t0) {
		t.Fatalf("converted: type %v delivery %v", got.MessageType, got.DeliveryTimestamp)
	}
}

func TestSendBadInputGetsClearStatuses(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	big := strings.Repeat("x", e.b.Config().MaxMessageBytes+1)
	cases := []struct {
		name string
		mut  func(m *v2.Message)
		want v2.Code
		says string
	}{
		{"missing topic", func(m *v2.Message) { m.Topic = nil }, v2.Code_ILLEGAL_TOPIC, "names no topic"},
		{"illegal topic", func(m *v2.Message) { m.Topic.Name = "a b" }, v2.Code_ILLEGAL_TOPIC, "illegal characters"},
		{"empty body", func(m *v2.Message) { m.Body = nil }, v2.Code_BAD_REQUEST, "body is empty"},
		{"over-size body", func(m *v2.Message) { m.Body = []byte(big) }, v2.Code_MESSAGE_BODY_TOO_LARGE, "over the broker's limit"},
		{"no system properties", func(m *v2.Message) { m.SystemProperties = nil }, v2.Code_BAD_REQUEST, "system properties"},
		{"empty message id", func(m *v2.Message) { m.SystemProperties.MessageId = "" }, v2.Code_ILLEGAL_MESSAGE_ID, "no message id"},
		{"malformed message id", func(m *v2.Message) { m.SystemProperties.MessageId = "ID\x01X" }, v2.Code_ILLEGAL_MESSAGE_ID, "control character"},
		{"blank tag", func(m *v2.Message) { m.SystemProperties.Tag = ptr(" ") }, v2.Code_ILLEGAL_MESSAGE_TAG, "blank"},
		{"tag with bar", func(m *v2.Message) { m.SystemProperties.Tag = ptr("a|b") }, v2.Code_ILLEGAL_MESSAGE_TAG, "'|'"},
		{"key with space", func(m *v2.Message) { m.SystemProperties.Keys = []string{"a b"} }, v2.Code_ILLEGAL_MESSAGE_KEY, "space"},
		{"reserved property", func(m *v2.Message) { m.UserProperties = map[string]string{"UNIQ_KEY": "x"} }, v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "reserved"},
		{"FIFO without group", func(m *v2.Message) { m.SystemProperties.MessageType = v2.MessageType_FIFO }, v2.Code_ILLEGAL_MESSAGE_GROUP, "message group"},
		{"delay without time", func(m *v2.Message) { m.SystemProperties.MessageType = v2.MessageType_DELAY }, v2.Code_ILLEGAL_DELIVERY_TIME, "delivery timestamp"},
		{"delay too far", func(m *v2.Message) {
			m.SystemProperties.MessageType = v2.MessageType_DELAY
			m.SystemProperties.DeliveryTimestamp = tspb(t0.Add(30 * 24 * time.Hour))
		}, v2.Code_ILLEGAL_DELIVERY_TIME, "beyond the broker's limit"},
	}
	for _, c := range cases {
		m := msg("T1", "ID-BAD", "body")
		c.mut(m)
		got := e.send("p1", m)
		if code(got.Status) != c.want || !strings.Contains(got.Status.Message, c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, got.Status, c.want, c.says)
		}
	}
	if n := e.st.MaxOffset("T1", 0); n != 0 {
		t.Fatalf("%d refused messages were stored", n)
	}
	resp, err := e.c.SendMessage(e.ctx("p1"), &v2.SendMessageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_BAD_REQUEST {
		t.Fatalf("empty request: %v", resp.Status)
	}
}

func TestSendToUnknownTopicWithoutAutoCreate(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.broker = func(c *broker.Config) { c.AutoCreateTopics = false } })
	if got := e.send("p1", msg("Nope", "ID-1", "x")); code(got.Status) != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("%v, want TOPIC_NOT_FOUND", got.Status)
	}
}

func TestMixedBatchResultsAreReportedPerEntry(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	resp, err := e.c.SendMessage(e.ctx("p1"), &v2.SendMessageRequest{Messages: []*v2.Message{
		msg("T1", "ID-OK", "fine"), msg("T1", "", "no id")}})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_MULTIPLE_RESULTS || len(resp.Entries) != 2 ||
		code(resp.Entries[0].Status) != v2.Code_OK || code(resp.Entries[1].Status) != v2.Code_ILLEGAL_MESSAGE_ID {
		t.Fatalf("response %v", resp)
	}
}

// TestSendDecodedByEitherPath: a send the hand decoder takes (pbcodec) and
// one it leaves to protobuf (an unknown field, as a newer client may
// send) are answered and stored alike.
func TestSendDecodedByEitherPath(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	plain := msg("T1", "0156F7E71C361B21BC024CCDBE00000001", "hello")
	newer := msg("T1", "0156F7E71C361B21BC024CCDBE00000002", "hello")
	for _, m := range []*v2.Message{plain, newer} {
		m.SystemProperties.Tag = ptr("TagA")
		m.UserProperties = map[string]string{"color": "blue"}
	}
	newer.SystemProperties.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	for i, m := range []*v2.Message{plain, newer} {
		b, err := proto.Marshal(&v2.SendMessageRequest{Messages: []*v2.Message{m}})
		if err != nil {
			t.Fatal(err)
		}
		var r v2.SendMessageRequest
		if byHand := pbcodec.DecodeSendMessageRequest(b, &r); byHand != (i == 0) {
			t.Fatalf("message %d: decoded by hand %v; want %v", i, byHand, i == 0)
		}
		if got := e.send("p1", m); code(got.Status) != v2.Code_OK || got.MessageId != m.SystemProperties.MessageId || got.Offset != int64(i) {
			t.Fatalf("message %d: entry %v; want OK at offset %d", i, got, i)
		}
	}
	recs := e.awaitRecords("T1", 2)[0]
	for i, r := range recs {
		if string(r.Body()) != "hello" || prop(r, message.PropertyTags) != "TagA" || prop(r, "color") != "blue" ||
			prop(r, message.PropertyUniqKey) != []*v2.Message{plain, newer}[i].SystemProperties.MessageId {
			t.Fatalf("record %d: body %q properties %q", i, r.Body(), r.Properties())
		}
	}
}
