package grpcfront

// The send queue coalesces the broker sends of concurrent SendMessage
// calls. A call finding fewer than maxStoring batches being stored goes to
// the broker at once, so an idle front adds no latency and no timer is
// involved. Otherwise it joins the next batch: the calls that arrive while
// the batches before are stored go to the broker as one SendBatch — one
// commit-log submission, one group commit — which the first of them
// submits as soon as a batch before it is answered. With one message per
// call, that is what makes the sends of many calls one write, as the
// sends of one socket read are on the remoting front.

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/broker"
)

// maxStoring is how many batches the queue has at the broker at once: one
// being stored (written, or synced under sync flush) and the next queued
// at the commit log behind it, so the log never waits for the front.
const maxStoring = 2

// batchSender is the broker call the queue makes; *broker.Broker has it.
type batchSender interface {
	SendBatch(ctx context.Context, reqs []*broker.SendRequest, done func(i int, res broker.SendResult, err error))
}

// sendQueue: see the file comment. The zero value is not usable; see
// newSendQueue.
type sendQueue struct {
	b batchSender

	mu      sync.Mutex
	storing int        // batches at the broker, not yet answered in full
	next    *sendBatch // the batch calls join while storing == maxStoring
}

func newSendQueue(b batchSender) *sendQueue { return &sendQueue{b: b} }

// sendCall is one call's part of a batch.
type sendCall struct {
	ctx  context.Context
	reqs []*broker.SendRequest
	done func(k int, res broker.SendResult, err error)
}

// sendBatch is the calls that go to the broker together.
type sendBatch struct {
	calls []sendCall
	// start is closed when the batch may go to the broker; its first call
	// waits for it and submits the batch.
	start chan struct{}
}

// send stores reqs as broker.SendBatch does, calling done(k, res, err)
// once for each reqs[k] (on a broker or store goroutine); it may wait for
// earlier batches to be stored, but never for its own sends.
func (q *sendQueue) send(ctx context.Context, reqs []*broker.SendRequest, done func(k int, res broker.SendResult, err error)) {
	c := sendCall{ctx: ctx, reqs: reqs, done: done}
	q.mu.Lock()
	if q.next == nil && q.storing < maxStoring {
		q.storing++
		q.mu.Unlock()
		q.submit([]sendCall{c})
		return
	}
	nb := q.next
	if nb != nil {
		nb.calls = append(nb.calls, c)
		q.mu.Unlock()
		return
	}
	nb = &sendBatch{calls: []sendCall{c}, start: make(chan struct{})}
	q.next = nb
	q.mu.Unlock()
	<-nb.start // answered ends it: the batch is no longer q.next, no call joins it any more
	q.submit(nb.calls)
}

// answered is called when a batch is answered in full: the next batch may
// go.
func (q *sendQueue) answered() {
	q.mu.Lock()
	nb := q.next
	if nb == nil {
		q.storing--
		q.mu.Unlock()
		return
	}
	q.next = nil // it takes the place of the batch answered
	q.mu.Unlock()
	close(nb.start)
}

// submit sends the calls to the broker, as one SendBatch where it can,
// and calls answered once every send is answered. A call whose context has
// ended goes on its own, with its context, so that the broker refuses it as
// it would have; the others share the first one's context without its
// cancellation, since one call's end must not refuse the other calls'
// sends (the broker checks a context before it stores a send, and stores
// it regardless once it writes).
func (q *sendQueue) submit(calls []sendCall) {
	n := 0
	for _, c := range calls {
		n += len(c.reqs)
	}
	left := newCountdown(n, q.answered)
	if len(calls) == 1 {
		q.b.SendBatch(calls[0].ctx, calls[0].reqs, left.wrap(calls[0].done))
		return
	}
	live := make([]sendCall, 0, len(calls))
	n = 0
	for _, c := range calls {
		if c.ctx.Err() != nil {
			q.b.SendBatch(c.ctx, c.reqs, left.wrap(c.done))
			continue
		}
		live = append(live, c)
		n += len(c.reqs)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		q.b.SendBatch(live[0].ctx, live[0].reqs, left.wrap(live[0].done))
		return
	}
	reqs := make([]*broker.SendRequest, 0, n)
	owner := make([]int32, 0, n) // reqs[i] is live[owner[i]].reqs[i-first[owner[i]]]
	first := make([]int32, len(live))
	for ci, c := range live {
		first[ci] = int32(len(reqs))
		reqs = append(reqs, c.reqs...)
		for range c.reqs {
			owner = append(owner, int32(ci))
		}
	}
	q.b.SendBatch(context.WithoutCancel(live[0].ctx), reqs, func(i int, res broker.SendResult, err error) {
		ci := owner[i]
		live[ci].done(i-int(first[ci]), res, err)
		left.done()
	})
}

// countdown calls f when done was called n times (at once for n = 0).
type countdown struct {
	n atomic.Int64
	f func()
}

func newCountdown(n int, f func()) *countdown {
	c := &countdown{f: f}
	c.n.Store(int64(n))
	if n == 0 {
		f()
	}
	return c
}

func (c *countdown) done() {
	if c.n.Add(-1) == 0 {
		c.f()
	}
}

// wrap is done followed by c.done.
func (c *countdown) wrap(done func(int, broker.SendResult, error)) func(int, broker.SendResult, error) {
	return func(k int, res broker.SendResult, err error) {
		done(k, res, err)
		c.done()
	}
}
