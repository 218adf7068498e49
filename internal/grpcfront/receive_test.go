package grpcfront

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

// fakePop stands in for the broker's pop API: it records the calls and
// answers what the test set.
type fakePop struct {
	mu     sync.Mutex
	pops   []broker.PopRequest
	popped []broker.PoppedMessage
	popErr error
	block  bool // Pop waits for ctx to end
	parked chan struct{}
	acks   []string
	ackErr map[string]error
	// ackBatches records the size of each AckBatch call.
	ackBatches []int
	changes    []string
	changed    time.Duration
	chErr      error
	dlq        []string
}

func (f *fakePop) Pop(ctx context.Context, req *broker.PopRequest) ([]broker.PoppedMessage, error) {
	f.mu.Lock()
	f.pops = append(f.pops, *req)
	block, out, err := f.block, f.popped, f.popErr
	f.mu.Unlock()
	if block {
		f.parked <- struct{}{}
		<-ctx.Done()
		return nil, nil
	}
	return out, err
}

func (f *fakePop) AckBatch(reqs []broker.AckRequest) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ackBatches = append(f.ackBatches, len(reqs))
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		f.acks = append(f.acks, r.Group+"/"+r.Topic+"/"+r.Handle)
		errs[i] = f.ackErr[r.Handle]
	}
	return errs
}

func (f *fakePop) ChangeInvisible(group, topic, handle string, d time.Duration) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, group+"/"+topic+"/"+handle)
	f.changed = d
	if f.chErr != nil {
		return "", f.chErr
	}
	return handle + "-next", nil
}

func (f *fakePop) ForwardPopToDLQ(group, topic, handle string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dlq = append(f.dlq, group+"/"+topic+"/"+handle)
	return f.ackErr[handle]
}

func (e *env) fakePop() *fakePop {
	f := &fakePop{parked: make(chan struct{}, 8), ackErr: map[string]error{}}
	e.s.pop = f
	return f
}

// storedRecord sends a message and returns its stored record.
func (e *env) storedRecord(topic, id, body, tag string) message.Record {
	e.t.Helper()
	m := msg(topic, id, body)
	if tag != "" {
		m.SystemProperties.Tag = ptr(tag)
	}
	if got := e.send("p1", m); code(got.Status) != v2.Code_OK {
		e.t.Fatalf("send: %v", got.Status)
	}
	for _, rs := range e.awaitRecords(topic, 1) {
		for _, r := range rs {
			if prop(r, message.PropertyUniqKey) == id {
				return r
			}
		}
	}
	e.t.Fatalf("record %s not found", id)
	return nil
}

func receiveReq(group, topic string, batch int32, inv time.Duration) *v2.ReceiveMessageRequest {
	return &v2.ReceiveMessageRequest{
		Group:             &v2.Resource{Name: group},
		MessageQueue:      &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: 3},
		FilterExpression:  &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "TagA || TagB"},
		BatchSize:         batch,
		InvisibleDuration: durpb(inv),
	}
}

// receive runs a receive and returns every response until the stream
// ends.
func (e *env) receive(ctx context.Context, req *v2.ReceiveMessageRequest) []*v2.ReceiveMessageResponse {
	e.t.Helper()
	stream, err := e.c.ReceiveMessage(ctx, req)
	if err != nil {
		e.t.Fatalf("receive: %v", err)
	}
	var out []*v2.ReceiveMessageResponse
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			e.t.Fatalf("receive stream: %v (after %d responses)", err, len(out))
		}
		out = append(out, r)
	}
}

func TestReceivePassesTheGroupPolicyAndAnswersInOrder(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 4)
	e.putGroup("g1", 2, map[string]string{FIFOAttribute: "true"})
	rec := e.storedRecord("T1", "ID-R1", "payload", "TagA")
	f := e.fakePop()
	until := e.clk.Now().Add(20 * time.Second)
	f.popped = []broker.PoppedMessage{{Record: rec, Handle: "H1", Attempt: 2, InvisibleUntil: until}}
	// The client's Settings give the long-polling window.
	e.telemetry("c1", consumerSettings("g1", "T1", 4*time.Second))

	ctx, cancel := context.WithTimeout(e.ctx("c1"), 7*time.Second) // await 4 s + 3 s
	defer cancel()
	resps := e.receive(ctx, receiveReq("g1", "T1", 50, 20*time.Second))
	if len(resps) != 3 || code(resps[0].GetStatus()) != v2.Code_OK || resps[1].GetMessage() == nil || resps[2].GetDeliveryTimestamp() == nil {
		t.Fatalf("responses %v; want status OK, one message, delivery timestamp", resps)
	}
	m := resps[1].GetMessage()
	sp := m.GetSystemProperties()
	if sp.GetReceiptHandle() != "H1" || sp.GetDeliveryAttempt() != 2 || sp.MessageId != "ID-R1" || string(m.Body) != "payload" ||
		sp.GetTag() != "TagA" || m.Topic.GetName() != "T1" || sp.BodyEncoding != v2.Encoding_IDENTITY ||
		sp.BodyDigest.GetChecksum() == "" || sp.GetInvisibleDuration().AsDuration() != 20*time.Second {
		t.Fatalf("delivered %v", m)
	}
	if len(f.pops) != 1 {
		t.Fatalf("%d pops", len(f.pops))
	}
	p := f.pops[0]
	if p.Group != "g1" || p.Topic != "T1" || p.Expression != "TagA || TagB" || p.ExpressionType != broker.ExpressionTag ||
		p.MaxMsgs != maxReceiveBatch || p.Invisible != 20*time.Second || !p.FIFO || p.MaxAttempts != 3 {
		t.Fatalf("pop request %+v", p)
	}
	// Wait: the 4 s long poll fits in the 7 s deadline minus the 1.5 s margin.
	if p.Wait != 4*time.Second {
		t.Fatalf("pop wait %v, want the Settings' 4s", p.Wait)
	}
}

func TestReceiveWaitEndsBeforeTheDeadline(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	f := e.fakePop()
	e.telemetry("c1", consumerSettings("g1", "T1", 0)) // no await: 3 s deadline
	ctx, cancel := context.WithTimeout(e.ctx("c1"), 3*time.Second)
	defer cancel()
	resps := e.receive(ctx, receiveReq("g1", "T1", 1, 5*time.Second))
	if len(resps) < 1 || code(resps[0].GetStatus()) != v2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("empty receive: %v, want MESSAGE_NOT_FOUND", resps)
	}
	w := f.pops[0].Wait
	if w <= 0 || w > 1500*time.Millisecond {
		t.Fatalf("pop wait %v, want at most the 3 s deadline minus the 1.5 s margin", w)
	}
	if f.pops[0].FIFO || f.pops[0].MaxAttempts != int(e.b.Config().DefaultMaxReconsumeTimes+1) || f.pops[0].MaxMsgs != 1 {
		t.Fatalf("pop request %+v for a group without config", f.pops[0])
	}
}

func TestPollWait(t *testing.T) {
	now := t0
	for _, c := range []struct {
		longPoll, reqTimeout time.Duration
		left                 time.Duration
		hasDeadline          bool
		want                 time.Duration
	}{
		{0, 3 * time.Second, 0, false, defaultLongPoll},
		{5 * time.Second, 3 * time.Second, 8 * time.Second, true, 5 * time.Second},
		{30 * time.Second, 3 * time.Second, 8 * time.Second, true, 6500 * time.Millisecond},
		{0, 3 * time.Second, 3 * time.Second, true, 1500 * time.Millisecond},
		{0, 0, 3 * time.Second, true, 2500 * time.Millisecond},
		{5 * time.Second, 3 * time.Second, time.Second, true, 0},
	} {
		if got := pollWait(c.longPoll, c.reqTimeout, now.Add(c.left), c.hasDeadline, now); got != c.want {
			t.Errorf("pollWait(%v, %v, +%v, %v) = %v, want %v", c.longPoll, c.reqTimeout, c.left, c.hasDeadline, got, c.want)
		}
	}
}

func TestReceiveRefusals(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	f := e.fakePop()
	cases := []struct {
		name string
		mut  func(r *v2.ReceiveMessageRequest)
		err  error
		want v2.Code
	}{
		{"no group", func(r *v2.ReceiveMessageRequest) { r.Group = nil }, nil, v2.Code_ILLEGAL_CONSUMER_GROUP},
		{"no topic", func(r *v2.ReceiveMessageRequest) { r.MessageQueue = nil }, nil, v2.Code_ILLEGAL_TOPIC},
		{"unknown topic", func(r *v2.ReceiveMessageRequest) { r.MessageQueue.Topic.Name = "Nope" }, nil, v2.Code_TOPIC_NOT_FOUND},
		{"no invisible time", func(r *v2.ReceiveMessageRequest) { r.InvisibleDuration = nil }, nil, v2.Code_ILLEGAL_INVISIBLE_TIME},
		{"invisible too short", func(r *v2.ReceiveMessageRequest) { r.InvisibleDuration = durpb(time.Millisecond) }, nil, v2.Code_ILLEGAL_INVISIBLE_TIME},
		{"invisible too long", func(r *v2.ReceiveMessageRequest) { r.InvisibleDuration = durpb(13 * time.Hour) }, nil, v2.Code_ILLEGAL_INVISIBLE_TIME},
		{"bad batch", func(r *v2.ReceiveMessageRequest) { r.BatchSize = 0 }, nil, v2.Code_BAD_REQUEST},
		{"bad filter type", func(r *v2.ReceiveMessageRequest) { r.FilterExpression.Type = 9 }, nil, v2.Code_ILLEGAL_FILTER_EXPRESSION},
		{"broker: bad expression", nil, &broker.Error{Kind: broker.KindSubscriptionParseFailed, Msg: "bad sql"}, v2.Code_ILLEGAL_FILTER_EXPRESSION},
		{"broker: polling full", nil, &broker.Error{Kind: broker.KindServiceUnavailable, Msg: "too many parked"}, v2.Code_TOO_MANY_REQUESTS},
		{"broker: no permission", nil, &broker.Error{Kind: broker.KindNoPermission, Msg: "not readable"}, v2.Code_FORBIDDEN},
		{"broker: other", nil, errors.New("disk on fire"), v2.Code_INTERNAL_SERVER_ERROR},
	}
	for _, c := range cases {
		req := receiveReq("g1", "T1", 1, 10*time.Second)
		if c.mut != nil {
			c.mut(req)
		}
		f.mu.Lock()
		f.popErr = c.err
		f.mu.Unlock()
		resps := e.receive(e.ctx("c1"), req)
		if len(resps) != 1 || code(resps[0].GetStatus()) != c.want || resps[0].GetStatus().Message == "" {
			t.Errorf("%s: %v, want one status %v with a message", c.name, resps, c.want)
		}
	}
}

func TestShutdownAnswersParkedReceives(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	e.telemetry("p1", producerSettings("T1"))
	f := e.fakePop()
	f.block = true
	done := make(chan []*v2.ReceiveMessageResponse, 1)
	go func() { done <- e.receive(e.ctx("c1"), receiveReq("g1", "T1", 1, 10*time.Second)) }()
	<-f.parked
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case resps := <-done:
		if len(resps) == 0 || code(resps[0].GetStatus()) != v2.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("parked receive answered %v, want MESSAGE_NOT_FOUND", resps)
		}
	case <-time.After(waitLimit):
		t.Fatal("the parked receive was not answered")
	}
	if conns := e.b.ProducerConns("T1"); len(conns) != 0 {
		t.Fatalf("producers %v still registered after shutdown", conns)
	}
}

func TestAckPerEntry(t *testing.T) {
	e := newEnv(t)
	f := e.fakePop()
	f.ackErr["BAD"] = &broker.Error{Kind: broker.KindInvalidReceiptHandle, Msg: "receipt handle does not decode"}
	f.ackErr["OLD"] = &broker.Error{Kind: broker.KindReceiptHandleExpired, Msg: "the invisible time passed"}
	ack := func(handles ...string) *v2.AckMessageResponse {
		req := &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T1"}}
		for _, h := range handles {
			req.Entries = append(req.Entries, &v2.AckMessageEntry{MessageId: "ID-" + h, ReceiptHandle: h})
		}
		resp, err := e.c.AckMessage(e.ctx("c1"), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := ack("H1"); code(r.Status) != v2.Code_OK || code(r.Entries[0].Status) != v2.Code_OK || r.Entries[0].MessageId != "ID-H1" {
		t.Fatalf("ack: %v", r)
	}
	if f.acks[0] != "g1/T1/H1" {
		t.Fatalf("broker ack %q", f.acks[0])
	}
	r := ack("H2", "BAD", "OLD", "")
	want := []v2.Code{v2.Code_OK, v2.Code_INVALID_RECEIPT_HANDLE, v2.Code_INVALID_RECEIPT_HANDLE, v2.Code_INVALID_RECEIPT_HANDLE}
	if code(r.Status) != v2.Code_MULTIPLE_RESULTS || len(r.Entries) != 4 {
		t.Fatalf("mixed ack: %v", r)
	}
	for i, w := range want {
		if code(r.Entries[i].Status) != w || r.Entries[i].Status.Message == "" {
			t.Errorf("entry %d: %v, want %v", i, r.Entries[i].Status, w)
		}
	}
	if r := ack("BAD"); code(r.Status) != v2.Code_INVALID_RECEIPT_HANDLE || !strings.Contains(r.Status.Message, "does not decode") {
		t.Fatalf("single bad ack: %v", r.Status)
	}
	if r := ack(); code(r.Status) != v2.Code_BAD_REQUEST {
		t.Fatalf("ack without entries: %v", r.Status)
	}
	// Too many entries: refused as a whole, nothing reaches the broker.
	before := len(f.acks)
	if r := ack(make([]string, maxAckBatch+1)...); code(r.Status) != v2.Code_BAD_REQUEST || !strings.Contains(r.Status.Message, "limit") || len(f.acks) != before {
		t.Fatalf("ack of %d entries: %v, %d reached the broker", maxAckBatch+1, r.Status, len(f.acks)-before)
	}
}

// TestAckEntriesShareTheSyncs: the entries of one AckMessage are
// acknowledged together, in one broker batch (one fsync of the pop state:
// the broker's TestAckBatchOneSync), not one after another.
func TestAckEntriesShareTheSyncs(t *testing.T) {
	e := newEnv(t)
	f := e.fakePop()
	const n = 8
	req := &v2.AckMessageRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T1"}}
	for i := range n {
		h := "H" + strconv.Itoa(i)
		req.Entries = append(req.Entries, &v2.AckMessageEntry{MessageId: "ID-" + h, ReceiptHandle: h})
	}
	resp, err := e.c.AckMessage(e.ctx("c1"), req)
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_OK || len(resp.Entries) != n {
		t.Fatalf("ack of %d entries: %v", n, resp)
	}
	for i, r := range resp.Entries {
		if h := "H" + strconv.Itoa(i); r.ReceiptHandle != h || r.MessageId != "ID-"+h || code(r.Status) != v2.Code_OK {
			t.Fatalf("entry %d: %v, want handle %s acknowledged", i, r, h)
		}
	}
	if len(f.ackBatches) != 1 || f.ackBatches[0] != n {
		t.Fatalf("broker ack batches %v, want one of %d", f.ackBatches, n)
	}
	for i, a := range f.acks {
		if want := "g1/T1/H" + strconv.Itoa(i); a != want {
			t.Fatalf("broker ack %d: %q, want %q (in the request's order)", i, a, want)
		}
	}
}

func TestChangeInvisibleDuration(t *testing.T) {
	e := newEnv(t)
	f := e.fakePop()
	cid := func(handle string, d *time.Duration) *v2.ChangeInvisibleDurationResponse {
		req := &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T1"},
			ReceiptHandle: handle, MessageId: "ID-1"}
		if d != nil {
			req.InvisibleDuration = durpb(*d)
		}
		resp, err := e.c.ChangeInvisibleDuration(e.ctx("c1"), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	d := 15 * time.Second
	if r := cid("H1", &d); code(r.Status) != v2.Code_OK || r.ReceiptHandle != "H1-next" || f.changed != d || f.changes[0] != "g1/T1/H1" {
		t.Fatalf("change: %v (broker got %v %v)", r, f.changes, f.changed)
	}
	f.chErr = &broker.Error{Kind: broker.KindInvalidReceiptHandle, Msg: "unknown receipt handle"}
	if r := cid("H9", &d); code(r.Status) != v2.Code_INVALID_RECEIPT_HANDLE || r.ReceiptHandle != "H9" {
		t.Fatalf("refused change: %v, want INVALID_RECEIPT_HANDLE echoing the old handle", r)
	}
	neg, long := -time.Second, 13*time.Hour
	for _, c := range []struct {
		handle string
		d      *time.Duration
		want   v2.Code
	}{{"", &d, v2.Code_INVALID_RECEIPT_HANDLE}, {"H2", nil, v2.Code_ILLEGAL_INVISIBLE_TIME},
		{"H2", &neg, v2.Code_ILLEGAL_INVISIBLE_TIME}, {"H2", &long, v2.Code_ILLEGAL_INVISIBLE_TIME}} {
		if r := cid(c.handle, c.d); code(r.Status) != c.want || r.ReceiptHandle != c.handle {
			t.Errorf("handle %q: %v, want %v echoing the handle", c.handle, r, c.want)
		}
	}
}

func TestForwardToDeadLetterQueue(t *testing.T) {
	e := newEnv(t)
	f := e.fakePop()
	f.ackErr["BAD"] = &broker.Error{Kind: broker.KindInvalidReceiptHandle, Msg: "unknown receipt handle"}
	fwd := func(h string) *v2.Status {
		resp, err := e.c.ForwardMessageToDeadLetterQueue(e.ctx("c1"), &v2.ForwardMessageToDeadLetterQueueRequest{
			Group: &v2.Resource{Name: "g1"}, Topic: &v2.Resource{Name: "T1"}, ReceiptHandle: h, MessageId: "ID-1", DeliveryAttempt: 3, MaxDeliveryAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	if st := fwd("H1"); code(st) != v2.Code_OK || f.dlq[0] != "g1/T1/H1" {
		t.Fatalf("forward: %v %v", st, f.dlq)
	}
	if st := fwd("BAD"); code(st) != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("forward bad handle: %v", st)
	}
	if st := fwd(""); code(st) != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("forward without handle: %v", st)
	}
}

// TestBadClientDoesNotDisturbAnother: a client sending garbage gets
// in-band statuses while another client's stream and calls go on.
func TestBadClientDoesNotDisturbAnother(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	good, _ := e.telemetry("good", producerSettings("T1"))
	for range 5 {
		if got := e.send("bad", msg("", "", "")); code(got.Status) == v2.Code_OK {
			t.Fatal("garbage accepted")
		}
		resp, err := e.c.AckMessage(e.ctx("bad"), &v2.AckMessageRequest{Group: &v2.Resource{Name: "g"}, Topic: &v2.Resource{Name: "T1"},
			Entries: []*v2.AckMessageEntry{{MessageId: "x", ReceiptHandle: "garbage"}}})
		if err != nil || code(resp.Status) == v2.Code_OK {
			t.Fatalf("garbage ack: %v %v", resp, err)
		}
	}
	if r := e.settings(good, producerSettings("T1")); code(r.Status) != v2.Code_OK {
		t.Fatalf("good client's stream: %v", r.Status)
	}
	if got := e.send("good", msg("T1", "ID-GOOD", "fine")); code(got.Status) != v2.Code_OK {
		t.Fatalf("good client's send: %v", got.Status)
	}
}
