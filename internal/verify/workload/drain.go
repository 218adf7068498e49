package workload

// The final drain, after the cluster healed: MaxOffsets gives each queue's
// max offset (the consumers catch up to it), then DrainRead reads every
// queue from its min to its max offset with a reader of its own, writing
// a Drain line for every message it finds.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// queueOffset asks (retrying until ctx ends) one offset of q.
func queueOffset(ctx context.Context, env *Env, cl *Client, topic string, q rmq.MessageQueue, get func(context.Context, string, rmq.MessageQueue) (int64, error)) (int64, error) {
	for i := 1; ; i++ {
		r, err := cl.Route(ctx, topic, i > 1)
		if err == nil {
			var off int64
			if off, err = get(ctx, r.Addr(q), q); err == nil {
				return off, nil
			}
		}
		env.Logger.Debug("offset query failed", "client", cl.Name(), "queue", q.QueueID, "err", err)
		if !env.sleep(ctx, backoff(i)) {
			return 0, fmt.Errorf("workload: offset of queue %d of %s: %w", q.QueueID, topic, errors.Join(err, ctx.Err()))
		}
	}
}

// MaxOffsets returns the max offset of every queue of topic (retrying
// each until ctx ends), with the route's queues.
func MaxOffsets(ctx context.Context, env *Env, cl *Client, topic string) ([]rmq.MessageQueue, map[rmq.MessageQueue]int64, error) {
	r, err := routeRetry(ctx, env, cl, topic)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[rmq.MessageQueue]int64, len(r.Queues))
	for _, q := range r.Queues {
		off, err := stableMax(ctx, env, cl, topic, q)
		if err != nil {
			return nil, nil, err
		}
		out[q] = off
	}
	return r.Queues, out, nil
}

// stableMax is q's max offset once two readings StableGap apart agree (at
// most StableTries readings): a broker acknowledges a send before its
// consume queue lists it, and one just restarted may still be
// dispatching its log, so a single reading could stop the drain short of
// messages it was told were stored.
func stableMax(ctx context.Context, env *Env, cl *Client, topic string, q rmq.MessageQueue) (int64, error) {
	prev, err := queueOffset(ctx, env, cl, topic, q, cl.MaxOffset)
	for i := 1; err == nil && i < StableTries; i++ {
		if !env.sleep(ctx, StableGap) {
			return 0, ctx.Err()
		}
		var cur int64
		if cur, err = queueOffset(ctx, env, cl, topic, q, cl.MaxOffset); err == nil && cur == prev {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

// How stableMax waits for a queue's max offset to settle.
const (
	StableGap   = 100 * time.Millisecond
	StableTries = 50
)

func routeRetry(ctx context.Context, env *Env, cl *Client, topic string) (*Route, error) {
	for i := 1; ; i++ {
		r, err := cl.Route(ctx, topic, true)
		if err == nil {
			return r, nil
		}
		if !env.sleep(ctx, backoff(i)) {
			return nil, fmt.Errorf("workload: route of %s: %w", topic, errors.Join(err, ctx.Err()))
		}
	}
}

// DrainRead reads every queue of each topic from its min to its max
// offset and writes a Drain line {Workload, Process "<workload>-drain",
// ID, Topic, Queue, Offset, Sum, Corrupt} for each message. The reader
// pulls as group "verify-<runID>-<workload>-drain" without committing anything.
func DrainRead(ctx context.Context, env *Env, workload string, topics ...string) error {
	name := workload + "-drain"
	cl := NewClient(env, name)
	defer cl.Close()
	for _, topic := range topics {
		r, err := routeRetry(ctx, env, cl, topic)
		if err != nil {
			return err
		}
		for _, q := range r.Queues {
			if err := drainQueue(ctx, env, cl, workload, name, topic, q); err != nil {
				return err
			}
		}
	}
	return nil
}

func drainQueue(ctx context.Context, env *Env, cl *Client, workload, name, topic string, q rmq.MessageQueue) error {
	lo, err := queueOffset(ctx, env, cl, topic, q, cl.MinOffset)
	if err != nil {
		return err
	}
	hi, err := stableMax(ctx, env, cl, topic, q)
	if err != nil {
		return err
	}
	group := env.Topic(workload) + "-drain"
	for off, errs := lo, 0; off < hi; {
		r, err := cl.Route(ctx, topic, errs > 0)
		var res PullResult
		if err == nil {
			res, err = cl.Pull(ctx, r.Addr(q), group, q, off, PullBatch, 0)
		}
		if err != nil {
			errs++
			env.Logger.Debug("drain pull failed", "client", name, "queue", q.QueueID, "offset", off, "err", err)
			if !env.sleep(ctx, backoff(errs)) {
				return fmt.Errorf("workload: drain of queue %d of %s stopped at offset %d of %d: %w", q.QueueID, topic, off, hi, ctx.Err())
			}
			continue
		}
		errs = 0
		next := res.Header.NextBeginOffset
		for _, m := range res.Messages {
			env.record(Receive(m).op(history.Drain, workload, name, topic, q.QueueID, m.QueueOffset))
			next = max(next, m.QueueOffset+1)
		}
		if next <= off {
			// Nothing more below hi (a hole the store reports as not
			// found): the checker reports the offsets no Drain line has.
			if res.Code != rmq.RespSuccess {
				break
			}
			next = off + 1
		}
		off = next
	}
	return nil
}
