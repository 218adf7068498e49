package brokerfront_test

import (
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// props encodes kv as a 4.x send's properties.
func recallProps(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return message.EncodeProperties(m)
}

// TestSendAnswersRecallHandle: a delayed send's answer carries
// recallHandle (SendMessageResponseHeader, RocketMQ 5.3+), naming the
// topic, this broker and the message's UNIQ_KEY; a send for now has none.
func TestSendAnswersRecallHandle(t *testing.T) {
	f := startFront(t)
	resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", recallProps("UNIQ_KEY", "RH1", "TIMER_DELAY_SEC", "60"), nil), []byte("x"))
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("delayed send: code %d %q", resp.Code, resp.Remark)
	}
	r, err := rmq.DecodeSendResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := message.DecodeRecallHandle(r.RecallHandle)
	if err != nil || h.Topic != "Orders" || h.BrokerName == "" || h.UniqID != "RH1" || h.At <= 0 {
		t.Fatalf("recallHandle %q decodes to %+v, %v; want topic Orders, the broker's name, UNIQ_KEY RH1 and a due time", r.RecallHandle, h, err)
	}
	now := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", recallProps("UNIQ_KEY", "RH2"), nil), []byte("x"))
	if now.Code != rmq.RespSuccess || now.Ext("recallHandle") != "" {
		t.Fatalf("send for now: code %d, recallHandle %q; want none", now.Code, now.Ext("recallHandle"))
	}
}

// TestRecallMessage: RECALL_MESSAGE (370) takes RocketMQ's checks in its
// order: an unknown topic is 17 TOPIC_NOT_EXIST; a handle that does not
// decode, names another topic or broker, or a time passed or beyond the
// timer's limit is 604 ILLEGAL_OPERATION; a handle of a message never
// delayed here is 22; the send answer's handle recalls the message (code
// 0, msgId its UNIQ_KEY), again on a second try; a header without the
// handle is refused naming the field.
func TestRecallMessage(t *testing.T) {
	f := startFront(t)
	sent := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", recallProps("UNIQ_KEY", "RC1", "TIMER_DELAY_SEC", "60"), nil), []byte("x"))
	if sent.Code != rmq.RespSuccess {
		t.Fatalf("delayed send: code %d %q", sent.Code, sent.Remark)
	}
	if other := f.invoke(t, rmq.CodeSendMessage, sendExt("Other", "", nil), []byte("x")); other.Code != rmq.RespSuccess {
		t.Fatalf("send to Other: code %d %q", other.Code, other.Remark)
	}
	handle := sent.Ext("recallHandle")
	h, err := message.DecodeRecallHandle(handle)
	if err != nil {
		t.Fatalf("send answer's recallHandle %q: %v", handle, err)
	}
	now := time.Now()
	recall := func(topic, handle string) *remoting.Command {
		t.Helper()
		return f.invoke(t, rmq.CodeRecallMessage, rmq.EncodeRecallRequest(rmq.RecallRequest{ProducerGroup: "pg", Topic: topic, RecallHandle: handle}).ExtFields, nil)
	}
	for _, tc := range []struct {
		name, topic, handle string
		code                int16
		says                string
	}{
		{"unknown topic", "Nope", handle, rmq.RespTopicNotExist, "does not exist"},
		{"not a handle", "Orders", "%%%", rmq.RespIllegalOperation, "invalid"},
		{"another topic", "Other", handle, rmq.RespIllegalOperation, "names topic"},
		{"another broker", "Orders", message.EncodeRecallHandle("Orders", "elsewhere", h.At, "RC1"), rmq.RespIllegalOperation, "names broker"},
		{"time passed", "Orders", message.EncodeRecallHandle("Orders", h.BrokerName, now.Add(-time.Second).UnixMilli(), "RC1"), rmq.RespIllegalOperation, "time is invalid"},
		{"beyond the limit", "Orders", message.EncodeRecallHandle("Orders", h.BrokerName, now.AddDate(10, 0, 0).UnixMilli(), "RC1"), rmq.RespIllegalOperation, "time is invalid"},
		{"never delayed", "Orders", message.EncodeRecallHandle("Orders", h.BrokerName, h.At, "NEVER"), rmq.RespQueryNotFound, "no delayed message"},
	} {
		resp := recall(tc.topic, tc.handle)
		if resp.Code != tc.code || !strings.Contains(resp.Remark, tc.says) {
			t.Errorf("%s: code %d %q; want %d saying %q", tc.name, resp.Code, resp.Remark, tc.code, tc.says)
		}
	}
	for i := range 2 {
		resp := recall("Orders", handle)
		r, err := rmq.DecodeRecallResponse(resp)
		if resp.Code != rmq.RespSuccess || err != nil || r.MsgID != "RC1" {
			t.Fatalf("recall %d: code %d %q, msgId %q (%v); want 0 and RC1", i+1, resp.Code, resp.Remark, r.MsgID, err)
		}
	}
	if resp := f.invoke(t, rmq.CodeRecallMessage, map[string]string{"topic": "Orders"}, nil); resp.Code == rmq.RespSuccess || !strings.Contains(resp.Remark, "recallHandle") {
		t.Fatalf("recall without a handle: code %d %q; want a refusal naming recallHandle", resp.Code, resp.Remark)
	}
}

// TestRecallMessageOnSlave: a slave answers RECALL_MESSAGE with 11
// SLAVE_NOT_AVAILABLE, as RocketMQ does, before looking at the topic.
func TestRecallMessageOnSlave(t *testing.T) {
	f := startFrontWith(t, func(c *daemon.BrokerConfig) { c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave })
	resp := f.invoke(t, rmq.CodeRecallMessage, map[string]string{"topic": "Nope", "recallHandle": message.EncodeRecallHandle("Nope", "b", time.Now().Add(time.Minute).UnixMilli(), "U")}, nil)
	if resp.Code != rmq.RespSlaveNotAvailable || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("recall on a slave: code %d %q; want 11 SLAVE_NOT_AVAILABLE", resp.Code, resp.Remark)
	}
}
