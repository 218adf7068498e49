package netx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrUnreachable is the cause of a dial across a partitioned link.
var ErrUnreachable = errors.New("netx: host unreachable (partitioned)")

const (
	// DefaultBufferBytes is what each direction of an in-memory
	// connection queues before Write waits for the reader.
	DefaultBufferBytes = 1 << 20
	// backlog bounds the connections dialed and not yet accepted per
	// listener; a dial beyond it is refused.
	backlog = 1024
	// firstPort is the first port Listen(":0") and dials hand out.
	firstPort = 40000
)

// Mem is an in-memory network of named hosts. The zero value is not
// usable; call NewMem.
type Mem struct {
	mu        sync.Mutex
	listeners map[string]*memListener // by "host:port"
	links     map[linkKey]*link
	nextPort  map[string]int // per host
}

// NewMem returns an empty in-memory network.
func NewMem() *Mem {
	return &Mem{
		listeners: map[string]*memListener{},
		links:     map[linkKey]*link{},
		nextPort:  map[string]int{},
	}
}

// Host returns the Network of host name: it listens on name's addresses,
// and its dials come from name (which decides what partitions cut).
func (m *Mem) Host(name string) *Host {
	if name == "" {
		panic("netx: empty host name")
	}
	return &Host{m: m, name: name}
}

// Partition blackholes the link between hosts a and b in both directions
// (see the package doc) until Heal. Partitioning a partitioned link does
// nothing.
func (m *Mem) Partition(a, b string) { m.setPartitioned(a, b, true) }

// Heal undoes Partition: the bytes queued on the link's connections are
// delivered and dials pass again.
func (m *Mem) Heal(a, b string) { m.setPartitioned(a, b, false) }

func (m *Mem) setPartitioned(a, b string, on bool) {
	l := m.link(a, b)
	if l.partitioned.Swap(on) != on {
		l.wakeAll()
	}
}

// Partitioned reports whether the link between a and b is partitioned.
func (m *Mem) Partitioned(a, b string) bool { return m.link(a, b).partitioned.Load() }

// SetLatency delays the bytes written from now on between a and b, in
// either direction, by d (0: none). Bytes already queued keep their time.
func (m *Mem) SetLatency(a, b string, d time.Duration) {
	m.link(a, b).latency.Store(int64(max(d, 0)))
}

// Reset drops every open connection between a and b: their reads and
// writes fail with syscall.ECONNRESET from then on, at both ends. It
// returns how many connections it dropped. New dials are not affected.
func (m *Mem) Reset(a, b string) int {
	l := m.link(a, b)
	l.mu.Lock()
	conns := make(map[*connPair]struct{}, len(l.ends))
	for e := range l.ends {
		conns[e.pair] = struct{}{}
	}
	l.mu.Unlock()
	for p := range conns {
		p.reset()
	}
	return len(conns)
}

// link returns the link between a and b, creating it.
func (m *Mem) link(a, b string) *link {
	k := linkKey{min(a, b), max(a, b)}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.links[k]
	if l == nil {
		l = &link{ends: map[*conn]struct{}{}}
		m.links[k] = l
	}
	return l
}

// portLocked returns a free port of host; m.mu must be held.
func (m *Mem) portLocked(host string) int {
	p := max(m.nextPort[host], firstPort)
	for m.listeners[net.JoinHostPort(host, strconv.Itoa(p))] != nil {
		p++
	}
	m.nextPort[host] = p + 1
	return p
}

type linkKey struct{ a, b string }

// link is the state two hosts share, and the connections between them
// (their ends, so that a change of state wakes their waiters).
type link struct {
	partitioned atomic.Bool
	latency     atomic.Int64 // time.Duration

	mu   sync.Mutex
	ends map[*conn]struct{} // open ends
}

func (l *link) add(c *conn) {
	l.mu.Lock()
	l.ends[c] = struct{}{}
	l.mu.Unlock()
}

func (l *link) remove(c *conn) {
	l.mu.Lock()
	delete(l.ends, c)
	l.mu.Unlock()
}

// wakeAll makes every waiter on the link's connections look again.
func (l *link) wakeAll() {
	l.mu.Lock()
	ends := make([]*conn, 0, len(l.ends))
	for c := range l.ends {
		ends = append(ends, c)
	}
	l.mu.Unlock()
	for _, c := range ends {
		c.r.wakeUp()
		c.w.wakeUp()
	}
}

// Host is one host of a Mem network; it implements Network.
type Host struct {
	m    *Mem
	name string
}

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Listen listens on addr: "host:port" where host is h's name, empty or
// an unspecified IP (0.0.0.0, ::), the last two meaning h; port 0 picks a
// free port. It fails with syscall.EADDRINUSE when the address is taken.
func (h *Host) Listen(addr string) (net.Listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "mem", Err: err}
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = ""
	}
	if host != "" && host != h.name {
		return nil, &net.OpError{Op: "listen", Net: "mem", Addr: memAddr(addr),
			Err: fmt.Errorf("netx: host %s cannot listen on %s", h.name, addr)}
	}
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if port == 0 {
		port = m.portLocked(h.name)
	}
	a := net.JoinHostPort(h.name, strconv.Itoa(port))
	if m.listeners[a] != nil {
		return nil, &net.OpError{Op: "listen", Net: "mem", Addr: memAddr(a), Err: syscall.EADDRINUSE}
	}
	l := &memListener{m: m, addr: memAddr(a), backlog: make(chan *conn, backlog), done: make(chan struct{})}
	m.listeners[a] = l
	return l, nil
}

// Dial connects to addr from h. It fails with ErrUnreachable when the link
// to addr's host is partitioned and with syscall.ECONNREFUSED when nothing
// listens on addr or its backlog is full.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: memAddr(addr), Err: err}
	}
	to := memAddr(net.JoinHostPort(host, strconv.Itoa(port)))
	l := h.m.link(h.name, host)
	if l.partitioned.Load() {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: to, Err: ErrUnreachable}
	}
	m := h.m
	m.mu.Lock()
	ln := m.listeners[string(to)]
	from := memAddr(net.JoinHostPort(h.name, strconv.Itoa(m.portLocked(h.name))))
	m.mu.Unlock()
	if ln == nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Source: from, Addr: to, Err: syscall.ECONNREFUSED}
	}
	client, server := newConnPair(l, from, to)
	if !ln.enqueue(server) {
		client.pair.drop()
		return nil, &net.OpError{Op: "dial", Net: "mem", Source: from, Addr: to, Err: syscall.ECONNREFUSED}
	}
	return client, nil
}

// splitAddr parses "host:port" (host may be empty).
func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("netx: bad port in %q", addr)
	}
	return host, int(port), nil
}

// memAddr is an address on a Mem network, "host:port".
type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// memListener is a listener on a Mem network.
type memListener struct {
	m       *Mem
	addr    memAddr
	backlog chan *conn
	done    chan struct{}

	mu     sync.Mutex // orders enqueue against Close
	closed bool
}

// enqueue hands a dialed connection's server end to Accept; false when
// the listener is closed or its backlog is full.
func (l *memListener) enqueue(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	select {
	case l.backlog <- c:
		return true
	default:
		return false
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "mem", Addr: l.addr, Err: net.ErrClosed}
	case c := <-l.backlog:
		return c, nil
	}
}

// Close stops the listener; connections dialed and not accepted are
// closed (their clients read io.EOF). Established connections stay.
func (l *memListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &net.OpError{Op: "close", Net: "mem", Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.m.mu.Lock()
	if l.m.listeners[string(l.addr)] == l {
		delete(l.m.listeners, string(l.addr))
	}
	l.m.mu.Unlock()
	for {
		select {
		case c := <-l.backlog:
			c.Close()
		default:
			return nil
		}
	}
}

func (l *memListener) Addr() net.Addr { return l.addr }
