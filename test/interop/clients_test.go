package interop

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// runID makes names unique across runs (broadcasting consumers keep their
// offsets in $HOME/.rocketmq_client_go, keyed by group).
var runID = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)

var nameSeq atomic.Int64

var notNameChar = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// uniqueName returns a topic, group or instance name unique in this run and
// across runs: prefix, the test name and a sequence number, within the
// RocketMQ name rules (^[%|a-zA-Z0-9_-]+$, at most 127 characters).
func uniqueName(t testing.TB, prefix string) string {
	base := notNameChar.ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "_")
	if len(base) > 60 {
		base = base[:60]
	}
	return fmt.Sprintf("%s_%s_%s_%d", prefix, base, runID, nameSeq.Add(1))
}

func (p *petrel) resolver() primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{p.nsAddr})
}

// newProducer starts a producer with its own client instance.
func newProducer(t testing.TB, p *petrel, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNsResolver(p.resolver()),
		producer.WithGroupName(uniqueName(t, "pg")),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(3 * time.Second),
	}, opts...)
	prod, err := rocketmq.NewProducer(all...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := prod.Start(); err != nil {
		t.Fatalf("start producer: %v", err)
	}
	t.Cleanup(func() { _ = prod.Shutdown() })
	return prod
}

// newPushConsumer creates (but does not start) a push consumer with its own
// client instance, so that two members in this process have two client ids.
func newPushConsumer(t testing.TB, p *petrel, group string, opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNsResolver(p.resolver()),
		consumer.WithGroupName(group),
		consumer.WithInstance(uniqueName(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullInterval(0),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(all...)
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	consumerServers.Store(c, p)
	return c
}

// consumerServers maps each push consumer newPushConsumer made to its
// server, whose cleanup shuts the consumer down (see startConsumer).
var consumerServers sync.Map

// startPushConsumer subscribes c to topic with selector, records every
// message into col under member, and starts it. It is shut down when the
// test ends (shutting it down twice is harmless).
func startPushConsumer(t testing.TB, c rocketmq.PushConsumer, topic string, selector consumer.MessageSelector, col *collector, member string) {
	t.Helper()
	err := c.Subscribe(topic, selector, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			col.add(member, m)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatalf("subscribe %s to %s: %v", member, topic, err)
	}
	startConsumer(t, c)
}

// startConsumer starts a subscribed push consumer and shuts it down when
// the test ends.
//
// The official client (v2.1.3) races itself in Shutdown: it sets a closed
// flag that every call reads unsynchronised, and closes the channels its
// pull goroutines send fetched messages on. Two things keep such calls
// from running during the shutdown: the consumer is suspended first (no
// rebalance starts, from the 20 s timer or a membership notice), and a
// consumer of one of our servers is shut down only after that server has
// stopped, when no pull can bring messages any more.
func startConsumer(t testing.TB, c rocketmq.PushConsumer) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatalf("start push consumer: %v", err)
	}
	t.Cleanup(func() {
		c.Suspend()
		if p, ok := consumerServers.LoadAndDelete(c); ok {
			p.(*petrel).afterStop(func() { _ = c.Shutdown() })
			return
		}
		_ = c.Shutdown()
	})
}

// prepareTopic makes sure topic exists (auto-created by a first send, the way
// an application creates topics against a broker with auto-create on) and
// that the name server routes it, so that consumers can start. The warm-up
// message has body warmupBody, which collectors ignore.
func prepareTopic(t testing.TB, p *petrel, prod rocketmq.Producer, topic string) *topicRoute {
	t.Helper()
	res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(warmupBody)))
	if err != nil {
		t.Fatalf("first send to %s (auto-create): %v", topic, err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("first send to %s (auto-create): status %v, want SEND_OK", topic, res.Status)
	}
	return waitRoute(t, p.nsAddr, topic)
}

const warmupBody = "warm-up"

// delivery is one message as a consumer saw it.
type delivery struct {
	member string
	body   string
	tag    string
	keys   string
	msgID  string
	// offsetMsgID is the broker's id of the stored record (the client's
	// OffsetMsgId), the one admin calls take.
	offsetMsgID string
	// born and stored are the producer's send time and the broker's store
	// time of the delivered record (unix ms).
	born, stored int64
	queueID      int
	broker       string // the queue's broker name
	offset       int64
	at           int // arrival sequence number over the whole collector
}

// collector records deliveries from consumer callbacks and lets the test
// wait for conditions on them without polling.
type collector struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every add
	all      []delivery
	byBody   map[string]int            // deliveries per body
	byMember map[string]map[string]int // member -> body -> deliveries
}

func newCollector() *collector {
	return &collector{
		changed:  make(chan struct{}),
		byBody:   map[string]int{},
		byMember: map[string]map[string]int{},
	}
}

func (c *collector) add(member string, m *primitive.MessageExt) {
	body := string(m.Body)
	if body == warmupBody {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := delivery{member: member, body: body, tag: m.GetTags(), keys: m.GetKeys(), msgID: m.MsgId, offsetMsgID: m.OffsetMsgId, born: m.BornTimestamp, stored: m.StoreTimestamp, offset: m.QueueOffset, at: len(c.all)}
	if m.Queue != nil {
		d.queueID, d.broker = m.Queue.QueueId, m.Queue.BrokerName
	}
	c.all = append(c.all, d)
	c.byBody[body]++
	if c.byMember[member] == nil {
		c.byMember[member] = map[string]int{}
	}
	c.byMember[member][body]++
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitUntil waits until cond (called with the collector locked) holds or
// timeout passes, and reports whether it held.
func (c *collector) waitUntil(timeout time.Duration, cond func(c *collector) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := cond(c)
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// missing lists the bodies of want that nobody received yet (collector
// locked).
func (c *collector) missingLocked(want []string) []string {
	var out []string
	for _, b := range want {
		if c.byBody[b] == 0 {
			out = append(out, b)
		}
	}
	return out
}

// missingFor lists the bodies of want that member has not received yet
// (collector locked).
func (c *collector) missingForLocked(member string, want []string) []string {
	var out []string
	for _, b := range want {
		if c.byMember[member][b] == 0 {
			out = append(out, b)
		}
	}
	return out
}

// waitAll waits until every body in want was received by someone; on timeout
// the test fails naming what is missing.
func (c *collector) waitAll(t testing.TB, timeout time.Duration, what string, want []string) {
	t.Helper()
	if c.waitUntil(timeout, func(c *collector) bool { return len(c.missingLocked(want)) == 0 }) {
		return
	}
	c.mu.Lock()
	miss := c.missingLocked(want)
	got := len(c.all)
	c.mu.Unlock()
	t.Fatalf("%s: %d of %d messages never consumed within %v (%d deliveries seen); first missing: %v",
		what, len(miss), len(want), timeout, got, head(miss, 10))
}

// waitAllFor is waitAll for one member.
func (c *collector) waitAllFor(t testing.TB, timeout time.Duration, what, member string, want []string) {
	t.Helper()
	if c.waitUntil(timeout, func(c *collector) bool { return len(c.missingForLocked(member, want)) == 0 }) {
		return
	}
	c.mu.Lock()
	miss := c.missingForLocked(member, want)
	got := len(c.byMember[member])
	c.mu.Unlock()
	t.Fatalf("%s: member %s did not get %d of %d messages within %v (it got %d distinct); first missing: %v",
		what, member, len(miss), len(want), timeout, got, head(miss, 10))
}

// snapshot returns a copy of every delivery so far.
func (c *collector) snapshot() []delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]delivery(nil), c.all...)
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// bodies returns n distinct message bodies for one test.
func bodies(t testing.TB, prefix string, n int) []string {
	out := make([]string, n)
	id := uniqueName(t, prefix)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", id, i)
	}
	return out
}

// queueSet renders the set of queue ids in ds for messages.
func queueSet(ds []delivery) []int {
	seen := map[int]bool{}
	for _, d := range ds {
		seen[d.queueID] = true
	}
	out := make([]int, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Ints(out)
	return out
}

// sendAllSync sends one message per body with SendSync and fails the test
// unless every send returns SEND_OK. It returns the results in order.
func sendAllSync(t testing.TB, prod rocketmq.Producer, topic string, bs []string, decorate func(i int, m *primitive.Message)) []*primitive.SendResult {
	t.Helper()
	out := make([]*primitive.SendResult, len(bs))
	for i, b := range bs {
		m := primitive.NewMessage(topic, []byte(b))
		if decorate != nil {
			decorate(i, m)
		}
		res, err := prod.SendSync(context.Background(), m)
		if err != nil {
			t.Fatalf("SendSync message %d of %d to %s: %v", i, len(bs), topic, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("SendSync message %d of %d to %s: status %v, want SEND_OK (%v)", i, len(bs), topic, res.Status, res)
		}
		out[i] = res
	}
	return out
}
