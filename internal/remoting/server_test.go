package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/logtest"
)

const (
	codeEcho  int16 = 100 // answers with the request's "i" ext as remark
	codeBlock int16 = 101 // waits for the test's release channel or ctx
)

// logBuf collects log lines for assertions and mirrors them to t.Log.
type logBuf struct {
	logtest.Buffer
	t *testing.T
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return l.Buffer.Write(p)
}

func (l *logBuf) lines(level string) []string { return l.Lines("level=" + level) }

func newLogger(t *testing.T) (*slog.Logger, *logBuf) {
	lb := &logBuf{t: t}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

func echo(_ context.Context, _ *Conn, req *Command) *Command {
	resp := NewResponse(req, CodeSuccess, req.Ext("i"))
	resp.Body = req.Body
	return resp
}

type testServer struct {
	*Server
	addr  string
	logs  *logBuf
	serve chan error
}

// startServer serves on 127.0.0.1:0 with an echo handler; Cleanup closes
// it and checks that Serve returned nil.
func startServer(t *testing.T, opts ServerOptions, handlers map[int16]Handler) *testServer {
	t.Helper()
	log, lb := newLogger(t)
	opts.Logger = log
	s := NewServer(opts)
	s.Handle(codeEcho, echo)
	for code, h := range handlers {
		s.Handle(code, h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: ln.Addr().String(), logs: lb, serve: make(chan error, 1)}
	go func() { ts.serve <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-ts.serve; err != nil {
			t.Errorf("Serve returned %v after Close", err)
		}
	})
	return ts
}

func newClient(t *testing.T, opts ClientOptions) *Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger, _ = newLogger(t)
	}
	c := NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func echoReq(i int) *Command {
	return NewRequest(codeEcho, map[string]string{"i": strconv.Itoa(i)}, []byte("body"+strconv.Itoa(i)))
}

func invokeEcho(t *testing.T, cl *Client, addr string, i int) {
	t.Helper()
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, echoReq(i))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeSuccess || resp.Remark != strconv.Itoa(i) || string(resp.Body) != "body"+strconv.Itoa(i) {
		t.Fatalf("echo %d: %+v", i, resp)
	}
}

// rawConn is a hand-driven client socket.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{Conn: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(t *testing.T, c *Command) {
	t.Helper()
	frame, err := EncodeFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(frame); err != nil {
		t.Fatal(err)
	}
}

func (r *rawConn) read(t *testing.T) *Command {
	t.Helper()
	c, err := ReadFrame(r.br, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expectClosed reads until the server closes the socket; no frame may come.
func (r *rawConn) expectClosed(t *testing.T) {
	t.Helper()
	b, err := io.ReadAll(r.br)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read: %v", err)
	}
	if len(b) != 0 {
		t.Fatalf("got %d unexpected bytes before close", len(b))
	}
}

func TestSlowHandlerDoesNotBlockFastOne(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			close(entered)
			<-release
			return NewResponse(req, CodeSuccess, "slow")
		},
	})
	cl := newClient(t, ClientOptions{})
	slow := make(chan *Command, 1)
	go func() {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeBlock, nil, nil))
		if err != nil {
			t.Error(err)
		}
		slow <- resp
	}()
	<-entered
	// The slow request occupies the connection's handler slot; a fast one
	// on the same connection is answered before it.
	for i := range 3 {
		invokeEcho(t, cl, srv.addr, i)
	}
	select {
	case <-slow:
		t.Fatal("slow request answered before release")
	default:
	}
	close(release)
	if resp := <-slow; resp == nil || resp.Remark != "slow" {
		t.Fatalf("slow answer %+v", resp)
	}
	if n := len(srv.Conns()); n != 1 {
		t.Fatalf("%d server connections, want 1 shared one", n)
	}
}

// TestAnswersInAnyOrder: N requests on one connection whose handlers finish
// in reverse order of arrival each get their own answer.
func TestAnswersInAnyOrder(t *testing.T) {
	const n = 40
	var mu sync.Mutex
	turn := n - 1 // the handler for "i" may answer when turn == i
	cond := sync.NewCond(&mu)
	arrived := 0
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			i, _ := strconv.Atoi(req.Ext("i"))
			mu.Lock()
			defer mu.Unlock()
			arrived++
			cond.Broadcast()
			for arrived < n || turn != i {
				cond.Wait()
			}
			turn--
			cond.Broadcast()
			return NewResponse(req, CodeSuccess, req.Ext("i"))
		},
	})
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr,
				NewRequest(codeBlock, map[string]string{"i": strconv.Itoa(i)}, nil))
			if err != nil {
				t.Error(err)
				return
			}
			if resp.Remark != strconv.Itoa(i) {
				t.Errorf("request %d got answer %q", i, resp.Remark)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if turn != -1 {
		t.Fatalf("handlers did not all finish in reverse order (turn %d)", turn)
	}
}

func TestMaxInFlightPerConn(t *testing.T) {
	var cur, peak atomic.Int32
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	srv := startServer(t, ServerOptions{MaxInFlightPerConn: 2}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			v := cur.Add(1)
			for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
			}
			entered <- struct{}{}
			<-release
			cur.Add(-1)
			return NewResponse(req, CodeSuccess, "")
		},
	})
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeBlock, nil, nil)); err != nil {
				t.Error(err)
			}
		})
	}
	<-entered
	<-entered
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak in-flight handlers %d, want 2", p)
	}
}

func TestOnewayIsNotAnswered(t *testing.T) {
	got := make(chan *Command, 1)
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			got <- req
			return NewResponse(req, CodeSuccess, "must not be sent")
		},
	})
	raw := dialRaw(t, srv.addr)
	raw.send(t, &Command{Code: codeBlock, Flag: FlagOneway, Opaque: 5, Body: []byte("ow")})
	req := <-got
	if !req.IsOneway() || req.Opaque != 5 || string(req.Body) != "ow" {
		t.Fatalf("handler got %+v", req)
	}
	raw.send(t, &Command{Code: codeEcho, Opaque: 6, ExtFields: map[string]string{"i": "6"}})
	if resp := raw.read(t); resp.Opaque != 6 || resp.Remark != "6" || !resp.IsResponse() {
		t.Fatalf("answer %+v", resp)
	}
	// Close waits for handlers and flushes queued frames: anything the
	// oneway request produced would arrive before EOF.
	srv.Close()
	raw.expectClosed(t)

	// Our own oneway sends arrive with the flag.
	srv2 := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command { got <- req; return nil },
	})
	cl := newClient(t, ClientOptions{})
	if err := cl.InvokeOneway(ctxTimeout(t, 10*time.Second), srv2.addr, NewRequest(codeBlock, nil, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if req := <-got; !req.IsOneway() || string(req.Body) != "x" || req.Opaque == 0 {
		t.Fatalf("oneway arrived as %+v", req)
	}
}

func TestUnknownCodeNotSupported(t *testing.T) {
	srv := startServer(t, ServerOptions{}, nil)
	cl := newClient(t, ClientOptions{})
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeRequestCodeNotSupported || resp.Remark != "request code 999 is not supported" {
		t.Fatalf("answer %+v", resp)
	}
	// HandleDefault overrides it.
	srv.HandleDefault(func(ctx context.Context, c *Conn, req *Command) *Command {
		return NewResponse(req, CodeSystemBusy, "default")
	})
	resp, err = cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(998, nil, nil))
	if err != nil || resp.Code != CodeSystemBusy || resp.Remark != "default" {
		t.Fatalf("answer %+v, %v", resp, err)
	}
}

func TestServerInvokesClient(t *testing.T) {
	const codeCheck, codeStuck int16 = 200, 201
	stuck := make(chan struct{})
	cl := newClient(t, ClientOptions{Handler: func(ctx context.Context, c *Conn, req *Command) *Command {
		switch req.Code {
		case codeCheck:
			return NewResponse(req, CodeSuccess, "checked "+req.Ext("id"))
		case codeStuck:
			select {
			case <-stuck:
			case <-ctx.Done():
			}
			return NewResponse(req, CodeSuccess, "late")
		}
		return nil
	}})
	srv := startServer(t, ServerOptions{}, nil)
	invokeEcho(t, cl, srv.addr, 1)
	conns := srv.Conns()
	if len(conns) != 1 {
		t.Fatalf("%d conns", len(conns))
	}
	sc := conns[0]

	resp, err := sc.Invoke(ctxTimeout(t, 10*time.Second), NewRequest(codeCheck, map[string]string{"id": "7"}, nil))
	if err != nil || resp.Remark != "checked 7" || !resp.IsResponse() {
		t.Fatalf("answer %+v, %v", resp, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = sc.Invoke(ctx, NewRequest(codeStuck, nil, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stuck invoke: %v", err)
	}
	// The late answer is dropped and the connection keeps working.
	close(stuck)
	resp, err = sc.Invoke(ctxTimeout(t, 10*time.Second), NewRequest(codeCheck, map[string]string{"id": "8"}, nil))
	if err != nil || resp.Remark != "checked 8" {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	invokeEcho(t, cl, srv.addr, 2)

	// Without a handler the client answers "not supported".
	cl2 := newClient(t, ClientOptions{})
	invokeEcho(t, cl2, srv.addr, 3)
	for _, c := range srv.Conns() {
		if c == sc {
			continue
		}
		resp, err := c.Invoke(ctxTimeout(t, 10*time.Second), NewRequest(codeCheck, nil, nil))
		if err != nil || resp.Code != CodeRequestCodeNotSupported {
			t.Fatalf("answer %+v, %v", resp, err)
		}
	}
}

func TestBadFrameClosesOnlyThatConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"oversized frame", []byte{0, 0, 0x10, 0x01, 0, 0, 0, 2}, "frame too large"},
		{"garbage header", jsonFrame("not json at all", []byte("body")), "malformed"},
		{"header longer than frame", []byte{0, 0, 0, 6, 0, 0, 0, 9, '{', '}'}, "header length 9 exceeds"},
		{"ext value not a string container", jsonFrame(`{"code":10,"extFields":[1]}`, nil), "extFields is not an object"},
		{"binary header cut", rawFrame(SerializeRocketMQ, []byte{0, 10, 9}, nil), "binary header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := make(chan *Conn, 4)
			srv := startServer(t, ServerOptions{MaxFrameBytes: 4096, OnConnClose: func(c *Conn) { closed <- c }}, nil)
			cl := newClient(t, ClientOptions{})
			invokeEcho(t, cl, srv.addr, 1)

			raw := dialRaw(t, srv.addr)
			// A good request first: the connection works until the bad frame.
			raw.send(t, &Command{Code: codeEcho, Opaque: 1, ExtFields: map[string]string{"i": "a"}})
			if resp := raw.read(t); resp.Remark != "a" {
				t.Fatalf("answer %+v", resp)
			}
			if _, err := raw.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			raw.expectClosed(t)
			c := <-closed
			if c.RemoteAddr().String() != raw.LocalAddr().String() {
				t.Fatalf("closed %v, want %v", c.RemoteAddr(), raw.LocalAddr())
			}
			warns := srv.logs.lines("WARN")
			if len(warns) != 1 || !strings.Contains(warns[0], "remote="+raw.LocalAddr().String()) ||
				!strings.Contains(warns[0], tc.reason) {
				t.Fatalf("warn lines %q", warns)
			}
			// The other connection is untouched.
			invokeEcho(t, cl, srv.addr, 2)
			if n := len(srv.Conns()); n != 1 {
				t.Fatalf("%d conns left, want 1", n)
			}
		})
	}
}

func TestBinaryRequestGetsBinaryAnswer(t *testing.T) {
	srv := startServer(t, ServerOptions{}, nil)
	raw := dialRaw(t, srv.addr)
	raw.send(t, &Command{Code: codeEcho, Language: "JAVA", Opaque: 9, SerializeType: SerializeRocketMQ,
		ExtFields: map[string]string{"i": "bin"}, Body: []byte("b")})
	resp := raw.read(t)
	if resp.SerializeType != SerializeRocketMQ || resp.Opaque != 9 || resp.Remark != "bin" || string(resp.Body) != "b" {
		t.Fatalf("answer %+v", resp)
	}
	raw.send(t, &Command{Code: 999, Opaque: 10, SerializeType: SerializeRocketMQ})
	if resp := raw.read(t); resp.SerializeType != SerializeRocketMQ || resp.Code != CodeRequestCodeNotSupported {
		t.Fatalf("answer %+v", resp)
	}
}

func TestConnCloseFailsPendingInvokes(t *testing.T) {
	entered := make(chan *Conn, 1)
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			entered <- c
			<-ctx.Done()
			return nil
		},
	})
	cl := newClient(t, ClientOptions{Handler: func(ctx context.Context, c *Conn, req *Command) *Command {
		<-ctx.Done()
		return nil
	}})
	errs := make(chan error, 2)
	go func() {
		_, err := cl.Invoke(context.Background(), srv.addr, NewRequest(codeBlock, nil, nil))
		errs <- err
	}()
	sc := <-entered
	// A server-to-client invoke is pending too.
	go func() {
		_, err := sc.Invoke(context.Background(), NewRequest(300, nil, nil))
		errs <- err
	}()
	sc.Close()
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrConnClosed) {
			t.Fatalf("pending invoke: %v, want ErrConnClosed", err)
		}
	}
	if _, err := sc.Invoke(context.Background(), NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("invoke on closed conn: %v", err)
	}
	// The client dials again.
	invokeEcho(t, cl, srv.addr, 5)
}

func TestCloseWaitsForHandlers(t *testing.T) {
	entered := make(chan struct{})
	var finished atomic.Bool
	var closedConns atomic.Int32
	srv := startServer(t, ServerOptions{OnConnClose: func(*Conn) {
		if !finished.Load() {
			t.Error("OnConnClose before the connection's handlers returned")
		}
		closedConns.Add(1)
	}}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			close(entered)
			<-ctx.Done()
			finished.Store(true)
			return NewResponse(req, CodeSuccess, "bye")
		},
	})
	cl := newClient(t, ClientOptions{})
	errc := make(chan error, 1)
	go func() {
		resp, err := cl.Invoke(context.Background(), srv.addr, NewRequest(codeBlock, nil, nil))
		if err == nil && resp.Remark != "bye" {
			err = fmt.Errorf("answer %+v", resp)
		}
		errc <- err
	}()
	<-entered
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() || closedConns.Load() != 1 {
		t.Fatalf("Close returned with handler finished=%v, OnConnClose calls %d", finished.Load(), closedConns.Load())
	}
	if err := srv.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := <-srv.serve; err != nil {
		t.Fatal("Serve:", err)
	}
	srv.serve <- nil // for Cleanup
	// A handler that answers when Close cancels its ctx is heard: its
	// response is flushed before the socket closes.
	if err := <-errc; err != nil {
		t.Fatalf("answer given during Close was lost: %v", err)
	}
	if len(srv.Conns()) != 0 {
		t.Fatal("connections left after Close")
	}
	// Serve after Close returns at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); err != nil {
		t.Fatal(err)
	}
}

func TestClientCloseAndRedial(t *testing.T) {
	var mu sync.Mutex
	seen := map[*Conn]bool{}
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			mu.Lock()
			seen[c] = true
			mu.Unlock()
			return echo(ctx, c, req)
		},
	})
	cl := newClient(t, ClientOptions{})
	invokeEcho(t, cl, srv.addr, 0) // the server has accepted the connection
	c1, err := cl.Conn(ctxTimeout(t, 10*time.Second), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range srv.Conns() {
		sc.Close()
	}
	<-c1.Closed()
	invokeEcho(t, cl, srv.addr, 1)
	c2, err := cl.Conn(ctxTimeout(t, 10*time.Second), srv.addr)
	if err != nil || c2 == c1 {
		t.Fatalf("no new connection: %v", err)
	}
	// Concurrent first use dials once.
	cl2 := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			req := NewRequest(codeBlock, map[string]string{"i": strconv.Itoa(i)}, nil)
			if _, err := cl2.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("20 concurrent first calls used %d connections, want 1", len(seen))
	}
	// Dial failures are reported and not cached.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), dead, echoReq(1)); err == nil {
		t.Fatal("invoke to a closed port succeeded")
	}
	cl.Close()
	if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, echoReq(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("invoke after Close: %v", err)
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDeferredRespondAndBodyParts(t *testing.T) {
	parked := make(chan func(), 1)
	var released atomic.Int32
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB: written from the caller's slice
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			parked <- func() {
				resp := NewResponse(req, CodeSuccess, "late")
				resp.BodyParts = [][]byte{[]byte("head-"), big, []byte("-tail")}
				resp.Release = func() { released.Add(1) }
				if err := c.Respond(req, resp); err != nil {
					t.Error(err)
				}
			}
			return nil
		},
	})
	cl := newClient(t, ClientOptions{})
	done := make(chan *Command, 1)
	go func() {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeBlock, nil, nil))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	answer := <-parked
	invokeEcho(t, cl, srv.addr, 1) // the handler slot was freed
	answer()
	resp := <-done
	want := append(append([]byte("head-"), big...), "-tail"...)
	if resp == nil || resp.Remark != "late" || !bytes.Equal(resp.Body, want) {
		t.Fatal("deferred answer wrong")
	}
	// Release runs in the writer after the write, so wait for the server's
	// goroutines to end before counting.
	srv.Close()
	if released.Load() != 1 {
		t.Fatalf("Release called %d times", released.Load())
	}
}

func TestHandlerPanicAnswersSystemError(t *testing.T) {
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command { panic("boom") },
	})
	cl := newClient(t, ClientOptions{})
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeBlock, nil, nil))
	if err != nil || resp.Code != CodeSystemError {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	if errs := srv.logs.lines("ERROR"); len(errs) != 1 || !strings.Contains(errs[0], "boom") {
		t.Fatalf("error lines %q", errs)
	}
	invokeEcho(t, cl, srv.addr, 1)
}

func TestConnValues(t *testing.T) {
	seen := make(chan any, 1)
	srv := startServer(t, ServerOptions{}, map[int16]Handler{
		codeBlock: func(ctx context.Context, c *Conn, req *Command) *Command {
			if c.Value("client") == nil {
				c.SetValue("client", req.Ext("id"))
			}
			seen <- c.Value("client")
			return NewResponse(req, CodeSuccess, "")
		},
	})
	cl := newClient(t, ClientOptions{})
	for _, id := range []string{"first", "second"} {
		if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeBlock, map[string]string{"id": id}, nil)); err != nil {
			t.Fatal(err)
		}
		if v := <-seen; v != "first" {
			t.Fatalf("value %v", v)
		}
	}
	c := srv.Conns()[0]
	c.SetValue("client", nil)
	if c.Value("client") != nil {
		t.Fatal("value not removed")
	}
	if c.LocalAddr().String() != srv.addr {
		t.Fatalf("local addr %v", c.LocalAddr())
	}
}

// TestManyFramesPipelined drives many concurrent requests with bodies of
// several sizes through one connection; the writer batches them.
func TestManyFramesPipelined(t *testing.T) {
	srv := startServer(t, ServerOptions{}, nil)
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				body := bytes.Repeat([]byte{byte(g)}, (i*997)%(3*copyBodyMax))
				req := NewRequest(codeEcho, map[string]string{"i": fmt.Sprint(g, "/", i)}, body)
				resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, req)
				if err != nil {
					t.Error(err)
					return
				}
				if resp.Remark != fmt.Sprint(g, "/", i) || !bytes.Equal(resp.Body, body) {
					t.Errorf("wrong answer for %d/%d", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// TestLazyResponses: with ClientOptions.LazyResponses a response's ext
// fields stay as received (no map) and Ext reads them, in both header
// serialisations; without it they fill ExtFields.
func TestLazyResponses(t *testing.T) {
	const codeFields int16 = 102
	ts := startServer(t, ServerOptions{}, map[int16]Handler{codeFields: func(_ context.Context, _ *Conn, req *Command) *Command {
		return NewResponse(req, CodeSuccess, "").AppendExt("msgId", "M1").AppendExt("queueId", "3")
	}})
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		for _, lazy := range []bool{false, true} {
			cl := newClient(t, ClientOptions{LazyResponses: lazy})
			req := NewRequest(codeFields, nil, nil)
			req.SerializeType = st
			resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), ts.addr, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Ext("msgId") != "M1" || resp.Ext("queueId") != "3" || resp.Ext("absent") != "" {
				t.Fatalf("serialize %d lazy %v: Ext gives msgId %q queueId %q", st, lazy, resp.Ext("msgId"), resp.Ext("queueId"))
			}
			if got := len(resp.ExtFields); lazy && got != 0 || !lazy && got != 2 {
				t.Fatalf("serialize %d lazy %v: ExtFields %v", st, lazy, resp.ExtFields)
			}
		}
	}
}
