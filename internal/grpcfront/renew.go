package grpcfront

import (
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Push consumers receive with auto_renew and no invisible duration: the
// server hides each message for autoRenewInvisible and keeps renewing it
// while the client consumes, until the client acks it, nacks it
// (ChangeInvisibleDuration), forwards it to the DLQ or leaves, as
// RocketMQ's proxy does. The client keeps the first receipt handle; each
// renewal gives the broker's message a new one, so the renewer maps the
// client's handle to the current one.
const (
	// autoRenewInvisible is how long an auto-renewed message is hidden at
	// a time (the proxy's default invisible time).
	autoRenewInvisible = 60 * time.Second
	// renewEvery is how often the renewer looks; renewAhead how close to
	// its end a message's invisible time is renewed.
	renewEvery = 5 * time.Second
	renewAhead = 10 * time.Second
	// renewFor bounds how long one message is renewed: a consumer stuck
	// longer gives it back to the group.
	renewFor = 3 * time.Hour
	// maxRenewals bounds the messages renewed at once; beyond it a
	// message is hidden once for autoRenewInvisible.
	maxRenewals = 1 << 16
)

type renewal struct {
	client, group, topic string
	stopAt               time.Time // renewFor after the receive

	// mu is held while the message is renewed: take waits for it, so an
	// ack never uses the handle a renewal is replacing.
	mu      sync.Mutex
	current string    // the broker's handle now
	until   time.Time // the end of its invisible time
}

// renewer keeps auto-renewed messages invisible; safe for concurrent use.
type renewer struct {
	s  *Server
	mu sync.Mutex
	// byHandle is keyed by the handle the client holds (the receive's).
	byHandle map[string]*renewal
	timer    clock.Timer
	full     bool // a receive found maxRenewals held (logged once per episode)
}

// add starts renewing a message received by client under handle.
func (r *renewer) add(client, group, topic, handle string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byHandle == nil {
		r.byHandle = map[string]*renewal{}
	}
	if len(r.byHandle) >= maxRenewals {
		if !r.full {
			r.full = true
			r.s.log.Warn("too many push-consumed messages held at once: new ones are hidden once, not renewed; a consumer slower than the invisible time gets them again",
				"held", len(r.byHandle), "invisible", autoRenewInvisible)
		}
		return
	}
	r.full = false
	r.byHandle[handle] = &renewal{client: client, group: group, topic: topic, current: handle,
		until: now.Add(autoRenewInvisible), stopAt: now.Add(renewFor)}
	if r.timer == nil {
		r.timer = r.s.clk.AfterFunc(renewEvery, r.tick)
	}
}

// take stops renewing the message the client holds as handle and returns
// the broker's handle for it now (handle itself when it is not renewed).
func (r *renewer) take(handle string) string {
	r.mu.Lock()
	e, ok := r.byHandle[handle]
	delete(r.byHandle, handle)
	r.mu.Unlock()
	if !ok {
		return handle
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current
}

// dropClient stops renewing what client holds: its messages come back
// when their invisible time ends.
func (r *renewer) dropClient(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, e := range r.byHandle {
		if e.client == client {
			delete(r.byHandle, h)
		}
	}
}

// held is how many messages are being renewed.
func (r *renewer) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byHandle)
}

// tick renews the messages whose invisible time ends within renewAhead.
func (r *renewer) tick() {
	now := r.s.clk.Now()
	var work []*renewal
	r.mu.Lock()
	for h, e := range r.byHandle {
		if !now.Before(e.stopAt) {
			delete(r.byHandle, h)
		} else {
			work = append(work, e)
		}
	}
	r.mu.Unlock()
	for _, e := range work {
		e.mu.Lock()
		if e.until.Sub(now) <= renewAhead {
			next, err := r.s.pop.ChangeInvisible(e.group, e.topic, e.current, autoRenewInvisible)
			if err != nil {
				// Acked meanwhile, or gone: a take finds the old handle
				// and the broker says what became of the message.
				r.s.log.Debug("an auto-renewed message could not be renewed", "group", e.group, "topic", e.topic, "err", err)
				e.until = e.stopAt // no more tries
			} else {
				e.current, e.until = next, now.Add(autoRenewInvisible)
			}
		}
		e.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if len(r.byHandle) > 0 && r.s.stop.Err() == nil {
		r.timer = r.s.clk.AfterFunc(renewEvery, r.tick)
	}
}

// stopTimer ends the renewals (Shutdown).
func (r *renewer) stopTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
