package workload

// The queue workload (the default): Env.Producers producers with sync
// sends on a topic of Env.Queues queues, Env.Consumers consumers in one
// clustering group. pubsub is the frame it shares with broadcast,
// ordered, delay and txn (any workload of one topic and one group):
// producers "<workload>-pN" running its produce func, consumers
// "<workload>-cN" of its model, the drain.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petrelmq/petrel/internal/remoting"
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
	// producerOpts, when set, gives producer number i its client
	// options (e.g. a Handler for transaction check-backs).
	producerOpts func(w *pubsub, i int) []func(*remoting.ClientOptions)
	// linger keeps the consumers consuming after Run, until Drain has
	// settled and catches up (or Close).
	linger bool
	// settle, when set, is what Drain waits for before the consumers
	// catch up (due times, check-backs).
	settle func(ctx context.Context) error

	env       *Env
	topic     string
	group     string
	producers []*Producer
	consumers []*Consumer
	consuming *background
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
	admin := NewAdminClient(e, w.name+"-setup")
	defer admin.Close()
	if err := admin.CreateTopic(ctx, w.topic, e.Queues, w.order); err != nil {
		return fmt.Errorf("workload %s: %w", w.name, err)
	}
	for i := range e.Producers {
		var opts []func(*remoting.ClientOptions)
		if w.producerOpts != nil {
			opts = w.producerOpts(w, i)
		}
		w.producers = append(w.producers, NewProducer(e, w.name, i, w.topic, opts...))
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
	parent := ctx
	if w.linger {
		parent = context.WithoutCancel(ctx)
	}
	w.consuming = newBackground(parent)
	for _, c := range w.consumers {
		c.Start()
		w.consuming.Go(c.Run)
	}
	var wg sync.WaitGroup
	for _, p := range w.producers {
		p.Start()
		wg.Go(func() { w.produce(ctx, w, p) })
	}
	wg.Wait()
	if !w.linger {
		w.consuming.stop()
	}
	return nil
}

// Drain waits for settle, stops the consumers' Run, lets them catch up
// to the max offsets (shared among them as the group would;
// broadcasting, each reads all), then reads the log.
func (w *pubsub) Drain(ctx context.Context) error {
	if w.env == nil {
		return fmt.Errorf("workload %s: Drain before Setup", w.name)
	}
	if w.settle != nil {
		if err := w.settle(ctx); err != nil {
			return fmt.Errorf("workload %s: %w", w.name, err)
		}
	}
	w.consuming.stop()
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

// Close stops the consumers and closes every client's connections.
func (w *pubsub) Close() error {
	w.consuming.stop()
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
