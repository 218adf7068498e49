package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
)

// DefaultDialTimeout bounds a dial when ClientOptions.DialTimeout is 0.
const DefaultDialTimeout = 5 * time.Second

// ClientOptions configures a Client. Zero values take the defaults.
type ClientOptions struct {
	// MaxFrameBytes limits the frames we accept. Default 16 MiB.
	MaxFrameBytes int
	// DialTimeout bounds each dial (the call's ctx may end it sooner).
	// Default DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger: default discard.
	Logger *slog.Logger
	// Handler answers requests the server sends to us. Without one they
	// are answered with code 3 (REQUEST_CODE_NOT_SUPPORTED).
	Handler Handler
	// LazyResponses leaves the ext fields of responses as received, with
	// ExtFields nil: read them with Command.Ext or EachExt. It spares the
	// map each response would fill, for callers on a hot path (a load
	// generator) that read few of them.
	LazyResponses bool
	// Network is what the client dials on; default the real network
	// (netx.TCP). Tests pass a netx.Mem host; TLS wraps it (tlsx).
	Network netx.Network
	// Sign, if set, is called on every request before it is sent
	// (Invoke, InvokeAsync, InvokeOneway): it adds the credentials'
	// AccessKey and Signature fields (auth/authwire.Signer). It must
	// replace fields an earlier call added when a request is sent again.
	Sign func(*Command)
}

// Client keeps one connection per address, dialed on first use and dialed
// again after it closed. It is safe for concurrent use; dials to different
// addresses do not wait for each other.
type Client struct {
	opts ClientOptions
	own  owner

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu     sync.Mutex
	closed bool
	conns  map[string]*dialEntry
}

// dialEntry is one address's connection or the dial in progress.
type dialEntry struct {
	done chan struct{} // closed when the dial finished
	conn *Conn
	err  error
}

// NewClient returns a Client.
func NewClient(opts ClientOptions) *Client {
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	opts.Network = netx.Or(opts.Network)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "remoting")
	h := opts.Handler
	if h == nil {
		h = notSupported
	}
	ctx, cancel := context.WithCancel(context.Background())
	cl := &Client{opts: opts, ctx: ctx, cancel: cancel, conns: make(map[string]*dialEntry)}
	cl.own = owner{
		wg:          &cl.wg,
		log:         log,
		maxFrame:    opts.MaxFrameBytes,
		maxInFlight: DefaultMaxInFlightPerConn,
		handler:     func(int16) Handler { return h },
		onClose:     cl.connClosed,

		lazyResponses: opts.LazyResponses,
		sign:          opts.Sign,
	}
	return cl
}

// Conn returns the open connection to addr, dialing it if needed. A failed
// dial is not cached: the next call dials again.
func (cl *Client) Conn(ctx context.Context, addr string) (*Conn, error) {
	for {
		cl.mu.Lock()
		if cl.closed {
			cl.mu.Unlock()
			return nil, ErrClosed
		}
		e := cl.conns[addr]
		if e == nil {
			e = &dialEntry{done: make(chan struct{})}
			cl.conns[addr] = e
			cl.mu.Unlock()
			return cl.dial(ctx, addr, e)
		}
		cl.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("remoting: connect %s: %w", addr, ctx.Err())
		}
		if e.err != nil {
			return nil, e.err
		}
		select {
		case <-e.conn.Closed():
			cl.mu.Lock()
			if cl.conns[addr] == e {
				delete(cl.conns, addr)
			}
			cl.mu.Unlock()
		default:
			return e.conn, nil
		}
	}
}

func (cl *Client) dial(ctx context.Context, addr string, e *dialEntry) (*Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, cl.opts.DialTimeout)
	nc, err := cl.opts.Network.Dial(dctx, addr)
	cancel()
	cl.mu.Lock()
	defer func() {
		close(e.done)
		cl.mu.Unlock()
	}()
	if err == nil && cl.closed {
		_ = nc.Close()
		err = ErrClosed
	}
	if err != nil {
		e.err = fmt.Errorf("remoting: connect %s: %w", addr, err)
		if cl.conns[addr] == e {
			delete(cl.conns, addr)
		}
		return nil, e.err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	e.conn = newConn(cl.ctx, nc, &cl.own)
	e.conn.SetValue(addrKey{}, addr)
	e.conn.start()
	return e.conn, nil
}

type addrKey struct{}

func (cl *Client) connClosed(c *Conn) {
	addr, _ := c.Value(addrKey{}).(string)
	cl.mu.Lock()
	if e := cl.conns[addr]; e != nil && e.conn == c {
		delete(cl.conns, addr)
	}
	cl.mu.Unlock()
}

// Invoke sends req to addr and waits for the answer; see Conn.Invoke. The
// ctx bounds the dial as well.
func (cl *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		req.release()
		return nil, err
	}
	return c.Invoke(ctx, req)
}

// InvokeOneway sends req to addr with the oneway flag; see
// Conn.InvokeOneway. The ctx bounds the dial.
func (cl *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		req.release()
		return err
	}
	return c.InvokeOneway(req)
}

// Close closes every connection, failing pending calls, and waits for all
// goroutines of the client. It is idempotent and returns nil; it must not
// be called from the client's Handler.
func (cl *Client) Close() error {
	cl.once.Do(func() {
		cl.mu.Lock()
		cl.closed = true
		var conns []*Conn
		for _, e := range cl.conns {
			select {
			case <-e.done:
				if e.conn != nil {
					conns = append(conns, e.conn)
				}
			default: // dial in progress: dial closes it, seeing closed
			}
		}
		cl.mu.Unlock()
		cl.cancel()
		for _, c := range conns {
			c.Close()
		}
	})
	cl.wg.Wait()
	return nil
}
