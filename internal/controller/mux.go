package controller

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
)

// RaftMagic opens every raft connection on a controller port, written by
// the dialer of Mux.RaftStream. Anything else is remoting: a remoting frame
// starts with its big-endian length, and "PRFT" read as one (1.35 GB) is
// far beyond any frame limit, so no valid remoting connection looks like
// raft.
const RaftMagic = "PRFT"

const (
	// DefaultPeekTimeout bounds how long a new connection may take to send
	// its first 4 bytes (and, with TLS, to finish its handshake).
	DefaultPeekTimeout = 10 * time.Second
	// DefaultMaxPending bounds the connections accepted but not yet
	// classified; beyond it new ones are closed at once.
	DefaultMaxPending = 256
)

// MuxConfig configures NewMux.
type MuxConfig struct {
	// Advertise is the address the other voters dial (raft's local
	// address); empty: the listener's.
	Advertise string
	// Network dials the other voters (nil: TCP). With TLS set, give the
	// plain network: the Mux adds TLS on both sides.
	Network netx.Network
	// TLS, when set, serves every connection on the port over TLS (raft
	// and remoting) and dials the voters over TLS with it (ServerName
	// defaults to the dialed host).
	TLS *tls.Config
	// PeekTimeout: DefaultPeekTimeout when 0. MaxPending:
	// DefaultMaxPending when 0.
	PeekTimeout time.Duration
	MaxPending  int
	Logger      *slog.Logger
}

// Mux serves raft and remoting on one listener: a connection whose first
// bytes are RaftMagic goes to RaftStream's Accept (the magic consumed),
// any other to Listener's Accept (its first bytes replayed). Close closes
// the listener and both sides.
type Mux struct {
	ln        net.Listener
	advertise string
	nw        netx.Network
	log       *slog.Logger
	peek      time.Duration
	pending   chan struct{} // semaphore of unclassified connections

	raft  side
	other side

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// side is one kind of connection waiting to be accepted.
type side struct {
	ch        chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func newSide() side { return side{ch: make(chan net.Conn), closed: make(chan struct{})} }

func (s *side) close() { s.closeOnce.Do(func() { close(s.closed) }) }

// NewMux starts classifying ln's connections. With cfg.TLS, ln is wrapped
// in a TLS listener.
func NewMux(ln net.Listener, cfg MuxConfig) *Mux {
	nw := netx.Or(cfg.Network)
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
		nw = TLSNetwork(nw, cfg.TLS)
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		ln:        ln,
		advertise: cfg.Advertise,
		nw:        nw,
		log:       lg.With("component", "controller-mux"),
		peek:      cfg.PeekTimeout,
		pending:   make(chan struct{}, cmp.Or(max(cfg.MaxPending, 0), DefaultMaxPending)),
		raft:      newSide(),
		other:     newSide(),
		done:      make(chan struct{}),
	}
	if m.advertise == "" {
		m.advertise = ln.Addr().String()
	}
	if m.peek <= 0 {
		m.peek = DefaultPeekTimeout
	}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

// Addr is the listener's address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				m.log.Error("controller listener closed", "err", err)
				m.raft.close()
				m.other.close()
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("accept failed; retrying", "err", err, "delay", delay)
			wake := make(chan struct{})
			t := clock.Real.AfterFunc(delay, func() { close(wake) })
			select {
			case <-wake:
			case <-m.done:
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		select {
		case m.pending <- struct{}{}:
		default:
			m.log.Warn("closed a controller connection: too many are still to send their first bytes", "remote", c.RemoteAddr().String(), "max_pending", cap(m.pending))
			_ = c.Close()
			continue
		}
		m.wg.Add(1)
		go m.classify(c)
	}
}

// classify reads c's first bytes and hands it to its side.
func (m *Mux) classify(c net.Conn) {
	defer m.wg.Done()
	head := make([]byte, len(RaftMagic))
	_ = c.SetReadDeadline(clock.Real.Now().Add(m.peek))
	n, err := io.ReadFull(c, head)
	_ = c.SetReadDeadline(time.Time{})
	<-m.pending
	if err != nil {
		// Probes (port checks, load balancers) connect and close; a peer
		// that sends less than a head within the peek timeout, or fails its
		// TLS handshake, is no client of ours either.
		m.log.Debug("closed a controller connection that sent no whole head", "remote", c.RemoteAddr().String(), "bytes", n, "err", err)
		_ = c.Close()
		return
	}
	s := &m.other
	var conn net.Conn = &prefixConn{Conn: c, prefix: head}
	if bytes.Equal(head, []byte(RaftMagic)) {
		s, conn = &m.raft, c
	}
	select {
	case s.ch <- conn:
	case <-s.closed:
		_ = c.Close()
	case <-m.done:
		_ = c.Close()
	}
}

// Close closes the listener and both sides, and waits for the mux's
// goroutines. Connections already accepted by a side stay theirs.
func (m *Mux) Close() error {
	m.closeOnce.Do(func() {
		close(m.done)
		m.raft.close()
		m.other.close()
		if err := m.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			m.closeErr = err
		}
	})
	m.wg.Wait()
	return m.closeErr
}

func (m *Mux) accept(s *side) (net.Conn, error) {
	select {
	case c := <-s.ch:
		return c, nil
	case <-s.closed:
	case <-m.done:
	}
	return nil, net.ErrClosed
}

// Listener is the remoting side: serve it with a remoting.Server. Its
// Close stops only this side.
func (m *Mux) Listener() net.Listener { return otherListener{m} }

type otherListener struct{ m *Mux }

func (l otherListener) Accept() (net.Conn, error) { return l.m.accept(&l.m.other) }
func (l otherListener) Close() error              { l.m.other.close(); return nil }
func (l otherListener) Addr() net.Addr            { return l.m.ln.Addr() }

// RaftStream is the raft side, as raft's StreamLayer: Accept gives the
// raft connections, Dial connects to another voter and writes RaftMagic,
// Addr is the advertised address. Its Close stops only this side.
func (m *Mux) RaftStream() raft.StreamLayer { return raftStream{m} }

type raftStream struct{ m *Mux }

func (s raftStream) Accept() (net.Conn, error) { return s.m.accept(&s.m.raft) }
func (s raftStream) Close() error              { s.m.raft.close(); return nil }
func (s raftStream) Addr() net.Addr            { return advertised(s.m.advertise) }

func (s raftStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.m.nw.Dial(ctx, string(address))
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(clock.Real.Now().Add(timeout))
	if _, err := io.WriteString(c, RaftMagic); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("controller: open raft connection to %s: %w", address, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// advertised is a net.Addr of an address string.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// prefixConn replays bytes already read before the connection's own.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// TLSNetwork wraps nw in TLS with cfg: its listeners serve TLS, its dials
// handshake as clients (ServerName defaults to the dialed host). The
// clients of a TLS controller (brokers, petrel cluster) dial through it.
func TLSNetwork(nw netx.Network, cfg *tls.Config) netx.Network {
	return tlsNetwork{nw: netx.Or(nw), cfg: cfg}
}

type tlsNetwork struct {
	nw  netx.Network
	cfg *tls.Config
}

func (t tlsNetwork) Listen(addr string) (net.Listener, error) {
	ln, err := t.nw.Listen(addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, t.cfg), nil
}

func (t tlsNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := t.nw.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	cfg := t.cfg
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("controller: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
