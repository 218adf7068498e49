package proxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Link is one proxied path from→to: a listener whose connections are
// forwarded to to under the link's Fault. Safe for concurrent use.
type Link struct {
	n        *Net
	from, to string
	name     string
	ln       net.Listener
	ctx      context.Context // ends when the link shuts: bounds the dials of its target
	cancel   context.CancelFunc
	fault    atomic.Pointer[Fault]

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closed  bool
	waiters map[string]chan *conn // Net.Dial calls, by client address, waiting for their accept

	accepted, open, up, down, dropped, held, maxHeld atomic.Int64
}

// Stats are a link's counters since it was made.
type Stats struct {
	Conns        int64 // connections accepted
	Open         int64 // connections open now
	UpBytes      int64 // bytes forwarded from the client to the target
	DownBytes    int64 // bytes forwarded from the target to the client
	DroppedBytes int64 // bytes discarded by Drop
	HeldBytes    int64 // buffer bytes queued now (held or delayed), all directions
	MaxHeldBytes int64 // the most one direction of one connection ever queued
}

func newLink(n *Net, from, to string, ln net.Listener, f Fault) *Link {
	ctx, cancel := context.WithCancel(n.ctx)
	l := &Link{n: n, from: from, to: to, name: Name(from, to), ln: ln, ctx: ctx, cancel: cancel,
		conns: make(map[*conn]struct{}), waiters: make(map[string]chan *conn)}
	l.fault.Store(&f)
	return l
}

// Name is "from→to".
func (l *Link) Name() string { return l.name }

// From is the name of the link's client side.
func (l *Link) From() string { return l.from }

// To is the address the link forwards to.
func (l *Link) To() string { return l.to }

// Addr is the link's listener address (127.0.0.1:port): what to dial to go
// through the link.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Fault is the link's current fault.
func (l *Link) Fault() Fault { return *l.fault.Load() }

// Stats returns the link's counters.
func (l *Link) Stats() Stats {
	return Stats{
		Conns: l.accepted.Load(), Open: l.open.Load(), UpBytes: l.up.Load(), DownBytes: l.down.Load(),
		DroppedBytes: l.dropped.Load(), HeldBytes: l.held.Load(), MaxHeldBytes: l.maxHeld.Load(),
	}
}

// Set puts this link alone into fault f, at once for its open connections.
// Net.Set and Heal call it; a later Net.Set or Heal overrides it.
func (l *Link) Set(f Fault) {
	f = f.normal()
	l.mu.Lock()
	l.fault.Store(&f)
	cs := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		if f.Mode == Reset {
			c.shut(true)
		} else {
			c.poke()
		}
	}
}

// Close closes the link's listener and connections and removes it from
// its Net; a later Dial of the same from→to makes a new link (new port).
// It does not wait for the link's goroutines: Net.Close does.
func (l *Link) Close() error {
	l.n.mu.Lock()
	if l.n.links[l.name] == l {
		delete(l.n.links, l.name)
	}
	l.n.mu.Unlock()
	l.shut()
	return nil
}

func (l *Link) shut() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	cs := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	l.cancel()
	l.ln.Close()
	for _, c := range cs {
		c.shut(false)
	}
}

func (l *Link) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *Link) accept() {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: wait a little, unless the link shuts.
			l.n.log.Warn("proxy accept failed", "link", l.name, "err", err)
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		l.accepted.Add(1)
		c := newConn(l, nc) // before l.mu: it takes the Net's lock
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			nc.Close()
			return
		}
		switch l.Fault().Mode {
		case Drop:
			l.claim(c.key, nil)
			l.mu.Unlock()
			nc.Close()
			continue
		case Reset:
			l.claim(c.key, nil)
			l.mu.Unlock()
			rst(nc)
			continue
		}
		l.conns[c] = struct{}{}
		c.inproc = l.claim(c.key, c)
		l.open.Add(1)
		l.mu.Unlock()
		l.n.goFunc(c.up.read)
		l.n.goFunc(c.runUp)
	}
}

func (l *Link) remove(c *conn) {
	l.mu.Lock()
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		l.open.Add(-1)
	}
	l.mu.Unlock()
}

// expect registers a Net.Dial about to connect from client address key.
func (l *Link) expect(key string) chan *conn {
	w := make(chan *conn, 1)
	l.mu.Lock()
	l.waiters[key] = w
	l.mu.Unlock()
	return w
}

// unexpect drops the registration of a Net.Dial that gave up.
func (l *Link) unexpect(key string, w chan *conn) {
	l.mu.Lock()
	if l.waiters[key] == w {
		delete(l.waiters, key)
	}
	l.mu.Unlock()
}

// claim hands the connection accepted from key (nil if refused) to the
// Net.Dial that made it, if one did; the caller holds l.mu.
func (l *Link) claim(key string, c *conn) bool {
	w, ok := l.waiters[key]
	if ok {
		delete(l.waiters, key)
		w <- c
	}
	return ok
}

// rst closes c with linger 0, so the peer gets an RST, not a FIN.
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
