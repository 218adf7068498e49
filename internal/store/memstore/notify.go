package memstore

import (
	"context"
	"sync"

	"github.com/petrelmq/petrel/internal/store"
)

// notifier tells the listeners of stored messages on its own goroutine, in
// store order, as the file store's dispatcher does. The goroutine starts
// with the first listener; without listeners nothing is queued.
type notifier struct {
	mu        sync.Mutex
	listeners []store.Listener
	pending   []note
	queued    uint64        // notes queued since open
	delivered uint64        // notes every listener has heard
	progress  chan struct{} // closed (and replaced) when delivered moves
	wake      chan struct{}
	quit      chan struct{}
	done      chan struct{}
	started   bool
	stopped   bool
}

type note struct {
	topic string
	qid   int32
	max   int64
}

func (n *notifier) init() {
	n.progress = make(chan struct{})
	n.wake = make(chan struct{}, 1)
	n.quit = make(chan struct{})
	n.done = make(chan struct{})
}

func (n *notifier) add(l store.Listener) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.listeners = append(n.listeners, l)
	if !n.started && !n.stopped {
		n.started = true
		go n.run()
	}
}

// queue adds a note; the caller holds the store's lock, so notes queue in
// store order.
func (n *notifier) queue(topic string, qid int32, max int64) {
	n.mu.Lock()
	if len(n.listeners) == 0 || n.stopped {
		n.mu.Unlock()
		return
	}
	n.pending = append(n.pending, note{topic, qid, max})
	n.queued++
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		n.mu.Lock()
		batch, ls := n.pending, n.listeners
		n.pending = nil
		n.mu.Unlock()
		for _, x := range batch {
			for _, l := range ls {
				l(x.topic, x.qid, x.max)
			}
		}
		if len(batch) > 0 {
			n.mu.Lock()
			n.delivered += uint64(len(batch))
			close(n.progress)
			n.progress = make(chan struct{})
			n.mu.Unlock()
			continue
		}
		select {
		case <-n.wake:
		case <-n.quit:
			n.mu.Lock()
			empty := len(n.pending) == 0
			n.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// wait returns once every note queued before the call is delivered.
func (n *notifier) wait(ctx context.Context) error {
	n.mu.Lock()
	target := n.queued
	for n.delivered < target {
		ch := n.progress
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		n.mu.Lock()
	}
	n.mu.Unlock()
	return nil
}

// stop delivers what is queued and ends the goroutine.
func (n *notifier) stop() {
	n.mu.Lock()
	started := n.started
	n.stopped = true
	n.mu.Unlock()
	if started {
		close(n.quit)
		<-n.done
	}
}
