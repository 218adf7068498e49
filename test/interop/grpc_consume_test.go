package interop

// The official RocketMQ 5.x Go client's SimpleConsumer against Petrel's
// gRPC endpoint: receive, ack, invisible time and redelivery, the
// dead-letter queue, FIFO groups, and messages of a 4.x producer.
//
// Group settings come from the broker's subscription group configs,
// created as an operator does it, with `petrel group create` before the
// consumers start (createGroup): --retry-max (max delivery attempts =
// retry-max + 1) and --orderly for FIFO groups.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// Timing of the simple-consumer tests.
const (
	// receiveAwait is the long-polling window of every receive.
	receiveAwait = 2 * time.Second
	// simpleTimeout bounds how long a test waits for deliveries.
	simpleTimeout = 30 * time.Second
)

// newSimpleConsumer5 starts a 5.x simple consumer of group on topic with
// filter (nil: everything); stopped when the test ends.
func newSimpleConsumer5(t testing.TB, p *petrel, group, topic string, filter *rmq.FilterExpression) rmq.SimpleConsumer {
	t.Helper()
	sc, err := startSimpleConsumer5(p, group, topic, filter)
	if err != nil {
		t.Fatalf("start 5.x simple consumer of %s on %s: %v", group, topic, err)
	}
	t.Cleanup(func() { _ = sc.GracefulStop() })
	return sc
}

func startSimpleConsumer5(p *petrel, group, topic string, filter *rmq.FilterExpression) (rmq.SimpleConsumer, error) {
	if filter == nil {
		filter = rmq.SUB_ALL
	}
	sc, err := rmq.NewSimpleConsumer(rmq5Config(p, group), rmq.WithAwaitDuration(receiveAwait),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: filter}))
	if err != nil {
		return nil, err
	}
	if err := sc.Start(); err != nil {
		return nil, err
	}
	return sc, nil
}

// receive5 receives once; MESSAGE_NOT_FOUND is an empty answer.
func receive5(t testing.TB, sc rmq.SimpleConsumer, max int32, invisible time.Duration) []*rmq.MessageView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveAwait+10*time.Second)
	defer cancel()
	mvs, err := sc.Receive(ctx, max, invisible)
	if err != nil {
		if st, ok := rmq.AsErrRpcStatus(err); ok && st.GetCode() == 40401 {
			return nil
		}
		t.Fatalf("receive: %v", err)
	}
	return mvs
}

// receiveUntil receives until cond holds for what arrived so far, or fails
// the test after simpleTimeout.
func receiveUntil(t testing.TB, sc rmq.SimpleConsumer, max int32, invisible time.Duration, what string, onMsg func(mv *rmq.MessageView), cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(simpleTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", simpleTimeout, what)
		}
		for _, mv := range receive5(t, sc, max, invisible) {
			onMsg(mv)
		}
	}
}

func ack5(t testing.TB, sc rmq.SimpleConsumer, mv *rmq.MessageView) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sc.Ack(ctx, mv); err != nil {
		t.Fatalf("ack %s: %v", mv.GetMessageId(), err)
	}
}

// expectNothing receives for about d and fails if anything arrives.
func expectNothing(t testing.TB, sc rmq.SimpleConsumer, d time.Duration, why string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		if mvs := receive5(t, sc, 32, 10*time.Second); len(mvs) > 0 {
			t.Fatalf("%s, but received %q (attempt %d)", why, mvs[0].GetBody(), mvs[0].GetDeliveryAttempt())
		}
	}
}

// TestGRPCSimpleConsumerReceiveAndAck: a group receives every message
// once with its id, tag, keys and properties; acked messages are not
// delivered again; another group gets them all too.
func TestGRPCSimpleConsumerReceiveAndAck(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic := uniqueName(t, "t")
	prod := newProducer5(t, p, nil, topic)
	sent := map[string]string{} // message id -> body
	for i, b := range bodies(t, "m", 6) {
		m := &rmq.Message{Topic: topic, Body: []byte(b)}
		m.SetTag("TagA")
		m.SetKeys(fmt.Sprintf("key-%d", i))
		m.AddProperty("color", "blue")
		sent[send5(t, prod, m).MessageID] = b
	}
	for _, group := range []string{uniqueName(t, "g"), uniqueName(t, "g")} {
		sc := newSimpleConsumer5(t, p, group, topic, nil)
		got := map[string]string{}
		receiveUntil(t, sc, 4, 20*time.Second, group+" receiving all 6", func(mv *rmq.MessageView) {
			id := mv.GetMessageId()
			if _, dup := got[id]; dup {
				t.Fatalf("group %s got %s twice", group, id)
			}
			if sent[id] != string(mv.GetBody()) || mv.GetTag() == nil || *mv.GetTag() != "TagA" || len(mv.GetKeys()) != 1 ||
				mv.GetProperties()["color"] != "blue" || mv.GetDeliveryAttempt() != 1 || mv.GetTopic() != topic || mv.GetReceiptHandle() == "" {
				t.Fatalf("group %s got id %s body %q tag %v keys %v props %v attempt %d; want the sent message with TagA, one key, color=blue, attempt 1",
					group, id, mv.GetBody(), mv.GetTag(), mv.GetKeys(), mv.GetProperties(), mv.GetDeliveryAttempt())
			}
			got[id] = string(mv.GetBody())
			ack5(t, sc, mv)
		}, func() bool { return len(got) == len(sent) })
		expectNothing(t, sc, 3*time.Second, "every message was acked")
	}
}

// TestGRPCSimpleConsumerRedeliveryAndChangeInvisible: an unacked message
// comes back after its invisible time with the next attempt and a new
// handle; ChangeInvisibleDuration gives a new handle that acks it.
func TestGRPCSimpleConsumerRedeliveryAndChangeInvisible(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic := uniqueName(t, "t")
	prod := newProducer5(t, p, nil, topic)
	id := send5(t, prod, &rmq.Message{Topic: topic, Body: []byte("again")}).MessageID
	sc := newSimpleConsumer5(t, p, uniqueName(t, "g"), topic, nil)

	var mv *rmq.MessageView
	next := func(what string) time.Time {
		t.Helper()
		mv = nil
		receiveUntil(t, sc, 1, 2*time.Second, what, func(m *rmq.MessageView) { mv = m }, func() bool { return mv != nil })
		if mv.GetMessageId() != id {
			t.Fatalf("%s: got %s, want %s", what, mv.GetMessageId(), id)
		}
		return time.Now()
	}
	first := next("the first delivery")
	h1 := mv.GetReceiptHandle()
	if mv.GetDeliveryAttempt() != 1 {
		t.Fatalf("first delivery attempt %d", mv.GetDeliveryAttempt())
	}
	second := next("the redelivery after the 2 s invisible time")
	if mv.GetDeliveryAttempt() != 2 || mv.GetReceiptHandle() == h1 {
		t.Fatalf("redelivery: attempt %d handle changed %v; want attempt 2 and a new handle", mv.GetDeliveryAttempt(), mv.GetReceiptHandle() != h1)
	}
	if d := second.Sub(first); d < 1500*time.Millisecond {
		t.Fatalf("redelivered %v after the first delivery, before the 2 s invisible time", d)
	}
	// Shorten: back almost at once, attempt 3.
	h2 := mv.GetReceiptHandle()
	if err := sc.ChangeInvisibleDuration(mv, time.Second); err != nil {
		t.Fatalf("change invisible duration: %v", err)
	}
	if mv.GetReceiptHandle() == h2 || mv.GetReceiptHandle() == "" {
		t.Fatal("change invisible duration gave no new receipt handle")
	}
	next("the redelivery after the shortened invisible time")
	if mv.GetDeliveryAttempt() != 3 {
		t.Fatalf("after the change: attempt %d, want 3", mv.GetDeliveryAttempt())
	}
	// Extend, then ack with the handle the change returned.
	if err := sc.ChangeInvisibleDuration(mv, 20*time.Second); err != nil {
		t.Fatalf("extend invisible duration: %v", err)
	}
	ack5(t, sc, mv)
	expectNothing(t, sc, 4*time.Second, "the message was acked with the handle of the last change")
}

// TestGRPCSimpleConsumerDeadLetter: a group created with `petrel group
// create --retry-max 2`: after max attempts (3 deliveries) without an ack
// the message goes to %DLQ%<group>, where another group receives it with
// its message id.
func TestGRPCSimpleConsumerDeadLetter(t *testing.T) {
	t.Parallel()
	group := uniqueName(t, "g")
	p := startPetrel(t, serverOptions{})
	createGroup(t, p, group, "--retry-max", "2")
	topic := uniqueName(t, "t")
	prod := newProducer5(t, p, nil, topic)
	id := send5(t, prod, &rmq.Message{Topic: topic, Body: []byte("doomed")}).MessageID
	sc := newSimpleConsumer5(t, p, group, topic, nil)
	for attempt := int32(1); attempt <= 3; attempt++ {
		var mv *rmq.MessageView
		receiveUntil(t, sc, 1, time.Second, fmt.Sprintf("delivery %d", attempt), func(m *rmq.MessageView) { mv = m }, func() bool { return mv != nil })
		if mv.GetMessageId() != id || mv.GetDeliveryAttempt() != attempt {
			t.Fatalf("delivery %d: %s attempt %d", attempt, mv.GetMessageId(), mv.GetDeliveryAttempt())
		}
	}
	expectNothing(t, sc, 4*time.Second, "the message had its 3 delivery attempts")

	dlq := "%DLQ%" + group
	var reader rmq.SimpleConsumer
	waitFor(t, 20*time.Second, "a consumer of "+dlq+" to start", func() (bool, string) {
		sc, err := startSimpleConsumer5(p, uniqueName(t, "gx"), dlq, nil)
		if err != nil {
			return false, err.Error()
		}
		reader = sc
		return true, ""
	})
	t.Cleanup(func() { _ = reader.GracefulStop() })
	var got *rmq.MessageView
	receiveUntil(t, reader, 1, 10*time.Second, "the message in "+dlq, func(m *rmq.MessageView) { got = m }, func() bool { return got != nil })
	if got.GetMessageId() != id || string(got.GetBody()) != "doomed" {
		t.Fatalf("%s holds %s %q, want %s \"doomed\"", dlq, got.GetMessageId(), got.GetBody(), id)
	}
}

// TestGRPCSimpleConsumerFIFOTwoConsumers: in a FIFO group (created with
// `petrel group create --orderly`) two consumers together see each message
// group in send order, each message once.
func TestGRPCSimpleConsumerFIFOTwoConsumers(t *testing.T) {
	t.Parallel()
	fifoTwoConsumers(t, []string{"order-a", "order-b", "order-c"}, 8)
}

// TestGRPCSimpleConsumerFIFOOneGroup256: 256 messages of one message
// group reach two consumers of a `--orderly` group in send order.
func TestGRPCSimpleConsumerFIFOOneGroup256(t *testing.T) {
	t.Parallel()
	fifoTwoConsumers(t, []string{"order-only"}, 256)
}

// fifoTwoConsumers sends perGroup messages of each message group to a new
// topic and has two simple consumers of a new `--orderly` group receive
// and ack them all; each message group must be processed in send order.
func fifoTwoConsumers(t *testing.T, msgGroups []string, perGroup int) {
	group := uniqueName(t, "g")
	p := startPetrel(t, serverOptions{})
	createGroup(t, p, group, "--orderly")
	topic := uniqueName(t, "t")
	prod := newProducer5(t, p, nil, topic)
	for i := range perGroup {
		for _, g := range msgGroups {
			m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s/%d", g, i))}
			m.SetMessageGroup(g)
			send5(t, prod, m)
		}
	}
	var mu sync.Mutex
	seen := map[string][]string{} // message group -> bodies in processing order
	total := 0
	var errs []error
	var wg sync.WaitGroup
	for c := range 2 {
		sc := newSimpleConsumer5(t, p, group, topic, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(simpleTimeout)
			for time.Now().Before(deadline) {
				mu.Lock()
				done := total == perGroup*len(msgGroups)
				mu.Unlock()
				if done {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), receiveAwait+10*time.Second)
				mvs, err := sc.Receive(ctx, 4, 20*time.Second)
				cancel()
				if st, ok := rmq.AsErrRpcStatus(err); ok && st.GetCode() == 40401 {
					continue
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("consumer %d receive: %w", c, err))
					mu.Unlock()
					return
				}
				for _, mv := range mvs {
					g := mv.GetMessageGroup()
					mu.Lock()
					if g != nil {
						seen[*g] = append(seen[*g], string(mv.GetBody()))
					}
					total++
					mu.Unlock()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					err := sc.Ack(ctx, mv)
					cancel()
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("consumer %d ack: %w", c, err))
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, g := range msgGroups {
		var want []string
		for i := range perGroup {
			want = append(want, fmt.Sprintf("%s/%d", g, i))
		}
		if !slices.Equal(seen[g], want) {
			t.Fatalf("message group %s processed as %v, want %v (total %d)", g, seen[g], want, total)
		}
	}
}

// TestGRPC4xProducedReceivedBy5x: messages of a 4.x producer reach a 5.x
// simple consumer with their UNIQ_KEY as message id, tag, keys and
// properties; its tag filter holds back the others.
func TestGRPC4xProducedReceivedBy5x(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	want := map[string]string{} // 4.x message id -> body
	for i, b := range bodies(t, "v4", 8) {
		m := primitive.NewMessage(topic, []byte(b))
		tag := "TagA"
		if i%4 == 3 {
			tag = "TagB"
		}
		m.WithTag(tag)
		m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		m.WithProperty("color", "green")
		res, err := prod.SendSync(context.Background(), m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("4.x send: %v %v", res, err)
		}
		if tag == "TagA" {
			want[res.MsgID] = b
		}
	}
	sc := newSimpleConsumer5(t, p, uniqueName(t, "g"), topic, rmq.NewFilterExpression("TagA"))
	got := map[string]bool{}
	receiveUntil(t, sc, 8, 20*time.Second, "the TagA messages of the 4.x producer", func(mv *rmq.MessageView) {
		id := mv.GetMessageId()
		if want[id] != string(mv.GetBody()) || mv.GetTag() == nil || *mv.GetTag() != "TagA" || mv.GetProperties()["color"] != "green" ||
			len(mv.GetKeys()) != 1 || !strings.HasPrefix(mv.GetKeys()[0], "key-") {
			t.Fatalf("received id %s body %q tag %v keys %v props %v; want a sent TagA message with its key and color=green",
				id, mv.GetBody(), mv.GetTag(), mv.GetKeys(), mv.GetProperties())
		}
		got[id] = true
		ack5(t, sc, mv)
	}, func() bool { return len(got) == len(want) })
	expectNothing(t, sc, 3*time.Second, "only TagA messages match the filter and all were acked")
}
