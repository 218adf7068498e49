package workload

// The delay workload: producers send messages with a delivery time (the
// 5.x timer property TIMER_DELIVER_MS, an exact unix-ms due time that
// Petrel's broker honours to the millisecond) a seeded 1-5 s ahead;
// consumers of one clustering group record each arrival. None may arrive
// before its DeliverAt; lateness is measured by the checker. The
// consumers go on after Run, and the drain waits until every sent
// message's due time has passed (plus a margin for the broker's timer to
// store it in the topic) before the consumers catch up and the log is
// read.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

const delayName = "delay"

// Delay workload settings.
const (
	// delayMin and delayMax bound the seeded delays.
	delayMin = time.Second
	delayMax = 5 * time.Second
	// delayMargin is how long after the last due time the drain starts:
	// time for the broker's timer to fire and store the messages.
	delayMargin = 2 * time.Second
)

func init() { register(delayName, func() Workload { return newDelay() }) }

type delayWorkload struct {
	pubsub

	mu      sync.Mutex
	lastDue time.Time // the latest DeliverAt of a send
}

func newDelay() *delayWorkload {
	w := &delayWorkload{}
	w.pubsub = pubsub{name: delayName, model: Clustering, linger: true, produce: w.produce, settle: w.awaitDue}
	return w
}

// produce sends messages due a seeded delay ahead, round robin over the
// queues, until ctx ends.
func (w *delayWorkload) produce(ctx context.Context, ps *pubsub, p *Producer) {
	rng := p.rand()
	rr := p.RoundRobin()
	for p.Pace(ctx) {
		delay := delayMin + time.Duration(rng.Int64N(int64(delayMax-delayMin)/int64(time.Millisecond)+1))*time.Millisecond
		id := p.NextID()
		due := ps.env.Clock.Now().Add(delay).UnixMilli()
		dueS := strconv.FormatInt(due, 10)
		m := Outgoing{
			ID: id, Body: Body(id, ps.env.BodyBytes, Field{"due", dueS}), Queue: rr,
			Properties: idProperties(id, message.PropertyTimerDeliverMS, dueS),
			// The broker answers where the timer holds the message, not
			// where it will be delivered.
			Staged: true, Paced: true,
		}
		m.Invoke.DeliverAt = time.UnixMilli(due)
		w.mu.Lock()
		if m.Invoke.DeliverAt.After(w.lastDue) {
			w.lastDue = m.Invoke.DeliverAt // before the send: it may be stored however it ends
		}
		w.mu.Unlock()
		if _, ok := p.Send(ctx, m); !ok {
			return
		}
	}
}

// awaitDue waits until the last due time has passed, plus a margin.
func (w *delayWorkload) awaitDue(ctx context.Context) error {
	w.mu.Lock()
	last := w.lastDue
	w.mu.Unlock()
	if !w.env.sleep(ctx, last.Add(delayMargin).Sub(w.env.Clock.Now())) {
		return fmt.Errorf("waiting for the due times: %w", ctx.Err())
	}
	return nil
}
