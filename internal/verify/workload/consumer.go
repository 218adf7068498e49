package workload

// A pull consumer in one of three models:
//
//   - clustering: the group's live members (GET_CONSUMER_LIST_BY_GROUP,
//     sorted) share the queues as AllocateMessageQueueAveragely does;
//     offsets are committed to the broker every CommitEvery and when a
//     queue is given up.
//   - broadcasting: every member reads every queue; offsets are its own,
//     in memory.
//   - orderly: clustering, and a queue is read only while the member holds
//     its broker lock (LOCK_BATCH_MQ, renewed every rebalance), one batch
//     at a time, the offset committed after each batch.
//
// Every message received is a Deliver line. A rebalance runs every
// RebalanceEvery: heartbeat to every broker of the route, the member
// list, the allocation, the locks. Errors are logged and retried after a
// back-off; the consumer never stops for them.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// Consumer timing.
const (
	RebalanceEvery = time.Second
	CommitEvery    = time.Second
	// Suspend is how long a pull may be held by the broker for new
	// messages.
	Suspend = time.Second
	// PullBatch is the most messages one pull asks for.
	PullBatch = 32
	// localLockTTL: an orderly member stops reading a queue whose lock it
	// could not renew for this long (RocketMQ's client uses 30 s too).
	localLockTTL = 30 * time.Second
	// CatchUpStall: a drain's catch-up gives a queue up when its offset
	// has not moved for this long (what it did not read is then the
	// checker's "undelivered", not a drain that never ends).
	CatchUpStall = 10 * time.Second
)

// Model is a consumer's message model.
type Model int

const (
	Clustering Model = iota
	Broadcasting
	Orderly
)

func (m Model) wire() string {
	if m == Broadcasting {
		return "BROADCASTING"
	}
	return "CLUSTERING"
}

// Consumer is one member of a workload's group; its Process is its name.
type Consumer struct {
	env      *Env
	workload string
	name     string
	clientID string
	topic    string
	group    string
	model    Model
	cl       *Client

	mu      sync.Mutex
	offsets map[int32]int64 // broadcasting: the next offset of each queue
}

// NewConsumer returns a member of group reading topic. Its client id is
// its name and the run id (unique in the group).
func NewConsumer(env *Env, workload, name, topic, group string, model Model) *Consumer {
	return &Consumer{
		env: env, workload: workload, name: name, clientID: name + "@" + env.RunID,
		topic: topic, group: group, model: model, cl: NewClient(env, name),
		offsets: map[int32]int64{},
	}
}

// ClientID is the id the consumer heartbeats with.
func (c *Consumer) ClientID() string { return c.clientID }

// Close closes its connections.
func (c *Consumer) Close() error { return c.cl.Close() }

// Start writes the consumer's Start line.
func (c *Consumer) Start() { c.env.start(c.workload, c.name, history.RoleConsumer) }

// route returns the topic's route, waiting (with back-off) until one is
// known or ctx ends.
func (c *Consumer) route(ctx context.Context) (*Route, error) {
	for i := 1; ; i++ {
		r, err := c.cl.Route(ctx, c.topic, false)
		if err == nil {
			return r, nil
		}
		c.env.Logger.Debug("route lookup failed", "client", c.name, "topic", c.topic, "err", err)
		if !c.env.sleep(ctx, backoff(i)) {
			return nil, ctx.Err()
		}
	}
}

// reader is one queue being read.
type reader struct {
	cancel context.CancelFunc
	done   chan struct{}
	held   *heldLock // orderly only
}

// heldLock is an orderly member's view of its lock on one queue.
type heldLock struct {
	mu    sync.Mutex
	until time.Time
}

func (h *heldLock) renew(until time.Time) { h.mu.Lock(); h.until = until; h.mu.Unlock() }
func (h *heldLock) lose()                 { h.mu.Lock(); h.until = time.Time{}; h.mu.Unlock() }
func (h *heldLock) ok(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Before(h.until)
}

// Run consumes until ctx ends; it then stops its readers (committing
// their offsets) and, orderly, unlocks its queues.
func (c *Consumer) Run(ctx context.Context) {
	r, err := c.route(ctx)
	if err != nil {
		return
	}
	readers := map[rmq.MessageQueue]*reader{}
	stop := func(q rmq.MessageQueue) {
		rd := readers[q]
		rd.cancel()
		<-rd.done
		delete(readers, q)
	}
	start := func(r *Route, q rmq.MessageQueue) *reader {
		rctx, cancel := context.WithCancel(ctx)
		rd := &reader{cancel: cancel, done: make(chan struct{})}
		if c.model == Orderly {
			rd.held = &heldLock{}
		}
		readers[q] = rd
		go func() {
			defer close(rd.done)
			c.consume(rctx, r, q, -1, rd.held)
		}()
		return rd
	}
	var members []string
	for {
		if fresh, err := c.cl.Route(ctx, c.topic, true); err == nil {
			r = fresh
		}
		c.heartbeat(ctx, r)
		var want []rmq.MessageQueue
		switch c.model {
		case Broadcasting:
			want = r.Queues
		default:
			if m, err := c.cl.ConsumerList(ctx, c.anyAddr(r), c.group); err == nil && len(m) > 0 {
				members = m
			} else if err != nil {
				c.env.Logger.Debug("consumer list failed", "client", c.name, "err", err)
			}
			if members == nil {
				want = nil
			} else {
				want = Allocate(r.Queues, members, c.clientID)
			}
		}
		keep := map[rmq.MessageQueue]bool{}
		for _, q := range want {
			keep[q] = true
		}
		var dropped []rmq.MessageQueue
		for q := range readers {
			if !keep[q] {
				stop(q)
				dropped = append(dropped, q)
			}
		}
		if c.model == Orderly && len(dropped) > 0 {
			c.unlock(ctx, r, dropped)
		}
		for _, q := range want {
			if readers[q] == nil {
				start(r, q)
			}
		}
		if c.model == Orderly {
			c.lock(ctx, r, want, func(q rmq.MessageQueue) *heldLock { return readers[q].held })
		}
		if !c.env.sleep(ctx, RebalanceEvery) {
			break
		}
	}
	var all []rmq.MessageQueue
	for q := range readers {
		stop(q)
		all = append(all, q)
	}
	if c.model == Orderly && len(all) > 0 {
		c.unlock(context.WithoutCancel(ctx), r, all)
	}
}

// anyAddr is the address of the first broker of the route.
func (c *Consumer) anyAddr(r *Route) string {
	if len(r.Queues) == 0 {
		return ""
	}
	return r.Addr(r.Queues[0])
}

// heartbeat tells every broker of the route that the consumer is live.
func (c *Consumer) heartbeat(ctx context.Context, r *Route) {
	for name, addr := range r.Addrs {
		if err := c.cl.Heartbeat(ctx, addr, c.clientID, c.group, c.model.wire(), "", c.topic); err != nil {
			c.env.Logger.Debug("heartbeat failed", "client", c.name, "broker", name, "err", err)
		}
	}
}

// lock locks (or renews) qs, per broker, marking each queue's heldLock.
func (c *Consumer) lock(ctx context.Context, r *Route, qs []rmq.MessageQueue, held func(rmq.MessageQueue) *heldLock) {
	for broker, group := range byBroker(qs) {
		got, err := c.cl.Lock(ctx, r.Addrs[broker], c.group, c.clientID, group)
		if err != nil {
			c.env.Logger.Debug("lock failed", "client", c.name, "broker", broker, "err", err)
			continue // keep what we had: it lapses after localLockTTL
		}
		ok := map[rmq.MessageQueue]bool{}
		for _, q := range got {
			ok[rmq.MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}] = true
		}
		until := c.env.Clock.Now().Add(localLockTTL)
		for _, q := range group {
			if h := held(q); h != nil {
				if ok[q] {
					h.renew(until)
				} else {
					h.lose()
				}
			}
		}
	}
}

func (c *Consumer) unlock(ctx context.Context, r *Route, qs []rmq.MessageQueue) {
	for broker, group := range byBroker(qs) {
		if err := c.cl.Unlock(ctx, r.Addrs[broker], c.group, c.clientID, group); err != nil {
			c.env.Logger.Debug("unlock failed", "client", c.name, "broker", broker, "err", err)
		}
	}
}

func byBroker(qs []rmq.MessageQueue) map[string][]rmq.MessageQueue {
	out := map[string][]rmq.MessageQueue{}
	for _, q := range qs {
		out[q.BrokerName] = append(out[q.BrokerName], q)
	}
	return out
}

// startOffset is where reading q begins: the member's own offset
// (broadcasting), else the group's committed one; the first message when
// there is none.
func (c *Consumer) startOffset(ctx context.Context, r *Route, q rmq.MessageQueue) (int64, error) {
	if c.model == Broadcasting {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.offsets[q.QueueID], nil
	}
	for i := 1; ; i++ {
		off, err := c.cl.QueryOffset(ctx, r.Addr(q), c.group, q)
		if err == nil {
			return max(off, 0), nil
		}
		c.env.Logger.Debug("query offset failed", "client", c.name, "queue", q.QueueID, "err", err)
		if !c.env.sleep(ctx, backoff(i)) {
			return 0, ctx.Err()
		}
	}
}

// errUntil is consume's answer when ctx ended before the offset reached
// until.
var errUntil = errors.New("workload: the consumer did not catch up before the deadline")

// consume reads q from its start offset, writing a Deliver line for each
// message, until ctx ends or, with until ≥ 0, the offset reaches until.
// held, for an orderly member, says whether it may read now.
func (c *Consumer) consume(ctx context.Context, r *Route, q rmq.MessageQueue, until int64, held *heldLock) error {
	offset, err := c.startOffset(ctx, r, q)
	if err != nil {
		return err
	}
	committed := offset
	lastCommit := c.env.Clock.Now()
	commit := func(ctx context.Context) {
		if c.model == Broadcasting {
			c.mu.Lock()
			c.offsets[q.QueueID] = offset
			c.mu.Unlock()
			return
		}
		if offset == committed {
			return
		}
		if err := c.cl.CommitOffset(ctx, r.Addr(q), c.group, q, offset); err != nil {
			c.env.Logger.Debug("commit offset failed", "client", c.name, "queue", q.QueueID, "err", err)
			return
		}
		committed = offset
	}
	defer commit(context.WithoutCancel(ctx))
	suspend := Suspend
	if until >= 0 {
		suspend = 0
	}
	errs := 0
	progress, progressAt := offset, c.env.Clock.Now()
	for {
		if until >= 0 && offset >= until {
			return nil
		}
		if offset != progress {
			progress, progressAt = offset, c.env.Clock.Now()
		} else if until >= 0 && c.env.Clock.Now().Sub(progressAt) >= CatchUpStall {
			return fmt.Errorf("workload: %s made no progress on queue %d of %s for %v, at offset %d of %d", c.name, q.QueueID, q.Topic, CatchUpStall, offset, until)
		}
		if ctx.Err() != nil {
			if until >= 0 {
				return errUntil
			}
			return nil
		}
		if held != nil && !held.ok(c.env.Clock.Now()) {
			c.env.sleep(ctx, 100*time.Millisecond)
			continue
		}
		res, err := c.cl.Pull(ctx, r.Addr(q), c.group, q, offset, PullBatch, suspend)
		if err != nil {
			errs++
			c.env.Logger.Debug("pull failed", "client", c.name, "queue", q.QueueID, "offset", offset, "err", err)
			c.env.sleep(ctx, backoff(errs))
			continue
		}
		errs = 0
		switch res.Code {
		case rmq.RespSuccess:
			for _, m := range res.Messages {
				c.deliver(q, m.QueueOffset, Receive(m))
			}
			if n := len(res.Messages); n > 0 {
				offset = max(offset, res.Messages[n-1].QueueOffset+1)
			}
			offset = max(offset, res.Header.NextBeginOffset)
			if c.model == Orderly {
				commit(ctx) // one batch at a time: resume after it
			}
		case rmq.RespPullOffsetMoved:
			offset = res.Header.NextBeginOffset
		default: // not found, retry immediately
			if res.Header.NextBeginOffset >= 0 {
				offset = res.Header.NextBeginOffset
			}
			if suspend == 0 && until >= 0 && offset < until {
				c.env.sleep(ctx, 50*time.Millisecond) // the log has not got there yet
			}
		}
		if now := c.env.Clock.Now(); now.Sub(lastCommit) >= CommitEvery {
			commit(ctx)
			lastCommit = now
		}
	}
}

// deliver writes the Deliver line of a message received from q.
func (c *Consumer) deliver(q rmq.MessageQueue, offset int64, rc Received) {
	c.env.record(rc.op(history.Deliver, c.workload, c.name, q.Topic, q.QueueID, offset))
}

// CatchUp reads each queue of share up to its offset in targets (the max
// offsets queried after the heal), from the member's own or the group's
// committed offset; an orderly member locks each queue first. It returns
// when every queue got there, or with an error when ctx ended first.
func (c *Consumer) CatchUp(ctx context.Context, share []rmq.MessageQueue, targets map[rmq.MessageQueue]int64) error {
	r, err := c.route(ctx)
	if err != nil {
		return err
	}
	c.heartbeat(ctx, r)
	var wg sync.WaitGroup
	errs := make([]error, len(share))
	for i, q := range share {
		var held *heldLock
		if c.model == Orderly {
			held = &heldLock{}
			for n := 1; !held.ok(c.env.Clock.Now()); n++ {
				c.lock(ctx, r, []rmq.MessageQueue{q}, func(rmq.MessageQueue) *heldLock { return held })
				if !held.ok(c.env.Clock.Now()) && !c.env.sleep(ctx, backoff(n)) {
					return errUntil
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.consume(ctx, r, q, targets[q], held)
		}()
	}
	wg.Wait()
	if c.model == Orderly {
		c.unlock(context.WithoutCancel(ctx), r, share)
	}
	return errors.Join(errs...)
}

// UnlockAll releases every lock the member may hold on the topic (before
// a drain shares the queues anew).
func (c *Consumer) UnlockAll(ctx context.Context) {
	r, err := c.route(ctx)
	if err == nil {
		c.unlock(ctx, r, r.Queues)
	}
}
