package brokerfront_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (f *front) call(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.client.Invoke(ctx, f.addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.FullCode(), err)
	}
	return resp
}

// popped is one message of a pop answer as a Java client reads it: the
// record and its POP_CK.
type popped struct {
	m  *message.Message
	ck string
}

func popBody(t *testing.T, body []byte) []popped {
	t.Helper()
	var out []popped
	for len(body) > 0 {
		m, n, err := message.Decode(body)
		if err != nil {
			t.Fatalf("pop body: %v", err)
		}
		ck, _ := message.PropertyOf(m.Properties, rmq.PropertyPopCK)
		out = append(out, popped{m, ck})
		body = body[n:]
	}
	return out
}

func popReq(group, topic string, pollMS int64) *remoting.Command {
	return rmq.EncodePopRequest(rmq.PopRequest{ConsumerGroup: group, Topic: topic, QueueID: -1, MaxMsgNums: 32,
		InvisibleTime: 60000, PollTime: pollMS, BornTime: time.Now().UnixMilli(), InitMode: 0, ExpType: "TAG", Exp: "*"})
}

// TestPopAckChangeInvisibleOverRemoting: a Java pop client's round trip.
// POP_MESSAGE answers the messages with Java's header fields, every
// message with a POP_CK whose fields are its own (queue, offset, broker,
// pop time + invisible time = the handle's time) and whose ninth field is
// the broker's receipt handle; the ACK_MESSAGE a Java client builds from
// it (DefaultMQPushConsumerImpl.ackAsync: queueId and offset from the
// extra info, the extra info verbatim) acknowledges the message, a second
// time it is refused; CHANGE_MESSAGE_INVISIBLETIME answers the new handle,
// after which the old extra info is refused and the message is delivered
// again with reconsume times 1; an extra info rebuilt without the handle
// is refused with a remark that says so.
func TestPopAckChangeInvisibleOverRemoting(t *testing.T) {
	f := startFront(t)
	for i := range 3 {
		if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte{'m', byte('0' + i)}); resp.Code != rmq.RespSuccess {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	f.settledMaxOffset(t, "Orders", 1)
	var got []popped
	var head rmq.PopResponse
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		resp := f.call(t, popReq("pg1", "Orders", 1000))
		h, err := rmq.DecodePopResponse(resp)
		if err != nil {
			t.Fatalf("pop answer %d %q: %v", resp.Code, resp.Remark, err)
		}
		if resp.Code == rmq.RespSuccess {
			head = h
			got = append(got, popBody(t, resp.Body)...)
		} else if resp.Code != rmq.RespPollingTimeout {
			t.Fatalf("pop answered %d %q", resp.Code, resp.Remark)
		}
	}
	if len(got) != 3 {
		t.Fatalf("popped %d messages, want 3", len(got))
	}
	if head.InvisibleTime != 60000 || head.PopTime <= 0 || head.StartOffsetInfo == "" || head.MsgOffsetInfo == "" {
		t.Fatalf("pop header %+v", head)
	}
	if _, err := rmq.ParseOffsetInfo(head.StartOffsetInfo, head.MsgOffsetInfo); err != nil {
		t.Fatalf("offset info as Java parses it: %v", err)
	}
	exs := make([]rmq.ExtraInfo, len(got))
	for i, p := range got {
		e, err := rmq.ParseExtraInfo(p.ck)
		if err != nil {
			t.Fatalf("message %d POP_CK %q: %v", i, p.ck, err)
		}
		if e.Handle == "" || e.QueueID != p.m.QueueID || e.QueueOffset != p.m.QueueOffset || e.BrokerName != "broker-a" ||
			e.Retry != rmq.RetryMarkTopic || e.InvisibleTime != 60000 || e.PopTime <= 0 || p.m.ReconsumeTimes != 0 {
			t.Fatalf("message %d: POP_CK %+v for queue %d offset %d, reconsume times %d", i, e, p.m.QueueID, p.m.QueueOffset, p.m.ReconsumeTimes)
		}
		exs[i] = e
	}

	ack := func(e rmq.ExtraInfo) *remoting.Command {
		return f.call(t, rmq.EncodeAckRequest(rmq.AckRequestFor("pg1", "Orders", e)))
	}
	if resp := ack(exs[0]); resp.Code != rmq.RespSuccess {
		t.Fatalf("ack: %d %q", resp.Code, resp.Remark)
	}
	if resp := ack(exs[0]); resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "already acknowledged") {
		t.Fatalf("second ack: %d %q", resp.Code, resp.Remark)
	}
	noHandle := exs[1]
	noHandle.Handle = ""
	if resp := ack(noHandle); resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "ninth field") {
		t.Fatalf("ack without the handle: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.call(t, rmq.EncodeAckRequest(rmq.AckRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: 0, ExtraInfo: "garbage", Offset: 0})); resp.Code != rmq.RespInvalidParameter {
		t.Fatalf("ack with a malformed extra info: %d %q", resp.Code, resp.Remark)
	}

	// The change a Java client sends (changePopInvisibleTimeAsync): the
	// extra info verbatim, queue and offset from it.
	e := exs[1]
	resp := f.call(t, rmq.EncodeChangeInvisibleRequest(rmq.ChangeInvisibleRequest{ConsumerGroup: "pg1", Topic: "Orders",
		QueueID: e.QueueID, ExtraInfo: e.String(), Offset: e.QueueOffset, InvisibleTime: 0}))
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("change invisible: %d %q", resp.Code, resp.Remark)
	}
	ch, err := rmq.DecodeChangeInvisibleResponse(resp)
	if err != nil || ch.ReceiptHandle == "" || ch.ReceiptHandle == e.Handle || ch.InvisibleTime != 0 || ch.PopTime <= 0 {
		t.Fatalf("change answer %+v: %v", ch, err)
	}
	if resp := ack(e); resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "replaced") {
		t.Fatalf("ack with the handle a change replaced: %d %q", resp.Code, resp.Remark)
	}
	// A refused change still carries the header a Java client decodes
	// before it reads the code.
	resp = f.call(t, rmq.EncodeChangeInvisibleRequest(rmq.ChangeInvisibleRequest{ConsumerGroup: "pg1", Topic: "Orders",
		QueueID: e.QueueID, ExtraInfo: e.String(), Offset: e.QueueOffset, InvisibleTime: 1000}))
	if _, err := rmq.DecodeChangeInvisibleResponse(resp); resp.Code != rmq.RespInvalidParameter || err != nil {
		t.Fatalf("refused change: %d %q, header: %v", resp.Code, resp.Remark, err)
	}
	resp = f.call(t, popReq("pg1", "Orders", 0))
	again := popBody(t, resp.Body)
	if resp.Code != rmq.RespSuccess || len(again) != 1 || again[0].m.QueueOffset != e.QueueOffset || again[0].m.QueueID != e.QueueID || again[0].m.ReconsumeTimes != 1 {
		t.Fatalf("pop after the change: code %d, %d messages", resp.Code, len(again))
	}
	e2, _ := rmq.ParseExtraInfo(again[0].ck)
	if resp := ack(e2); resp.Code != rmq.RespSuccess {
		t.Fatalf("ack of the redelivery: %d %q", resp.Code, resp.Remark)
	}

	// Nothing visible: the required header fields, PULL_NOT_FOUND without a
	// wait, POLLING_TIMEOUT after one.
	resp = f.call(t, popReq("pg2", "TBW102", 0))
	if resp.Code != rmq.RespPullNotFound {
		t.Fatalf("empty pop without wait: %d %q", resp.Code, resp.Remark)
	}
	if _, err := rmq.DecodePopResponse(resp); err != nil {
		t.Fatalf("empty pop header: %v", err)
	}
	if resp = f.call(t, popReq("pg2", "TBW102", 50)); resp.Code != rmq.RespPollingTimeout {
		t.Fatalf("empty pop with a wait: %d %q", resp.Code, resp.Remark)
	}
	// A header without a required field.
	bad := popReq("pg1", "Orders", 0)
	delete(bad.ExtFields, "invisibleTime")
	if resp = f.call(t, bad); resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "invisibleTime") {
		t.Fatalf("pop without invisibleTime: %d %q", resp.Code, resp.Remark)
	}
}

// TestPopForwardToDLQOverRemoting: Petrel's forward moves a popped
// message to the group's dead-letter queue and acknowledges it.
func TestPopForwardToDLQOverRemoting(t *testing.T) {
	f := startFront(t)
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x")); resp.Code != rmq.RespSuccess {
		t.Fatalf("send: %d %s", resp.Code, resp.Remark)
	}
	f.settledMaxOffset(t, "Orders", 1)
	resp := f.call(t, popReq("pg1", "Orders", 1000))
	got := popBody(t, resp.Body)
	if resp.Code != rmq.RespSuccess || len(got) != 1 {
		t.Fatalf("pop: %d %q, %d messages", resp.Code, resp.Remark, len(got))
	}
	e, _ := rmq.ParseExtraInfo(got[0].ck)
	resp = f.call(t, rmq.EncodeForwardPopToDLQRequest(rmq.ForwardPopToDLQRequest{ConsumerGroup: "pg1", Topic: "Orders", ReceiptHandle: e.Handle}))
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("forward to DLQ: %d %q", resp.Code, resp.Remark)
	}
	if n := f.settledMaxOffset(t, "%DLQ%pg1", 1); n != "1" {
		t.Fatalf("dead-letter queue holds %s messages", n)
	}
	if resp := f.call(t, rmq.EncodeAckRequest(rmq.AckRequestFor("pg1", "Orders", e))); resp.Code == rmq.RespSuccess {
		t.Fatalf("ack after the forward succeeded")
	}
}

// TestSlaveRefusesPops: a slave answers pops, acks and changes
// SERVICE_NOT_AVAILABLE naming the slave (its gRPC front forwards them to
// the master; remoting clients go to the master themselves).
func TestSlaveRefusesPops(t *testing.T) {
	f := startFrontWith(t, func(c *daemon.BrokerConfig) { c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave })
	if resp := f.call(t, popReq("pg1", "TBW102", 0)); resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("pop on a slave: %d %q", resp.Code, resp.Remark)
	}
	e := rmq.ExtraInfo{Retry: "0", BrokerName: "broker-a", QueueOffset: 0, Handle: "AQAAAAAAAAAAAAAAAAAAAAABAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAA"}
	if resp := f.call(t, rmq.EncodeAckRequest(rmq.AckRequestFor("pg1", "TBW102", e))); resp.Code != rmq.RespServiceNotAvailable {
		t.Fatalf("ack on a slave: %d %q", resp.Code, resp.Remark)
	}
}
