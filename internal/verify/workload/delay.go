package workload

// The delay workload: producers send messages with a delivery time (the
// 5.x timer property TIMER_DELIVER_MS, an exact unix-ms due time that
// Petrel's broker honours to the millisecond) a seeded 1-5 s ahead;
// consumers of one clustering group record each arrival. None may arrive
// before its DeliverAt; lateness is measured by the checker. The drain
// waits until every acknowledged message's due time has passed (plus a
// margin for the broker's timer to store it in the topic) before the
// consumers catch up and the log is read.
//
// This file also holds what the delay and txn workloads (and the grpc
// workload's drain) share: members that each own a fixed share of a
// topic's queues and pull them (memberPull), the wait for a group's
// committed offsets to reach the queues' max offsets (awaitOffsets), then
// the final read of every queue (DrainRead, drain.go).

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
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

func init() { register(delayName, func() Workload { return &delayWorkload{} }) }

type delayWorkload struct {
	env          *Env
	topic, group string
	members      *memberSet

	mu      sync.Mutex
	lastDue time.Time // the latest DeliverAt of an acked or in-doubt send
}

func (w *delayWorkload) Name() string { return delayName }

func (w *delayWorkload) Setup(ctx context.Context, env *Env) error {
	e, err := env.withDefaults()
	if err != nil {
		return err
	}
	w.env, w.topic, w.group = e, e.Topic(delayName), e.Group(delayName)
	c := NewClient(e, delayName+"-setup")
	defer c.Close()
	return c.CreateTopic(ctx, w.topic, e.Queues, false)
}

// Run drives the producers until ctx ends; the consumers go on until
// Drain has caught up (or Close).
func (w *delayWorkload) Run(ctx context.Context) error {
	if w.env == nil {
		return errors.New("workload: delay: Run before Setup")
	}
	w.members = startMembers(w.env, delayName, w.topic, w.group)
	var wg sync.WaitGroup
	for i := range w.env.Producers {
		wg.Go(func() { w.produce(ctx, i) })
	}
	wg.Wait()
	return nil
}

// seededRand is the random source of producer p of a workload: from the
// run id, so that a run's choices can be made again.
func seededRand(runID, workload string, p int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(runID + "/" + workload))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(p)))
}

// produce is producer i.
func (w *delayWorkload) produce(ctx context.Context, i int) {
	e := w.env
	name := fmt.Sprintf("%s-p%d", delayName, i)
	e.start(delayName, name, history.RoleProducer)
	c := NewClient(e, name)
	defer c.Close()
	rng := seededRand(e.RunID, delayName, i)
	start := e.Clock.Now()
	fails := 0
	for n := 0; ctx.Err() == nil; n++ {
		if e.Rate > 0 && !e.sleep(ctx, start.Add(time.Duration(n)*time.Second/time.Duration(e.Rate)).Sub(e.Clock.Now())) {
			return
		}
		delay := delayMin + time.Duration(rng.Int64N(int64(delayMax-delayMin)/int64(time.Millisecond)+1))*time.Millisecond
		id := ID(e.RunID, delayName, i, n)
		due := e.Clock.Now().Add(delay).UnixMilli()
		dueS := strconv.FormatInt(due, 10)
		body := Body(id, e.BodyBytes, Field{"due", dueS})
		op := history.New(history.Invoke, history.Send)
		op.Workload, op.Process, op.ID, op.Topic, op.Sum = delayName, name, id, w.topic, Sum(body)
		op.DeliverAt = time.UnixMilli(due)
		e.record(op)
		t0 := e.Clock.Now()
		err := w.sendOnce(context.WithoutCancel(ctx), c, n, body, idProperties(id, message.PropertyTimerDeliverMS, dueS))
		res := history.New(Outcome(err), history.Send)
		res.Workload, res.Process, res.ID, res.Topic, res.Latency = delayName, name, id, w.topic, e.Clock.Now().Sub(t0)
		// The broker answers where the timer holds the message, not where
		// it will be delivered: the OK line has no queue or offset.
		if err != nil {
			res.Error = errText(err)
		}
		e.record(res)
		if res.Type != history.Fail {
			w.mu.Lock()
			if t := time.UnixMilli(due); t.After(w.lastDue) {
				w.lastDue = t
			}
			w.mu.Unlock()
		}
		if err == nil {
			fails = 0
			continue
		}
		fails++
		if !e.sleep(ctx, backoff(fails)) {
			return
		}
	}
}

// sendOnce sends the n-th body to a queue of the topic, refreshing the
// route after a failure.
func (w *delayWorkload) sendOnce(ctx context.Context, c *Client, n int, body []byte, props string) error {
	r, err := c.Route(ctx, w.topic, false)
	if err != nil {
		return noRoute(err)
	}
	q := r.Queues[n%len(r.Queues)]
	_, err = c.Send(ctx, r, q, body, SendOpts{Properties: props})
	if err != nil {
		_, _ = c.Route(ctx, w.topic, true)
	}
	return err
}

// noRoute is the error of a send that found no route: Fail, as it was
// never written (even when the name server's answer timed out).
func noRoute(err error) error {
	return &OpError{Outcome: history.Fail, Code: -1, Err: fmt.Errorf("no route: %w", err)}
}

// Drain waits until the last due time has passed (plus a margin), then
// lets the consumers catch up and reads the topic.
func (w *delayWorkload) Drain(ctx context.Context) error {
	if w.env == nil || w.members == nil {
		return errors.New("workload: delay: Drain before Run")
	}
	w.mu.Lock()
	last := w.lastDue
	w.mu.Unlock()
	if !w.env.sleep(ctx, last.Add(delayMargin).Sub(w.env.Clock.Now())) {
		w.members.stop()
		return fmt.Errorf("workload: delay: waiting for the due times: %w", ctx.Err())
	}
	return catchUpAndDrain(ctx, w.env, w.members.stop, delayName, w.topic, w.group)
}

func (w *delayWorkload) Close() error {
	if w.members != nil {
		w.members.stop()
	}
	return nil
}

// catchUpAndDrain waits until group's committed offsets reach the
// topic's max offsets as they are now, stops the members, and reads the
// topic (DrainRead). Consumers that do not catch up do not end the drain:
// what they did not get is what the checker reports as undelivered.
func catchUpAndDrain(ctx context.Context, e *Env, stop func(), workload, topic, group string) error {
	c := NewClient(e, workload+"-drain")
	err := awaitOffsets(ctx, e, c, topic, group)
	c.Close()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("workload %s: %w", workload, err)
		}
		e.Logger.Warn("consumers did not catch up", "workload", workload, "err", err)
	}
	if err := DrainRead(ctx, e, workload, topic); err != nil {
		return fmt.Errorf("workload %s: %w", workload, err)
	}
	return nil
}

// memberSet is the running consumers of a group.
type memberSet struct {
	stopFn context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// stop ends the members and waits for them; idempotent.
func (s *memberSet) stop() {
	s.once.Do(func() {
		s.stopFn()
		s.wg.Wait()
	})
}

// startMembers starts the env's Consumers members of group on topic;
// member i (process <workload>-c<i>) owns the queues whose id is i modulo
// the member count, so no rebalancing is needed.
func startMembers(e *Env, workload, topic, group string) *memberSet {
	ctx, cancel := context.WithCancel(context.Background())
	s := &memberSet{stopFn: cancel}
	for i := range e.Consumers {
		s.wg.Go(func() { memberPull(ctx, e, workload, topic, group, i, e.Consumers) })
	}
	return s
}

// catchUpStall is how long the group's committed offsets may stand still,
// short of the max offsets, before the catch-up gives up (a message
// retried to the group's dead-letter queue, say, holds a pop group's
// offset back for good).
const catchUpStall = 15 * time.Second

// memberPollGap is a member's pause after a round over its queues that
// found nothing.
const memberPollGap = 50 * time.Millisecond

// memberPull is member i of n: it pulls its queues from the group's
// committed offsets, records every message and commits after each batch.
func memberPull(ctx context.Context, e *Env, workload, topic, group string, i, n int) {
	name := fmt.Sprintf("%s-c%d", workload, i)
	e.start(workload, name, history.RoleConsumer)
	c := NewClient(e, name)
	defer c.Close()
	next := map[int32]int64{} // next offset of each queue; absent: ask the broker
	fails := 0
	for ctx.Err() == nil {
		found, err := memberRound(ctx, e, c, workload, topic, group, i, n, next, fails > 0)
		switch {
		case err != nil && ctx.Err() == nil:
			e.Logger.Debug("consumer error", "process", name, "err", err)
			clear(next) // read the committed offsets again
			fails++
			e.sleep(ctx, backoff(fails))
		case found:
			fails = 0
		default:
			fails = 0
			e.sleep(ctx, memberPollGap)
		}
	}
}

// memberRound pulls each of the member's queues once; found says whether
// any message came.
func memberRound(ctx context.Context, e *Env, c *Client, workload, topic, group string, i, n int, next map[int32]int64, fresh bool) (bool, error) {
	r, err := c.Route(ctx, topic, fresh)
	if err != nil {
		return false, err
	}
	found := false
	for _, q := range r.Queues {
		if int(q.QueueID)%n != i || ctx.Err() != nil {
			continue
		}
		addr := r.Addr(q)
		off, ok := next[q.QueueID]
		if !ok {
			if off, err = c.QueryOffset(ctx, addr, group, q); err != nil {
				return found, err
			}
			// A group without an offset reads from the start (the broker
			// moves a pull below the min offset up to it).
			off = max(off, 0)
		}
		pr, err := c.Pull(ctx, addr, group, q, off, 32, 0)
		if err != nil {
			return found, err
		}
		switch pr.Code {
		case rmq.RespSuccess:
			found = true
			for _, m := range pr.Messages {
				e.record(receivedOp(m, history.Deliver, workload, c.Name(), topic))
			}
			off = pr.Header.NextBeginOffset
			if err := c.CommitOffset(ctx, addr, group, q, off); err != nil {
				next[q.QueueID] = off
				return found, err
			}
		case rmq.RespPullOffsetMoved, rmq.RespPullRetryImmediately:
			off = max(off, pr.Header.NextBeginOffset)
		}
		next[q.QueueID] = off
	}
	return found, nil
}

// receivedOp is the Deliver or Drain line of a message pulled from topic.
func receivedOp(m *message.Message, f history.Func, workload, process, topic string) history.Op {
	rv := Receive(m)
	op := history.New(history.Info, f)
	op.Workload, op.Process, op.Topic = workload, process, topic
	op.ID, op.Sum, op.Corrupt = rv.ID, rv.Sum, rv.Corrupt
	op.Key, op.Seq = rv.Fields["key"], rv.Seq()
	op.Queue, op.Offset = m.QueueID, m.QueueOffset
	return op
}

// awaitOffsets takes the max offset of every queue of topic now and waits
// until group's committed offset of each reaches it (or ctx ends).
func awaitOffsets(ctx context.Context, e *Env, c *Client, topic, group string) error {
	var r *Route
	want := map[rmq.MessageQueue]int64{}
	for n := 1; ; n++ {
		var err error
		if r, err = c.Route(ctx, topic, true); err == nil {
			for _, q := range r.Queues {
				var m int64
				if m, err = c.MaxOffset(ctx, r.Addr(q), q); err != nil {
					break
				}
				want[q] = m
			}
		}
		if err == nil {
			break
		}
		if !e.sleep(ctx, backoff(n)) {
			return fmt.Errorf("workload: max offsets of %s: %w", topic, errors.Join(err, ctx.Err()))
		}
	}
	var progress int64 = -1
	lastMove := e.Clock.Now()
	for n := 1; ; n++ {
		behind := 0
		var sum int64
		for q, m := range want {
			if m <= 0 {
				continue // an empty queue: nothing to catch up with (and no offset to commit)
			}
			off, err := c.QueryOffset(ctx, r.Addr(q), group, q)
			if err != nil || off < m {
				behind++
			}
			sum += max(off, 0)
		}
		if behind == 0 {
			return nil
		}
		if sum != progress {
			progress, lastMove = sum, e.Clock.Now()
		} else if e.Clock.Now().Sub(lastMove) > catchUpStall {
			return fmt.Errorf("workload: group %s stalled %d queues short of the max offsets of %s for %v", group, behind, topic, catchUpStall)
		}
		if !e.sleep(ctx, min(backoff(n), memberPollGap*2)) {
			return fmt.Errorf("workload: group %s did not catch up with %s (%d queues behind): %w", group, topic, behind, ctx.Err())
		}
	}
}
