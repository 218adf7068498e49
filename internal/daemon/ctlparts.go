package daemon

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/netx"
)

// haListener is a controller-mode replica's --ha-listen listener: opened
// once at start (its address is registered with the controller, and must
// not change while the replica is up), and handed in turn to every
// ha.Master the replica runs while it is the master (haNetwork.Listen).
// A connection that arrives while no master runs is closed at once, so a
// slave that dials a demoted master learns it without waiting.
type haListener struct {
	ln   net.Listener
	mu   sync.Mutex
	cur  *haView // the running master's view; nil: none
	done chan struct{}
}

func newHAListener(nw netx.Network, addr string) (*haListener, error) {
	ln, err := nw.Listen(addr)
	if err != nil {
		return nil, err
	}
	h := &haListener{ln: ln, done: make(chan struct{})}
	go h.run()
	return h, nil
}

func (h *haListener) Addr() net.Addr { return h.ln.Addr() }

func (h *haListener) run() {
	defer close(h.done)
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		v := h.cur
		h.mu.Unlock()
		if v == nil || !v.offer(c) {
			c.Close()
		}
	}
}

// view is a new listener for a master; it replaces the previous one.
func (h *haListener) view() *haView {
	v := &haView{h: h, conns: make(chan net.Conn, 16), closed: make(chan struct{})}
	h.mu.Lock()
	old := h.cur
	h.cur = v
	h.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return v
}

// Close closes the listener for good.
func (h *haListener) Close() error {
	err := h.ln.Close()
	<-h.done
	h.mu.Lock()
	v := h.cur
	h.mu.Unlock()
	if v != nil {
		v.Close()
	}
	return err
}

// haView is one master's share of an haListener.
type haView struct {
	h      *haListener
	mu     sync.Mutex
	shut   bool
	conns  chan net.Conn
	closed chan struct{}
}

func (v *haView) offer(c net.Conn) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.shut {
		return false
	}
	select {
	case v.conns <- c:
		return true
	default: // the master does not keep up with its accepts: the slave redials
		return false
	}
}

func (v *haView) Accept() (net.Conn, error) {
	select {
	case c := <-v.conns:
		return c, nil
	case <-v.closed:
		return nil, net.ErrClosed
	}
}

func (v *haView) Close() error {
	v.mu.Lock()
	if v.shut {
		v.mu.Unlock()
		return nil
	}
	v.shut = true
	close(v.closed)
	v.mu.Unlock()
	v.h.mu.Lock()
	if v.h.cur == v {
		v.h.cur = nil
	}
	v.h.mu.Unlock()
	for {
		select {
		case c := <-v.conns:
			c.Close()
		default:
			return nil
		}
	}
}

func (v *haView) Addr() net.Addr { return v.h.ln.Addr() }

// haNetwork is the network an ha.Master of a controller-mode replica
// listens on: Listen returns a view of the replica's haListener whatever
// the address; Dial is the real network's.
type haNetwork struct {
	netx.Network
	h *haListener
}

func (n haNetwork) Listen(string) (net.Listener, error) { return n.h.view(), nil }

// swapReplicator is the broker's Replicator in controller mode: the
// ha.Master of the current term, swapped by the role manager (nil while
// the replica is a slave: every wait fails at once with
// ErrNotEnoughReplicas). A wait under way when its term ends (demotion)
// ends at once with ErrTimeout: the send is in doubt, never acked by a
// master that is no longer one.
type swapReplicator struct {
	cur atomic.Pointer[replTerm]
}

type replTerm struct {
	m      *ha.Master
	ctx    context.Context
	cancel context.CancelFunc
}

// set makes m (nil: none) the current master and ends the previous term.
func (s *swapReplicator) set(m *ha.Master) {
	var t *replTerm
	if m != nil {
		ctx, cancel := context.WithCancel(context.Background())
		t = &replTerm{m: m, ctx: ctx, cancel: cancel}
	}
	if old := s.cur.Swap(t); old != nil {
		old.cancel()
	}
}

func (s *swapReplicator) WaitReplicated(ctx context.Context, end int64) error {
	t := s.cur.Load()
	if t == nil {
		return track.ErrNotEnoughReplicas
	}
	if t.ctx.Err() != nil {
		return track.ErrTimeout
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel)
	defer stop()
	err := t.m.WaitReplicated(ctx, end)
	if err != nil && t.ctx.Err() != nil {
		return track.ErrTimeout
	}
	return err
}

// Covered is the current term's commit point (0 without a master).
func (s *swapReplicator) Covered() int64 {
	if t := s.cur.Load(); t != nil {
		return t.m.Covered()
	}
	return 0
}

// groupLease is a master's lease in controller mode (the broker's
// Config.Lease): broker's LeaseTimer, extended by the controller's grants,
// unless the group has one replica: then no other replica can be elected,
// so nobody can be acking in its place, and the lease is not enforced
// (Valid is true; the single-node path costs one more atomic load). A
// second replica's registration shows in the next heartbeat's view and
// turns enforcement on before that replica can join the in-sync set (only
// this master proposes that), hence before it can be elected; only an
// unclean election (off by default, audited) could elect it earlier.
type groupLease struct {
	*broker.LeaseTimer
	enforced atomic.Bool
}

func newGroupLease(clk clock.Clock) *groupLease {
	l := &groupLease{LeaseTimer: broker.NewLeaseClock(clk)}
	l.enforced.Store(true)
	return l
}

// Valid reports whether the broker may ack as the master now.
func (l *groupLease) Valid() bool { return !l.enforced.Load() || l.LeaseTimer.Valid() }
