package broker

// Looking at a pop group's position without taking (RocketMQ 5's
// PEEK_MESSAGE, NOTIFICATION and POLLING_INFO):
//
// PeekPop reads the messages a group's next pop would take new — from
// each queue's pop cursor (for a queue the group never popped, where its
// first pop would start: popStart) — without claiming them: nothing
// changes, neither visibility nor cursors nor offsets. As RocketMQ's
// peek it applies no subscription filter, reads the asked topic's queues
// (one, or every one) and then the group's retry topic, and counts the
// messages left behind the positions (restNum).
//
// PopNotify answers whether a pop of the group would find a message now
// — an expired in-flight message, or one past a queue's cursor (unfiltered,
// as RocketMQ's) — and when none waits for one as a pop waits: it parks in
// the pops' long-poll table (same wakes, same bounds: PopMaxWait,
// LongPollMaxTotal) and looks again at every wake. Having found one it
// passes the wake on to the next pop of the group (it took nothing, so a
// parked pop should look). Like Pop it reads every queue of the topic: a
// pop is served from every queue, so "does queue q have a message for a
// pop" is "would a pop find one".
//
// PollingPops counts the pops (not the notifications) of a group parked
// on a topic.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/broker/longpoll"
	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// PeekRequest is a PeekPop.
type PeekRequest struct {
	Group, Topic string
	// QueueID is the queue to read, or -1 for every queue of the topic.
	QueueID int32
	// MaxMsgs caps the messages returned; ≤ 0 means 1, above 32 means 32.
	MaxMsgs int
}

// PeekResult is what PeekPop read.
type PeekResult struct {
	// Records are copies of the stored records, in the order read.
	Records []message.Record
	// RestNum counts the messages behind the group's positions on the
	// queues visited (those read included).
	RestNum int64
}

// popLook is the validated topic of a peek or notification.
func (b *Broker) popLook(group, topic string) (meta.Topic, error) {
	if b.closed.Load() {
		return meta.Topic{}, b.errClosed()
	}
	if !validName(group, maxGroupLen) {
		return meta.Topic{}, errorf(KindMessageIllegal, nil, "consumer group %q is not a valid name", group)
	}
	t, ok := b.meta.Topic(topic)
	if !ok {
		return meta.Topic{}, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s; create it or check the name", topic, b.cfg.BrokerName)
	}
	if t.Perm&meta.PermRead == 0 {
		return meta.Topic{}, errorf(KindNoPermission, nil, "topic %q is not readable on broker %s (perm %d)", topic, b.cfg.BrokerName, t.Perm)
	}
	if !b.groupConsumable(group) {
		return meta.Topic{}, b.errConsumeDisabled(group)
	}
	return t, nil
}

// popRetryTopic is the group's retry topic a pop of topic also reads, ""
// when it reads none (FIFO, or a retry or dead-letter topic asked).
func popRetryTopic(group, topic string, fifo bool) string {
	if fifo || strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix) {
		return ""
	}
	return RetryGroupTopicPrefix + group
}

// retryQueues are the queues of the group's retry topic rt when it
// exists and is readable.
func (b *Broker) retryQueues(group, rt string) []pop.Key {
	if rt == "" {
		return nil
	}
	t, ok := b.meta.Topic(rt)
	if !ok || t.Perm&meta.PermRead == 0 {
		return nil
	}
	out := make([]pop.Key, 0, max(t.ReadQueueNums, 0))
	for i := range max(t.ReadQueueNums, 0) {
		out = append(out, pop.Key{Group: group, Topic: rt, QueueID: i})
	}
	return out
}

// popPosition is where the group's next pop of k reads new messages.
func (b *Broker) popPosition(k pop.Key, now time.Time) int64 {
	if v := b.pops.st.Peek(k, now, false, 0); v.Known {
		return v.Cursor
	}
	return b.popStart(k)
}

// PeekPop returns up to MaxMsgs messages the group's pops have not taken
// yet, without taking them (file comment). Errors: KindTopicNotExist,
// KindNoPermission (topic not readable, group may not consume),
// KindMessageIllegal (bad group name), KindSystemError (a store read
// failed); a QueueID outside the topic's read queues reads nothing.
func (b *Broker) PeekPop(req PeekRequest) (PeekResult, error) {
	t, err := b.popLook(req.Group, req.Topic)
	if err != nil {
		return PeekResult{}, err
	}
	var keys []pop.Key
	switch {
	case req.QueueID < 0:
		for i := range max(t.ReadQueueNums, 0) {
			keys = append(keys, pop.Key{Group: req.Group, Topic: req.Topic, QueueID: i})
		}
	case req.QueueID < t.ReadQueueNums:
		keys = append(keys, pop.Key{Group: req.Group, Topic: req.Topic, QueueID: req.QueueID})
	}
	keys = append(keys, b.retryQueues(req.Group, popRetryTopic(req.Group, req.Topic, false))...)
	want := min(max(req.MaxMsgs, 1), popMaxMsgs)
	budget := popMaxBytes
	now := b.now()
	var out PeekResult
	for _, k := range keys {
		from := b.popPosition(k, now)
		out.RestNum += max(b.st.MaxOffset(k.Topic, k.QueueID)-from, 0)
		if len(out.Records) >= want || budget <= 0 {
			continue
		}
		recs, err := b.peekQueue(k, from, want-len(out.Records), budget)
		if err != nil {
			return PeekResult{}, err
		}
		for _, r := range recs {
			budget -= len(r)
		}
		out.Records = append(out.Records, recs...)
	}
	return out, nil
}

// peekQueue reads up to n records of k from offset from, following the
// queue's start once when retention removed what was there (as
// RocketMQ's peek does).
func (b *Broker) peekQueue(k pop.Key, from int64, n, maxBytes int) ([]message.Record, error) {
	for range 2 {
		res, err := b.st.GetMessages(k.Topic, k.QueueID, from, n, maxBytes, nil)
		if err != nil {
			return nil, errorf(KindSystemError, err, "reading queue %d of topic %q at offset %d failed; retry", k.QueueID, k.Topic, from)
		}
		switch res.Status {
		case store.Found:
			var out []message.Record
			res.Records(func(r message.Record) { out = append(out, slices.Clone(r)) })
			res.Release()
			return out, nil
		case store.OffsetTooSmall, store.OffsetOverflowBadly:
			from = res.NextOffset
			res.Release()
			continue
		default:
			res.Release()
			return nil, nil
		}
	}
	return nil, nil
}

// NotifyRequest is a PopNotify.
type NotifyRequest struct {
	Group, Topic string
	// Wait: when no message is there, hold the request up to this long
	// for one (bounded by Config.PopMaxWait); ≤ 0 answers at once.
	Wait time.Duration
	// FIFO: the group pops in order, so a queue with a message in flight
	// has nothing for it (and the group's retry topic is not read).
	FIFO bool
}

// PopNotify reports whether a pop of the group would find a message on
// the topic, waiting up to Wait for one (file comment). A parked
// notification whose ctx ends or whose broker closes answers false.
// Errors as PeekPop's, and KindServiceUnavailable when too many requests
// are parked already (LongPollMaxTotal).
func (b *Broker) PopNotify(ctx context.Context, req NotifyRequest) (bool, error) {
	t, err := b.popLook(req.Group, req.Topic)
	if err != nil {
		return false, err
	}
	p := &popper{b: b, req: &PopRequest{Group: req.Group, Topic: req.Topic, FIFO: req.FIFO}, queues: t.ReadQueueNums,
		retryTopic: popRetryTopic(req.Group, req.Topic, req.FIFO), notify: true}
	found, err := p.available()
	if err != nil || found || req.Wait <= 0 {
		return found, err
	}
	return p.wait(ctx, b.now().Add(min(req.Wait, b.cfg.PopMaxWait)), p.available)
}

// available is a notification's look: whether some queue of the topic,
// or of the group's retry topic, has a message a pop would take now. It
// sets p.blocked (FIFO: the topic's queues held by a message in flight)
// and p.more (found: the next pop of the group should look, as this one
// took nothing).
func (p *popper) available() (bool, error) {
	b := p.b
	p.blocked, p.more = nil, false
	if b.closed.Load() {
		return false, b.errClosed()
	}
	if !b.groupConsumable(p.req.Group) {
		return false, b.errConsumeDisabled(p.req.Group)
	}
	now := b.now()
	has := func(k pop.Key, retry bool) bool {
		v := b.pops.st.Peek(k, now, p.req.FIFO, 1)
		switch {
		case v.Blocked:
			if !retry {
				p.blocked = append(p.blocked, k.QueueID)
			}
			return false
		case len(v.Expired) > 0:
			return true
		}
		from := v.Cursor
		if !v.Known {
			from = b.popStart(k)
		}
		return b.st.MaxOffset(k.Topic, k.QueueID) > from
	}
	found := false
	for i := range max(p.queues, 0) {
		if has(pop.Key{Group: p.req.Group, Topic: p.req.Topic, QueueID: i}, false) {
			found = true
			break
		}
	}
	if !found {
		for _, k := range b.retryQueues(p.req.Group, p.retryTopic) {
			if has(k, true) {
				found = true
				break
			}
		}
	}
	p.more = found
	return found, nil
}

// ErrTooManyWaiting is wrapped by the error of a Pop or PopNotify that
// would wait when LongPollMaxTotal requests are waiting already
// (RocketMQ's POLLING_FULL).
var ErrTooManyWaiting = longpoll.ErrFull

// PollingPops returns how many pops of group are waiting for a message of
// topic (RocketMQ's POLLING_INFO; notifications are not counted). Errors
// as PeekPop's but KindSystemError.
func (b *Broker) PollingPops(group, topic string) (int, error) {
	if _, err := b.popLook(group, topic); err != nil {
		return 0, err
	}
	ps := &b.pops.polls
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return 0, nil
	}
	return ps.table.Parked(group, topic, func(r *longpoll.Request) bool { return !r.Payload.(*waiter).notify }), nil
}
