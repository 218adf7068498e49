package remoting

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers one request. It runs in a goroutine of its own; ctx is
// cancelled when the connection closes. A nil response sends nothing (for
// oneway requests, or when the handler answers later with Conn.Respond).
// For requests with the oneway flag the response is discarded.
type Handler func(ctx context.Context, c *Conn, req *Command) *Command

// BatchHandler answers requests without a goroutine per request, for the
// hot requests (sends) where a goroutine costs more than the work, and
// sees together the requests that came together: the connection's reader
// gathers the consecutive requests of the codes registered with one
// HandleBatch call that it decodes from what it has buffered (what one
// socket read brought), and calls the handler once with them, in arrival
// order, before it would wait — for more bytes, for an in-flight slot, or
// for the writer to drain — and before it handles any other frame. A batch
// holds at most MaxBatchRequests requests and MaxBatchBodyBytes of bodies
// (the request that reaches the byte bound ends its batch).
//
// It runs on the connection's reader, so it must not block: slow work goes
// to a goroutine of its own. reqs is the reader's: it may be reused once h
// returns (the requests themselves stay valid until answered). For each i
// it calls reply(i, build) exactly once — at once or later, from any
// goroutine, without blocking — with a function that builds the response
// to reqs[i] (or nil to send none). build runs on the connection's writer
// goroutine (or on its reader, which writes what was queued before it
// reads again), so whoever answers (often a storage goroutine) pays next to
// nothing. Until it is answered a request counts against the connection's
// in-flight limit. Later calls of reply for the same i are ignored.
type BatchHandler func(ctx context.Context, c *Conn, reqs []*Command, reply func(i int, build func() *Command))

// Bounds of one BatchHandler call.
const (
	// MaxBatchRequests bounds the requests of one batch (and so of one
	// store submission).
	MaxBatchRequests = 128
	// MaxBatchBodyBytes bounds the body bytes a batch gathers: the request
	// that reaches it is the batch's last. Batches are usually far below
	// it, since a batch holds what one 64 KiB read brought.
	MaxBatchBodyBytes = 1 << 20
)

const (
	// DefaultMaxInFlightPerConn bounds the handlers running for one
	// connection.
	DefaultMaxInFlightPerConn = 256
	// maxQueuedFrames bounds the frames waiting for the writer of a
	// connection; senders wait beyond it.
	maxQueuedFrames = 4096
	// copyBodyMax: bodies up to this size are copied next to their header;
	// larger ones are written from the caller's slices.
	copyBodyMax = 8 << 10
	// closeFlushTimeout bounds the flush of queued frames when a
	// connection closes, and any write in progress at that moment.
	closeFlushTimeout = 2 * time.Second
	readBufferBytes   = 64 << 10
	// readerWriteMaxBytes: a server connection's reader writes the queued
	// answers itself only while they are at most this many bytes.
	readerWriteMaxBytes = 256 << 10
	maxPooledHead       = 64 << 10
)

// pendingCall waits for the response to one request: Invoke's channel or
// InvokeAsync's callback.
type pendingCall struct {
	ch chan *Command
	cb func(*Command, error)
}

// opaqueSeq numbers the requests this process sends.
var opaqueSeq atomic.Int32

func nextOpaque() int32 { return opaqueSeq.Add(1) }

// owner is what a Conn needs from the Server or Client it belongs to.
type owner struct {
	wg          *sync.WaitGroup
	log         *slog.Logger
	maxFrame    int
	maxInFlight int
	handler     func(code int16) Handler
	batch       func(code int16) *batchReg // nil, or returns nil for codes without one
	wide        func(code int32) Handler   // nil, or returns nil for codes without one
	onClose     func(*Conn)
	// readerWrites: the reader writes what was queued while it was busy
	// (server connections). A client's reader only reads: were the readers
	// of both ends writing to each other, with both sockets full, neither
	// would read again.
	readerWrites bool
	// lazyResponses: responses keep their ext fields as received
	// (ClientOptions.LazyResponses).
	lazyResponses bool
	// limits: the server's Limits, counters and read budget; nil for a
	// Client's connections, which have none.
	limits *limitState
	// guard: ServerOptions.Guard (server connections), or nil.
	guard Guard
	// sign: ClientOptions.Sign (a Client's connections), or nil.
	sign func(*Command)
	// reqs counts the requests read (server connections), or nil.
	reqs *requestCounts
}

// outFrame is one encoded frame waiting for the writer, or a response the
// writer builds and encodes (build set).
type outFrame struct {
	head  *[]byte  // length prefix, header word, header, small body (pooled)
	parts [][]byte // large body, written as is
	cmd   *Command // for Release

	build func() *Command // builds the response to req
	req   *Command

	size int64 // bytes counted in Conn.wbytes
}

var headPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Conn is one connection, accepted by a Server or dialed by a Client. Its
// methods are safe for concurrent use.
type Conn struct {
	nc  net.Conn
	own *owner
	log *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	closing chan struct{} // closed by Close
	once    sync.Once
	wstop   chan struct{} // closed by finish: the writer flushes and closes the socket
	finOnce sync.Once
	sem     chan struct{} // in-flight handlers

	handlers   sync.WaitGroup
	writerDone chan struct{}

	pmu     sync.Mutex
	pending map[int32]pendingCall // nil once the reader has stopped

	wmu     sync.Mutex
	wq      []outFrame
	wclosed bool
	wspace  chan struct{} // closed by the writer when it empties wq, if someone waits
	wsignal chan struct{} // cap 1: wq is not empty

	// wio is held by whoever takes wq and writes it: the writer goroutine,
	// or the reader writing the replies queued while it was busy
	// (writeOut).
	wio    sync.Mutex
	wbatch []outFrame  // guarded by wio
	wbufs  net.Buffers // guarded by wio
	// coalesce: nc has no writev (a TLS or in-memory connection), so the
	// frames are copied into wjoin and written in few large Writes: written
	// one by one each would be a TLS record and a system call of its own.
	coalesce bool
	wjoin    []byte    // guarded by wio
	wfailed  bool      // guarded by wio: a write failed, drop the rest
	wdlAt    time.Time // guarded by wio: when armWrite last set the write deadline
	// readerWrites is set (owner.readerWrites only) while the reader
	// handles what it read, up to and including its batch handler call:
	// frames queued meanwhile do not wake the writer, because the reader
	// writes them itself before it reads again.
	readerWrites atomic.Bool

	vmu    sync.Mutex
	values map[any]any

	// rbudget is the connection's read budget (nil without one); ip its
	// source address, counted against MaxConnsPerIP.
	rbudget *budget
	ip      netip.Addr
	// wbytes counts the bytes of frames queued or being written; above
	// ConnWriteQueueBytes the reader waits on wdrain (made under wmu),
	// which the writer closes once wbytes is down to half of it.
	wbytes  atomic.Int64
	wpaused atomic.Bool
	wdrain  chan struct{}
	// rdl is the kind of read deadline armed and rdlAt when (reader only).
	rdl   int
	rdlAt time.Time
}

func newConn(parent context.Context, nc net.Conn, own *owner) *Conn {
	ctx, cancel := context.WithCancel(parent)
	c := &Conn{
		nc:         nc,
		own:        own,
		log:        own.log.With("remote", nc.RemoteAddr().String()),
		ctx:        ctx,
		cancel:     cancel,
		closing:    make(chan struct{}),
		wstop:      make(chan struct{}),
		sem:        make(chan struct{}, own.maxInFlight),
		writerDone: make(chan struct{}),
		pending:    make(map[int32]pendingCall),
		wsignal:    make(chan struct{}, 1),
	}
	if own.limits != nil && own.limits.ConnReadBudgetBytes > 0 {
		c.rbudget = &budget{limit: own.limits.ConnReadBudgetBytes}
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		c.coalesce = true
	}
	return c
}

// joinChunk is how much writeJoined gathers before a Write; a part at
// least this large is written from where it is.
const joinChunk = 64 << 10

// writeJoined writes bufs as few Writes of up to about joinChunk bytes.
func (c *Conn) writeJoined(bufs net.Buffers) error {
	j := c.wjoin[:0]
	flush := func() error {
		if len(j) == 0 {
			return nil
		}
		_, err := c.nc.Write(j)
		j = j[:0]
		return err
	}
	for _, b := range bufs {
		if len(b) >= joinChunk {
			if err := flush(); err != nil {
				return err
			}
			if _, err := c.nc.Write(b); err != nil {
				return err
			}
			continue
		}
		if len(j)+len(b) > joinChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		j = append(j, b...)
	}
	err := flush()
	if cap(j) <= 2*joinChunk {
		c.wjoin = j[:0]
	}
	return err
}

// start runs the reader and the writer. The owner calls it under its lock,
// after checking it is not closed, so that wg.Add never races wg.Wait.
func (c *Conn) start() {
	c.own.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr is our address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Closed returns a channel closed when the connection starts closing.
func (c *Conn) Closed() <-chan struct{} { return c.closing }

// Context is cancelled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

// SetValue attaches v to the connection under key (nil v removes it).
func (c *Conn) SetValue(key, v any) {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	if v == nil {
		delete(c.values, key)
		return
	}
	if c.values == nil {
		c.values = make(map[any]any)
	}
	c.values[key] = v
}

// Value returns what SetValue attached under key, or nil.
func (c *Conn) Value(key any) any {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	return c.values[key]
}

// Close closes the connection. At once: pending and new Invoke calls fail
// with ErrConnClosed, handler contexts are cancelled and no more requests
// are read. Then, in the background, once the running handlers have
// returned, their responses and everything else queued are flushed (each
// write bounded by a couple of seconds) and the socket is closed. Close does
// not wait; it is idempotent and always returns nil.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closing)
		c.cancel()
		// Wake the reader now; bound a write stuck on a peer that does not
		// read.
		now := time.Now()
		_ = c.nc.SetReadDeadline(now)
		_ = c.nc.SetWriteDeadline(now.Add(closeFlushTimeout))
	})
	return nil
}

// finish stops the queue and lets the writer flush it and close the
// socket. The reader calls it once the handlers have returned.
func (c *Conn) finish() {
	c.finOnce.Do(func() {
		c.wmu.Lock()
		c.wclosed = true
		if c.wspace != nil {
			close(c.wspace)
			c.wspace = nil
		}
		c.wmu.Unlock()
		_ = c.nc.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
		close(c.wstop)
	})
}

// Invoke sends req and waits for the response with its opaque. It sets
// req.Opaque (a fresh number) and clears the response and oneway flags. It
// returns an error wrapping ctx.Err() when ctx ends first (a ctx deadline
// is the timeout; without one it waits until the connection closes),
// ErrConnClosed when the connection closes first, or ErrInvalidCommand.
func (c *Conn) Invoke(ctx context.Context, req *Command) (*Command, error) {
	if err := ctx.Err(); err != nil {
		req.release()
		return nil, fmt.Errorf("remoting: invoke code %d on %s: %w", req.FullCode(), c.nc.RemoteAddr(), err)
	}
	select {
	case <-c.closing:
		req.release()
		return nil, fmt.Errorf("remoting: invoke code %d on %s: %w", req.FullCode(), c.nc.RemoteAddr(), ErrConnClosed)
	default:
	}
	if c.own.sign != nil {
		c.own.sign(req)
	}
	op := nextOpaque()
	req.Opaque = op
	req.Flag &^= FlagResponse | FlagOneway
	ch := make(chan *Command, 1)
	if !c.addPending(op, pendingCall{ch: ch}) {
		req.release()
		return nil, fmt.Errorf("remoting: invoke code %d on %s: %w", req.FullCode(), c.nc.RemoteAddr(), ErrConnClosed)
	}
	if err := c.send(ctx, req); err != nil {
		c.forget(op)
		return nil, fmt.Errorf("remoting: invoke code %d on %s: %w", req.FullCode(), c.nc.RemoteAddr(), err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		c.forget(op)
		return nil, fmt.Errorf("remoting: invoke code %d opaque %d on %s: %w", req.FullCode(), op, c.nc.RemoteAddr(), ctx.Err())
	case <-c.closing:
		c.forget(op)
		select {
		case resp := <-ch:
			return resp, nil
		default:
		}
		return nil, fmt.Errorf("remoting: invoke code %d opaque %d on %s: %w", req.FullCode(), op, c.nc.RemoteAddr(), ErrConnClosed)
	}
}

// InvokeAsync sends req and returns once it is queued for writing; cb is
// called exactly once, with the response, or with an error wrapping
// ErrConnClosed when the connection closes first (at once when it is
// closed already or req cannot be encoded). cb runs on the connection's
// reader goroutine (or the caller's, for an immediate error) and must not
// block. It sets req.Opaque and clears the response and oneway flags. A
// body of up to 8 KiB is copied, so req may be reused once InvokeAsync
// returns; a larger one is written from req.Body, which must then stay
// unchanged until cb runs. No timeout applies: a caller that needs one
// closes the connection.
func (c *Conn) InvokeAsync(req *Command, cb func(*Command, error)) {
	if c.own.sign != nil {
		c.own.sign(req)
	}
	op := nextOpaque()
	req.Opaque = op
	req.Flag &^= FlagResponse | FlagOneway
	fail := func(err error) {
		cb(nil, fmt.Errorf("remoting: invoke code %d on %s: %w", req.FullCode(), c.nc.RemoteAddr(), err))
	}
	select {
	case <-c.closing:
		req.release()
		fail(ErrConnClosed)
		return
	default:
	}
	if !c.addPending(op, pendingCall{cb: cb}) {
		req.release()
		fail(ErrConnClosed)
		return
	}
	if err := c.send(nil, req); err != nil {
		c.pmu.Lock()
		_, mine := c.pending[op]
		delete(c.pending, op)
		c.pmu.Unlock()
		if mine { // else the reader's shutdown answered it
			fail(err)
		}
	}
}

// addPending registers a call; false once the reader has stopped.
func (c *Conn) addPending(op int32, p pendingCall) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		return false
	}
	c.pending[op] = p
	return true
}

// failPending stops registrations and fails the InvokeAsync calls still
// waiting (Invoke calls notice c.closing themselves).
func (c *Conn) failPending() {
	c.pmu.Lock()
	pend := c.pending
	c.pending = nil
	c.pmu.Unlock()
	for op, p := range pend {
		if p.cb != nil {
			p.cb(nil, fmt.Errorf("remoting: invoke opaque %d on %s: %w", op, c.nc.RemoteAddr(), ErrConnClosed))
		}
	}
}

func (c *Conn) forget(op int32) {
	c.pmu.Lock()
	delete(c.pending, op)
	c.pmu.Unlock()
}

// InvokeOneway sends req with the oneway flag and a fresh opaque and
// returns once the frame is queued for writing; no answer is awaited.
func (c *Conn) InvokeOneway(req *Command) error {
	select {
	case <-c.closing:
		req.release()
		return fmt.Errorf("remoting: oneway code %d on %s: %w", req.Code, c.nc.RemoteAddr(), ErrConnClosed)
	default:
	}
	if c.own.sign != nil {
		c.own.sign(req)
	}
	req.Opaque = nextOpaque()
	req.Flag = req.Flag&^FlagResponse | FlagOneway
	if err := c.send(nil, req); err != nil {
		return fmt.Errorf("remoting: oneway code %d on %s: %w", req.Code, c.nc.RemoteAddr(), err)
	}
	return nil
}

// Respond sends resp as the answer to req: it copies req's opaque and
// serialisation type into resp and sets the response flag. Handlers that
// answer later (long polling) return nil and call Respond when ready.
// Nothing is sent for a oneway request. After Close, Respond still queues
// until the connection's handlers have all returned (so a handler that
// answers when its ctx is cancelled is heard); after that it returns
// ErrConnClosed.
func (c *Conn) Respond(req, resp *Command) error {
	if req.IsOneway() {
		resp.release()
		return nil
	}
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	resp.SerializeType = req.SerializeType
	return c.send(nil, resp)
}

// send encodes cmd in the caller's goroutine and queues it for the writer,
// waiting while the queue is full (until ctx ends, if not nil, or the
// connection closes). cmd.Release runs once the frame is written or
// dropped.
func (c *Conn) send(ctx context.Context, cmd *Command) error {
	hp := headPool.Get().(*[]byte)
	bodyLen := cmd.BodyLen()
	buf, err := appendFrameHead((*hp)[:0], cmd, bodyLen)
	if err != nil {
		headPool.Put(hp)
		cmd.release()
		return err
	}
	f := outFrame{head: hp, cmd: cmd}
	switch {
	case len(cmd.BodyParts) == 0 && bodyLen <= copyBodyMax:
		buf = append(buf, cmd.Body...)
	case len(cmd.BodyParts) == 0:
		f.parts = [][]byte{cmd.Body}
	default:
		f.parts = cmd.BodyParts
	}
	*hp = buf
	f.size = f.bytes()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		c.wmu.Lock()
		if c.wclosed {
			c.wmu.Unlock()
			releaseFrame(f)
			return ErrConnClosed
		}
		if len(c.wq) < maxQueuedFrames {
			c.wq = append(c.wq, f)
			c.wbytes.Add(f.size)
			c.wmu.Unlock()
			if !c.readerWrites.Load() {
				select {
				case c.wsignal <- struct{}{}:
				default:
				}
			}
			return nil
		}
		if c.wspace == nil {
			c.wspace = make(chan struct{})
		}
		space := c.wspace
		c.wmu.Unlock()
		select { // the queue is full: the writer must empty it now
		case c.wsignal <- struct{}{}:
		default:
		}
		select {
		case <-space:
		case <-done:
			releaseFrame(f)
			return ctx.Err()
		}
	}
}

// bytes is the length of the encoded frame.
func (f *outFrame) bytes() int64 {
	n := int64(len(*f.head))
	for _, p := range f.parts {
		n += int64(len(p))
	}
	return n
}

func releaseFrame(f outFrame) {
	if f.head == nil { // a response that was never built
		return
	}
	if cap(*f.head) <= maxPooledHead {
		*f.head = (*f.head)[:0]
		headPool.Put(f.head)
	}
	f.cmd.release()
}

// writeLoop writes queued frames, all that are queued with one writev.
// When the connection closes it flushes what is queued, then closes the
// socket.
func (c *Conn) writeLoop() {
	defer c.own.wg.Done()
	defer close(c.writerDone)
	for {
		closing := false
		select {
		case <-c.wsignal:
		case <-c.wstop:
			closing = true
		}
		c.wio.Lock()
		c.writeOut(closing)
		c.wio.Unlock()
		if closing {
			// finish set wclosed before closing c.wstop, so nothing more
			// can be queued after the batch above.
			_ = c.nc.Close()
			return
		}
	}
}

// writeOut takes the queued frames and writes them with one writev. The
// caller holds wio.
func (c *Conn) writeOut(closing bool) {
	c.wmu.Lock()
	batch := c.wq
	c.wq = c.wbatch[:0]
	if c.wspace != nil {
		close(c.wspace)
		c.wspace = nil
	}
	c.wmu.Unlock()
	var queued int64 // what the batch counts in wbytes
	for i := range batch {
		queued += batch[i].size
	}
	if len(batch) > 0 && !c.wfailed {
		bufs := c.wbufs[:0]
		for i := range batch {
			f := &batch[i]
			if f.build != nil {
				if !c.buildFrame(f) {
					continue
				}
				// Built now: it counts while it is being written.
				f.size = f.bytes()
				queued += f.size
				c.wbytes.Add(f.size)
			}
			bufs = append(bufs, *f.head)
			bufs = append(bufs, f.parts...)
		}
		w := bufs
		c.armWrite()
		var err error
		if c.coalesce {
			err = c.writeJoined(w)
		} else {
			_, err = w.WriteTo(c.nc)
		}
		if err != nil {
			c.wfailed = true
			switch {
			case closing:
			case errors.Is(err, os.ErrDeadlineExceeded) && c.own.limits != nil && !c.isClosing():
				c.own.limits.hit(hitIdleTimeout, c.log, "closing a connection that reads none of its answers", "idle_timeout", c.own.limits.IdleTimeout)
			default:
				c.log.Debug("write failed; closing connection", "err", err)
			}
			c.Close()
		}
		clear(bufs)
		c.wbufs = bufs[:0]
	}
	for i := range batch {
		releaseFrame(batch[i])
		batch[i] = outFrame{}
	}
	c.wbatch = batch[:0]
	if queued != 0 {
		c.wbytes.Add(-queued)
		if c.wpaused.Load() {
			c.wmu.Lock()
			if c.wdrain != nil && c.wbytes.Load() <= c.own.limits.ConnWriteQueueBytes/2 {
				close(c.wdrain)
				c.wdrain = nil
			}
			c.wmu.Unlock()
		}
	}
}

// armWrite bounds the write about to start by IdleTimeout (server
// connections): a peer that takes none of it for that long is gone, as one
// that sends nothing is. A deadline armed less than 1/16 of the timeout ago
// is kept, and one Close set is never replaced. The caller holds wio.
func (c *Conn) armWrite() {
	lim := c.own.limits
	if lim == nil || lim.IdleTimeout <= 0 || c.isClosing() {
		return
	}
	now := time.Now()
	if now.Sub(c.wdlAt) < lim.IdleTimeout/16 {
		return
	}
	c.wdlAt = now
	_ = c.nc.SetWriteDeadline(now.Add(lim.IdleTimeout))
	if c.isClosing() {
		_ = c.nc.SetWriteDeadline(now.Add(closeFlushTimeout))
	}
}

func (c *Conn) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// idle (owner.readerWrites) writes what was queued while the reader was
// busy, on this goroutine, unless the writer is writing (then the writer
// is woken). The reader calls it, after handing on its batch, before it may
// block.
func (c *Conn) idle() {
	if !c.own.readerWrites {
		return
	}
	c.readerWrites.Store(false)
	c.wmu.Lock()
	queued := len(c.wq) > 0
	c.wmu.Unlock()
	if !queued {
		return
	}
	// Large answers go to the writer: a peer slow to read them would
	// block the reader in its write, where it notices no limit.
	if c.wbytes.Load() <= readerWriteMaxBytes && c.wio.TryLock() {
		c.writeOut(false)
		c.wio.Unlock()
		return
	}
	select {
	case c.wsignal <- struct{}{}:
	default:
	}
}

// readLoop reads frames until the connection fails or closes, delivers
// responses to their Invoke and starts a handler per request. After the
// connection closed and its handlers returned it calls the owner's onClose.
func (c *Conn) readLoop() {
	defer c.own.wg.Done()
	br := bufio.NewReaderSize(c.nc, readBufferBytes)
	lim := c.own.limits
	var fb frameBudget
	if lim != nil && (c.rbudget != nil || lim.budget != nil) {
		fb = c
	}
	var b batch
	for {
		if lim != nil && lim.ConnWriteQueueBytes > 0 && c.wbytes.Load() > lim.ConnWriteQueueBytes {
			c.runBatch(&b)
			if !c.waitDrained() {
				break
			}
		}
		if !frameBuffered(br) {
			c.runBatch(&b)
			c.idle()
			if err := c.awaitFrame(br); err != nil {
				c.readFailed(err)
				break
			}
		}
		cmd, held, err := readFrame(br, c.own.maxFrame, true, fb)
		if err != nil {
			c.readFailed(err)
			break
		}
		cmd.held = held
		if cmd.wideCode != 0 && cmd.IsResponse() {
			c.unreserveCmd(cmd)
			c.readFailed(fmt.Errorf("%w: response code %d does not fit int16", ErrMalformed, cmd.wideCode))
			break
		}
		if c.own.readerWrites {
			c.readerWrites.Store(true)
		}
		var reg *batchReg
		if !cmd.IsResponse() && c.own.batch != nil && cmd.wideCode == 0 {
			reg = c.own.batch(cmd.Code)
		}
		if reg != b.reg {
			c.runBatch(&b) // a batch is of one registration, in order
		}
		if reg == nil && !(c.own.lazyResponses && cmd.IsResponse()) {
			cmd.materialize()
		}
		if cmd.IsResponse() {
			c.unreserveCmd(cmd) // the caller owns it now
			c.pmu.Lock()
			p, ok := c.pending[cmd.Opaque]
			delete(c.pending, cmd.Opaque)
			c.pmu.Unlock()
			switch {
			case !ok:
				c.log.Debug("dropped response with unknown opaque", "opaque", cmd.Opaque, "code", cmd.Code)
			case p.cb != nil:
				p.cb(cmd, nil)
			default:
				p.ch <- cmd
			}
			continue
		}
		if c.own.reqs != nil {
			c.own.reqs.add(cmd.FullCode())
		}
		if c.own.guard != nil && reg == nil { // a batch's requests are checked in runBatch
			if resp := c.own.guard(c, cmd); resp != nil {
				c.unreserveCmd(cmd)
				if err := c.Respond(cmd, resp); err != nil {
					c.log.Debug("refusal not sent", "code", cmd.FullCode(), "opaque", cmd.Opaque, "err", err)
				}
				continue
			}
		}
		select {
		case c.sem <- struct{}{}:
		default:
			// The batch's answers (and others') free slots.
			c.runBatch(&b)
			c.idle()
			select {
			case c.sem <- struct{}{}:
			case <-c.closing:
			}
		}
		select {
		case <-c.closing:
		default:
			c.handlers.Add(1)
			if reg != nil {
				b.add(reg, cmd)
				if len(b.reqs) >= MaxBatchRequests || b.bytes >= MaxBatchBodyBytes {
					c.runBatch(&b)
				}
				continue
			}
			c.own.wg.Add(1)
			go c.handle(cmd)
			continue
		}
		c.unreserveCmd(cmd)
		break
	}
	c.runBatch(&b) // what this reader gathered is handled, and answered
	c.idle()
	c.Close()
	c.failPending()
	c.handlers.Wait()
	c.finish()
	<-c.writerDone
	if c.own.onClose != nil {
		c.own.onClose(c)
	}
}

var (
	errIdleTimeout   = errors.New("remoting: connection idle")
	errBudgetTimeout = errors.New("remoting: no read budget in time")
)

// awaitFrame waits for the first byte of the next frame under the idle
// timeout, then arms the frame timeout unless the whole frame is buffered
// already (server connections with those limits).
func (c *Conn) awaitFrame(br *bufio.Reader) error {
	lim := c.own.limits
	if lim == nil || (lim.IdleTimeout <= 0 && lim.FrameReadTimeout <= 0) {
		return nil
	}
	if br.Buffered() == 0 {
		c.armRead(rdlIdle, lim.IdleTimeout)
		if _, err := br.Peek(1); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && lim.IdleTimeout > 0 {
				return errIdleTimeout
			}
			return err
		}
		if frameBuffered(br) {
			return nil
		}
	}
	c.armRead(rdlFrame, lim.FrameReadTimeout)
	return nil
}

// Kinds of read deadline armed (Conn.rdl).
const (
	rdlNone = iota
	rdlIdle
	rdlFrame
)

// armRead sets the read deadline to d from now (none for d ≤ 0). An idle
// deadline armed less than 1/16 of it ago is left as it is: it costs a
// timer update per wait otherwise. A deadline never replaces the one Close
// set to wake the reader.
func (c *Conn) armRead(kind int, d time.Duration) {
	now := time.Now()
	if kind == rdlIdle && c.rdl == rdlIdle && d > 0 && now.Sub(c.rdlAt) < d/16 {
		return
	}
	var t time.Time
	if d > 0 {
		t = now.Add(d)
	}
	c.rdl, c.rdlAt = kind, now
	_ = c.nc.SetReadDeadline(t)
	select {
	case <-c.closing:
		_ = c.nc.SetReadDeadline(now)
	default:
	}
}

// reserve takes n bytes of read budget for a frame, from the connection's
// budget and then the server's, waiting (logged and counted) while they are
// spent, up to FrameReadTimeout.
func (c *Conn) reserve(n int) error {
	if n <= 0 {
		return nil
	}
	lim := c.own.limits
	waited := false
	take := func(b *budget, kind int, msg string) error {
		if b == nil || b.tryAcquire(int64(n)) {
			return nil
		}
		waited = true
		lim.hit(kind, c.log, msg, "bytes", n, "budget_bytes", b.limit)
		if ok, _ := b.acquire(int64(n), c.closing, lim.FrameReadTimeout); !ok {
			select {
			case <-c.closing:
				return ErrConnClosed
			default:
				return errBudgetTimeout
			}
		}
		return nil
	}
	if err := take(c.rbudget, hitConnReadBudget, "connection waits for its read budget: its requests in flight hold it"); err != nil {
		return err
	}
	if err := take(lim.budget, hitServerReadBudget, "connection waits for the server's read budget"); err != nil {
		if c.rbudget != nil {
			c.rbudget.release(int64(n))
		}
		return err
	}
	if waited && lim.FrameReadTimeout > 0 {
		c.armRead(rdlFrame, lim.FrameReadTimeout) // the wait was ours, not the peer's
	}
	return nil
}

func (c *Conn) unreserve(n int) {
	if c.own.limits == nil {
		return
	}
	if c.rbudget != nil {
		c.rbudget.release(int64(n))
	}
	if b := c.own.limits.budget; b != nil {
		b.release(int64(n))
	}
}

// unreserveCmd gives back what cmd's frame holds of the read budget.
func (c *Conn) unreserveCmd(cmd *Command) {
	if n := cmd.held; n > 0 {
		cmd.held = 0
		c.unreserve(n)
	}
}

// waitDrained stops reading while the answers queued for the peer exceed
// ConnWriteQueueBytes, until they are down to half of it. It reports false
// when the connection closed meanwhile.
func (c *Conn) waitDrained() bool {
	lim := c.own.limits
	lim.hit(hitWriteQueue, c.log, "connection does not read its answers; stopped reading from it until they drain",
		"queued_bytes", c.wbytes.Load(), "limit_bytes", lim.ConnWriteQueueBytes)
	c.idle() // write what is queued, or wake the writer
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wpaused.Store(true)
	defer c.wpaused.Store(false)
	for c.wbytes.Load() > lim.ConnWriteQueueBytes/2 && !c.wclosed {
		ch := make(chan struct{})
		c.wdrain = ch
		c.wmu.Unlock()
		select {
		case <-ch:
		case <-c.closing:
		}
		c.wmu.Lock()
		c.wdrain = nil
		select {
		case <-c.closing:
			return false
		default:
		}
	}
	return true
}

// frameBuffered reports whether br holds a whole frame, so that reading it
// needs no system call.
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < 4 {
		return false
	}
	prefix, _ := br.Peek(4)
	return uint64(n) >= 4+uint64(binary.BigEndian.Uint32(prefix))
}

func (c *Conn) readFailed(err error) {
	select {
	case <-c.closing:
		return // we closed it
	default:
	}
	switch {
	case errors.Is(err, errIdleTimeout):
		c.own.limits.hit(hitIdleTimeout, c.log, "closing a connection that sent nothing", "idle_timeout", c.own.limits.IdleTimeout)
	case errors.Is(err, errBudgetTimeout):
		c.own.limits.hit(hitFrameTimeout, c.log, "closing a connection whose reader waited too long for read budget", "frame_timeout", c.own.limits.FrameReadTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded) && c.own.limits != nil && c.own.limits.FrameReadTimeout > 0:
		c.own.limits.hit(hitFrameTimeout, c.log, "closing a connection whose frame did not arrive in time", "frame_timeout", c.own.limits.FrameReadTimeout)
	case errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge):
		c.log.Warn("closing connection after a bad frame", "err", err)
	case errors.Is(err, io.EOF):
		c.log.Debug("connection closed by peer")
	default:
		c.log.Debug("read failed; closing connection", "err", err)
	}
}

func (c *Conn) handle(req *Command) {
	defer c.own.wg.Done()
	defer c.handlers.Done()
	defer func() { <-c.sem }()
	defer c.unreserveCmd(req)
	resp := c.call(req)
	if resp == nil {
		return
	}
	if err := c.Respond(req, resp); err != nil {
		c.log.Debug("response not sent", "code", req.Code, "opaque", req.Opaque, "err", err)
	}
}

// call runs the handler; a panic becomes a SYSTEM_ERROR answer.
func (c *Conn) call(req *Command) (resp *Command) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "code", req.FullCode(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp = NewResponse(req, CodeSystemError, fmt.Sprintf("internal error handling request code %d", req.FullCode()))
		}
	}()
	if req.wideCode != 0 {
		if c.own.wide != nil {
			if h := c.own.wide(req.wideCode); h != nil {
				return h(c.ctx, c, req)
			}
		}
		return notSupported(c.ctx, c, req)
	}
	return c.own.handler(req.Code)(c.ctx, c, req)
}

// batchReg is one HandleBatch registration: requests of its codes that
// come one after another form one batch.
type batchReg struct{ h BatchHandler }

// batch is the requests the reader gathered for one registration and not
// yet handed on; each holds an in-flight slot and counts in c.handlers.
type batch struct {
	reg   *batchReg
	reqs  []*Command
	bytes int
	// refused and pass are runBatch's scratch for the guard's answers and
	// the requests it let through.
	refused []*Command
	pass    []*Command
}

func (b *batch) add(reg *batchReg, cmd *Command) {
	b.reg = reg
	b.reqs = append(b.reqs, cmd)
	b.bytes += len(cmd.Body)
}

// runBatch hands the gathered requests to their handler, once, and empties
// b. A panic in the handler answers each request it had not answered with
// SYSTEM_ERROR.
func (c *Conn) runBatch(b *batch) {
	if len(b.reqs) == 0 {
		b.reg = nil
		return
	}
	calls := make([]replyOnce, len(b.reqs))
	for i, req := range b.reqs {
		calls[i] = replyOnce{c: c, req: req}
	}
	reply := func(i int, build func() *Command) { calls[i].reply(build) }
	h, reqs := b.reg.h, b.reqs
	if c.own.guard != nil {
		reqs, reply = c.guardBatch(b, calls)
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "code", calls[0].req.Code, "requests", len(calls), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			for i := range calls {
				req := calls[i].req
				calls[i].reply(func() *Command {
					return NewResponse(req, CodeSystemError, fmt.Sprintf("internal error handling request code %d", req.Code))
				})
			}
		}
		clear(b.reqs)
		clear(b.pass)
		b.reqs, b.reg, b.bytes, b.pass = b.reqs[:0], nil, 0, b.pass[:0]
	}()
	if len(reqs) > 0 {
		h(c.ctx, c, reqs, reply)
	}
}

// maxGuardWorkers bounds the goroutines that check one batch's requests.
const maxGuardWorkers = 4

// minParallelGuard is the smallest batch whose checks are spread.
const minParallelGuard = 4

// guardBatch runs the guard on b's requests, in parallel for larger
// batches (the reader takes one share itself): the reader carries all of
// a connection's requests, and checking a signature costs about as much
// as the rest of a send's work on it. Refused requests are answered in
// place; it returns the others, in order, and the reply their handler
// calls.
func (c *Conn) guardBatch(b *batch, calls []replyOnce) ([]*Command, func(int, func() *Command)) {
	n := len(b.reqs)
	if cap(b.refused) < n {
		b.refused = make([]*Command, n)
	}
	refused := b.refused[:n]
	check := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			refused[i] = c.own.guard(c, b.reqs[i])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), maxGuardWorkers, n)
	if n < minParallelGuard || workers < 2 {
		check(0, n)
	} else {
		var wg sync.WaitGroup
		per := (n + workers - 1) / workers
		for lo := per; lo < n; lo += per {
			wg.Go(func() { check(lo, min(lo+per, n)) })
		}
		check(0, min(per, n))
		wg.Wait()
	}
	var idx []int // the pass index's request in calls, when some are refused
	for i, resp := range refused {
		if resp == nil {
			if idx != nil {
				idx = append(idx, i)
			}
			continue
		}
		if idx == nil {
			idx = make([]int, 0, n)
			for j := range i {
				idx = append(idx, j)
			}
		}
		refused[i] = nil
		calls[i].reply(func() *Command { return resp })
	}
	if idx == nil {
		return b.reqs, func(i int, build func() *Command) { calls[i].reply(build) }
	}
	pass := b.pass[:0]
	for _, i := range idx {
		pass = append(pass, b.reqs[i])
	}
	b.pass = pass
	return pass, func(i int, build func() *Command) { calls[idx[i]].reply(build) }
}

// replyOnce is one request given to a BatchHandler.
type replyOnce struct {
	c       *Conn
	req     *Command
	replied atomic.Bool
}

// reply queues the response builder (bypassing the queue bound: the
// in-flight limit bounds these) and frees the request's in-flight slot.
// Only the first call acts.
func (a *replyOnce) reply(build func() *Command) {
	if !a.replied.CompareAndSwap(false, true) {
		return
	}
	c := a.c
	if build != nil && !a.req.IsOneway() {
		c.wmu.Lock()
		if !c.wclosed {
			c.wq = append(c.wq, outFrame{build: build, req: a.req})
		}
		c.wmu.Unlock()
		if !c.readerWrites.Load() {
			select {
			case c.wsignal <- struct{}{}:
			default:
			}
		}
	}
	c.unreserveCmd(a.req)
	<-c.sem
	c.handlers.Done()
}

// buildFrame builds and encodes a response queued by a batch reply. It
// reports false when there is nothing to write.
func (c *Conn) buildFrame(f *outFrame) bool {
	resp := f.build()
	f.build = nil
	if resp == nil {
		return false
	}
	resp.Opaque = f.req.Opaque
	resp.Flag |= FlagResponse
	resp.SerializeType = f.req.SerializeType
	hp := headPool.Get().(*[]byte)
	f.head, f.cmd = hp, resp
	bodyLen := resp.BodyLen()
	buf, err := appendFrameHead((*hp)[:0], resp, bodyLen)
	if err != nil {
		c.log.Warn("response not sent: it cannot be encoded", "code", f.req.Code, "opaque", f.req.Opaque, "err", err)
		*hp = buf
		return false
	}
	switch {
	case len(resp.BodyParts) == 0 && bodyLen <= copyBodyMax:
		buf = append(buf, resp.Body...)
	case len(resp.BodyParts) == 0:
		f.parts = [][]byte{resp.Body}
	default:
		f.parts = resp.BodyParts
	}
	*hp = buf
	return true
}

// notSupported is the default handler for codes without one.
func notSupported(_ context.Context, _ *Conn, req *Command) *Command {
	return NewResponse(req, CodeRequestCodeNotSupported, fmt.Sprintf("request code %d is not supported", req.FullCode()))
}
