package brokerfront_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

const replyTopic = "DefaultCluster_REPLY_TOPIC"

// requester is a client whose producer waits for replies: it answers
// every PUSH_REPLY_MESSAGE_TO_CLIENT with code answer and records it.
type requester struct {
	*pushClient
	pushes chan *remoting.Command
}

func newRequester(t *testing.T, addr, clientID string, answer int16) *requester {
	t.Helper()
	r := &requester{pushes: make(chan *remoting.Command, 16)}
	r.pushClient = &pushClient{addr: addr, got: make(chan pushed, 16)}
	r.cl = remoting.NewClient(remoting.ClientOptions{Handler: func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		if req.Code != rmq.CodePushReplyMessageToClient {
			return nil
		}
		cp := remoting.NewRequest(req.Code, req.ExtFields, append([]byte(nil), req.Body...))
		select {
		case r.pushes <- cp:
		default:
			t.Errorf("reply push dropped: the test's buffer is full")
		}
		return remoting.NewResponse(req, answer, "boom inside the requester")
	}})
	t.Cleanup(func() { r.cl.Close() })
	r.heartbeat(t, clientID, "requesters", "")
	return r
}

func (r *requester) await(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case c := <-r.pushes:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no reply pushed within 10s")
		return nil
	}
}

func replyProps(correlation, replyTo string) string {
	m := map[string]string{rmq.PropertyCorrelationID: correlation, rmq.PropertyMessageType: rmq.MessageTypeReply,
		rmq.PropertyMessageTTL: "3", message.PropertyUniqKey: "U-" + correlation}
	if replyTo != "" {
		m[rmq.PropertyReplyToClient] = replyTo
	}
	return message.EncodeProperties(m)
}

// replyExt is a reply's header in the V1 form (324) or the V2 letters
// (325).
func replyExt(code int16, props string) map[string]string {
	if code == rmq.CodeSendReplyMessageV2 {
		return map[string]string{"a": "repliers", "b": replyTopic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
			"g": "1700000000000", "h": "7", "i": props, "j": "0", "k": "false", "l": "0", "m": "false"}
	}
	return sendExt(replyTopic, props, map[string]string{"producerGroup": "repliers", "bornTimestamp": "1700000000000", "flag": "7"})
}

// TestReplyReachesItsRequesterOverRemoting: a reply sent with either code
// is pushed to the connection of the producer whose client id its
// REPLY_TO_CLIENT names, with every header field Java's client requires,
// its properties plus PUSH_REPLY_TIME and its body; the replier is
// answered like a send, and the reply is stored in the reply topic.
func TestReplyReachesItsRequesterOverRemoting(t *testing.T) {
	f := startFront(t)
	req := newRequester(t, f.addr, "10.0.0.1@REQ", rmq.RespSuccess)
	other := newRequester(t, f.addr, "10.0.0.1@OTHER", rmq.RespSuccess)
	for i, code := range []int16{rmq.CodeSendReplyMessage, rmq.CodeSendReplyMessageV2} {
		corr := "corr-" + strconv.Itoa(int(code))
		body := "answer " + corr
		resp := f.invoke(t, code, replyExt(code, replyProps(corr, "10.0.0.1@REQ")), []byte(body))
		if resp.Code != rmq.RespSuccess {
			t.Fatalf("code %d: answered %d %q", code, resp.Code, resp.Remark)
		}
		sr, err := rmq.DecodeSendResponse(resp)
		if err != nil || sr.MsgID == "" || sr.MsgID == "0" || sr.QueueID != 0 || sr.QueueOffset != int64(i) {
			t.Fatalf("code %d: send answer %+v (%v), want the stored record at queue 0 offset %d", code, sr, err, i)
		}
		push := req.await(t)
		h, err := rmq.DecodePushReply(push)
		if err != nil {
			t.Fatalf("code %d: the push header does not decode: %v (%v)", code, err, push.ExtFields)
		}
		props := message.ParseProperties(h.Properties)
		if h.Topic != replyTopic || h.ProducerGroup != "repliers" || h.Flag != 7 || h.BornTimestamp != 1700000000000 ||
			h.DefaultTopic != "TBW102" || h.QueueID != 0 || string(push.Body) != body {
			t.Fatalf("code %d: pushed %+v body %q", code, h, push.Body)
		}
		if props[rmq.PropertyCorrelationID] != corr || props[rmq.PropertyReplyToClient] != "10.0.0.1@REQ" ||
			props[rmq.PropertyMessageType] != rmq.MessageTypeReply || props["PUSH_REPLY_TIME"] == "" {
			t.Fatalf("code %d: pushed properties %v", code, props)
		}
		if !strings.HasPrefix(h.BornHost, "127.0.0.1:") || h.StoreHost == "" || h.StoreTimestamp <= 0 {
			t.Fatalf("code %d: born host %q, store host %q at %d", code, h.BornHost, h.StoreHost, h.StoreTimestamp)
		}
	}
	select {
	case p := <-other.pushes:
		t.Fatalf("another requester got a reply: %v", p.ExtFields)
	default:
	}
	if got := f.settledMaxOffset(t, replyTopic, 2); got != "2" {
		t.Fatalf("the reply topic holds %s replies, want 2", got)
	}
}

// TestReplyThatCannotBeDeliveredIsASystemError: when the requester is not
// connected, not named, or refuses the push, the replier gets code 1
// (its client retries) with a remark that names the requester and keeps
// the cause (the requester's remark, addresses, Go errors) out.
func TestReplyThatCannotBeDeliveredIsASystemError(t *testing.T) {
	f := startFront(t)
	newRequester(t, f.addr, "REQ-REFUSES", rmq.RespSystemError)
	gone := newRequester(t, f.addr, "REQ-GONE", rmq.RespSuccess)
	gone.cl.Close()
	for _, tc := range []struct {
		name, replyTo, want string
	}{
		{"refused", "REQ-REFUSES", "pushing the reply to requester REQ-REFUSES failed"},
		{"unknown", "REQ-UNKNOWN", "requester REQ-UNKNOWN has no producer connected"},
		{"unnamed", "", "no REPLY_TO_CLIENT property"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.invoke(t, rmq.CodeSendReplyMessage, replyExt(rmq.CodeSendReplyMessage, replyProps(tc.name, tc.replyTo)), []byte("x"))
			if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, tc.want) {
				t.Fatalf("answered %d %q, want code 1 saying %q", resp.Code, resp.Remark, tc.want)
			}
			for _, leak := range []string{"boom", "remoting:", "127.0.0.1", "brokerfront:"} {
				if strings.Contains(resp.Remark, leak) {
					t.Fatalf("remark %q carries the cause (%q)", resp.Remark, leak)
				}
			}
		})
	}
	// The closed requester's registration ends when the broker sees the
	// close: until then a push may still be tried on it (and fail).
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := f.invoke(t, rmq.CodeSendReplyMessage, replyExt(rmq.CodeSendReplyMessage, replyProps("gone", "REQ-GONE")), []byte("x"))
		if resp.Code == rmq.RespSystemError && strings.Contains(resp.Remark, "requester REQ-GONE has no producer connected") {
			break
		}
		if resp.Code != rmq.RespSystemError || time.Now().After(deadline) {
			t.Fatalf("reply to a closed requester: %d %q", resp.Code, resp.Remark)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplyTopicIsRouted: the cluster's reply topic exists from the
// start and the name server routes it, as a replier's client needs.
func TestReplyTopicIsRouted(t *testing.T) {
	c := daemontest.Start(t)
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cl.Invoke(ctx, c.NameServerAddr(), remoting.NewRequest(rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": replyTopic}, nil))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code == rmq.RespSuccess {
			rd, err := rmq.DecodeTopicRouteDataBody(resp.Body)
			if err != nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != 1 || rd.QueueDatas[0].Perm != 6 {
				t.Fatalf("route %+v (%v), want one broker with 1 writable queue, perm 6", rd, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route to %s within 10s: %d %q", replyTopic, resp.Code, resp.Remark)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplyReachesARequesterBeforeItsHeartbeat: the official Go client's
// first requests go out before its first heartbeat names its producer;
// the connection its request came on takes the reply. A reply message
// sent as a plain send, or a resend by a consumer, does not make its
// sender the requester.
func TestReplyReachesARequesterBeforeItsHeartbeat(t *testing.T) {
	f := startFront(t)
	req := &requester{pushes: make(chan *remoting.Command, 16)}
	req.pushClient = &pushClient{addr: f.addr, got: make(chan pushed, 16)}
	req.cl = remoting.NewClient(remoting.ClientOptions{Handler: func(_ context.Context, _ *remoting.Conn, c *remoting.Command) *remoting.Command {
		req.pushes <- remoting.NewRequest(c.Code, c.ExtFields, append([]byte(nil), c.Body...))
		return remoting.NewResponse(c, rmq.RespSuccess, "")
	}})
	t.Cleanup(func() { req.cl.Close() })
	// Senders that carry a request's properties without being its
	// requester: a misrouted reply and a consumer's resend.
	imposter := newPushClient(t, f.addr)
	imposter.invoke(t, rmq.CodeSendMessage, sendExt("Requests", replyProps("r0", "REQ-NEW"), nil), []byte("reply as a send"))
	imposter.invoke(t, rmq.CodeSendMessage, sendExt("Requests", message.EncodeProperties(map[string]string{
		rmq.PropertyCorrelationID: "r1", rmq.PropertyReplyToClient: "REQ-NEW"}), map[string]string{"reconsumeTimes": "1"}), []byte("resent request"))
	resp := f.invoke(t, rmq.CodeSendReplyMessage, replyExt(rmq.CodeSendReplyMessage, replyProps("r1", "REQ-NEW")), []byte("too early"))
	if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "has no producer connected") {
		t.Fatalf("a reply before any request: %d %q, want no requester found", resp.Code, resp.Remark)
	}
	request := message.EncodeProperties(map[string]string{rmq.PropertyCorrelationID: "r2", rmq.PropertyReplyToClient: "REQ-NEW", rmq.PropertyMessageTTL: "3"})
	req.invoke(t, rmq.CodeSendMessage, sendExt("Requests", request, nil), []byte("question"))
	resp = f.invoke(t, rmq.CodeSendReplyMessage, replyExt(rmq.CodeSendReplyMessage, replyProps("r2", "REQ-NEW")), []byte("answer"))
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("reply: %d %q", resp.Code, resp.Remark)
	}
	push := req.await(t)
	if h, err := rmq.DecodePushReply(push); err != nil || message.ParseProperties(h.Properties)[rmq.PropertyCorrelationID] != "r2" || string(push.Body) != "answer" {
		t.Fatalf("pushed %v %q (%v)", push.ExtFields, push.Body, err)
	}
}
