package proxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// conn is one accepted connection and, once dialled, its target. Its up
// pipe (client→target) starts at accept; its down pipe (target→client)
// when the target is dialled, which waits while the link blackholes or
// drops.
type conn struct {
	l      *Link
	client net.Conn
	key    string // the client's address
	// ready is closed once the connection is held or its target dialled;
	// dialErr, set before, is the dial's error.
	ready     chan struct{}
	readyOnce sync.Once
	dialErr   error
	inproc    bool // made by Net.Dial, which reports a failed target dial itself
	up        *pipe
	down      *pipe
	closed    chan struct{} // closed by shut
	eofs      atomic.Int32  // directions that delivered their FIN

	mu      sync.Mutex
	server  net.Conn
	closing bool
}

func newConn(l *Link, nc net.Conn) *conn {
	c := &conn{l: l, client: nc, key: nc.RemoteAddr().String(), closed: make(chan struct{}), ready: make(chan struct{})}
	c.up = newPipe(c, nc, &l.up)
	c.down = newPipe(c, nil, &l.down)
	return c
}

// markReady closes ready with err as the dial's error; it reports
// whether this call did (a Net.Dial may still be waiting on it).
func (c *conn) markReady(err error) (first bool) {
	c.readyOnce.Do(func() {
		c.dialErr = err
		close(c.ready)
		first = true
	})
	return first
}

// poke wakes the writers to look at the link's fault again.
func (c *conn) poke() {
	signal(c.up.wake)
	signal(c.down.wake)
}

// shut closes both sides, with an RST if rst. Idempotent.
func (c *conn) shut(reset bool) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	server := c.server
	c.mu.Unlock()
	close(c.closed)
	if reset {
		rst(c.client)
		if server != nil {
			rst(server)
		}
	} else {
		c.client.Close()
		if server != nil {
			server.Close()
		}
	}
	c.up.drain()
	c.down.drain()
	c.l.remove(c)
}

// abort ends the connection after an I/O error on one side: the other side
// is reset, as a real network would show a broken path.
func (c *conn) abort(side string, err error) {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return
	}
	c.l.n.log.Debug("proxy connection broken", "link", c.l.name, "side", side, "err", err)
	c.shut(true)
}

// halfDone records a delivered FIN; after both, the connection is done.
func (c *conn) halfDone() {
	if c.eofs.Add(1) == 2 {
		c.shut(false)
	}
}

// runUp dials the target once the fault allows (Pass or Delay), starts the
// down pipe and then writes the up pipe.
func (c *conn) runUp() {
	defer c.markReady(nil)
	for {
		m := c.l.Fault().Mode
		if m != Blackhole && m != Reset && c.up.headFIN() {
			c.shut(false) // the client left before its target was reached: no dial
			return
		}
		if m == Pass || m == Delay {
			break
		}
		c.markReady(nil) // held: a Net.Dial returns now, as a client's connect would
		if !c.up.wait(0) {
			return
		}
	}
	d := net.Dialer{Timeout: c.l.n.opt.dialTimeout}
	server, err := d.DialContext(c.l.ctx, "tcp", c.l.to)
	if err != nil {
		if c.markReady(err) && c.inproc {
			c.shut(false) // the waiting Net.Dial fails with err; a reset could beat its connect
		} else {
			c.abort("target", err)
		}
		return
	}
	c.markReady(nil)
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		server.Close()
		return
	}
	c.server = server
	c.mu.Unlock()
	c.down.src = server
	c.l.n.goFunc(c.down.read)
	c.l.n.goFunc(func() { c.down.write(c.client) })
	c.up.write(server)
}

// chunk is one read, queued for its writer; b == nil is the FIN.
type chunk struct {
	b  *[]byte
	n  int
	at time.Time
}

// pipe is one direction of a conn: a reader that queues what it reads,
// at most the window ahead, and a writer that forwards the queue under the
// link's fault.
type pipe struct {
	c    *conn
	src  net.Conn
	fwd  *atomic.Int64
	rnd  *rand.Rand    // the writer's alone
	wake chan struct{} // to the writer: a chunk, a fault change, a timer
	room chan struct{} // to the reader: the queue shrank

	mu   sync.Mutex
	q    []chunk // q[head:] is the queue
	head int
	held int  // sum of the cap of the queued buffers
	dead bool // drained at shut: push frees instead of queueing
}

func newPipe(c *conn, src net.Conn, fwd *atomic.Int64) *pipe {
	return &pipe{c: c, src: src, fwd: fwd, rnd: c.l.n.newRand(),
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (p *pipe) read() {
	l := p.c.l
	window := l.n.opt.window
	buf := getBuf(readBytes)
	defer func() { putBuf(buf) }()
	for {
		for {
			p.mu.Lock()
			ok := p.held+readBytes <= window
			p.mu.Unlock()
			if ok {
				break
			}
			select {
			case <-p.room:
			case <-p.c.closed:
				return
			}
		}
		n, err := p.src.Read(*buf)
		if n > 0 {
			if l.Fault().Mode == Drop {
				l.dropped.Add(int64(n))
			} else {
				b := buf
				if n <= classes[len(classes)-2] {
					b = getBuf(n)
					copy(*b, (*buf)[:n])
				} else {
					buf = getBuf(readBytes)
				}
				p.push(chunk{b: b, n: n, at: l.n.opt.clk.Now()})
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				p.push(chunk{at: l.n.opt.clk.Now()})
			} else {
				p.c.abort("read", err)
			}
			return
		}
	}
}

func (p *pipe) push(ch chunk) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		if ch.b != nil {
			putBuf(ch.b)
		}
		return
	}
	if p.head > 0 && p.head >= len(p.q)/2 {
		k := copy(p.q, p.q[p.head:])
		clear(p.q[k:])
		p.q = p.q[:k]
		p.head = 0
	}
	p.q = append(p.q, ch)
	if ch.b != nil {
		p.held += cap(*ch.b)
		p.c.l.held.Add(int64(cap(*ch.b)))
		for h := int64(p.held); ; {
			m := p.c.l.maxHeld.Load()
			if h <= m || p.c.l.maxHeld.CompareAndSwap(m, h) {
				break
			}
		}
	}
	p.mu.Unlock()
	signal(p.wake)
}

// drain frees the queue of a shut connection, so the link's HeldBytes
// counts live connections only.
func (p *pipe) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead = true
	for p.head < len(p.q) {
		if ch := p.pop(); ch.b != nil {
			putBuf(ch.b)
		}
	}
	p.q = nil
}

// headFIN reports whether the next chunk is the FIN.
func (p *pipe) headFIN() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.head < len(p.q) && p.q[p.head].b == nil
}

// pop removes the head chunk; the caller holds p.mu.
func (p *pipe) pop() chunk {
	ch := p.q[p.head]
	p.q[p.head] = chunk{}
	p.head++
	if p.head == len(p.q) {
		p.q = p.q[:0]
		p.head = 0
	}
	if ch.b != nil {
		p.held -= cap(*ch.b)
		p.c.l.held.Add(-int64(cap(*ch.b)))
	}
	return ch
}

// wait blocks until the writer is woken (or d passes, if d > 0); false if
// the connection shut.
func (p *pipe) wait(d time.Duration) bool {
	var t clock.Timer
	if d > 0 {
		t = p.c.l.n.opt.clk.AfterFunc(d, func() { signal(p.wake) })
	}
	select {
	case <-p.wake:
	case <-p.c.closed:
		if t != nil {
			t.Stop()
		}
		return false
	}
	if t != nil {
		t.Stop()
	}
	return true
}

func (p *pipe) write(dst net.Conn) {
	l := p.c.l
	var (
		lastDue time.Time // chunks of one direction leave in order
		due     time.Time // of the head chunk, under dueOf
		dueOf   Fault
		dueSet  bool
	)
	for {
		f := l.Fault()
		p.mu.Lock()
		if p.head == len(p.q) {
			p.mu.Unlock()
			if !p.wait(0) {
				return
			}
			continue
		}
		ch := p.q[p.head]
		switch f.Mode {
		case Blackhole, Reset: // Reset: the link is shutting this conn
			p.mu.Unlock()
			if !p.wait(0) {
				return
			}
			continue
		case Drop:
			if ch.b != nil {
				p.pop()
				p.mu.Unlock()
				l.dropped.Add(int64(ch.n))
				putBuf(ch.b)
				signal(p.room)
				continue
			}
		case Delay:
			if !dueSet || dueOf != f {
				d := f.Delay
				if f.Jitter > 0 {
					d += time.Duration(p.rnd.Int64N(int64(2*f.Jitter)+1)) - f.Jitter
				}
				due = ch.at.Add(max(d, 0))
				if due.Before(lastDue) {
					due = lastDue
				}
				dueOf, dueSet = f, true
			}
			if wait := due.Sub(l.n.opt.clk.Now()); wait > 0 {
				p.mu.Unlock()
				if !p.wait(wait) {
					return
				}
				continue
			}
			lastDue = due
		}
		p.pop()
		p.mu.Unlock()
		dueSet = false
		signal(p.room)
		if ch.b == nil {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			p.c.halfDone()
			return
		}
		_, err := dst.Write((*ch.b)[:ch.n])
		putBuf(ch.b)
		if err != nil {
			p.c.abort("write", err)
			return
		}
		p.fwd.Add(int64(ch.n))
	}
}
