package remoting

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// ServerOptions configures a Server. Zero values take the defaults.
type ServerOptions struct {
	// MaxFrameBytes limits a frame's length prefix; a larger frame closes
	// the connection. Default DefaultMaxFrameBytes (16 MiB).
	MaxFrameBytes int
	// MaxInFlightPerConn bounds the handlers running at once for one
	// connection; beyond it the connection's reader waits (and so reads no
	// responses either). Default 256.
	MaxInFlightPerConn int
	// Logger receives connection-level events (bad frames at Warn, panics
	// at Error, the rest at Debug). Default: discard.
	Logger *slog.Logger
	// OnConnClose, if set, is called once per connection after it closed
	// and all its handlers returned, from a goroutine of the connection.
	OnConnClose func(*Conn)
	// Limits bound the memory, time and connections peers can take; zero
	// fields take the defaults (see Limits). NewServer does not check
	// them: call Limits.Validate first.
	Limits Limits
	// Guard, if set, sees every request before it is dispatched, on the
	// connection's reader goroutine: a non-nil answer is sent instead of
	// running the handler (authentication and authorization refusals).
	// Requests of HandleBatch codes (whose ext fields it reads with
	// Ext/EachExt) are checked when their batch is handed on, a larger
	// batch's on up to 4 goroutines at once, so it must be safe for
	// concurrent use; the handler gets only those it let through, in
	// order. It must not block.
	Guard Guard
}

// Guard checks a request before its handler runs; nil lets it through,
// an answer refuses it. See ServerOptions.Guard.
type Guard func(c *Conn, req *Command) *Command

// Server accepts connections and dispatches their requests by code.
type Server struct {
	opts     ServerOptions
	log      *slog.Logger
	handlers atomic.Pointer[map[int16]Handler]
	batch    atomic.Pointer[map[int16]*batchReg]
	wide     atomic.Pointer[map[int32]Handler]
	def      atomic.Pointer[Handler]
	own      owner

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	done   chan struct{}

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	perIP     map[netip.Addr]int
	closeErr  error

	limits *limitState
	reqs   requestCounts
}

// NewServer returns a Server; register handlers, then call Serve.
func NewServer(opts ServerOptions) *Server {
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.MaxInFlightPerConn <= 0 {
		opts.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "remoting")
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:      opts,
		log:       log,
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*Conn]struct{}),
		perIP:     make(map[netip.Addr]int),
		limits:    newLimitState(opts.Limits),
	}
	empty := map[int16]Handler{}
	s.handlers.Store(&empty)
	noBatch := map[int16]*batchReg{}
	s.batch.Store(&noBatch)
	noWide := map[int32]Handler{}
	s.wide.Store(&noWide)
	s.own = owner{
		wg:          &s.wg,
		log:         log,
		maxFrame:    opts.MaxFrameBytes,
		maxInFlight: opts.MaxInFlightPerConn,
		handler:     s.handler,
		batch:       s.batchHandler,
		wide:        s.wideHandler,
		onClose:     s.connClosed,
		// The peers are clients whose readers only read (or other
		// RocketMQ clients, whose readers do not wait on their writes).
		readerWrites: true,
		limits:       s.limits,
		guard:        opts.Guard,
		reqs:         &s.reqs,
	}
	return s
}

// Handle registers h for requests with the given code, replacing any
// earlier one. Call it before Serve (it is safe, but racy in effect, later).
func (s *Server) Handle(code int16, h Handler) { s.setHandler(code, h, nil) }

// HandleBatch registers h for requests with the given codes, replacing any
// earlier handler of either kind for them: requests of these codes that
// arrive one after another on a connection are handed to h together (see
// BatchHandler). Call it before Serve.
func (s *Server) HandleBatch(h BatchHandler, codes ...int16) {
	reg := &batchReg{h: h}
	for _, code := range codes {
		s.setHandler(code, nil, reg)
	}
}

// setHandler installs h or b (one of them is nil) for code.
func (s *Server) setHandler(code int16, h Handler, b *batchReg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := maps.Clone(*s.handlers.Load())
	bs := maps.Clone(*s.batch.Load())
	delete(hs, code)
	delete(bs, code)
	if h != nil {
		hs[code] = h
	}
	if b != nil {
		bs[code] = b
	}
	s.handlers.Store(&hs)
	s.batch.Store(&bs)
}

// HandleWide registers h for requests whose code does not fit int16
// (JSON headers only: RocketMQ 5's POP_MESSAGE 200050 and its kin),
// replacing any earlier one. A code that fits int16 goes to Handle. Call
// it before Serve.
func (s *Server) HandleWide(code int32, h Handler) {
	if code == int32(int16(code)) {
		s.Handle(int16(code), h)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := maps.Clone(*s.wide.Load())
	ws[code] = h
	s.wide.Store(&ws)
}

// wideHandler is the handler of a wide code, nil when none.
func (s *Server) wideHandler(code int32) Handler { return (*s.wide.Load())[code] }

func (s *Server) batchHandler(code int16) *batchReg { return (*s.batch.Load())[code] }

// HandleDefault registers h for codes without a handler. Without it they
// are answered with code 3 (REQUEST_CODE_NOT_SUPPORTED) and the remark
// "request code N is not supported".
func (s *Server) HandleDefault(h Handler) { s.def.Store(&h) }

// Codes lists the request codes with a handler (Handle, HandleBatch or
// HandleWide), in no order; the default handler is not a code.
func (s *Server) Codes() []int32 {
	var out []int32
	for c := range *s.handlers.Load() {
		out = append(out, int32(c))
	}
	for c := range *s.batch.Load() {
		out = append(out, int32(c))
	}
	for c := range *s.wide.Load() {
		out = append(out, c)
	}
	return out
}

func (s *Server) handler(code int16) Handler {
	if h, ok := (*s.handlers.Load())[code]; ok {
		return h
	}
	if h := s.def.Load(); h != nil {
		return *h
	}
	return notSupported
}

// Serve accepts connections on ln until Close (then it returns nil) or
// until ln fails for good (then it returns the error). It may be called for
// several listeners; Close closes them all.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	s.log.Debug("serving", "addr", ln.Addr().String())
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: back off and retry.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "delay", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		ip := remoteIP(nc.RemoteAddr())
		lim := s.limits
		switch {
		case lim.MaxConns > 0 && len(s.conns) >= lim.MaxConns:
			s.mu.Unlock()
			lim.hit(hitMaxConns, s.log, "refused a connection: the server has as many as it takes", "remote", nc.RemoteAddr().String(), "max_conns", lim.MaxConns)
			_ = nc.Close()
			continue
		case lim.MaxConnsPerIP > 0 && s.perIP[ip] >= lim.MaxConnsPerIP:
			s.mu.Unlock()
			lim.hit(hitMaxConnsPerIP, s.log, "refused a connection: its address has as many as the server takes from one", "remote", nc.RemoteAddr().String(), "max_conns_per_ip", lim.MaxConnsPerIP)
			_ = nc.Close()
			continue
		}
		c := newConn(s.ctx, nc, &s.own)
		c.ip = ip
		s.conns[c] = struct{}{}
		s.perIP[ip]++
		c.start()
		s.mu.Unlock()
		c.log.Debug("connection accepted")
	}
}

func (s *Server) connClosed(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	s.mu.Unlock()
	if f := s.opts.OnConnClose; f != nil {
		f(c)
	}
}

// Conns returns the open connections.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Stats returns the limit counters and the read budget in use.
func (s *Server) Stats() Stats { return s.limits.stats() }

// ConnCount is the number of open connections; unlike Conns it does not
// copy them.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops accepting, closes every connection (cancelling handler
// contexts and failing pending Invoke calls) and waits until every
// goroutine of the server, handlers included, has returned. It is
// idempotent; it must not be called from a handler or OnConnClose (it
// would wait for itself). It returns the first
// error from closing a listener.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		lns := make([]net.Listener, 0, len(s.listeners))
		for ln := range s.listeners {
			lns = append(lns, ln)
		}
		conns := make([]*Conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		close(s.done)
		s.cancel()
		for _, ln := range lns {
			if err := ln.Close(); err != nil && s.closeErr == nil && !errors.Is(err, net.ErrClosed) {
				s.closeErr = err
			}
		}
		for _, c := range conns {
			c.Close()
		}
	})
	s.wg.Wait()
	return s.closeErr
}
