package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
)

// ErrClosed is returned by Dial and Link once the Net is closed.
var ErrClosed = errors.New("proxy: closed")

// Mode is what a link does with connections and bytes.
type Mode int

const (
	Pass      Mode = iota // forward
	Drop                  // close new connections, discard bytes on open ones
	Blackhole             // hold new connections and bytes until the fault ends
	Delay                 // forward each chunk after Delay ± Jitter, in order
	Reset                 // reset open and new connections (RST)
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	case Blackhole:
		return "blackhole"
	case Delay:
		return "delay"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Fault is the state of a link. Delay and Jitter matter only in mode Delay:
// each chunk waits Delay plus a uniform sample of [-Jitter, +Jitter]
// (at least 0), and never overtakes the chunk before it. Negative durations
// count as 0; a Mode outside the constants above acts as Pass.
type Fault struct {
	Mode          Mode
	Delay, Jitter time.Duration
}

func (f Fault) String() string {
	if f.Mode != Delay {
		return f.Mode.String()
	}
	if f.Jitter == 0 {
		return "delay " + f.Delay.String()
	}
	return "delay " + f.Delay.String() + "±" + f.Jitter.String()
}

func (f Fault) normal() Fault {
	if f.Mode < Pass || f.Mode > Reset {
		f.Mode = Pass
	}
	if f.Mode != Delay {
		return Fault{Mode: f.Mode}
	}
	f.Delay = max(f.Delay, 0)
	f.Jitter = max(f.Jitter, 0)
	return f
}

// Option sets up a Net.
type Option func(*options)

type options struct {
	seed        int64
	window      int
	clk         clock.Clock
	dialTimeout time.Duration
}

// WithSeed seeds the jitter of Delay faults (default 1).
func WithSeed(seed int64) Option { return func(o *options) { o.seed = seed } }

// WithWindow sets how many bytes one direction of one connection may read
// ahead of what it has forwarded (default 256 KiB, at least 32 KiB).
func WithWindow(bytes int) Option { return func(o *options) { o.window = bytes } }

// WithClock sets the clock of Delay faults (default clock.Real).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// DefaultWindowBytes is the read-ahead bound of one direction of one
// connection unless WithWindow says otherwise.
const DefaultWindowBytes = 256 << 10

// Net is a set of links, made on demand. Its zero value is not usable: call
// NewNet. Safe for concurrent use.
type Net struct {
	log *slog.Logger
	opt options

	ctx    context.Context
	cancel context.CancelFunc

	wg       sync.WaitGroup
	running  atomic.Int64 // goroutines in wg, for tests
	exitHook func()       // tests: runs as each goroutine of wg ends; nil otherwise

	faultMu sync.Mutex // orders Set and Heal calls, so the last one wins on every link

	mu     sync.Mutex
	links  map[string]*Link
	rules  []rule
	rnd    *rand.Rand
	closed bool
}

type rule struct {
	match func(from, to string) bool
	f     Fault
}

// NewNet returns an empty Net. A nil logger discards.
func NewNet(logger *slog.Logger, opts ...Option) *Net {
	o := options{seed: 1, window: DefaultWindowBytes, clk: clock.Real, dialTimeout: 5 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	o.window = max(o.window, readBytes)
	if o.clk == nil {
		o.clk = clock.Real
	}
	if o.dialTimeout <= 0 {
		o.dialTimeout = 5 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Net{
		log:    logger.With("component", "proxy"),
		opt:    o,
		ctx:    ctx,
		cancel: cancel,
		links:  make(map[string]*Link),
		rnd:    rand.New(rand.NewPCG(uint64(o.seed), 0x9e3779b97f4a7c15)),
	}
}

// Name is the name of the link from→to.
func Name(from, to string) string { return from + "→" + to }

// Dial connects through the link from→to, making the link (a listener on
// 127.0.0.1:0 that forwards to to) on first use. ctx bounds the dial only.
// The dial returns once the link has dialled the target, and fails with
// the target's error (e.g. connection refused) if that failed. Under a
// fault it returns a connection that shows the fault: closed (Drop), held
// with the target not dialled (Blackhole), or reset (Reset; the reset can
// be quick enough that the dial itself fails with it). A process dialling
// Link.Addr directly gets a reset instead when the target is down.
func (n *Net) Dial(ctx context.Context, from, to string) (net.Conn, error) {
	l, err := n.Link(from, to)
	if err != nil {
		return nil, err
	}
	// Bind before connecting, to register the client address with the
	// link before it can accept: the link then waits for this call to
	// learn of a failed target dial, instead of resetting the connection.
	var (
		key string
		w   chan *conn
	)
	d := net.Dialer{ControlContext: func(_ context.Context, _, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { key, err = bindLoopback(fd) }); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		w = l.expect(key)
		return nil
	}}
	client, err := d.DialContext(ctx, "tcp", l.Addr())
	if err != nil {
		if w != nil {
			l.unexpect(key, w)
		}
		return nil, fmt.Errorf("proxy: dial %s: %w", l.name, err)
	}
	// Wait for the link to dial the target, so that a target that is down
	// fails this dial (connection refused), as it would without the proxy,
	// instead of resetting a connection the client already writes on.
	var c *conn
	select {
	case c = <-w:
	case <-l.ctx.Done():
	case <-ctx.Done():
		l.unexpect(key, w)
		err = ctx.Err()
	}
	if err == nil && c != nil {
		select {
		case <-c.ready:
			err = c.dialErr
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("proxy: dial %s: %w", l.name, err)
	}
	return client, nil
}

// Link returns the link from→to, making it on first use. A new link takes
// the fault of the last Set whose match accepts it (Pass if none, or since
// the last Heal). Use it to learn a link's address before anything dials
// it (a process configured to reach another through the proxy).
func (n *Net) Link(from, to string) (*Link, error) {
	name := Name(from, to)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	if l := n.links[name]; l != nil {
		n.mu.Unlock()
		return l, nil
	}
	n.mu.Unlock()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen for %s: %w", name, err)
	}

	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		ln.Close()
		return nil, ErrClosed
	}
	if l := n.links[name]; l != nil {
		n.mu.Unlock()
		ln.Close()
		return l, nil
	}
	f := Fault{}
	for _, r := range n.rules {
		if r.match(from, to) {
			f = r.f
		}
	}
	l := newLink(n, from, to, ln, f)
	n.links[name] = l
	n.goFunc(l.accept)
	n.mu.Unlock()
	n.log.Debug("proxy link made", "link", name, "addr", l.Addr(), "fault", f.String())
	return l, nil
}

// Links returns the links, sorted by name.
func (n *Net) Links() []*Link {
	n.mu.Lock()
	ls := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	sort.Slice(ls, func(i, j int) bool { return ls[i].name < ls[j].name })
	return ls
}

// Set puts every link whose (from, to) match accepts into fault f, now
// and, until the next Heal, when such a link is made later (a later Set
// wins over an earlier one). It returns the names of the existing links it
// changed, sorted. match is called with the Net's lock held: it must be
// quick and must not call the Net. Set(match, Fault{}) heals the matching
// links alone.
func (n *Net) Set(match func(from, to string) bool, f Fault) []string {
	f = f.normal()
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.mu.Lock()
	if f.Mode == Pass && allPass(n.rules) {
		n.rules = nil // a Pass rule over Pass rules says nothing: keep the list short
	} else {
		n.rules = append(n.rules, rule{match: match, f: f})
	}
	var hit []*Link
	for _, l := range n.links {
		if match(l.from, l.to) {
			hit = append(hit, l)
		}
	}
	n.mu.Unlock()
	sort.Slice(hit, func(i, j int) bool { return hit[i].name < hit[j].name })
	names := make([]string, len(hit))
	for i, l := range hit {
		l.Set(f)
		names[i] = l.name
	}
	n.log.Info("proxy fault set", "fault", f.String(), "links", len(names))
	return names
}

func allPass(rs []rule) bool {
	for _, r := range rs {
		if r.f.Mode != Pass {
			return false
		}
	}
	return true
}

// Heal puts every link back to Pass and forgets every Set, so links made
// later pass too. Held bytes are released in order.
func (n *Net) Heal() {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.mu.Lock()
	n.rules = nil
	ls := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	for _, l := range ls {
		l.Set(Fault{})
	}
	n.log.Info("proxy healed", "links", len(ls))
}

// Close closes every listener and connection of the Net and returns once
// all its goroutines have exited. Idempotent; Dial and Link fail after it.
func (n *Net) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return nil
	}
	n.closed = true
	ls := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	n.cancel()
	for _, l := range ls {
		l.shut()
	}
	n.wg.Wait()
	return nil
}

// Client returns the network of the client or process named from: Listen
// is a plain TCP listen, Dial(ctx, addr) is n.Dial(ctx, from, addr). Give
// it to remoting.ClientOptions.Network, or to grpc.WithContextDialer.
func (n *Net) Client(from string) netx.Network { return clientNet{n: n, from: from} }

type clientNet struct {
	n    *Net
	from string
}

func (c clientNet) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (c clientNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return c.n.Dial(ctx, c.from, addr)
}

// bindLoopback binds socket fd to 127.0.0.1 on a free port and returns
// that address.
func bindLoopback(fd uintptr) (string, error) {
	if err := syscall.Bind(int(fd), &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return "", fmt.Errorf("bind 127.0.0.1:0: %w", err)
	}
	sa, err := syscall.Getsockname(int(fd))
	if err != nil {
		return "", fmt.Errorf("getsockname: %w", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return "", fmt.Errorf("getsockname: %T, want an IPv4 address", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), nil
}

// goFunc runs f in the Net's goroutine group. The caller is itself in the
// group or holds n.mu with the Net open, so Close's Wait cannot have
// passed zero.
func (n *Net) goFunc(f func()) {
	n.wg.Add(1)
	n.running.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.running.Add(-1)
		f()
		if n.exitHook != nil {
			n.exitHook()
		}
	}()
}

// newRand returns a generator for one direction's jitter, drawn from the
// Net's seeded one.
func (n *Net) newRand() *rand.Rand {
	n.mu.Lock()
	defer n.mu.Unlock()
	return rand.New(rand.NewPCG(n.rnd.Uint64(), n.rnd.Uint64()))
}
