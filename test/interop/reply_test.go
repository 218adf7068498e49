package interop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// requestTimeout is each request's wait for its reply. Replies come back
// in milliseconds; the bound only turns a lost reply into a failure.
const requestTimeout = 60 * time.Second

// replyBody is what the replier answers to a request with body b.
func replyBody(b string) string { return "reply to " + b }

// startReplier starts a push consumer on topic that answers every request
// the way the client's request-reply example does: CreateReplyMessage from
// the request, sent by a producer of its own. The helper parses its body
// argument as properties (it never sets the body), so the body is set on
// the reply afterwards. Replies that fail to send are counted in failed.
func startReplier(t *testing.T, p *petrel, topic string, failed *atomic.Int64, firstErr *atomic.Value) {
	t.Helper()
	replies := newProducer(t, p)
	// The topic exists and is routed before the consumer starts and before
	// the requester's first request (sent by the replier's producer, not
	// the requester's: the requester's client then has no route for the
	// topic, and its first Request looks the route up and heart-beats
	// before sending, which registers it as the reply's destination).
	prepareTopic(t, p, replies, topic)
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	err := c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if string(m.Body) == warmupBody {
				continue
			}
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err == nil {
				reply.Body = []byte(replyBody(string(m.Body)))
				_, err = replies.SendSync(ctx, reply)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("reply to %s: %v", m.Body, err))
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatalf("subscribe the replier to %s: %v", topic, err)
	}
	startConsumer(t, c)
}

// TestRequestReply: the official client's Request and RequestAsync each
// round-trip 1,000 requests through a replying consumer, and every
// correlation id gets its reply, with the body the replier sent.
func TestRequestReply(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic := uniqueName(t, "t")
	var failed atomic.Int64
	var firstErr atomic.Value
	startReplier(t, p, topic, &failed, &firstErr)
	requester := newProducer(t, p)
	const n = 1000

	t.Run("Request", func(t *testing.T) {
		want := bodies(t, "sync", n)
		type answer struct {
			corr, gotCorr, body string
			err                 error
		}
		answers := make([]answer, n)
		request := func(i int) {
			msg := primitive.NewMessage(topic, []byte(want[i]))
			reply, err := requester.Request(context.Background(), requestTimeout, msg)
			a := answer{corr: msg.GetProperty(primitive.PropertyCorrelationID), err: err}
			if reply != nil {
				a.gotCorr, a.body = reply.GetProperty(primitive.PropertyCorrelationID), string(reply.Body)
			}
			answers[i] = a
		}
		// The first request alone: the client's first sends to a topic it
		// has no route for race each other for the route (one of them
		// fails "route info not found" before reaching the broker).
		request(0)
		var wg sync.WaitGroup
		work := make(chan int)
		for range 32 {
			wg.Go(func() {
				for i := range work {
					request(i)
				}
			})
		}
		for i := 1; i < n; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		corrs := map[string]bool{}
		for i, a := range answers {
			switch {
			case a.err != nil:
				t.Fatalf("request %d (%s): %v", i, want[i], a.err)
			case a.corr == "" || a.gotCorr != a.corr:
				t.Fatalf("request %d has correlation id %q, its reply %q", i, a.corr, a.gotCorr)
			case a.body != replyBody(want[i]):
				t.Fatalf("request %d: reply body %q, want %q", i, a.body, replyBody(want[i]))
			case corrs[a.corr]:
				t.Fatalf("correlation id %s used twice", a.corr)
			}
			corrs[a.corr] = true
		}
	})

	t.Run("RequestAsync", func(t *testing.T) {
		want := bodies(t, "async", n)
		var mu sync.Mutex
		got := map[string]string{} // correlation id -> first reply body
		var cbErrs []string
		done := make(chan struct{}, 1)
		callback := func(_ context.Context, reply *primitive.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				cbErrs = append(cbErrs, err.Error())
			case reply == nil:
				cbErrs = append(cbErrs, "a callback without reply or error")
			default:
				// The client calls back once for the reply and once more
				// as it forgets the request: keep the first.
				corr := reply.GetProperty(primitive.PropertyCorrelationID)
				if _, seen := got[corr]; !seen {
					got[corr] = string(reply.Body)
				}
			}
			select {
			case done <- struct{}{}:
			default:
			}
		}
		wantByCorr := map[string]string{}
		for i := range n {
			msg := primitive.NewMessage(topic, []byte(want[i]))
			if err := requester.RequestAsync(context.Background(), requestTimeout, callback, msg); err != nil {
				t.Fatalf("request %d (%s): %v", i, want[i], err)
			}
			corr := msg.GetProperty(primitive.PropertyCorrelationID)
			if _, dup := wantByCorr[corr]; corr == "" || dup {
				t.Fatalf("request %d has correlation id %q (empty or used before)", i, corr)
			}
			wantByCorr[corr] = replyBody(want[i])
		}
		deadline := time.After(requestTimeout)
		for {
			mu.Lock()
			have, errs := len(got), append([]string(nil), cbErrs...)
			mu.Unlock()
			if len(errs) > 0 {
				t.Fatalf("%d callbacks reported errors, the first: %s", len(errs), errs[0])
			}
			if have >= n {
				break
			}
			select {
			case <-done:
			case <-deadline:
				t.Fatalf("%d of %d requests got a reply within %v", have, n, requestTimeout)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for corr, body := range got {
			w, ok := wantByCorr[corr]
			if !ok || body != w {
				t.Fatalf("reply with correlation id %s has body %q, want %q (request known: %v)", corr, body, w, ok)
			}
		}
	})

	// Bodies over the client's 4 KiB compression threshold: the request
	// goes compressed; the Go replier flags its reply compressed but sends
	// the body as it is (the client's quirk: a reply command takes the
	// plain body), which the broker passes on as sent and the requester's
	// client keeps as it is when it does not inflate.
	t.Run("LargeBodies", func(t *testing.T) {
		for i := range 3 {
			body := fmt.Sprintf("large-%d-%s", i, strings.Repeat("x", 8<<10))
			msg := primitive.NewMessage(topic, []byte(body))
			reply, err := requester.Request(context.Background(), requestTimeout, msg)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if string(reply.Body) != replyBody(body) || reply.GetProperty(primitive.PropertyCorrelationID) != msg.GetProperty(primitive.PropertyCorrelationID) {
				t.Fatalf("request %d: a reply of %d bytes with correlation id %q, want %d bytes for %q", i, len(reply.Body),
					reply.GetProperty(primitive.PropertyCorrelationID), len(replyBody(body)), msg.GetProperty(primitive.PropertyCorrelationID))
			}
		}
	})

	if f := failed.Load(); f > 0 {
		t.Fatalf("%d replies failed to send; the first: %v", f, firstErr.Load())
	}
}

// TestJava4RequestReply: the official Java 4.x client's request() and
// request(callback) each round-trip 1,000 requests through a replying
// DefaultMQPushConsumer (MessageUtil.createReplyMessage, sent with
// SEND_REPLY_MESSAGE_V2), every reply with its own correlation id and body.
func TestJava4RequestReply(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic := uniqueName(t, "t")
	createTopics(t, p, topic)
	const count = 1000
	out := string(runJava(t, "client4", "petrel.interop.RequestReply", 3*time.Minute,
		p.nsAddr, topic, uniqueName(t, "cg"), fmt.Sprint(count)))
	for _, want := range []string{fmt.Sprintf("sync %d\n", count), fmt.Sprintf("async %d\n", count), "failures 0\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the Java client's summary lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
}
