package netx

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// connPair is one in-memory connection: two ends over two pipes.
type connPair struct {
	link           *link
	client, server *conn
}

func newConnPair(l *link, from, to memAddr) (client, server *conn) {
	up, down := newPipe(l), newPipe(l) // client -> server, server -> client
	p := &connPair{link: l}
	p.client = &conn{pair: p, r: down, w: up, local: from, remote: to}
	p.server = &conn{pair: p, r: up, w: down, local: to, remote: from}
	l.add(p.client)
	l.add(p.server)
	return p.client, p.server
}

// reset fails both ends with ECONNRESET.
func (p *connPair) reset() {
	for _, pp := range []*pipe{p.client.w, p.server.w} {
		pp.mu.Lock()
		pp.reset = true
		pp.chunks, pp.queued = nil, 0
		pp.signalLocked()
		pp.mu.Unlock()
	}
}

// drop closes both ends (a dial that was refused after all).
func (p *connPair) drop() {
	p.client.Close()
	p.server.Close()
}

// pipe is one direction of a connection: a bounded FIFO of the bytes
// written and not yet read, each chunk with the time it may be read.
type pipe struct {
	link *link

	mu      sync.Mutex
	chunks  []chunk
	queued  int       // bytes in chunks
	eof     bool      // the writing end closed
	eofAt   time.Time // when the close reaches the reader
	gone    bool      // the reading end closed
	reset   bool      // the connection was reset
	rdl     time.Time // read deadline of the reading end
	wdl     time.Time // write deadline of the writing end
	wake    chan struct{}
	waiters int
}

type chunk struct {
	b  []byte
	at time.Time // readable from then on
}

func newPipe(l *link) *pipe { return &pipe{link: l, wake: make(chan struct{})} }

// signalLocked wakes the pipe's waiters to look again; p.mu must be held.
func (p *pipe) signalLocked() {
	if p.waiters > 0 {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

func (p *pipe) wakeUp() {
	p.mu.Lock()
	p.signalLocked()
	p.mu.Unlock()
}

// waitLocked waits for a signal or until (zero: no bound); p.mu must be
// held, and is held again on return.
func (p *pipe) waitLocked(until time.Time) {
	ch := p.wake
	p.waiters++
	p.mu.Unlock()
	if until.IsZero() {
		<-ch
	} else if d := time.Until(until); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
	p.mu.Lock()
	p.waiters--
}

func passed(deadline, now time.Time) bool { return !deadline.IsZero() && !now.Before(deadline) }

// earliest returns the earlier of two times, a zero time meaning never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func (p *pipe) read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.gone:
			return 0, net.ErrClosed
		case p.reset:
			return 0, syscall.ECONNRESET
		}
		now := time.Now()
		if passed(p.rdl, now) {
			return 0, os.ErrDeadlineExceeded
		}
		if len(b) == 0 {
			return 0, nil
		}
		var due time.Time // when the next bytes or the close arrive; zero: not known
		if !p.link.partitioned.Load() {
			if n := p.takeLocked(b, now); n > 0 {
				p.signalLocked() // room for writers
				return n, nil
			}
			switch {
			case len(p.chunks) > 0:
				due = p.chunks[0].at
			case p.eof && !now.Before(p.eofAt):
				return 0, io.EOF
			case p.eof:
				due = p.eofAt
			}
		}
		p.waitLocked(earliest(due, p.rdl))
	}
}

// takeLocked copies the bytes readable at now into b and returns how many.
func (p *pipe) takeLocked(b []byte, now time.Time) int {
	n := 0
	for n < len(b) && len(p.chunks) > 0 && !p.chunks[0].at.After(now) {
		c := &p.chunks[0]
		k := copy(b[n:], c.b)
		n += k
		c.b = c.b[k:]
		if len(c.b) == 0 {
			p.chunks[0] = chunk{}
			p.chunks = p.chunks[1:]
		}
	}
	p.queued -= n
	return n
}

func (p *pipe) write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for {
		switch {
		case p.eof:
			return n, net.ErrClosed
		case p.reset:
			return n, syscall.ECONNRESET
		}
		now := time.Now()
		if passed(p.wdl, now) {
			return n, os.ErrDeadlineExceeded
		}
		if len(b) == 0 {
			return n, nil
		}
		if p.gone {
			if p.link.partitioned.Load() {
				return n + len(b), nil // the peer's close has not come through: the bytes go nowhere
			}
			return n, syscall.EPIPE
		}
		if space := DefaultBufferBytes - p.queued; space > 0 {
			k := min(space, len(b))
			p.appendLocked(b[:k], now)
			n += k
			b = b[k:]
			p.signalLocked()
			continue
		}
		p.waitLocked(p.wdl)
	}
}

// appendLocked queues a copy of b, readable after the link's latency.
func (p *pipe) appendLocked(b []byte, now time.Time) {
	lat := time.Duration(p.link.latency.Load())
	if i := len(p.chunks) - 1; lat == 0 && i >= 0 && !p.chunks[i].at.After(now) {
		p.chunks[i].b = append(p.chunks[i].b, b...) // readable now either way
	} else {
		p.chunks = append(p.chunks, chunk{b: append([]byte(nil), b...), at: now.Add(lat)})
	}
	p.queued += len(b)
}

// conn is one end of an in-memory connection; it implements net.Conn.
type conn struct {
	pair          *connPair
	r, w          *pipe
	local, remote memAddr
	once          sync.Once
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "mem", Source: c.local, Addr: c.remote, Err: err}
}

// Read reads what the peer wrote; see the package doc for partitions.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.r.read(b)
	if err != nil && err != io.EOF {
		err = c.opErr("read", err)
	}
	return n, err
}

// Write queues b for the peer, waiting while the queue is full.
func (c *conn) Write(b []byte) (int, error) {
	n, err := c.w.write(b)
	if err != nil {
		err = c.opErr("write", err)
	}
	return n, err
}

// Close closes this end: its reads and writes fail with net.ErrClosed and
// the peer reads io.EOF after the bytes queued (once the link lets the
// close through).
func (c *conn) Close() error {
	first := false
	c.once.Do(func() {
		first = true
		w := c.w
		w.mu.Lock()
		w.eof, w.eofAt = true, time.Now().Add(time.Duration(c.pair.link.latency.Load()))
		w.signalLocked()
		w.mu.Unlock()
		r := c.r
		r.mu.Lock()
		r.gone = true
		r.chunks, r.queued = nil, 0
		r.signalLocked()
		r.mu.Unlock()
		c.pair.link.remove(c)
	})
	if !first {
		return c.opErr("close", net.ErrClosed)
	}
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.r.mu.Lock()
	c.r.rdl = t
	c.r.signalLocked()
	c.r.mu.Unlock()
	return nil
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.w.mu.Lock()
	c.w.wdl = t
	c.w.signalLocked()
	c.w.mu.Unlock()
	return nil
}
