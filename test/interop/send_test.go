package interop

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// consumeTimeout bounds the wait for a backlog of a few hundred messages to be
// consumed. The client rebalances on start and pulls at once, so this is far
// more than needed; it still covers one missed long-poll wake-up (20 s).
const consumeTimeout = 40 * time.Second

// drain starts a fresh consumer group on topic from the first offset and
// waits until it has consumed every body in want.
func drain(t *testing.T, p *petrel, topic string, want []string) *collector {
	t.Helper()
	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "c")
	col.waitAll(t, consumeTimeout, "consume what was sent to "+topic, want)
	return col
}

// checkQueueOffsets fails unless the results name topic and no two results
// share a (queue, offset) pair.
func checkQueueOffsets(t *testing.T, topic string, results []*primitive.SendResult) {
	t.Helper()
	type slot struct {
		q   int
		off int64
	}
	seen := map[slot]int{}
	for i, r := range results {
		if r.MessageQueue == nil || r.MessageQueue.Topic != topic {
			t.Fatalf("send result %d names queue %v, want a queue of topic %s", i, r.MessageQueue, topic)
		}
		s := slot{r.MessageQueue.QueueId, r.QueueOffset}
		if j, dup := seen[s]; dup {
			t.Fatalf("send results %d and %d both claim queue %d offset %d", j, i, s.q, s.off)
		}
		seen[s] = i
	}
}

func TestSendSync(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	want := bodies(t, "m", 200)
	results := sendAllSync(t, prod, topic, want, nil)
	checkQueueOffsets(t, topic, results)
	queues := map[int]bool{}
	for i, r := range results {
		if r.MsgID == "" {
			t.Fatalf("send result %d has an empty MsgID (UNIQ_KEY)", i)
		}
		if r.OffsetMsgID == "" {
			t.Fatalf("send result %d has an empty OffsetMsgID (the answer's msgId ext)", i)
		}
		queues[r.MessageQueue.QueueId] = true
	}
	if len(queues) < 2 {
		t.Fatalf("200 round-robin sends used %d queue(s) (%v); the auto-created topic should have several", len(queues), queues)
	}

	col := drain(t, p, topic, want)
	// The consumer sees the producer's UNIQ_KEY as the message id.
	byBody := map[string]string{}
	for _, d := range col.snapshot() {
		byBody[d.body] = d.msgID
	}
	for i, b := range want {
		if byBody[b] != results[i].MsgID {
			t.Fatalf("message %d consumed with id %q, but its send returned MsgID %q", i, byBody[b], results[i].MsgID)
		}
	}
}

func TestSendAsync(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	want := bodies(t, "m", 200)
	type outcome struct {
		i   int
		res *primitive.SendResult
		err error
	}
	done := make(chan outcome, len(want))
	for i, b := range want {
		i := i
		err := prod.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			done <- outcome{i, res, err}
		}, primitive.NewMessage(topic, []byte(b)))
		if err != nil {
			t.Fatalf("SendAsync message %d: %v", i, err)
		}
	}
	results := make([]*primitive.SendResult, len(want))
	deadline := time.After(30 * time.Second)
	for n := 0; n < len(want); n++ {
		select {
		case o := <-done:
			if o.err != nil {
				t.Fatalf("async send %d failed: %v", o.i, o.err)
			}
			if o.res == nil || o.res.Status != primitive.SendOK {
				t.Fatalf("async send %d: result %v, want status SEND_OK", o.i, o.res)
			}
			results[o.i] = o.res
		case <-deadline:
			t.Fatalf("only %d of %d async send callbacks ran within 30 s", n, len(want))
		}
	}
	checkQueueOffsets(t, topic, results)
	drain(t, p, topic, want)
}

func TestSendOneway(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	want := bodies(t, "m", 200)
	for i, b := range want {
		if err := prod.SendOneWay(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatalf("SendOneWay message %d: %v", i, err)
		}
	}
	col := drain(t, p, topic, want)
	for _, d := range col.snapshot() {
		if d.tag != "" {
			t.Fatalf("message %s consumed with tag %q, sent without one", d.body, d.tag)
		}
	}
}

func TestSendBatch(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	const batches, perBatch = 10, 20
	want := bodies(t, "m", batches*perBatch)
	results := make([]*primitive.SendResult, batches)
	for b := range batches {
		msgs := make([]*primitive.Message, perBatch)
		for i := range msgs {
			msgs[i] = primitive.NewMessage(topic, []byte(want[b*perBatch+i]))
			msgs[i].WithKeys([]string{fmt.Sprintf("batch-%d", b)})
		}
		res, err := prod.SendSync(context.Background(), msgs...)
		if err != nil {
			t.Fatalf("batch send %d of %d messages: %v", b, perBatch, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("batch send %d: status %v, want SEND_OK (%v)", b, res.Status, res)
		}
		results[b] = res
	}
	checkQueueOffsets(t, topic, results)

	col := drain(t, p, topic, want)
	// Every item of a batch is stored in the batch's queue, one offset each,
	// starting at the offset the send answer reported (the first item's).
	first := map[string]delivery{}
	for _, d := range col.snapshot() {
		if _, ok := first[d.body]; !ok {
			first[d.body] = d
		}
	}
	for b, res := range results {
		var offs []int64
		for i := range perBatch {
			d := first[want[b*perBatch+i]]
			if d.queueID != res.MessageQueue.QueueId {
				t.Fatalf("batch %d item %d consumed from queue %d, the batch was sent to queue %d", b, i, d.queueID, res.MessageQueue.QueueId)
			}
			if d.keys != fmt.Sprintf("batch-%d", b) {
				t.Fatalf("batch %d item %d consumed with keys %q, want %q (item properties lost?)", b, i, d.keys, fmt.Sprintf("batch-%d", b))
			}
			offs = append(offs, d.offset)
		}
		sorted := append([]int64(nil), offs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for i := range sorted {
			if sorted[i] != res.QueueOffset+int64(i) {
				t.Fatalf("batch %d: items stored at queue offsets %v, want %d consecutive offsets from the reported %d",
					b, offs, perBatch, res.QueueOffset)
			}
		}
		for i := range offs {
			if offs[i] != res.QueueOffset+int64(i) {
				t.Fatalf("batch %d: items stored out of order at queue offsets %v", b, offs)
			}
		}
	}
}

// TestResendOfTheSameMessageStoresOneCopy: sending the same message object
// twice (the client keeps its UNIQ_KEY) is answered twice with the same
// result and the message is consumed once.
func TestResendOfTheSameMessageStoresOneCopy(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	m := primitive.NewMessage(topic, []byte("twice"))
	r1, err := prod.SendSync(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := prod.SendSync(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if r1.MsgID != r2.MsgID || r1.OffsetMsgID != r2.OffsetMsgID || r1.QueueOffset != r2.QueueOffset || r1.MessageQueue.QueueId != r2.MessageQueue.QueueId {
		t.Fatalf("the resend was answered %+v, the first send %+v", r2, r1)
	}
	col := drain(t, p, topic, []string{"twice"})
	sendAllSync(t, prod, topic, []string{"marker"}, nil)
	col.waitAll(t, consumeTimeout, "a later message", []string{"marker"})
	n := 0
	for _, d := range col.snapshot() {
		if d.body == "twice" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the message was consumed %d times, want once", n)
	}
}
