package broker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// replyConn is a connection handler that takes reply pushes.
type replyConn struct {
	recHandler
	pmu    sync.Mutex
	pushes []ReplyPush
	fail   error // PushReply returns it
}

func (h *replyConn) PushReply(_ context.Context, r ReplyPush) error {
	h.pmu.Lock()
	defer h.pmu.Unlock()
	h.pushes = append(h.pushes, r)
	return h.fail
}

func (h *replyConn) got() []ReplyPush {
	h.pmu.Lock()
	defer h.pmu.Unlock()
	return append([]ReplyPush(nil), h.pushes...)
}

func newReplyConn(e *env, clientID string, producer bool, fail error) (uint64, *replyConn) {
	h := &replyConn{recHandler: recHandler{log: &hookLog{}}, fail: fail}
	id := e.b.RegisterConn(ConnInfo{Protocol: ProtocolRemoting}, h)
	hb := Heartbeat{ClientID: clientID}
	if producer {
		hb.Producers = []string{"requesters"}
	} else {
		hb.Consumers = []ConsumerData{{Group: "cg", Subscriptions: []Subscription{{Topic: "T", Expression: "*"}}}}
	}
	e.b.Heartbeat(id, hb)
	return id, h
}

func replyReq(e *env, replyTo, body string) *SendRequest {
	kv := []string{"CORRELATION_ID", "corr-1", "MSG_TYPE", "reply"}
	if replyTo != "" {
		kv = append(kv, "REPLY_TO_CLIENT", replyTo)
	}
	return sendReq(ReplyTopic(e.b.Config().ClusterName), 0, body, kv...)
}

func TestReplyTopicIsCreatedAtStart(t *testing.T) {
	e := newEnv(t)
	name := ReplyTopic(e.b.Config().ClusterName)
	if name != "DefaultCluster_REPLY_TOPIC" {
		t.Fatalf("reply topic %q, want DefaultCluster_REPLY_TOPIC (RocketMQ's <cluster>_REPLY_TOPIC)", name)
	}
	tc, ok := e.b.Topic(name)
	if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != PermRead|PermWrite {
		t.Fatalf("reply topic %+v (found %v), want 1 read and 1 write queue, perm 6", tc, ok)
	}
}

// TestReplyIsPushedToTheNewestProducerConnection: of the requester's
// producer connections the newest gets the push, and only it (a consumer-
// only connection of the same client id is not a requester); the reply is
// stored in the reply topic as sent, and the push carries PUSH_REPLY_TIME
// and the broker's address.
func TestReplyIsPushedToTheNewestProducerConnection(t *testing.T) {
	e := newEnv(t)
	_, older := newReplyConn(e, "REQ", true, nil)
	_, newer := newReplyConn(e, "REQ", true, nil)
	_, consumer := newReplyConn(e, "REQ", false, nil)
	_, other := newReplyConn(e, "OTHER", true, nil)

	res, err := e.b.Reply(context.Background(), replyReq(e, "REQ", "answer"), "REQ")
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	if len(newer.got()) != 1 || len(older.got()) != 0 || len(consumer.got()) != 0 || len(other.got()) != 0 {
		t.Fatalf("pushes: newer %d, older %d, consumer-only %d, other client %d; want 1, 0, 0, 0",
			len(newer.got()), len(older.got()), len(consumer.got()), len(other.got()))
	}
	p := newer.got()[0]
	if string(p.Send.Body) != "answer" || p.Send.Topic != ReplyTopic(e.b.Config().ClusterName) {
		t.Fatalf("pushed %q to %s", p.Send.Body, p.Send.Topic)
	}
	props := message.ParseProperties(p.Properties)
	if props["CORRELATION_ID"] != "corr-1" || props[PropertyPushReplyTime] != strconv.FormatInt(t0.UnixMilli(), 10) {
		t.Fatalf("pushed properties %v, want the reply's with PUSH_REPLY_TIME=%d", props, t0.UnixMilli())
	}
	if p.StoreHost != e.b.Config().StoreHost || p.StoreTimestamp != t0.UnixMilli() {
		t.Fatalf("store host %v at %d, want %v at %d", p.StoreHost, p.StoreTimestamp, e.b.Config().StoreHost, t0.UnixMilli())
	}
	if res.MsgID == "0" || res.MsgID == "" || res.QueueID != 0 || res.QueueOffset != 0 {
		t.Fatalf("result %+v, want the stored record's id at queue 0 offset 0", res)
	}
	e.waitMax(ReplyTopic(e.b.Config().ClusterName), 0, 1)
	e.subscribe(1000, "inspector", "inspect", ReplyTopic(e.b.Config().ClusterName), "*")
	got := e.mustPull(pullReq("inspect", ReplyTopic(e.b.Config().ClusterName), 0, 0))
	if len(got.recs) != 1 || got.bodies[0] != "answer" || got.recs[0].Property("CORRELATION_ID") != "corr-1" {
		t.Fatalf("stored %v", got.bodies)
	}
}

// TestFailedPushIsNotRepeatedOnAnotherConnection: a push that failed (it
// may have timed out after its delivery) is not sent again to an older
// connection of the requester, which would duplicate the reply.
func TestFailedPushIsNotRepeatedOnAnotherConnection(t *testing.T) {
	e := newEnv(t)
	_, older := newReplyConn(e, "REQ", true, nil)
	_, newer := newReplyConn(e, "REQ", true, context.DeadlineExceeded)
	if _, err := e.b.Reply(context.Background(), replyReq(e, "REQ", "answer"), "REQ"); KindOf(err) != KindSystemError || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reply over a failing push: %v, want a system error caused by the push", err)
	}
	if len(newer.got()) != 1 || len(older.got()) != 0 {
		t.Fatalf("pushes: newer %d, older %d; want 1, 0", len(newer.got()), len(older.got()))
	}
}

// TestReplyThatReachesNoRequesterIsRefusedAndStored: as Java, a reply
// whose requester is not connected (or not named) is answered with a
// system error naming the requester (the replier's client retries it),
// and stored all the same.
func TestReplyThatReachesNoRequesterIsRefusedAndStored(t *testing.T) {
	e := newEnv(t)
	_, failing := newReplyConn(e, "FAILS", true, errors.New("write tcp 10.0.0.9:10911: broken pipe"))
	for i, tc := range []struct {
		replyTo, want string
	}{
		{"GONE", "requester GONE has no producer connected"},
		{"", "no REPLY_TO_CLIENT property"},
		{"FAILS", "pushing the reply to requester FAILS failed"},
	} {
		_, err := e.b.Reply(context.Background(), replyReq(e, tc.replyTo, "late"), tc.replyTo)
		var be *Error
		if !errors.As(err, &be) || be.Kind != KindSystemError || !strings.Contains(be.Msg, tc.want) {
			t.Fatalf("reply to %q: %v, want a system error saying %q", tc.replyTo, err, tc.want)
		}
		if strings.Contains(be.Msg, "broken pipe") {
			t.Fatalf("the client's message carries the cause: %q", be.Msg)
		}
		e.waitMax(ReplyTopic(e.b.Config().ClusterName), 0, int64(i+1))
	}
	if n := len(failing.got()); n != 1 {
		t.Fatalf("the failing requester got %d pushes, want 1", n)
	}
}

// TestReplyRefusedBeforeThePush: what a send would refuse before storing
// is not pushed either.
func TestReplyRefusedBeforeThePush(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.MaxMessageBytes = 16 })
	_, req := newReplyConn(e, "REQ", true, nil)
	big := replyReq(e, "REQ", strings.Repeat("x", 17))
	batch := replyReq(e, "REQ", "b")
	batch.Batch = true
	badTopic := replyReq(e, "REQ", "t")
	badTopic.Topic = "no spaces"
	for name, r := range map[string]*SendRequest{"big": big, "batch": batch, "bad topic": badTopic} {
		if _, err := e.b.Reply(context.Background(), r, "REQ"); KindOf(err) != KindMessageIllegal {
			t.Fatalf("%s: %v, want message illegal", name, err)
		}
	}
	if n := len(req.got()); n != 0 {
		t.Fatalf("%d refused replies were pushed", n)
	}
}

// TestRequesterIndexFollowsItsConnections: a connection that changes its
// client id or closes is no longer found under the old id.
func TestRequesterIndexFollowsItsConnections(t *testing.T) {
	e := newEnv(t)
	a, _ := newReplyConn(e, "A", true, nil)
	b, _ := newReplyConn(e, "A", true, nil)
	if got := e.b.clients.producerConnsOf("A"); len(got) != 2 || got[0] != b || got[1] != a {
		t.Fatalf("A's connections %v, want [%d %d]", got, b, a)
	}
	e.b.Heartbeat(b, Heartbeat{ClientID: "B", Producers: []string{"requesters"}})
	if got := e.b.clients.producerConnsOf("A"); len(got) != 1 || got[0] != a {
		t.Fatalf("A's connections after b became B: %v, want [%d]", got, a)
	}
	if got := e.b.clients.producerConnsOf("B"); len(got) != 1 || got[0] != b {
		t.Fatalf("B's connections %v, want [%d]", got, b)
	}
	e.b.ConnClosed(a)
	if got := e.b.clients.producerConnsOf("A"); len(got) != 0 {
		t.Fatalf("A's connections after close: %v", got)
	}
	e.clk.Advance(e.bcfg.ClientExpiry + e.b.expiryInterval())
	e.b.expireClients()
	if got := e.b.clients.producerConnsOf("B"); len(got) != 0 {
		t.Fatalf("B's connections after its producer expired: %v", got)
	}
	e.b.clients.mu.Lock()
	n := len(e.b.clients.byClient)
	e.b.clients.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d client ids left in the index", n)
	}
}

// TestNotedRequesterIsFoundUntilItHeartBeats: a connection that sent a
// request before any heartbeat is found as its requester, after the
// heart-beaten ones; a connection known by a heartbeat is not noted under
// another id; the note ends with a heartbeat or the connection.
func TestNotedRequesterIsFoundUntilItHeartBeats(t *testing.T) {
	e := newEnv(t)
	quiet := &replyConn{recHandler: recHandler{log: &hookLog{}}}
	q := e.b.RegisterConn(ConnInfo{Protocol: ProtocolRemoting}, quiet)
	e.b.NoteRequester(q, "REQ")
	if _, err := e.b.Reply(context.Background(), replyReq(e, "REQ", "early"), "REQ"); err != nil {
		t.Fatalf("reply to a requester known by its request: %v", err)
	}
	if got := quiet.got(); len(got) != 1 || string(got[0].Send.Body) != "early" {
		t.Fatalf("the noted connection got %d pushes", len(got))
	}
	beat, _ := newReplyConn(e, "REQ", true, nil)
	if got := e.b.clients.producerConnsOf("REQ"); len(got) != 2 || got[0] != beat || got[1] != q {
		t.Fatalf("REQ's connections %v, want the heart-beaten %d before the noted %d", got, beat, q)
	}
	consumer, _ := newReplyConn(e, "CONSUMER", false, nil)
	e.b.NoteRequester(consumer, "REQ") // a consumer resending the request
	e.b.NoteRequester(q, "REQ2")       // the note moves with the client id
	if got := e.b.clients.producerConnsOf("REQ"); len(got) != 1 || got[0] != beat {
		t.Fatalf("REQ's connections %v, want only %d", got, beat)
	}
	if got := e.b.clients.producerConnsOf("REQ2"); len(got) != 1 || got[0] != q {
		t.Fatalf("REQ2's connections %v, want [%d]", got, q)
	}
	e.b.Heartbeat(q, Heartbeat{ClientID: "OTHER", Producers: []string{"p"}})
	if got := e.b.clients.producerConnsOf("REQ2"); len(got) != 0 {
		t.Fatalf("the note outlived the connection's heartbeat: %v", got)
	}
	late := e.b.RegisterConn(ConnInfo{Protocol: ProtocolRemoting}, quiet)
	e.b.NoteRequester(late, "REQ3")
	e.b.ConnClosed(late)
	e.b.NoteRequester(late, "REQ3") // a request that raced with the close
	if got := e.b.clients.producerConnsOf("REQ3"); len(got) != 0 {
		t.Fatalf("the note outlived its connection: %v", got)
	}
	e.b.clients.mu.Lock()
	notes, ids := len(e.b.clients.noted), len(e.b.clients.notedBy)
	e.b.clients.mu.Unlock()
	if notes != 0 || ids != 0 {
		t.Fatalf("%d notes and %d noted ids left", notes, ids)
	}
}

func TestRemarkNamesALongRequesterIDShortly(t *testing.T) {
	e := newEnv(t)
	id := strings.Repeat("é", 10000)
	_, err := e.b.Reply(context.Background(), replyReq(e, id, "x"), id)
	var be *Error
	if !errors.As(err, &be) || len(be.Msg) > 400 || !strings.Contains(be.Msg, "has no producer connected") {
		t.Fatalf("reply to a %d-byte client id: %v", len(id), err)
	}
}
