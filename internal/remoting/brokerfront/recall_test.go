package brokerfront_test

import (
	"testing"

	"github.com/petrelmq/petrel/internal/message"
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
