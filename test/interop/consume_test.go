package interop

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// rebalanceTimeout bounds a wait that may need one periodic rebalance of the
// client (every 20 s, not configurable) when the broker's
// NOTIFY_CONSUMER_IDS_CHANGED does not trigger one earlier, plus the time to
// pull: the dominant waits of the clustering test.
const rebalanceTimeout = 50 * time.Second

func onlyMember(ds []delivery, member string) []delivery {
	var out []delivery
	for _, d := range ds {
		if d.member == member {
			out = append(out, d)
		}
	}
	return out
}

func onlyBodies(ds []delivery, want []string) []delivery {
	set := map[string]bool{}
	for _, b := range want {
		set[b] = true
	}
	var out []delivery
	for _, d := range ds {
		if set[d.body] {
			out = append(out, d)
		}
	}
	return out
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestClusteringSharesQueuesAndTakesOver: two members of one group in
// clustering mode split the topic's queues between them (each consumes a
// non-empty, disjoint share; together every message at least once), and when
// one member shuts down the other takes over its queues and gets the rest.
func TestClusteringSharesQueuesAndTakesOver(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	route := prepareTopic(t, p, prod, topic)
	nq := route.writeQueues()
	if nq < 2 {
		t.Fatalf("auto-created topic %s has %d writable queue(s); the test needs at least 2 to share", topic, nq)
	}

	group := uniqueName(t, "cg")
	col := newCollector()
	a := newPushConsumer(t, p, group)
	startPushConsumer(t, a, topic, consumer.MessageSelector{}, col, "A")
	b := newPushConsumer(t, p, group)
	startPushConsumer(t, b, topic, consumer.MessageSelector{}, col, "B")

	// Send rounds of two messages per queue until one round is consumed with
	// the queues split: both members active, no queue consumed by both. The
	// split needs both members to see each other in the consumer list (38),
	// which happens at once when the broker sends NOTIFY_CONSUMER_IDS_CHANGED
	// (40) and otherwise at the next periodic rebalance.
	var all []string
	var qa, qb []int
	rounds := 0
	split := poll(rebalanceTimeout, func() (bool, string) {
		rounds++
		bs := bodies(t, fmt.Sprintf("r%d", rounds), 2*nq)
		all = append(all, bs...)
		sendAllSync(t, prod, topic, bs, nil)
		col.waitAll(t, consumeTimeout, fmt.Sprintf("clustering round %d", rounds), bs)
		ds := onlyBodies(col.snapshot(), bs)
		qa, qb = queueSet(onlyMember(ds, "A")), queueSet(onlyMember(ds, "B"))
		return len(qa) > 0 && len(qb) > 0 && len(intersect(qa, qb)) == 0, ""
	})
	if !split {
		t.Fatalf("after %d rounds over %v the two members of group %s never split the %d queues: in the last round A consumed queues %v and B consumed queues %v (want both non-empty and disjoint)",
			rounds, rebalanceTimeout, group, nq, qa, qb)
	}
	t.Logf("queues split after %d round(s): A %v, B %v", rounds, qa, qb)
	if got := len(qa) + len(qb); got != nq {
		t.Fatalf("split round consumed from %d queues (A %v, B %v), want all %d", got, qa, qb, nq)
	}

	// Member B leaves. A must take over B's queues, resume them from B's
	// committed offsets and consume everything sent afterwards.
	if err := b.Shutdown(); err != nil {
		t.Fatalf("shut down member B: %v", err)
	}
	rest := bodies(t, "rest", 100)
	all = append(all, rest...)
	sendAllSync(t, prod, topic, rest, nil)
	col.waitAllFor(t, rebalanceTimeout, "take-over after member B shut down", "A", rest)
	ds := onlyMember(onlyBodies(col.snapshot(), rest), "A")
	if got := queueSet(ds); len(intersect(got, qb)) != len(qb) {
		t.Fatalf("after B left, A consumed from queues %v, which do not include all of B's former queues %v", got, qb)
	}
	col.waitAll(t, consumeTimeout, "every message of the test", all)
}

// localOffsetDir is where the client keeps broadcasting offsets of group
// (the client swaps the client id and group in the path).
func localOffsetDir(group string) string {
	base := os.Getenv("rocketmq.client.localOffsetStoreDir")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go")
	}
	return filepath.Join(base, group)
}

// TestBroadcastingEveryMemberGetsEverything: two members of one group in
// broadcasting mode each consume every message.
func TestBroadcastingEveryMemberGetsEverything(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	group := uniqueName(t, "cg")
	t.Cleanup(func() { _ = os.RemoveAll(localOffsetDir(group)) }) // runs after the consumers' shutdown
	col := newCollector()
	for _, m := range []string{"A", "B"} {
		c := newPushConsumer(t, p, group, consumer.WithConsumerModel(consumer.BroadCasting))
		startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, m)
	}
	want := bodies(t, "m", 150)
	sendAllSync(t, prod, topic, want, nil)
	col.waitAllFor(t, consumeTimeout, "broadcasting", "A", want)
	col.waitAllFor(t, consumeTimeout, "broadcasting", "B", want)
}

func newPullConsumer(t testing.TB, p *petrel, group string, opts ...consumer.Option) rocketmq.PullConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNsResolver(p.resolver()),
		consumer.WithGroupName(group),
		consumer.WithInstance(uniqueName(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := rocketmq.NewPullConsumer(all...)
	if err != nil {
		t.Fatalf("new pull consumer: %v", err)
	}
	return c
}

// queueEnds returns, per queue id, one past the highest queue offset among
// the send results: where a reader of that queue is done.
func queueEnds(results []*primitive.SendResult) map[int]int64 {
	ends := map[int]int64{}
	for _, r := range results {
		q := r.MessageQueue.QueueId
		ends[q] = max(ends[q], r.QueueOffset+1)
	}
	return ends
}

// TestPullConsumerPullFrom reads every message with explicit PullFrom calls,
// queue by queue, checking that each answer continues where the last ended.
func TestPullConsumerPullFrom(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	want := bodies(t, "m", 200)
	ends := queueEnds(sendAllSync(t, prod, topic, want, nil))

	// Assign mode with no queues: the consumer then runs no background pull
	// loop and no rebalance of its own. With Subscribe, PullFrom writes
	// fields (the queue's topic, the group) that the client's rebalance
	// goroutine reads unlocked, a data race of the client under -race.
	pc := newPullConsumer(t, p, uniqueName(t, "cg"))
	if err := pc.Assign(topic, []*primitive.MessageQueue{}); err != nil {
		t.Fatalf("assign pull consumer: %v", err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("start pull consumer: %v", err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	shared, err := pc.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatalf("pull consumer route of %s: %v", topic, err)
	}
	if len(shared) != len(ends) && len(shared) < 2 {
		t.Fatalf("pull consumer sees %d queues of %s", len(shared), topic)
	}
	col := newCollector()
	deadline := time.Now().Add(consumeTimeout)
	for _, sq := range shared {
		mq := &primitive.MessageQueue{Topic: sq.Topic, BrokerName: sq.BrokerName, QueueId: sq.QueueId}
		end := ends[mq.QueueId]
		for off := int64(0); off < end; {
			if time.Now().After(deadline) {
				t.Fatalf("PullFrom did not read every queue within %v", consumeTimeout)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := pc.PullFrom(ctx, mq, off, 32)
			cancel()
			if err != nil {
				t.Fatalf("PullFrom queue %d offset %d: %v", mq.QueueId, off, err)
			}
			if res.Status != primitive.PullFound {
				t.Fatalf("PullFrom queue %d offset %d (messages up to %d exist): status %v, want FOUND", mq.QueueId, off, end, res.Status)
			}
			msgs := res.GetMessageExts()
			if len(msgs) == 0 || len(msgs) > 32 {
				t.Fatalf("PullFrom queue %d offset %d max 32: FOUND with %d messages", mq.QueueId, off, len(msgs))
			}
			for i, m := range msgs {
				if m.QueueOffset != off+int64(i) {
					t.Fatalf("PullFrom queue %d offset %d: message %d has queue offset %d, want %d", mq.QueueId, off, i, m.QueueOffset, off+int64(i))
				}
				if m.Topic != topic {
					t.Fatalf("PullFrom queue %d: message topic %q, want %q", mq.QueueId, m.Topic, topic)
				}
				col.add("pull", m)
			}
			if res.NextBeginOffset != off+int64(len(msgs)) {
				t.Fatalf("PullFrom queue %d offset %d returned %d messages but nextBeginOffset %d", mq.QueueId, off, len(msgs), res.NextBeginOffset)
			}
			if res.MaxOffset < end {
				t.Fatalf("PullFrom queue %d: maxOffset %d, but the sends reached offset %d", mq.QueueId, res.MaxOffset, end-1)
			}
			off = res.NextBeginOffset
		}
	}
	col.mu.Lock()
	miss := col.missingLocked(want)
	col.mu.Unlock()
	if len(miss) > 0 {
		t.Fatalf("PullFrom over all %d queues missed %d of %d messages, first: %v", len(shared), len(miss), len(want), head(miss, 10))
	}
}

// TestPullConsumerPoll reads every message with Poll/ACK and then persists
// the offsets, which the broker must report as committed.
func TestPullConsumerPoll(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	want := bodies(t, "m", 200)
	ends := queueEnds(sendAllSync(t, prod, topic, want, nil))

	group := uniqueName(t, "cg")
	pc := newPullConsumer(t, p, group, consumer.WithPullBatchSize(16))
	if err := pc.Subscribe(topic, consumer.MessageSelector{}); err != nil {
		t.Fatalf("subscribe pull consumer: %v", err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("start pull consumer: %v", err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })

	col := newCollector()
	deadline := time.Now().Add(consumeTimeout)
	for {
		col.mu.Lock()
		miss := col.missingLocked(want)
		col.mu.Unlock()
		if len(miss) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Poll: %d of %d messages not received within %v, first: %v", len(miss), len(want), consumeTimeout, head(miss, 10))
		}
		cr, err := pc.Poll(context.Background(), 2*time.Second)
		if errors.Is(err, consumer.ErrNoNewMsg) {
			continue
		}
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		for _, m := range cr.GetMsgList() {
			col.add("poll", m)
		}
		pc.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}

	if err := pc.PersistOffset(context.Background(), topic); err != nil {
		t.Fatalf("PersistOffset: %v", err)
	}
	for q, end := range ends {
		waitFor(t, 20*time.Second, fmt.Sprintf("committed offset of group %s on queue %d to reach %d", group, q, end), func() (bool, string) {
			off, err := committedOffset(p.brAddr, group, topic, q)
			if err != nil {
				return false, err.Error()
			}
			return off >= end, "broker reports " + strconv.FormatInt(off, 10)
		})
	}
}

// TestTagFilter: a subscription "A || C" gets every A and C message and no
// other.
func TestTagFilter(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "A || C"}, col, "c")

	tags := []string{"A", "B", "C", "D"}
	all := bodies(t, "m", 200)
	tagOf := map[string]string{}
	var want []string
	sendAllSync(t, prod, topic, all, func(i int, m *primitive.Message) {
		tag := tags[i%len(tags)]
		m.WithTag(tag)
		tagOf[all[i]] = tag
		if tag == "A" || tag == "C" {
			want = append(want, all[i])
		}
	})
	col.waitAll(t, consumeTimeout, "tag filter A || C", want)

	// Messages are interleaved A B C D, so B and D messages sit between the
	// wanted ones in every queue: had the filter let them through they would
	// have arrived by now.
	for _, d := range col.snapshot() {
		if d.tag != tagOf[d.body] {
			t.Fatalf("message %s consumed with tag %q, sent with %q", d.body, d.tag, tagOf[d.body])
		}
		if d.tag != "A" && d.tag != "C" {
			t.Fatalf("subscription %q received message %s with tag %q", "A || C", d.body, d.tag)
		}
	}
}

// TestSQL92Filter: a subscription "a > 5 AND b = 'x'" gets exactly the
// messages whose properties match: the broker filters (clients do not
// re-filter SQL92), so any other message would arrive.
func TestSQL92Filter(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5 AND b = 'x'"}, col, "c")

	all := bodies(t, "m", 200)
	var want []string
	sendAllSync(t, prod, topic, all, func(i int, m *primitive.Message) {
		a, b := i%10, []string{"x", "y", "z"}[i%3]
		m.WithProperty("a", strconv.Itoa(a))
		m.WithProperty("b", b)
		if a > 5 && b == "x" {
			want = append(want, all[i])
		}
	})
	col.waitAll(t, consumeTimeout, "SQL92 a > 5 AND b = 'x'", want)
	// Every queue holds non-matching messages after the last matching one
	// sent to it; had the broker let them through they would be here.
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
	}
	for _, d := range col.snapshot() {
		if !wanted[d.body] {
			t.Fatalf("SQL92 subscription received non-matching message %s", d.body)
		}
	}
}

// TestOrderedPerKey: messages sent with a hash queue selector on a sharding
// key all go to one queue per key, and an orderly push consumer sees each
// key's messages in send order, never two callbacks for one queue at once.
//
// The orderly consumer runs in a child process (this test binary re-executed,
// see orderly_child_test.go): the client's orderly consumer polls its process
// queue without a lock while pulls add to it (consumer/process_queue.go,
// takeMessages), a data race inside the client that -race reports whenever
// the consumer gets a message, and that would fail every test running at the
// time. The child's race reports go to its stderr, shown if the test fails.
func TestOrderedPerKey(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	topic := uniqueName(t, "t")
	route := prepareTopic(t, p, prod, topic)
	nq := route.writeQueues()
	if nq < 2 {
		t.Fatalf("auto-created topic %s has %d writable queue(s); the test needs several", topic, nq)
	}

	// Three keys per queue, chosen with the selector's hash (FNV-1a mod the
	// queue count), 30 messages per key.
	const keysPerQueue, perKey = 3, 30
	var keys []string
	perQueue := map[int]int{}
	for i := 0; len(keys) < keysPerQueue*nq; i++ {
		k := fmt.Sprintf("order-%s-%d", runID, i)
		h := fnv.New32a()
		h.Write([]byte(k))
		q := int(h.Sum32()) % nq
		if perQueue[q] < keysPerQueue {
			perQueue[q]++
			keys = append(keys, k)
		}
	}

	var (
		mu       sync.Mutex
		seq      = map[string][]int{} // key -> sequence numbers in consumption order
		queueOf  = map[string]int{}   // key -> queue consumed from
		problems []string
		changed  = make(chan struct{}, 1)
	)
	startOrderlyChild(t, p, topic, uniqueName(t, "cg"), func(line string) {
		mu.Lock()
		defer mu.Unlock()
		defer func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}()
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "OVERLAP" {
			problems = append(problems, "two callbacks at once for queue "+f[1])
			return
		}
		if len(f) != 3 || f[0] != "M" {
			problems = append(problems, "unexpected line from the consumer: "+line)
			return
		}
		q, _ := strconv.Atoi(f[1])
		b := f[2]
		if b == warmupBody {
			return
		}
		i := strings.LastIndexByte(b, '-')
		if i < 0 {
			problems = append(problems, "unexpected body "+b)
			return
		}
		n, err := strconv.Atoi(b[i+1:])
		if err != nil {
			problems = append(problems, "unexpected body "+b)
			return
		}
		key := b[:i]
		seq[key] = append(seq[key], n)
		if old, ok := queueOf[key]; ok && old != q {
			problems = append(problems, fmt.Sprintf("key %s consumed from queues %d and %d", key, old, q))
		}
		queueOf[key] = q
	})

	// Send while the consumer runs.
	sentQueue := map[string]int{}
	queues := map[int]bool{}
	for n := range perKey {
		for _, key := range keys {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", key, n)))
			m.WithShardingKey(key)
			m.WithKeys([]string{key})
			res, err := prod.SendSync(context.Background(), m)
			if err != nil {
				t.Fatalf("ordered send key %s #%d: %v", key, n, err)
			}
			if res.Status != primitive.SendOK {
				t.Fatalf("ordered send key %s #%d: status %v, want SEND_OK", key, n, res.Status)
			}
			if q, ok := sentQueue[key]; ok && q != res.MessageQueue.QueueId {
				t.Fatalf("hash selector sent key %s to queues %d and %d", key, q, res.MessageQueue.QueueId)
			}
			sentQueue[key] = res.MessageQueue.QueueId
			queues[res.MessageQueue.QueueId] = true
		}
	}
	if len(queues) < 2 {
		t.Fatalf("%d keys all went to one queue %v; the test needs several queues", len(keys), queues)
	}

	// Orderly consumers pull only after their periodic lock request succeeds
	// (here every 2 s), so allow a little more than the usual wait.
	complete := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, key := range keys {
			got := seq[key]
			if len(got) == 0 || slices.Max(got) < perKey-1 {
				return false, fmt.Sprintf("key %s: consumed %v", key, got)
			}
		}
		return true, ""
	}
	deadline := time.NewTimer(consumeTimeout)
	defer deadline.Stop()
	for {
		ok, why := complete()
		if ok {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("orderly consumer did not get every message within %v: %s", consumeTimeout, why)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, k := range keys {
		total += len(seq[k])
	}
	t.Logf("%d deliveries of %d messages over %d keys and %d queues", total, len(keys)*perKey, len(keys), len(queues))
	if len(problems) > 0 {
		t.Fatalf("orderly consumption problems: %v", head(problems, 10))
	}
	for _, key := range keys {
		if queueOf[key] != sentQueue[key] {
			t.Fatalf("key %s sent to queue %d, consumed from queue %d", key, sentQueue[key], queueOf[key])
		}
		// Redelivery may repeat a prefix, but a new sequence number must
		// always be the next one: anything else is a reordering or a gap.
		high := -1
		for _, n := range seq[key] {
			if n > high+1 {
				t.Fatalf("key %s consumed out of order: %v (saw %d right after %d)", key, seq[key], n, high)
			}
			high = max(high, n)
		}
	}
}
