package workload

// The queue workload (the default): Env.Producers producers with sync
// sends on a topic of Env.Queues queues, Env.Consumers consumers in one
// clustering group. pubsub is the frame it shares with broadcast and
// ordered: one topic, one group, producers and consumers, the drain.

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

func init() {
	register("queue", func() Workload { return &pubsub{name: "queue", model: Clustering, produce: produceQueue} })
}

// pubsub is a workload of one topic and one consumer group.
type pubsub struct {
	name    string
	model   Model
	order   bool // the topic's order flag
	produce func(ctx context.Context, w *pubsub, p *Producer)

	env       *Env
	topic     string
	group     string
	producers []*Producer
	consumers []*Consumer
}

func (w *pubsub) Name() string { return w.name }

// Setup creates the topic (on every broker the name servers know) and the
// clients.
func (w *pubsub) Setup(ctx context.Context, env *Env) error {
	if w.env != nil {
		return fmt.Errorf("workload %s: Setup called twice", w.name)
	}
	e, err := env.withDefaults()
	if err != nil {
		return err
	}
	w.env, w.topic, w.group = e, e.Topic(w.name), e.Group(w.name)
	admin := NewClient(e, w.name+"-setup")
	defer admin.Close()
	if err := admin.CreateTopic(ctx, w.topic, e.Queues, w.order); err != nil {
		return fmt.Errorf("workload %s: %w", w.name, err)
	}
	for i := range e.Producers {
		w.producers = append(w.producers, NewProducer(e, w.name, i, w.topic))
	}
	for i := range e.Consumers {
		w.consumers = append(w.consumers, NewConsumer(e, w.name, w.name+"-c"+itoa(i), w.topic, w.group, w.model))
	}
	return nil
}

// Run starts the consumers, then the producers, and returns when ctx
// ended and all of them stopped.
func (w *pubsub) Run(ctx context.Context) error {
	if w.env == nil {
		return fmt.Errorf("workload %s: Run before Setup", w.name)
	}
	var wg sync.WaitGroup
	for _, c := range w.consumers {
		c.Start()
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
	}
	for _, p := range w.producers {
		p.Start()
		wg.Add(1)
		go func() { defer wg.Done(); w.produce(ctx, w, p) }()
	}
	wg.Wait()
	return nil
}

// Drain lets the consumers catch up to the max offsets (shared among
// them as the group would; broadcasting, each reads all), then reads the
// log.
func (w *pubsub) Drain(ctx context.Context) error {
	if w.env == nil {
		return fmt.Errorf("workload %s: Drain before Setup", w.name)
	}
	cl := NewClient(w.env, w.name+"-drain")
	qs, targets, err := MaxOffsets(ctx, w.env, cl, w.topic)
	cl.Close()
	if err != nil {
		return fmt.Errorf("workload %s: %w", w.name, err)
	}
	var ids []string
	for _, c := range w.consumers {
		ids = append(ids, c.ClientID())
		if w.model == Orderly {
			c.UnlockAll(ctx)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(w.consumers))
	for i, c := range w.consumers {
		share := qs
		if w.model != Broadcasting {
			share = Allocate(qs, ids, c.ClientID())
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.CatchUp(ctx, share, targets) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Not the end of the drain: what the consumers did not get is
		// what the checker reports as undelivered.
		w.env.Logger.Warn("consumers did not catch up", "workload", w.name, "err", err)
	}
	if err := DrainRead(ctx, w.env, w.name, w.topic); err != nil {
		return fmt.Errorf("workload %s: %w", w.name, err)
	}
	return nil
}

// Close closes every client's connections.
func (w *pubsub) Close() error {
	for _, p := range w.producers {
		p.Close()
	}
	for _, c := range w.consumers {
		c.Close()
	}
	return nil
}

// produceQueue sends messages round robin over the queues until ctx ends.
func produceQueue(ctx context.Context, w *pubsub, p *Producer) {
	rr := p.RoundRobin()
	for ctx.Err() == nil {
		id := p.NextID()
		p.Send(ctx, Outgoing{ID: id, Body: Body(id, w.env.BodyBytes), Queue: rr})
	}
}
