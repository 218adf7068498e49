package brokerfront_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// sendN sends n messages to queue 0 of topic and waits until they are
// there for consumers.
func (f *front) sendN(t *testing.T, topic string, n int) {
	t.Helper()
	before, _ := strconv.ParseInt(f.maxOffset(t, topic), 10, 64)
	for i := range n {
		if resp := f.invoke(t, rmq.CodeSendMessage, sendExt(topic, "", nil), []byte("m"+strconv.Itoa(i))); resp.Code != rmq.RespSuccess {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	f.settledMaxOffset(t, topic, before+int64(n))
}

// popAll pops until it has n messages of group on topic.
func (f *front) popAll(t *testing.T, group, topic string, n int) []popped {
	t.Helper()
	var got []popped
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		resp := f.call(t, popReq(group, topic, 1000))
		switch resp.Code {
		case rmq.RespSuccess:
			got = append(got, popBody(t, resp.Body)...)
		case rmq.RespPollingTimeout:
		default:
			t.Fatalf("pop answered %d %q", resp.Code, resp.Remark)
		}
	}
	if len(got) != n {
		t.Fatalf("popped %d messages, want %d", len(got), n)
	}
	return got
}

// awaitParked waits until the broker holds n parked pops and
// notifications.
func (f *front) awaitParked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.core.ParkedPops() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d pops and notifications parked after 10s, want %d", f.core.ParkedPops(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// callAsync sends req from a goroutine of its own and hands on the
// answer, nil when the call failed.
func (f *front) callAsync(req *remoting.Command) <-chan *remoting.Command {
	out := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := f.client.Invoke(ctx, f.addr, req)
		if err != nil {
			resp = nil
		}
		out <- resp
	}()
	return out
}

// batchAckOf is the BATCH_ACK_MESSAGE body a Java client builds from the
// extra infos it acknowledges (MQClientAPIImpl.batchAckMessageAsync): one
// BatchAck per retry, queue, ck offset and pop time.
func batchAckOf(group, topic string, exs ...rmq.ExtraInfo) rmq.BatchAckRequest {
	var r rmq.BatchAckRequest
	at := map[string]int{}
	for _, e := range exs {
		key := e.Retry + " " + strconv.Itoa(int(e.QueueID)) + " " + strconv.FormatInt(e.CkQueueOffset, 10) + " " + strconv.FormatInt(e.PopTime, 10)
		i, ok := at[key]
		if !ok {
			i = len(r.Acks)
			at[key] = i
			r.Acks = append(r.Acks, rmq.BatchAck{ConsumerGroup: group, Topic: topic, Retry: e.Retry, StartOffset: e.CkQueueOffset,
				QueueID: e.QueueID, ReviveQueueID: e.ReviveQid, PopTime: e.PopTime, InvisibleTime: e.InvisibleTime})
		}
		r.Acks[i].Offsets = append(r.Acks[i].Offsets, e.QueueOffset)
		r.BrokerName = e.BrokerName
	}
	return r
}

func extraInfos(t *testing.T, got []popped) []rmq.ExtraInfo {
	t.Helper()
	out := make([]rmq.ExtraInfo, len(got))
	for i, p := range got {
		e, err := rmq.ParseExtraInfo(p.ck)
		if err != nil {
			t.Fatalf("message %d POP_CK %q: %v", i, p.ck, err)
		}
		out[i] = e
	}
	return out
}

// TestBatchAckOverRemoting: a BATCH_ACK_MESSAGE as a Java client builds
// it acknowledges every message it names in one request: of three popped
// messages, the two named right are acknowledged (a second batch of them
// is refused as already acknowledged, a single ack too), the third, named
// with a pop time that is not its delivery's, is refused — the batch
// still answers SUCCESS, as RocketMQ's, with a remark that counts and
// names it; a batch refused whole answers the refusal's code — and is
// still in flight (a right batch ack of it succeeds). An empty batch is NO_MESSAGE, a body that does not decode
// SYSTEM_ERROR.
func TestBatchAckOverRemoting(t *testing.T) {
	f := startFront(t)
	f.sendN(t, "Orders", 3)
	exs := extraInfos(t, f.popAll(t, "pg1", "Orders", 3))

	stale := exs[2]
	stale.PopTime-- // not the time its delivery ends: a stale or forged ack
	req := batchAckOf("pg1", "Orders", exs[0], exs[1])
	req.Acks = append(req.Acks, batchAckOf("pg1", "Orders", stale).Acks...)
	resp := f.call(t, rmq.EncodeBatchAckRequest(req))
	if resp.Code != rmq.RespSuccess || !strings.Contains(resp.Remark, "acknowledged 2 of 3") ||
		!strings.Contains(resp.Remark, "offset "+strconv.FormatInt(stale.QueueOffset, 10)+":") {
		t.Fatalf("batch with a stale entry: %d %q", resp.Code, resp.Remark)
	}
	resp = f.call(t, rmq.EncodeBatchAckRequest(batchAckOf("pg1", "Orders", exs[0], exs[1])))
	if resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "acknowledged 0 of 2") || !strings.Contains(resp.Remark, "already acknowledged") {
		t.Fatalf("second batch of the acknowledged two: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.call(t, rmq.EncodeAckRequest(rmq.AckRequestFor("pg1", "Orders", exs[0]))); resp.Code != rmq.RespInvalidParameter {
		t.Fatalf("single ack of a batch-acknowledged message: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.call(t, rmq.EncodeBatchAckRequest(batchAckOf("pg1", "Orders", exs[2]))); resp.Code != rmq.RespSuccess {
		t.Fatalf("batch ack of the one left in flight: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.call(t, popReq("pg1", "Orders", 0)); resp.Code != rmq.RespPullNotFound {
		t.Fatalf("pop after every message was acknowledged: %d %q", resp.Code, resp.Remark)
	}

	if resp := f.call(t, remoting.NewWideRequest(rmq.CodeBatchAckMessage, nil, []byte(`{"acks":[]}`))); resp.Code != rmq.RespNoMessage {
		t.Fatalf("empty batch: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.call(t, remoting.NewWideRequest(rmq.CodeBatchAckMessage, nil, []byte(`{"acks":[{"t":"Orders"}]}`))); resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "consumer group") {
		t.Fatalf("batch without a group: %d %q", resp.Code, resp.Remark)
	}
}

// TestPeekOverRemoting: PEEK_MESSAGE answers the messages a pop would take
// and restNum, and takes nothing: the next pop gets the same messages;
// once they are popped a peek finds none (PULL_NOT_FOUND, restNum 0). A
// queueId beyond the topic's queues is INVALID_PARAMETER, a missing topic
// TOPIC_NOT_EXIST.
func TestPeekOverRemoting(t *testing.T) {
	f := startFront(t)
	f.sendN(t, "Orders", 2)
	peek := func(queueID int32) *remoting.Command {
		return f.call(t, rmq.EncodePeekRequest(rmq.PeekRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: queueID, MaxMsgNums: 32}))
	}
	for _, q := range []int32{-1, 0} {
		resp := peek(q)
		h, err := rmq.DecodePopResponse(resp)
		got := popBody(t, resp.Body)
		if resp.Code != rmq.RespSuccess || err != nil || h.RestNum != 2 || len(got) != 2 {
			t.Fatalf("peek of queue %d: %d %q, header %+v (%v), %d messages", q, resp.Code, resp.Remark, h, err, len(got))
		}
		for i, p := range got {
			if p.m.QueueOffset != int64(i) || string(p.m.Body) != "m"+strconv.Itoa(i) || p.ck != "" {
				t.Fatalf("peeked message %d: offset %d body %q POP_CK %q", i, p.m.QueueOffset, p.m.Body, p.ck)
			}
		}
	}
	popped := f.popAll(t, "pg1", "Orders", 2)
	if popped[0].m.QueueOffset != 0 || popped[1].m.QueueOffset != 1 {
		t.Fatalf("the pop after the peeks took offsets %d and %d, want 0 and 1", popped[0].m.QueueOffset, popped[1].m.QueueOffset)
	}
	resp := peek(-1)
	if h, err := rmq.DecodePopResponse(resp); resp.Code != rmq.RespPullNotFound || err != nil || h.RestNum != 0 || len(resp.Body) != 0 {
		t.Fatalf("peek after the pop: %d %q, header %+v (%v)", resp.Code, resp.Remark, h, err)
	}
	if resp := peek(1000); resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "read queues") {
		t.Fatalf("peek of queue 1000: %d %q", resp.Code, resp.Remark)
	}
	resp = f.call(t, rmq.EncodePeekRequest(rmq.PeekRequest{ConsumerGroup: "pg1", Topic: "NoSuchTopic", QueueID: -1, MaxMsgNums: 1}))
	if resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("peek of a missing topic: %d %q", resp.Code, resp.Remark)
	}
}

// TestNotificationOverRemoting: NOTIFICATION on a topic without messages
// answers hasMsg false once its pollTime has passed; with a message there
// true at once; parked, true when a message arrives — and while it is
// parked the same connection is served (POLLING_INFO answers, and counts
// the parked pop but not the notification).
func TestNotificationOverRemoting(t *testing.T) {
	f := startFront(t)
	f.sendN(t, "Orders", 1)
	f.popAll(t, "pg1", "Orders", 1) // Orders exists and has nothing new for pg1
	notify := func(pollMS int64) *remoting.Command {
		return f.call(t, rmq.EncodeNotificationRequest(rmq.NotificationRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: -1,
			PollTime: pollMS, BornTime: time.Now().UnixMilli()}))
	}
	start := time.Now()
	resp := notify(100)
	waited := time.Since(start)
	if n, err := rmq.DecodeNotificationResponse(resp); resp.Code != rmq.RespSuccess || err != nil || n.HasMsg || n.PollingFull {
		t.Fatalf("notification on nothing: %d %q, %+v (%v)", resp.Code, resp.Remark, n, err)
	}
	if waited < 90*time.Millisecond {
		t.Fatalf("notification with pollTime 100 answered after %v", waited)
	}

	f.sendN(t, "Orders", 1)
	if n, err := rmq.DecodeNotificationResponse(notify(0)); err != nil || !n.HasMsg {
		t.Fatalf("notification with a message there: %+v (%v)", n, err)
	}
	f.popAll(t, "pg1", "Orders", 1)

	answered := f.callAsync(rmq.EncodeNotificationRequest(rmq.NotificationRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: -1,
		PollTime: 10000, BornTime: time.Now().UnixMilli()}))
	f.awaitParked(t, 1)
	popped := f.callAsync(popReq("pg1", "Orders", 10000))
	f.awaitParked(t, 2)
	info := f.call(t, rmq.EncodePollingInfoRequest(rmq.PollingInfoRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: -1}))
	if p, err := rmq.DecodePollingInfoResponse(info); info.Code != rmq.RespSuccess || err != nil || p.PollingNum != 1 {
		t.Fatalf("polling info with a pop and a notification parked: %d %q, %+v (%v)", info.Code, info.Remark, p, err)
	}
	f.sendN(t, "Orders", 1)
	select {
	case resp := <-answered:
		if resp == nil {
			t.Fatal("the parked notification failed")
		}
		if n, err := rmq.DecodeNotificationResponse(resp); resp.Code != rmq.RespSuccess || err != nil || !n.HasMsg {
			t.Fatalf("parked notification on an arrival: %d %q, %+v (%v)", resp.Code, resp.Remark, n, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked notification did not answer within 5s of an arrival")
	}
	select {
	case resp := <-popped:
		if resp == nil {
			t.Fatal("the parked pop failed")
		}
		if got := popBody(t, resp.Body); resp.Code != rmq.RespSuccess || len(got) != 1 {
			t.Fatalf("parked pop on an arrival: %d %q, %d messages", resp.Code, resp.Remark, len(got))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked pop did not answer within 5s of an arrival")
	}
	info = f.call(t, rmq.EncodePollingInfoRequest(rmq.PollingInfoRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: -1}))
	if p, _ := rmq.DecodePollingInfoResponse(info); p.PollingNum != 0 {
		t.Fatalf("polling info once the pop answered: %+v", p)
	}

	resp = f.call(t, rmq.EncodeNotificationRequest(rmq.NotificationRequest{ConsumerGroup: "pg1", Topic: "Orders", QueueID: 1000, PollTime: 0}))
	if resp.Code != rmq.RespInvalidParameter {
		t.Fatalf("notification of queue 1000: %d %q", resp.Code, resp.Remark)
	}
	resp = f.call(t, rmq.EncodePollingInfoRequest(rmq.PollingInfoRequest{ConsumerGroup: "pg1", Topic: "NoSuchTopic", QueueID: -1}))
	if resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("polling info of a missing topic: %d %q", resp.Code, resp.Remark)
	}
}

// TestNotificationWhenPollingIsFull: with LongPollMaxTotal requests
// waiting already a NOTIFICATION that would wait answers at once, 0 with
// hasMsg false and pollingFull true (RocketMQ's POLLING_FULL answer).
func TestNotificationWhenPollingIsFull(t *testing.T) {
	f := startFrontWith(t, func(c *daemon.BrokerConfig) { c.Broker.LongPollMaxTotal = 1 })
	popped := f.callAsync(popReq("pg1", "TBW102", 10000))
	f.awaitParked(t, 1)
	resp := f.call(t, rmq.EncodeNotificationRequest(rmq.NotificationRequest{ConsumerGroup: "pg2", Topic: "TBW102", QueueID: -1, PollTime: 10000}))
	if n, err := rmq.DecodeNotificationResponse(resp); resp.Code != rmq.RespSuccess || err != nil || n.HasMsg || !n.PollingFull {
		t.Fatalf("notification with the long polls full: %d %q, %+v (%v)", resp.Code, resp.Remark, n, err)
	}
	f.sendN(t, "TBW102", 1) // answers the parked pop
	select {
	case resp := <-popped:
		if resp == nil || resp.Code != rmq.RespSuccess {
			t.Fatalf("the parked pop: %+v", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked pop did not answer within 5s of an arrival")
	}
}
