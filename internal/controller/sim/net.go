package sim

import "time"

// ctlNode is the controller's network address; brokers are 1..Replicas.
// The voters share one address: a request reaches whichever voter leads
// when it arrives (the client follows the leader).
const ctlNode = 0

type link struct{ from, to int }

// network delivers messages between nodes with random delay (and so
// reordering), loss and duplication, and blocks cut links (partitions,
// one-way ones included). A message is dropped when its link is cut at
// send or at delivery time, and when the receiving process restarted
// since it was sent (its connection is gone).
type network struct {
	w          *world
	blocked    map[link]int64 // until (true time)
	lossyUntil int64
}

func newNetwork(w *world) *network { return &network{w: w, blocked: map[link]int64{}} }

func (n *network) isBlocked(from, to int) bool {
	until, ok := n.blocked[link{from, to}]
	return ok && n.w.now < until
}

// cut blocks a↔b for d (dir 0), a→b (dir 1) or b→a (dir 2).
func (n *network) cut(a, b, dir int, d int64) {
	until := n.w.now + d
	set := func(l link) {
		if n.blocked[l] < until {
			n.blocked[l] = until
		}
	}
	if dir != 2 {
		set(link{a, b})
	}
	if dir != 1 {
		set(link{b, a})
	}
}

func (n *network) healAll() { clear(n.blocked); n.lossyUntil = 0 }

// send delivers fn to node to (run there as the message's handling), once,
// twice or never.
func (n *network) send(from, to int, fn func()) {
	w := n.w
	if n.isBlocked(from, to) {
		return
	}
	drop, dup := 0.01, 0.01
	if w.now < n.lossyUntil {
		drop, dup = 0.25, 0.05
	}
	if w.chance(drop) {
		return
	}
	gen := -1
	if to != ctlNode {
		gen = w.brokers[to-1].gen
	}
	copies := 1
	if w.chance(dup) {
		copies = 2
	}
	for range copies {
		w.after(n.delay(), func() {
			if n.isBlocked(from, to) {
				return
			}
			if to == ctlNode {
				w.ctl.receive(fn)
				return
			}
			w.brokers[to-1].receive(gen, fn)
		})
	}
}

func (n *network) delay() int64 {
	w := n.w
	switch r := w.rng.Float64(); {
	case r < 0.01:
		return w.dur(200*time.Millisecond, time.Second)
	case r < 0.06:
		return w.dur(20*time.Millisecond, 200*time.Millisecond)
	default:
		return w.dur(500*time.Microsecond, 10*time.Millisecond)
	}
}
