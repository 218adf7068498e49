package broker

// SendBatch: the sends a front decoded together (a remoting connection's
// sends of one socket read, a gRPC SendMessage's messages) validated one by
// one and stored with one store call, which the commit log writes as one
// group commit. Sends that cannot be stored without waiting — their topic
// must be created first, a topic change is not yet on disk, or their
// UNIQ_KEY is held by a send being stored — are finished on a goroutine the
// broker tracks (Close waits for it), so the caller never blocks and never
// falls back to anything.

import (
	"context"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker/dedup"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// SendBatch validates and stores each of reqs as Send does (see Send for
// the validation, the errors and the results) and calls done(i, res, err)
// once for each reqs[i], without blocking: the sends that can be stored at
// once go to the store in one call (one group commit; a batch request's
// messages stay consecutive records), the others are finished on a
// goroutine of the broker's. done runs on a store goroutine, on that
// goroutine, or on the caller's before SendBatch returns (refusals, dedup
// answers, and under async flush a Sender's stored sends); it must not
// block. Each request's Body and Properties must stay unchanged until its
// done runs; reqs itself may be reused once SendBatch returns.
func (b *Broker) SendBatch(ctx context.Context, reqs []*SendRequest, done func(i int, res SendResult, err error)) {
	b.sendBatch(ctx, reqs, done, b.st.PutBatches)
}

// A Sender is one caller's handle for SendBatch — a remoting connection's
// reader has one. Its store appender writes on the caller's goroutine
// under async flush (store.Appender), so a batch is written and answered
// before SendBatch returns and no goroutine is woken for it. A Sender
// serves one call at a time; a call while another runs panics.
type Sender struct {
	b   *Broker
	app store.BatchAppender
}

// NewSender returns a Sender for one caller.
func (b *Broker) NewSender() *Sender { return &Sender{b: b, app: b.st.NewAppender()} }

// SendBatch is Broker.SendBatch through the sender's appender.
func (s *Sender) SendBatch(ctx context.Context, reqs []*SendRequest, done func(i int, res SendResult, err error)) {
	s.b.sendBatch(ctx, reqs, done, s.app.PutBatches)
}

// pendingSend is a validated send on its way to the store.
type pendingSend struct {
	i     int // index in the caller's batch
	req   *SendRequest
	msgs  []*message.Message // nil: not prepared yet (slow path)
	qid   int32
	claim dedup.Claim // the zero Claim when not deduplicated
	t0    time.Time   // for Config.ObserveSend
}

// putFunc stores groups with one store call (Store.PutBatches or an
// Appender's).
type putFunc func(groups [][]*message.Message, done func(i int, err error))

func (b *Broker) sendBatch(ctx context.Context, reqs []*SendRequest, done func(int, SendResult, error), put putFunc) {
	var (
		ready  []pendingSend
		groups [][]*message.Message
		slow   []pendingSend
	)
	for i, req := range reqs {
		p := pendingSend{i: i, req: req, t0: b.sendStart()}
		if _, ok := b.meta.Topic(req.Topic); !ok || !b.meta.TopicsDurable() || hasTopic(slow, req.Topic) {
			// Creating the topic or waiting for the table writes metadata;
			// and a send after one of its topic that had to wait waits
			// too, so that the sends of a queue are stored in order.
			slow = append(slow, p)
			continue
		}
		msgs, qid, err := b.prepareSend(ctx, req, false)
		if err != nil {
			b.sendDone(p.t0)
			done(i, SendResult{}, err)
			continue
		}
		p.msgs, p.qid = msgs, qid
		if !b.claim(&p, false) {
			slow = append(slow, p) // its original is being stored: wait for it there
			continue
		}
		if p.claim.Dup {
			b.answerDup(&p, done)
			continue
		}
		if b.loseSend(&p, done) {
			continue
		}
		if ready == nil {
			ready = make([]pendingSend, 0, len(reqs)-i)
			groups = make([][]*message.Message, 0, len(reqs)-i)
		}
		ready = append(ready, p)
		groups = append(groups, msgs)
	}
	if len(groups) > 0 {
		put(groups, func(k int, err error) { b.finishSend(&ready[k], err, done) })
	}
	if len(slow) > 0 {
		b.goSlow(ctx, slow, done)
	}
}

// hasTopic reports whether a send of ps is to topic (ps is short: sends
// that had to wait are rare).
func hasTopic(ps []pendingSend, topic string) bool {
	for i := range ps {
		if ps[i].req.Topic == topic {
			return true
		}
	}
	return false
}

// claim takes the dedup claim of p (prepared), waiting for a send holding
// its id when wait is set; without wait it reports false when one does.
func (b *Broker) claim(p *pendingSend, wait bool) bool {
	uk := b.dedupKey(p.req, p.msgs)
	if uk == "" {
		return true
	}
	if wait {
		p.claim = b.dedup.Acquire(p.req.Topic, uk)
		return true
	}
	c, ok := b.dedup.TryAcquire(p.req.Topic, uk)
	p.claim = c
	return ok
}

// answerDup answers a resend of a stored send with the original's result;
// under sync replication once the commit point covers what is durable now
// (the original included), as the original's answer would.
func (b *Broker) answerDup(p *pendingSend, done func(int, SendResult, error)) {
	res := b.dupResult(p.claim.Result)
	if b.syncReplication() {
		b.repl.wait(b.st.Durable(), func(err error) {
			b.sendDone(p.t0)
			done(p.i, b.leaseAnswer(b.replicated(res, err)), nil)
		})
		return
	}
	b.sendDone(p.t0)
	done(p.i, b.leaseAnswer(res), nil)
}

// finishSend answers p once the store answered it with err, and settles
// its dedup claim. Under sync replication a stored send is answered after
// the commit point covers it (or the wait fails, see replication.go), and
// its claim is settled then, so that a resend waits for the same answer.
// A stored send is acknowledged only while the master lease holds
// (leaseAnswer), with or without replication.
func (b *Broker) finishSend(p *pendingSend, err error, done func(int, SendResult, error)) {
	res, err := b.sendResult(p.msgs, p.qid, err)
	if err == nil && !p.req.Batch && len(p.msgs) == 1 {
		res.RecallHandle = b.recallHandle(p.msgs[0])
	}
	if err == nil && b.syncReplication() {
		b.repl.wait(recordsEnd(p.msgs), func(rerr error) {
			p.claim.Commit(dedupResult(p.req.Topic, p.qid, p.msgs[0]))
			b.sendDone(p.t0)
			done(p.i, b.leaseAnswer(b.replicated(res, rerr)), nil)
		})
		return
	}
	if err == nil {
		p.claim.Commit(dedupResult(p.req.Topic, p.qid, p.msgs[0]))
		res = b.leaseAnswer(res)
	} else {
		p.claim.Release()
	}
	b.sendDone(p.t0)
	done(p.i, res, err)
}

// goSlow finishes sends that must wait, in order, on a goroutine Close
// waits for (until they are answered); after Close they are refused.
func (b *Broker) goSlow(ctx context.Context, slow []pendingSend, done func(int, SendResult, error)) {
	if !b.sends.start(func() { b.sendSlow(ctx, slow, done) }) {
		for i := range slow {
			b.sendDone(slow[i].t0)
			slow[i].claim.Release()
			done(slow[i].i, SendResult{}, b.errClosed())
		}
	}
}

// sendSlow returns once every send of slow is answered, so that Close,
// which waits for it, returns after their answers.
func (b *Broker) sendSlow(ctx context.Context, slow []pendingSend, done func(int, SendResult, error)) {
	var stored sync.WaitGroup
	defer stored.Wait()
	for k := range slow {
		p := &slow[k]
		if p.msgs == nil {
			msgs, qid, err := b.prepareSend(ctx, p.req, true)
			if err != nil {
				b.sendDone(p.t0)
				done(p.i, SendResult{}, err)
				continue
			}
			p.msgs, p.qid = msgs, qid
		}
		b.claim(p, true)
		if p.claim.Dup {
			b.answerDup(p, done)
			continue
		}
		if b.loseSend(p, done) {
			continue
		}
		stored.Add(1)
		b.st.PutBatches([][]*message.Message{p.msgs}, func(_ int, err error) {
			b.finishSend(p, err, done)
			stored.Done()
		})
	}
}

// sendWork tracks the goroutines of sends that had to wait (goSlow).
type sendWork struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// start runs f on a tracked goroutine, or reports false after close.
func (w *sendWork) start(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f()
	}()
	return true
}

// close refuses new work and waits for the goroutines running.
func (w *sendWork) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}
