package tlsx

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
)

// recordTypeHandshake is the first byte of a TLS connection: the content
// type of the record carrying the ClientHello. A RocketMQ frame starts
// with the high byte of its length (0 for any frame under 16 MiB; a
// 0x16 would mean a frame of 369 MiB or more) and an HTTP request with a
// method's letter, so neither is taken for TLS.
const recordTypeHandshake = 0x16

// ErrPlaintextRefused is the error a connection's Read returns on an
// enforcing listener when the peer spoke plaintext; the connection is
// closed then.
var ErrPlaintextRefused = errors.New("tlsx: the peer sent plaintext to a TLS-only (enforcing) listener: connection closed")

// Counts are what a Server's listeners saw of the first bytes.
type Counts struct {
	// PlaintextRefused: connections an enforcing listener closed because
	// they began in plaintext.
	PlaintextRefused uint64
	// PlaintextAccepted: connections a permissive listener served in
	// plaintext (when it drops to 0 for long, enforcing can be turned on).
	PlaintextAccepted uint64
}

// Counts returns the counts since NewServer.
func (s *Server) Counts() Counts {
	return Counts{PlaintextRefused: s.plainRefused.Load(), PlaintextAccepted: s.plainAccepted.Load()}
}

// OnPlaintextRefused sets f to be called (on the connection's goroutine,
// so it must be quick) for each connection an enforcing listener closes
// for speaking plaintext; nil removes it. tlsx logs nothing itself.
func (s *Server) OnPlaintextRefused(f func(remote net.Addr)) {
	if f == nil {
		s.onRefused.Store(nil)
		return
	}
	s.onRefused.Store(&f)
}

func (s *Server) refused(remote net.Addr) {
	s.plainRefused.Add(1)
	if f := s.onRefused.Load(); f != nil {
		(*f)(remote)
	}
}

func (s *Server) checkMode(mode Mode) {
	if _, err := ParseMode(string(mode)); err != nil {
		panic(err) // the caller skipped ParseMode
	}
}

func (s *Server) listener(ln net.Listener, mode Mode) net.Listener {
	if mode == Disabled {
		return ln
	}
	s.checkMode(mode)
	return &listener{Listener: ln, s: s, mode: mode, cfg: s.Config()}
}

type listener struct {
	net.Listener
	s    *Server
	mode Mode
	cfg  *tls.Config
}

// Accept wraps the connection without reading from it: the first byte is
// looked at on the connection's first Read (or Write), on the goroutine
// of whoever serves it.
func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.mode == Enforcing {
		return tls.Server(&guardConn{Conn: nc, s: l.s}, l.cfg), nil
	}
	return newSniffConn(nc, l.s, l.cfg), nil
}

// guardConn is the raw connection under an enforcing listener's
// tls.Conn: its first Read checks that the peer opens with a TLS record
// and closes the connection at once when it does not, rather than let
// the TLS server wait for a record header the peer may never complete.
type guardConn struct {
	net.Conn
	s       *Server
	checked bool // only the TLS reader goroutine reads: no lock needed
}

func (g *guardConn) Read(p []byte) (int, error) {
	if g.checked || len(p) == 0 {
		return g.Conn.Read(p)
	}
	n, err := g.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	g.checked = true
	if p[0] != recordTypeHandshake {
		// Counted before the close, so whoever sees the close sees the count.
		g.s.refused(g.Conn.RemoteAddr())
		_ = g.Conn.Close()
		return 0, ErrPlaintextRefused
	}
	return n, err
}

// sniffConn is a permissive listener's connection: TLS or plaintext,
// decided by the first byte the peer sends. Until then Read and Write
// wait for the decision (a server writing first would not know which
// protocol to speak); deadlines and addresses are the raw connection's.
type sniffConn struct {
	raw net.Conn
	s   *Server
	cfg *tls.Config

	mu   sync.Mutex // held while deciding
	conn atomic.Pointer[net.Conn]
	err  error // the first Read's failure; guarded by mu
}

func newSniffConn(raw net.Conn, s *Server, cfg *tls.Config) *sniffConn {
	return &sniffConn{raw: raw, s: s, cfg: cfg}
}

// decide reads the first byte and picks the protocol, once.
func (c *sniffConn) decide() (net.Conn, error) {
	if p := c.conn.Load(); p != nil {
		return *p, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.conn.Load(); p != nil {
		return *p, nil
	}
	if c.err != nil {
		return nil, c.err
	}
	var b [1]byte
	if _, err := io.ReadFull(c.raw, b[:]); err != nil {
		if !isTimeout(err) { // after a deadline the caller may try again
			c.err = err
		}
		return nil, err
	}
	replay := &replayConn{Conn: c.raw, first: b[0], pending: true}
	var nc net.Conn = replay
	if b[0] == recordTypeHandshake {
		nc = tls.Server(replay, c.cfg)
	} else {
		c.s.plainAccepted.Add(1)
	}
	c.conn.Store(&nc)
	return nc, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *sniffConn) Read(p []byte) (int, error) {
	nc, err := c.decide()
	if err != nil {
		return 0, err
	}
	return nc.Read(p)
}

func (c *sniffConn) Write(p []byte) (int, error) {
	nc, err := c.decide()
	if err != nil {
		return 0, err
	}
	return nc.Write(p)
}

// Close closes the TLS connection (sending close_notify) once decided,
// else the raw one, which also ends a decide waiting on the first byte.
func (c *sniffConn) Close() error {
	if p := c.conn.Load(); p != nil {
		return (*p).Close()
	}
	return c.raw.Close()
}

func (c *sniffConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *sniffConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *sniffConn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *sniffConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *sniffConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// ConnectionState returns the TLS state of the connection, and false
// while it is undecided or plaintext.
func (c *sniffConn) ConnectionState() (tls.ConnectionState, bool) {
	if p := c.conn.Load(); p != nil {
		if tc, ok := (*p).(*tls.Conn); ok {
			return tc.ConnectionState(), true
		}
	}
	return tls.ConnectionState{}, false
}

// NetConn returns the raw connection.
func (c *sniffConn) NetConn() net.Conn { return c.raw }

// replayConn gives back the byte sniffing took before reading on.
type replayConn struct {
	net.Conn
	first   byte
	pending bool // only the deciding reader, then the conn's reader, touch it
}

func (r *replayConn) Read(p []byte) (int, error) {
	if !r.pending || len(p) == 0 {
		return r.Conn.Read(p)
	}
	r.pending = false
	p[0] = r.first
	return 1, nil
}

type listenNetwork struct {
	nw   netx.Network
	s    *Server
	mode Mode
}

func (n listenNetwork) Listen(addr string) (net.Listener, error) {
	ln, err := netx.Or(n.nw).Listen(addr)
	if err != nil {
		return nil, err
	}
	return n.s.Listener(ln, n.mode), nil
}

func (n listenNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return netx.Or(n.nw).Dial(ctx, addr)
}
