package workload

// A producer with sync sends: every send is an Invoke line and one
// OK/Fail/InDoubt line. A send that did not succeed is sent again under
// the same id (and UNIQ_KEY, so the broker's deduplication may answer it
// with the first one's result) after a back-off, as a new Invoke line,
// until it succeeds or the producer's ctx ends. A send already on the
// wire when ctx ends runs to its answer or its timeout, or until the
// route names another master for its broker (SendWatched): a paused
// master does not hold the producer past the failover.

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// Producer is one sending client of a workload; its Process is its name.
type Producer struct {
	env      *Env
	workload string
	name     string
	index    int
	topic    string
	group    string // producer group
	cl       *Client
	next     int // the n of the next id
	pace     pacer
}

// NewProducer returns producer number index of a workload, named
// "<workload>-p<index>", sending to topic (producer group
// "verify-<runID>-<workload>-pg").
// The opts are NewClient's.
func NewProducer(env *Env, workload string, index int, topic string, opts ...func(*remoting.ClientOptions)) *Producer {
	name := producerName(workload, index)
	return &Producer{
		env: env, workload: workload, name: name, index: index, topic: topic,
		group: env.producerGroup(workload), cl: NewClient(env, name, opts...),
		pace: pacer{env: env, rate: env.Rate},
	}
}

// producerName is the Process of producer number index of a workload.
func producerName(workload string, index int) string { return workload + "-p" + itoa(index) }

// rand is the producer's random source: seeded from the run id, the
// workload and its index, so that a run's choices can be made again.
func (p *Producer) rand() *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(p.env.RunID + "/" + p.workload))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(p.index)))
}

// Client is the producer's client (for requests beyond sends).
func (p *Producer) Client() *Client { return p.cl }

// Name is the producer's Process.
func (p *Producer) Name() string { return p.name }

// Close closes its connections.
func (p *Producer) Close() error { return p.cl.Close() }

// Start writes the producer's Start line.
func (p *Producer) Start() { p.env.start(p.workload, p.name, history.RoleProducer) }

// NextID returns the id of the producer's next message.
func (p *Producer) NextID() string {
	id := ID(p.env.RunID, p.workload, p.index, p.next)
	p.next++
	return id
}

// Outgoing is a message to send.
type Outgoing struct {
	ID   string
	Body []byte
	// Invoke is the Invoke line's template: Workload, Process, ID, Topic
	// and Sum are filled in; set Key/Seq, DeliverAt, Txn as they apply.
	Invoke history.Op
	// Queue picks the queue of an attempt (n from 0) from the route.
	Queue func(r *Route, n int) rmq.MessageQueue
	// Properties: encoded; empty means idProperties(ID).
	Properties string
	SysFlag    int32
	// Staged: the broker stores the message first where it is not
	// delivered from (the timer's queue, a half): the OK line gets no
	// queue or offset.
	Staged bool
	// Paced: the caller waited for the first attempt's turn (Pace), so
	// that the time it put in the body is that of the send.
	Paced bool
}

// RoundRobin picks the queues in turn, as RocketMQ's default selector.
func (p *Producer) RoundRobin() func(r *Route, n int) rmq.MessageQueue {
	return func(r *Route, _ int) rmq.MessageQueue {
		q := r.Queues[p.pace.sent%len(r.Queues)]
		return q
	}
}

// Send sends m until it succeeds or ctx ends, and reports whether it
// succeeded (with where it was stored). Each attempt is paced by
// Env.Rate.
func (p *Producer) Send(ctx context.Context, m Outgoing) (SendResult, bool) {
	props := m.Properties
	if props == "" {
		props = idProperties(m.ID)
	}
	sum := Sum(m.Body)
	refresh := false
	for n := 0; ; n++ {
		if (n > 0 || !m.Paced) && !p.pace.wait(ctx) {
			return SendResult{}, false
		}
		r, err := p.cl.Route(ctx, p.topic, refresh)
		if err != nil && refresh {
			r, err = p.cl.Route(ctx, p.topic, false) // the last one known, if any
		}
		inv := m.Invoke
		inv.Type, inv.F = history.Invoke, history.Send
		inv.Workload, inv.Process, inv.ID, inv.Topic, inv.Sum = p.workload, p.name, m.ID, p.topic, sum
		inv.Queue, inv.Offset = -1, -1
		var q rmq.MessageQueue
		if err == nil {
			q = m.Queue(r, n)
			inv.Group = q.BrokerName // what a master fault's failover time is measured on
		}
		inv = p.env.record(inv)
		var res SendResult
		outcome := history.Fail // no route: the send was never written
		if err == nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.env.SendTimeout)
			res, err = p.cl.SendWatched(sctx, r, q, m.Body, SendOpts{ProducerGroup: p.group, Properties: props, SysFlag: m.SysFlag})
			cancel()
			outcome = Outcome(err)
		}
		out := history.New(outcome, history.Send)
		out.Workload, out.Process, out.ID, out.Group = p.workload, p.name, m.ID, inv.Group
		out.Latency = p.env.Clock.Now().Sub(inv.Time)
		if err == nil {
			if !m.Staged {
				out.Queue, out.Offset = res.Queue, res.Offset
			}
			p.env.record(out)
			return res, true
		}
		// A refusal may mean a stale route, and so may a lost or
		// unanswered request: the master may have moved (a failover).
		refresh = true
		out.Error = errText(err)
		p.env.record(out)
		p.env.Logger.Debug("send failed", "client", p.name, "id", m.ID, "outcome", string(out.Type), "err", err)
		if !p.env.sleep(ctx, backoff(n+1)) {
			return SendResult{}, false
		}
	}
}

// Pace waits for the next send's turn (Env.Rate); false when ctx ended.
// A send after it is Outgoing.Paced.
func (p *Producer) Pace(ctx context.Context) bool { return p.pace.wait(ctx) }

// pacer spaces a producer's sends to rate per second (0: no pacing).
type pacer struct {
	env  *Env
	rate int
	next time.Time
	sent int
}

// wait blocks until the next send may go; false when ctx ended.
func (p *pacer) wait(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	p.sent++
	if p.rate <= 0 {
		return true
	}
	now := p.env.Clock.Now()
	gap := time.Second / time.Duration(p.rate)
	if p.next.IsZero() || now.Sub(p.next) > gap {
		p.next = now // behind (or first): no burst to catch up
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(gap)
	return p.env.sleep(ctx, d)
}
