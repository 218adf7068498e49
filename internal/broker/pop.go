package broker

// Pop consumption (RocketMQ 5.x simple consumers): a group receives
// messages of a topic without owning queues; each received message stays
// invisible to the group for a while and is acknowledged one by one by
// its receipt handle. A message not acknowledged in time becomes visible
// again with its delivery attempt incremented; after the group's maximum
// attempts it goes to %DLQ%<group>.
//
// The state — per (group, topic, queue) a cursor and the in-flight set —
// lives in package pop, durably, in <store dir>/pop; see its doc for the
// files and the group commit. Every Pop, AckPop and ChangeInvisible
// records its change there and waits for the fsync before it answers, so
// a restart neither loses nor re-delivers early what a client was told.
//
// A Pop visits the topic's read queues round-robin from a rotating start.
// For each queue it takes the queue's pop lock (a pop that finds a queue
// locked by another pop of the group tries the next one, and waits for it
// only if it found nothing elsewhere), asks the state for the expired
// in-flight entries and the cursor, reads the expired messages again and
// the new ones from the cursor through the subscription's tag or SQL92
// filter, and claims them. Redelivery is in place: an expired message goes
// out again before new ones, with Attempt+1. An expired message that has
// had MaxAttempts deliveries is moved to %DLQ%<group> instead (when a pop
// meets it, as RocketMQ's proxy does), stored like a send-back's dead
// letter (RETRY_TOPIC, ORIGIN_MESSAGE_ID, reconsume times = the
// deliveries), so ResendDLQ works on it. Expired messages the filter no
// longer matches, or that retention removed, are dropped from the set.
//
// The group's retry topic: a non-FIFO pop also reads %RETRY%<group>, where
// the group's 4.x members send back what they failed
// (CONSUMER_SEND_MSG_BACK), as RocketMQ's broker pops it beside the asked
// topic: after the topic's queues (before them one pop in
// popRetryFirstEvery), from its first message, without the subscription's
// filter. Such a message goes out under the asked topic (the front names
// it so), its delivery attempt counts its 4.x attempts (reconsume times),
// and its handle is accepted with the asked topic.
//
// FIFO: a queue with an in-flight message that is still invisible gives
// nothing to the group's FIFO pops; once all are acknowledged or expired
// the queue delivers again, expired ones first, in offset order. FIFO
// producers put a message group on one queue, so this keeps each message
// group in order (it also holds back the other message groups of the
// queue, which RocketMQ does not).
//
// Where a new group starts: as the RocketMQ proxy (ConsumeInitMode.MAX in
// ReceiveMessageActivity, PopMessageProcessor.getInitOffset): at the
// group's committed consumer offset if it has one; else at 0 when the
// queue's min offset is 0 (nothing was ever removed from it; RocketMQ
// checks whether the first message is still in memory, Petrel reads this
// as "the queue is young", as QueryConsumerOffset does for 4.x
// consumers); else at the last message (max offset − 1). The start is
// recorded with the first pop of the queue. As pops and acks go, the
// group's consumer offset for each queue is set to the lowest offset not
// yet acknowledged, so ConsumerLag and the admin tools see pop groups too.
// An offset reset (ResetOffset: the CLI's reset-offset,
// INVOKE_BROKER_TO_RESET_OFFSET) sets the queue's cursor to the new
// offset and forgets what was in flight there, so the next pop reads from
// it, as 4.x members re-read from a reset offset.
//
// Long polling: a Pop that finds nothing and may wait parks in a
// longpoll.Table (the same mechanism as pulls, in a table of its own),
// keyed by group and topic (and the group's retry topic), and tries once
// more (so a message that arrived in between is not missed); then it sets
// its deadline to the end of its wait or the time the next in-flight
// message of the group becomes visible again, whichever is first, and for
// a FIFO pop the queues it found held, and sleeps. It wakes when a
// message is dispatched to a queue it can take (the store listener wakes
// the oldest such pop of each group, not every pop of the topic), at its
// deadline (a message became visible again: it looks again; the wait
// ended: empty answer), when an acknowledgement of the group may have
// freed a FIFO queue (the oldest FIFO pop of the group), when a change of
// invisible time makes a message of the group visible sooner (its
// deadline moves forward), when ctx ends or the broker closes (empty
// answer). The pops of a group share its position, so one of them looking
// is enough; one that was woken but does not look (its receive ended), or
// that took a full batch, wakes the next pop of its group. Parked pops are
// bounded by LongPollMaxTotal, counted apart from parked pulls, and their
// wait by PopMaxWait. The in-flight messages of a group are bounded by
// PopMaxInFlight.

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/longpoll"
	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// PopRequest is a receive of a pop (simple-consumer) group.
type PopRequest struct {
	Group, Topic string
	// Expression and ExpressionType filter the messages: ExpressionType
	// "TAG" (or "") with a tag expression ("*", "" or "A || B"), or
	// "SQL92" with a SQL92 property filter.
	Expression, ExpressionType string
	// MaxMsgs caps the messages returned; ≤ 0 means 1, above 32 means 32.
	MaxMsgs int
	// Invisible is how long each returned message stays invisible to the
	// group; ≤ 0 means 30 s.
	Invisible time.Duration
	// Wait: when nothing is visible, hold the request up to this long for a
	// message to arrive (long polling; no busy polling); ≤ 0 answers at once.
	// Above Config.PopMaxWait means that.
	Wait time.Duration
	// FIFO: the group consumes in order; a queue's next message is not
	// delivered while an earlier one of the same queue is in flight.
	FIFO bool
	// MaxAttempts is the deliveries a message gets before it goes to the
	// group's dead-letter queue; ≤ 0 means DefaultMaxReconsumeTimes + 1.
	MaxAttempts int
}

// PoppedMessage is one received message.
type PoppedMessage struct {
	// Record is the stored record (a copy the caller owns).
	Record message.Record
	// Handle acknowledges the message or changes its invisible time.
	Handle string
	// Attempt counts deliveries of this message to the group, 1 for the
	// first.
	Attempt int32
	// InvisibleUntil is when the message becomes visible again unless it
	// is acknowledged first.
	InvisibleUntil time.Time
}

// Limits of a pop.
const (
	popMaxMsgs          = 32
	popDefaultInvisible = 30 * time.Second
	// popMaxBytes bounds the record bytes one Pop reads (at least one
	// record is always returned).
	popMaxBytes = 4 << 20
)

// popState is the broker's side of pop consumption.
type popState struct {
	st  *pop.Store
	seq atomic.Uint32 // rotates the first queue a pop visits

	lockMu sync.Mutex
	locks  map[pop.Key]chan struct{} // one-slot: a queue's pop lock

	// commitMu makes reading a queue's low offset and committing it as
	// the group's offset one step, so that an offset reset is never
	// overwritten by a pop or an ack that read the low before it.
	commitMu sync.Mutex

	// polls holds the parked pops (pull.go's shell, in a table apart).
	polls pollState
	// rechecks counts the looks of parked pops (for tests and benchmarks).
	rechecks atomic.Int64
	// testHookParked, when set (by tests, before any pop), runs when a
	// pop is about to sleep: parked, re-checked, its deadline set.
	testHookParked func()
}

// openPops loads the pop state from the store's directory.
func (b *Broker) openPops() error {
	sc := b.st.Config()
	st, err := pop.Open(sc.FS, path.Join(sc.Dir, "pop"), pop.Options{Logger: b.log})
	if err != nil {
		return err
	}
	b.pops = &popState{st: st, locks: make(map[pop.Key]chan struct{})}
	// One bound for all parked pops: they come in on no connection.
	b.pops.polls.init(b.clk, b.cfg.LongPollMaxTotal, b.cfg.LongPollMaxTotal)
	return nil
}

// closePops answers every parked pop (empty) and closes the state.
func (b *Broker) closePops() {
	ps := b.pops
	if ps == nil {
		return
	}
	ps.polls.close()
	if err := ps.st.Close(); err != nil {
		b.log.Warn("closing the pop state failed", "err", err)
	}
}

// PopInFlight returns, per pop group and topic, the messages received and
// neither acknowledged nor past their invisible time, sorted by group and
// topic (0 for a group that has popped the topic and holds none).
func (b *Broker) PopInFlight() []pop.TopicInFlight { return b.pops.st.InFlightByTopic(b.now()) }

// ParkedPops returns the number of pops waiting for messages.
func (b *Broker) ParkedPops() int { return int(b.pops.polls.parked.Load()) }

// arrivedPops wakes, for each group, the oldest pop parked on topic that
// can take a message of the queue (store listener: no I/O).
func (b *Broker) arrivedPops(topic string, queueID int32, maxOffset int64) {
	if b.pops == nil {
		return
	}
	b.pops.polls.wake(wakeArrived, func(t *longpoll.Table) []*longpoll.Request { return t.Arrived(topic, queueID, maxOffset) })
}

// wakePops wakes every pop parked on topic (an offset reset moved the
// groups' positions).
func (b *Broker) wakePops(topic string) {
	b.pops.polls.wake(wakeArrived, func(t *longpoll.Table) []*longpoll.Request { return t.Topic(topic) })
}

// ackedPops wakes the oldest FIFO pop of group parked on topic: an
// acknowledgement on the queue may have freed it.
func (b *Broker) ackedPops(group, topic string, queueID int32) {
	b.pops.polls.wake(wakeArrived, func(t *longpoll.Table) []*longpoll.Request { return t.Acked(group, topic, queueID) })
}

// visibleAt moves the deadline of the pops of group parked on topic to at
// where it is later: a message of the group becomes visible again then.
func (b *Broker) visibleAt(group, topic string, at time.Time) {
	ps := &b.pops.polls
	if ps.parked.Load() == 0 {
		return
	}
	ps.mu.Lock()
	if ps.closed || ps.table.Reschedule(group, topic, at) == 0 {
		ps.mu.Unlock()
		return
	}
	var due []*longpoll.Request
	if now := ps.clk.Now(); at.After(now) {
		ps.armIfEarlier(at)
	} else {
		due = ps.table.Expired(now)
		ps.parked.Store(int64(ps.table.Len()))
	}
	ps.mu.Unlock()
	signal(due, wakeTimeout)
}

// lockQueue takes k's pop lock; with wait false it gives up at once if
// another pop holds it.
func (ps *popState) lockQueue(ctx context.Context, k pop.Key, wait bool) bool {
	ps.lockMu.Lock()
	ch := ps.locks[k]
	if ch == nil {
		ch = make(chan struct{}, 1)
		ps.locks[k] = ch
	}
	ps.lockMu.Unlock()
	if !wait {
		select {
		case ch <- struct{}{}:
			return true
		default:
			return false
		}
	}
	select {
	case ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (ps *popState) unlockQueue(k pop.Key) {
	ps.lockMu.Lock()
	ch := ps.locks[k]
	ps.lockMu.Unlock()
	<-ch
}

// popper is one Pop call, validated.
type popper struct {
	b           *Broker
	req         *PopRequest
	queues      int32
	maxMsgs     int
	invisible   time.Duration
	maxAttempts int32
	spec        *filterSpec
	tag         store.TagFilter
	rec         store.RecordFilter
	// Set by each once: blocked lists the queues of the asked topic a FIFO
	// pop found held by a message in flight; more says that messages may
	// be left that it did not take (a full batch, the byte budget spent, a
	// queue another pop held skipped).
	blocked []int32
	more    bool
	// retryTopic is the group's %RETRY% topic, read too (not by FIFO pops);
	// "" when the asked topic is a retry or dead-letter topic itself.
	retryTopic string
	// notify: a notification's popper (popmore.go), which looks without
	// taking.
	notify bool
}

// popRetryFirstEvery: one pop in this many visits the retry topic before
// the asked one (RocketMQ's popFromRetryProbability of 20%), so that a busy
// topic does not starve the group's retries.
const popRetryFirstEvery = 5

// popQueue is one queue a pop visits, and whether it is of the group's
// retry topic (read without the subscription's filter, as RocketMQ pops
// %RETRY%<group> with SUB_ALL).
type popQueue struct {
	k     pop.Key
	retry bool
}

// topics are the topics a pop reads.
func (p *popper) topics() []string {
	if p.retryTopic == "" {
		return []string{p.req.Topic}
	}
	return []string{p.req.Topic, p.retryTopic}
}

// Pop receives up to MaxMsgs visible messages of the topic for the group.
// Errors (*Error): KindTopicNotExist, KindNoPermission (topic not
// readable, group may not consume), KindSubscriptionParseFailed (bad
// expression), KindServiceUnavailable (closing, too many parked requests,
// the group holds PopMaxInFlight messages unacknowledged), KindSystemError
// (a store read or the pop state's write failed). No message within Wait
// returns an empty slice and no error; so does a parked Pop whose ctx ends
// or whose broker closes.
func (b *Broker) Pop(ctx context.Context, req *PopRequest) ([]PoppedMessage, error) {
	if b.closed.Load() {
		return nil, b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "pops (their in-flight state is the master's)"); err != nil {
		return nil, err
	}
	if !validName(req.Group, maxGroupLen) {
		return nil, errorf(KindMessageIllegal, nil, "consumer group %q is not a valid name", req.Group)
	}
	t, ok := b.meta.Topic(req.Topic)
	if !ok {
		return nil, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s; create it or check the name", req.Topic, b.cfg.BrokerName)
	}
	if t.Perm&meta.PermRead == 0 {
		return nil, errorf(KindNoPermission, nil, "topic %q is not readable on broker %s (perm %d)", req.Topic, b.cfg.BrokerName, t.Perm)
	}
	if g, ok := b.meta.Group(req.Group); ok && !g.ConsumeEnable {
		return nil, errorf(KindNoPermission, nil, "consumer group %q may not consume (consumeEnable is false)", req.Group)
	}
	spec := parseSubscription(req.Expression, req.ExpressionType)
	if spec.err != nil {
		return nil, spec.err
	}
	p := &popper{b: b, req: req, queues: t.ReadQueueNums, spec: spec, tag: spec.tagFilter(), rec: spec.recordFilter(),
		maxMsgs: min(max(req.MaxMsgs, 1), popMaxMsgs), invisible: req.Invisible, maxAttempts: int32(req.MaxAttempts)}
	if !req.FIFO && !strings.HasPrefix(req.Topic, RetryGroupTopicPrefix) && !strings.HasPrefix(req.Topic, DLQGroupTopicPrefix) {
		p.retryTopic = RetryGroupTopicPrefix + req.Group
	}
	if p.invisible <= 0 {
		p.invisible = popDefaultInvisible
	}
	if p.maxAttempts <= 0 {
		p.maxAttempts = b.cfg.DefaultMaxReconsumeTimes + 1
	}
	var out []PoppedMessage
	look := func() (bool, error) {
		var err error
		out, err = p.once(ctx)
		return len(out) > 0, err
	}
	found, err := look()
	if err != nil || found || req.Wait <= 0 {
		return p.done(out, err)
	}
	if _, err = p.wait(ctx, b.now().Add(min(req.Wait, b.cfg.PopMaxWait)), look); err != nil {
		out = nil
	}
	return p.done(out, err)
}

func (p *popper) done(out []PoppedMessage, err error) ([]PoppedMessage, error) {
	if err != nil {
		return nil, err
	}
	var n uint64
	for _, m := range out {
		n += uint64(len(m.Record))
	}
	p.b.stats.got(p.req.Topic, p.req.Group, len(out), n)
	return out, nil
}

// wait long-polls until end (see the file comment): it looks (a pop's
// once, a notification's available) at every wake until a look finds
// something, and reports whether the last one did. A look sets p.blocked
// and p.more as once does. With notify the waiter is a notification's
// (PollingPops does not count it).
func (p *popper) wait(ctx context.Context, end time.Time, look func() (bool, error)) (bool, error) {
	b, ps := p.b, &p.b.pops.polls
	w := &waiter{ch: make(chan wake, 1), notify: p.notify}
	r := &longpoll.Request{Group: p.req.Group, Topic: p.req.Topic, Also: p.retryTopic, FIFO: p.req.FIFO, Payload: w}
	for {
		if !b.now().Before(end) {
			// The wait is over: one last look, as at every wake.
			b.pops.rechecks.Add(1)
			found, err := look()
			if found && p.more {
				p.passOn()
			}
			return found, err
		}
		r.Deadline, r.Blocked = end, nil
		if err := ps.park(r); err != nil {
			if errors.Is(err, longpoll.ErrFull) {
				return false, errorf(KindServiceUnavailable, err, "too many receives are waiting on broker %s (limit LongPollMaxTotal=%d); retry later", b.cfg.BrokerName, b.cfg.LongPollMaxTotal)
			}
			return false, nil // closing
		}
		looked := b.now()
		b.pops.rechecks.Add(1)
		found, err := look()
		if err != nil || found || !b.now().Before(end) {
			p.leave(r, w, end, found && p.more)
			return found, err
		}
		at := end
		for _, topic := range p.topics() {
			// From the time before the look: a message that became visible
			// during it makes the deadline pass at once.
			if next, ok := b.pops.st.NextVisible(p.req.Group, topic, looked); ok && next.Before(at) {
				at = next
			}
		}
		var why wake
		if ps.update(r, at, p.blocked) {
			if h := b.pops.testHookParked; h != nil {
				h()
			}
			select {
			case why = <-w.ch:
			case <-ctx.Done():
				p.leave(r, w, end, false)
				return false, nil
			}
		} else {
			why = <-w.ch // woken while it looked: look again
		}
		if why == wakeClosed || b.closed.Load() {
			return false, nil
		}
		if ctx.Err() != nil {
			if p.unanswered(why, end) {
				p.passOn()
			}
			return false, nil
		}
	}
}

// unanswered reports whether a wake a pop will not act on should go to
// another pop of its group: a message arrived or became visible (not the
// end of its own wait, nor the broker's close).
func (p *popper) unanswered(why wake, end time.Time) bool {
	switch why {
	case wakeArrived:
		return true
	case wakeTimeout:
		return p.b.now().Before(end)
	}
	return false
}

// update sets a parked request's deadline and blocked queues and re-arms
// the timer when the deadline comes first. False: r was handed back
// meanwhile, or its deadline has passed (then it is handed back now), and
// a signal is on its way.
func (ps *pollState) update(r *longpoll.Request, deadline time.Time, blocked []int32) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.table.Update(r, deadline, blocked) {
		return false
	}
	if !deadline.After(ps.clk.Now()) {
		ps.table.Remove(r)
		ps.parked.Store(int64(ps.table.Len()))
		signal([]*longpoll.Request{r}, wakeTimeout)
		return false
	}
	ps.armIfEarlier(deadline)
	return true
}

// leave takes the pop out of the table as it returns. A wake it was
// handed and will not act on goes to the next pop of its group (not the
// end of its own wait, nor the broker's close), and so does one when it
// took a full batch (more).
func (p *popper) leave(r *longpoll.Request, w *waiter, end time.Time, more bool) {
	if !p.b.pops.polls.unpark(r) && p.unanswered(<-w.ch, end) {
		more = true
	}
	if more {
		p.passOn()
	}
}

// passOn wakes the oldest other pop of the group parked on the topic (or
// on the group's retry topic).
func (p *popper) passOn() {
	g, t, rt := p.req.Group, p.req.Topic, p.retryTopic
	p.b.pops.polls.wake(wakeArrived, func(tb *longpoll.Table) []*longpoll.Request {
		if rs := tb.Next(g, t); len(rs) > 0 || rt == "" {
			return rs
		}
		return tb.Next(g, rt)
	})
}

// once tries every queue once.
func (p *popper) once(ctx context.Context) ([]PoppedMessage, error) {
	b := p.b
	p.blocked, p.more = nil, false
	if b.closed.Load() {
		return nil, b.errClosed()
	}
	if !b.groupConsumable(p.req.Group) {
		return nil, b.errConsumeDisabled(p.req.Group) // also when disabled while parked
	}
	inflight := b.pops.st.InFlight(p.req.Group)
	if inflight >= b.cfg.PopMaxInFlight {
		return nil, errorf(KindServiceUnavailable, nil, "consumer group %q holds %d messages unacknowledged on broker %s (limit PopMaxInFlight=%d); acknowledge them or let their invisible time pass",
			p.req.Group, inflight, b.cfg.BrokerName, b.cfg.PopMaxInFlight)
	}
	want := min(p.maxMsgs, b.cfg.PopMaxInFlight-inflight)
	var out []PoppedMessage
	budget := popMaxBytes
	// take pops queue q, whose lock the caller took.
	take := func(q popQueue) error {
		got, err := p.queue(q, want-len(out), &budget)
		b.pops.unlockQueue(q.k)
		out = append(out, got...)
		return err
	}
	var busy []popQueue
	for _, q := range p.visits() {
		if !b.pops.lockQueue(ctx, q.k, false) {
			busy = append(busy, q)
			continue
		}
		if err := take(q); err != nil {
			return p.partial(out, err)
		}
		if len(out) >= want || budget <= 0 {
			p.more = true
			return out, nil
		}
	}
	// Only when nothing was found elsewhere: wait for the queues other pops
	// held, which may hold more than they took.
	for _, q := range busy {
		if len(out) > 0 || !b.pops.lockQueue(ctx, q.k, true) {
			p.more = true // queues left unvisited
			break
		}
		if err := take(q); err != nil {
			return p.partial(out, err)
		}
	}
	p.more = p.more || len(out) >= want || budget <= 0
	return out, nil
}

// visits lists the queues a pop tries, in order: the asked topic's from a
// rotating start, then those of the group's retry topic when it exists
// and is readable (first, one pop in popRetryFirstEvery).
func (p *popper) visits() []popQueue {
	b := p.b
	n := max(p.queues, 0)
	seq := b.pops.seq.Add(1)
	start := int32(seq % uint32(max(n, 1)))
	qs := make([]popQueue, 0, n+1)
	for i := range n {
		qs = append(qs, popQueue{k: pop.Key{Group: p.req.Group, Topic: p.req.Topic, QueueID: (start + i) % n}})
	}
	if p.retryTopic == "" {
		return qs
	}
	rt, ok := b.meta.Topic(p.retryTopic)
	if !ok || rt.Perm&meta.PermRead == 0 {
		return qs
	}
	var rqs []popQueue
	for i := range max(rt.ReadQueueNums, 0) {
		rqs = append(rqs, popQueue{k: pop.Key{Group: p.req.Group, Topic: p.retryTopic, QueueID: i}, retry: true})
	}
	if seq%popRetryFirstEvery == 0 {
		return append(rqs, qs...)
	}
	return append(qs, rqs...)
}

// partial answers the messages already claimed when a later queue fails:
// they are in flight, and the client should have them.
func (p *popper) partial(out []PoppedMessage, err error) ([]PoppedMessage, error) {
	if len(out) == 0 {
		return nil, err
	}
	p.b.log.Warn("a receive failed on one queue; answering what the others gave", "group", p.req.Group, "topic", p.req.Topic, "err", err)
	return out, nil
}

// queue pops up to want messages of one queue; the queue's pop lock is
// held. Delivered messages are durable in the state when it returns. A
// message of the retry topic counts the attempts its 4.x consumers made
// (its reconsume times) in its delivery attempt and against MaxAttempts.
func (p *popper) queue(pq popQueue, want int, budget *int) ([]PoppedMessage, error) {
	b, k := p.b, pq.k
	// earlier is the deliveries a record had before it came to this pop.
	earlier := func(r message.Record) int32 {
		if pq.retry {
			return max(r.ReconsumeTimes(), 0)
		}
		return 0
	}
	now := b.now()
	v := b.pops.st.Peek(k, now, p.req.FIFO, want)
	if v.Blocked {
		if !pq.retry {
			p.blocked = append(p.blocked, k.QueueID)
		}
		return nil, nil
	}
	c := pop.Claim{Key: k, From: v.Cursor, Until: now.Add(p.invisible)}
	if !v.Known {
		c.From = b.popStart(k)
	}
	c.To = c.From
	var recs []message.Record
	held := false // FIFO: an expired message stays in flight, so nothing may follow it
	for _, e := range v.Expired {
		rec, err := b.readQueueOffset(k, e.Offset)
		if err != nil {
			return nil, err
		}
		switch {
		case rec == nil || !p.matches(pq, rec):
			c.Drop = append(c.Drop, e)
		case e.Attempt+earlier(rec) >= p.maxAttempts:
			if err := b.popToDLQ(rec, k.Group, e.Attempt+earlier(rec)); err != nil {
				b.log.Warn("moving a message to the dead-letter queue failed; it is tried again at the next receive",
					"group", k.Group, "topic", k.Topic, "queue_id", k.QueueID, "offset", e.Offset, "err", err)
				held = true
				continue
			}
			c.Drop = append(c.Drop, e)
		default:
			c.Again = append(c.Again, e)
			recs = append(recs, rec)
			*budget -= len(rec)
		}
	}
	if room := want - len(c.Again); room > 0 && *budget > 0 && !(held && p.req.FIFO) {
		got, next, err := p.readNew(pq, c.From, room, *budget)
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			c.New = append(c.New, r.QueueOffset())
			recs = append(recs, r)
			*budget -= len(r)
		}
		c.To = next
	}
	entries, ticket, err := b.pops.st.Claim(c)
	b.emitPopOps()
	if errors.Is(err, pop.ErrConflict) {
		b.log.Debug("pop claim conflicted; the queue is tried again at the next receive", "group", k.Group, "topic", k.Topic, "queue_id", k.QueueID, "err", err)
		return nil, nil
	}
	if err == nil {
		err = b.pops.st.Sync(ticket)
	}
	if errors.Is(err, pop.ErrClosed) {
		return nil, b.errClosed()
	}
	if err != nil {
		return nil, b.popStateError(k.Group, "receive", err)
	}
	b.commitPopOffset(k)
	out := make([]PoppedMessage, len(entries))
	for i, e := range entries {
		out[i] = PoppedMessage{Record: recs[i], Handle: pop.HandleOf(k, e), Attempt: e.Attempt + earlier(recs[i]), InvisibleUntil: time.UnixMilli(e.Until)}
	}
	return out, nil
}

// readNew reads up to n matching messages from offset and returns copies
// and the offset to continue at.
func (p *popper) readNew(pq popQueue, from int64, n, maxBytes int) ([]message.Record, int64, error) {
	b, k := p.b, pq.k
	tag, rec := p.tag, p.rec
	if pq.retry {
		tag, rec = nil, nil
	}
	for range 2 {
		res, err := b.st.GetMessagesFiltered(k.Topic, k.QueueID, from, n, maxBytes, tag, rec)
		if err != nil {
			return nil, from, errorf(KindSystemError, err, "reading queue %d of topic %q at offset %d failed; retry", k.QueueID, k.Topic, from)
		}
		var out []message.Record
		switch res.Status {
		case store.Found:
			res.Records(func(r message.Record) { out = append(out, slices.Clone(r)) })
			next := res.NextOffset
			res.Release()
			return out, next, nil
		case store.NoMatchedMessage, store.OffsetFoundNull:
			res.Release()
			return nil, max(res.NextOffset, from), nil
		case store.OffsetTooSmall:
			// Retention removed messages the group never received.
			res.Release()
			b.noteOffsetJump(k.Group, k.Topic, k.QueueID, from, res.NextOffset)
			from = res.NextOffset
			continue
		case store.OffsetOverflowBadly:
			// The queue is shorter than the cursor: it was deleted and
			// created again. Follow it.
			res.Release()
			return nil, res.MaxOffset, nil
		default:
			res.Release()
			return nil, from, nil
		}
	}
	return nil, from, nil
}

// readQueueOffset returns a copy of the record at a queue offset, or nil
// when it is gone.
func (b *Broker) readQueueOffset(k pop.Key, off int64) (message.Record, error) {
	res, err := b.st.GetMessages(k.Topic, k.QueueID, off, 1, 0, nil)
	if err != nil {
		return nil, errorf(KindSystemError, err, "reading queue %d of topic %q at offset %d failed; retry", k.QueueID, k.Topic, off)
	}
	defer res.Release()
	var rec message.Record
	res.Records(func(r message.Record) {
		if rec == nil && r.QueueOffset() == off {
			rec = slices.Clone(r)
		}
	})
	return rec, nil
}

// matches applies the subscription to a record read without the filters
// (every record of the retry topic matches).
func (p *popper) matches(pq popQueue, r message.Record) bool {
	if pq.retry {
		return true
	}
	if p.rec != nil && !p.rec(r) {
		return false
	}
	if p.tag == nil {
		return true
	}
	tags, _ := r.Property(message.PropertyTags)
	return p.tag(message.TagHash(string(tags)))
}

// popStart is where a group's pops of a new queue start (file comment).
func (b *Broker) popStart(k pop.Key) int64 {
	if off, ok := b.meta.Offset(k.Group, k.Topic, k.QueueID); ok && off >= 0 {
		return off
	}
	minOff := b.st.MinOffset(k.Topic, k.QueueID)
	// A retry topic is read from its first message (RocketMQ's
	// getInitOffset): everything in it was sent back for the group.
	if minOff <= 0 || strings.HasPrefix(k.Topic, RetryGroupTopicPrefix) {
		return 0
	}
	return max(b.st.MaxOffset(k.Topic, k.QueueID)-1, minOff)
}

// commitPopOffset sets the group's consumer offset of the queue to the
// lowest offset not yet acknowledged.
func (b *Broker) commitPopOffset(k pop.Key) {
	b.pops.commitMu.Lock()
	defer b.pops.commitMu.Unlock()
	if low, ok := b.pops.st.Low(k); ok {
		b.meta.CommitOffset(k.Group, k.Topic, k.QueueID, low)
	}
}

// resetPopQueue moves the group's position on a queue to off (an offset
// reset) and commits off as its offset: the pop state's cursor is set
// and its in-flight messages there are forgotten, durably, before the
// commit.
func (b *Broker) resetPopQueue(group, topic string, queueID int32, off int64) error {
	k := pop.Key{Group: group, Topic: topic, QueueID: queueID}
	b.pops.commitMu.Lock()
	defer b.pops.commitMu.Unlock()
	t, ok, err := b.pops.st.ResetQueue(k, max(off, 0))
	b.emitPopOps()
	if err == nil && ok {
		err = b.pops.st.Sync(t)
	}
	if errors.Is(err, pop.ErrClosed) {
		return b.errClosed()
	}
	if err != nil {
		return b.popStateError(group, "offset reset", err)
	}
	b.meta.CommitOffset(group, topic, queueID, off)
	return nil
}

// popToDLQ stores a copy of a popped record in %DLQ%<group>, with the
// deliveries so far as its reconsume times.
func (b *Broker) popToDLQ(rec message.Record, group string, attempts int32) error {
	m, _, err := message.Decode(rec)
	if err != nil {
		return errorf(KindSystemError, err, "the message at commit-log offset %d does not decode", rec.PhysicalOffset())
	}
	dlq := DLQGroupTopicPrefix + group
	if _, err := b.ensureTopic(meta.Topic{Name: dlq, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: meta.PermRead | meta.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		return err
	}
	origTopic := m.Property(message.PropertyRetryTopic)
	if origTopic == "" {
		origTopic = m.Topic
	}
	// The client's message id is the UNIQ_KEY; a message without one is
	// named by its offset id.
	id := m.Property(message.PropertyUniqKey)
	if id == "" {
		id = message.OffsetID(rec.StoreHost(), rec.PhysicalOffset())
	}
	out := b.retryCopy(m, dlq, attempts, origTopic, id)
	if _, err := b.sendResult([]*message.Message{out}, 0, b.st.Put(out)); err != nil {
		return err
	}
	b.log.Info("message moved to the dead-letter queue", "group", group, "topic", origTopic,
		"offset", rec.PhysicalOffset(), "attempts", attempts, "dlq", dlq)
	return nil
}

// popTopic is the topic a receipt handle of group names: topic, or the
// group's retry topic for a message received from it (the consumer
// acknowledges it with the topic it asked for, as RocketMQ hands retry
// messages out under the asked topic).
func popTopic(group, topic, handle string) string {
	h, err := pop.DecodeHandle(handle)
	if err != nil || h.TopicHash == pop.NameHash(topic) {
		return topic
	}
	if rt := RetryGroupTopicPrefix + group; h.TopicHash == pop.NameHash(rt) {
		return rt
	}
	return topic
}

// popHandleError turns a pop state error into the client's error; what
// names the request ("acknowledgement", "change of invisible time").
func (b *Broker) popHandleError(group, topic, what string, err error) *Error {
	switch {
	case errors.Is(err, pop.ErrExpired):
		return errorf(KindReceiptHandleExpired, err, "the receipt handle expired: the message's invisible time passed before this request and it may have been delivered again; receive it again")
	case errors.Is(err, pop.ErrInvalidHandle):
		return errorf(KindInvalidReceiptHandle, err, "the receipt handle is not one this broker issued; pass the handle the receive returned, unchanged")
	case errors.Is(err, pop.ErrOtherGroup):
		return errorf(KindInvalidReceiptHandle, err, "the receipt handle was issued to another consumer group than %q; use it with the group that received the message", group)
	case errors.Is(err, pop.ErrOtherTopic):
		return errorf(KindInvalidReceiptHandle, err, "the receipt handle was issued for another topic than %q; use it with the topic the message was received from", topic)
	case errors.Is(err, pop.ErrAcked):
		return errorf(KindInvalidReceiptHandle, err, "the message was already acknowledged (or moved to the dead-letter queue) by group %q", group)
	case errors.Is(err, pop.ErrSuperseded):
		return errorf(KindInvalidReceiptHandle, err, "the receipt handle was replaced by a change of invisible duration; use the handle that change returned")
	case errors.Is(err, pop.ErrNotDelivered):
		return errorf(KindInvalidReceiptHandle, err, "the receipt handle names a message group %q never received from topic %q", group, topic)
	case errors.Is(err, pop.ErrClosed):
		return b.errClosed()
	}
	return b.popStateError(group, what, err)
}

// popStateError is the client's error for a failed write of the pop
// state: after the first failure the broker refuses until it restarts, so
// retrying here does not help.
func (b *Broker) popStateError(group, what string, err error) *Error {
	if errors.Is(err, pop.ErrWriteFailed) {
		return errorf(KindSystemError, err, "broker %s could not write the %s of group %q to disk and refuses receives and acknowledgements until it is restarted; use another broker, and have the operator check its disk and restart it",
			b.cfg.BrokerName, what, group)
	}
	return errorf(KindSystemError, err, "recording the %s of group %q failed on broker %s; retry", what, group, b.cfg.BrokerName)
}

// AckPop acknowledges a popped message by its receipt handle. Errors:
// KindInvalidReceiptHandle when the handle does not decode or names
// another group or topic, a message already acknowledged or never
// received, or was replaced by ChangeInvisible; KindReceiptHandleExpired
// when the message's invisible time has passed (it may have been delivered
// again). It returns once the acknowledgement is durable.
func (b *Broker) AckPop(group, topic, handle string) error {
	return b.AckBatch([]AckRequest{{Group: group, Topic: topic, Handle: handle}})[0]
}

// AckRequest is one acknowledgement of AckBatch.
type AckRequest struct {
	Group, Topic string
	// Handle is the receipt handle the pop returned.
	Handle string
	// ByOffset: the request names the delivery without a handle, as
	// RocketMQ's batch ack does: by QueueID, Offset and Until, the time it
	// becomes visible again (a pop's PoppedMessage.InvisibleUntil, to the
	// millisecond), on Topic or, when not found there, on the group's
	// retry topic (whose messages a pop hands out under the asked topic);
	// RetryOnly looks on the retry topic alone.
	ByOffset  bool
	QueueID   int32
	Offset    int64
	Until     time.Time
	RetryOnly bool
}

// AckBatch acknowledges popped messages by their receipt handles, each as
// AckPop does, and returns one error per request (nil: acknowledged;
// errors as AckPop's). The acknowledgements share one write and fsync of
// the pop state, and it returns once all are durable.
func (b *Broker) AckBatch(reqs []AckRequest) []error {
	errs := make([]error, len(reqs))
	if b.closed.Load() {
		for i := range errs {
			errs[i] = b.errClosed()
		}
		return errs
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "acknowledgements of pops"); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	now := b.now()
	type acked struct {
		i     int
		topic string
		k     pop.Key
	}
	done := make([]acked, 0, len(reqs))
	var last pop.Ticket
	for i, r := range reqs {
		var k pop.Key
		var ticket pop.Ticket
		var err error
		topic := r.Topic
		if r.ByOffset {
			k, ticket, err = b.ackAt(r, now)
			topic = k.Topic
		} else {
			topic = popTopic(r.Group, r.Topic, r.Handle)
			k, ticket, err = b.pops.st.Ack(r.Group, topic, r.Handle, now)
		}
		if err != nil {
			errs[i] = b.popHandleError(r.Group, topic, "acknowledgement", err)
			continue
		}
		last = max(last, ticket)
		done = append(done, acked{i, topic, k})
	}
	b.emitPopOps()
	// Tickets are in log order: the last one's sync makes all durable.
	if err := b.pops.st.Sync(last); err != nil {
		for _, a := range done {
			errs[a.i] = b.popHandleError(reqs[a.i].Group, a.topic, "acknowledgement", err)
		}
		return errs
	}
	seen := make(map[pop.Key]bool, len(done))
	for _, a := range done {
		if seen[a.k] {
			continue
		}
		seen[a.k] = true
		b.commitPopOffset(a.k)
		b.ackedPops(a.k.Group, a.k.Topic, a.k.QueueID)
	}
	return errs
}

// ackAt acknowledges r by queue, offset and Until (AckRequest): on the
// topic, then on the group's retry topic; the key names the topic it took
// (or, refused, the first one tried, with its error).
func (b *Broker) ackAt(r AckRequest, now time.Time) (pop.Key, pop.Ticket, error) {
	topics := []string{r.Topic, RetryGroupTopicPrefix + r.Group}
	if r.RetryOnly {
		topics = topics[1:]
	} else if strings.HasPrefix(r.Topic, RetryGroupTopicPrefix) || strings.HasPrefix(r.Topic, DLQGroupTopicPrefix) {
		topics = topics[:1] // a pop of such a topic reads no retry topic
	}
	var first error
	var firstKey pop.Key
	for i, topic := range topics {
		k := pop.Key{Group: r.Group, Topic: topic, QueueID: r.QueueID}
		t, err := b.pops.st.AckAt(k, r.Offset, r.Until.UnixMilli(), now)
		if err == nil {
			return k, t, nil
		}
		if i == 0 {
			first, firstKey = err, k
		}
		if !errors.Is(err, pop.ErrNotDelivered) && !errors.Is(err, pop.ErrSuperseded) && !errors.Is(err, pop.ErrAcked) {
			break // the time has passed, or the state refuses: the other topic's answer would be the same
		}
	}
	return firstKey, 0, first
}

// ChangeInvisible sets a popped message's invisible time to d from now and
// returns its new receipt handle (the old one no longer acknowledges it).
// Errors as AckPop. A d ≤ 0 makes the message visible again at once.
func (b *Broker) ChangeInvisible(group, topic, handle string, d time.Duration) (string, error) {
	if b.closed.Load() {
		return "", b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "changes of invisible time"); err != nil {
		return "", err
	}
	now := b.now()
	topic = popTopic(group, topic, handle)
	h, _, ticket, err := b.pops.st.Change(group, topic, handle, now.Add(max(d, 0)), now)
	b.emitPopOps()
	if err == nil {
		err = b.pops.st.Sync(ticket)
	}
	if err != nil {
		return "", b.popHandleError(group, topic, "change of invisible time", err)
	}
	// The message may now be visible sooner than the waiters' deadlines.
	b.visibleAt(group, topic, now.Add(max(d, 0)))
	return h, nil
}

// ForwardPopToDLQ moves a popped message to the group's dead-letter queue
// at once and acknowledges it. Errors as AckPop.
func (b *Broker) ForwardPopToDLQ(group, topic, handle string) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "dead-letter forwards"); err != nil {
		return err
	}
	topic = popTopic(group, topic, handle)
	k, e, err := b.pops.st.Check(group, topic, handle, b.now())
	if err != nil {
		return b.popHandleError(group, topic, "move to the dead-letter queue", err)
	}
	rec, err := b.readQueueOffset(k, e.Offset)
	if err != nil {
		return err
	}
	if rec != nil {
		if err := b.popToDLQ(rec, group, e.Attempt); err != nil {
			return err
		}
	}
	return b.AckPop(group, topic, handle)
}

// resetPops forgets the pop groups' positions and in-flight messages on a
// deleted topic, so that a topic created again under the name is read from
// its start.
func (b *Broker) resetPops(topic string) error {
	t, err := b.pops.st.ResetTopic(topic)
	b.emitPopOps()
	if err != nil || t == 0 {
		return err
	}
	return b.pops.st.Sync(t)
}
