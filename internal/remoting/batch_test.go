package remoting

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const codeAsync int16 = 102

// asyncHandler answers one request the way a handler without batches
// would: reply takes the response builder of req.
type asyncHandler func(ctx context.Context, c *Conn, req *Command, reply func(func() *Command))

// asyncServer serves codeAsync with a batch handler that gives each
// request of a batch to h in turn, and codeEcho with the goroutine echo.
func asyncServer(t *testing.T, opts ServerOptions, h asyncHandler) *testServer {
	t.Helper()
	srv := startServer(t, opts, nil)
	srv.HandleBatch(func(ctx context.Context, c *Conn, reqs []*Command, reply func(int, func() *Command)) {
		for i, req := range reqs {
			h(ctx, c, req, func(build func() *Command) { reply(i, build) })
		}
	}, codeAsync)
	return srv
}

// TestBatchHandlerAnswersLaterFromAnotherGoroutine: replies given in any
// order from other goroutines reach the right callers; the response is
// built on the writer, with the request's opaque.
func TestBatchHandlerAnswersLaterFromAnotherGoroutine(t *testing.T) {
	type held struct {
		req   *Command
		reply func(func() *Command)
	}
	arrived := make(chan held, 8)
	srv := asyncServer(t, ServerOptions{}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		arrived <- held{req, reply}
	})
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeAsync, map[string]string{"i": strconv.Itoa(i)}, nil))
			if err != nil {
				t.Error(err)
				return
			}
			if resp.Code != CodeSuccess || resp.Remark != "re "+strconv.Itoa(i) || !resp.IsResponse() {
				t.Errorf("request %d answered with %+v", i, resp)
			}
		})
	}
	var hs []held
	for range 4 {
		hs = append(hs, <-arrived)
	}
	// Answer in reverse order of arrival, each from a goroutine of its own.
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.reply(func() *Command { return NewResponse(h.req, CodeSuccess, "re "+h.req.Ext("i")) })
			h.reply(func() *Command { return NewResponse(h.req, CodeSystemError, "second reply") }) // ignored
		}()
		<-done
	}
	wg.Wait()
	// The goroutine handlers still work next to the batch ones.
	invokeEcho(t, cl, srv.addr, 7)
}

// TestBatchHandlerCountsAgainstInFlight: a request whose reply is pending
// holds its in-flight slot, so the reader stops at the limit.
func TestBatchHandlerCountsAgainstInFlight(t *testing.T) {
	var mu sync.Mutex
	var pending []func(func() *Command)
	var reqs []*Command
	var peak atomic.Int32
	entered := make(chan struct{}, 10)
	srv := asyncServer(t, ServerOptions{MaxInFlightPerConn: 2}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		mu.Lock()
		pending = append(pending, reply)
		reqs = append(reqs, req)
		peak.Store(max(peak.Load(), int32(len(pending))))
		mu.Unlock()
		entered <- struct{}{}
	})
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeAsync, nil, nil)); err != nil {
				t.Error(err)
			}
		})
	}
	answered := 0
	for answered < 5 {
		<-entered
		mu.Lock()
		if len(pending) == 2 || answered+len(pending) == 5 {
			for i, r := range pending {
				req := reqs[i]
				r(func() *Command { return NewResponse(req, CodeSuccess, "") })
			}
			answered += len(pending)
			pending, reqs = nil, nil
		}
		mu.Unlock()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak pending batch requests %d, want 2", p)
	}
}

// TestBatchHandlerPanicAndOneway: a panic before replying answers
// SYSTEM_ERROR; a oneway request's reply sends nothing; a nil builder sends
// nothing either.
func TestBatchHandlerPanicAndOneway(t *testing.T) {
	srv := asyncServer(t, ServerOptions{}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		switch req.Ext("do") {
		case "panic":
			panic("boom")
		case "nil":
			reply(nil)
		default:
			reply(func() *Command { return NewResponse(req, CodeSuccess, "ok") })
		}
	})
	raw := dialRaw(t, srv.addr)
	raw.send(t, &Command{Code: codeAsync, Opaque: 1, ExtFields: map[string]string{"do": "panic"}})
	if resp := raw.read(t); resp.Opaque != 1 || resp.Code != CodeSystemError {
		t.Fatalf("panic answered with %+v", resp)
	}
	raw.send(t, &Command{Code: codeAsync, Opaque: 2, Flag: FlagOneway})
	raw.send(t, &Command{Code: codeAsync, Opaque: 3, ExtFields: map[string]string{"do": "nil"}})
	raw.send(t, &Command{Code: codeAsync, Opaque: 4})
	if resp := raw.read(t); resp.Opaque != 4 || resp.Code != CodeSuccess || resp.Remark != "ok" {
		t.Fatalf("got %+v, want only the answer to opaque 4", resp)
	}
	if len(srv.logs.lines("ERROR")) != 1 {
		t.Fatalf("want one logged panic, got %q", srv.logs.lines("ERROR"))
	}
}

// TestCloseWaitsForBatchReplies: Close waits until pending batch requests
// are answered, and their answers are flushed before the socket closes.
func TestCloseWaitsForBatchReplies(t *testing.T) {
	got := make(chan func(func() *Command), 1)
	var req0 atomic.Pointer[Command]
	srv := asyncServer(t, ServerOptions{}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		req0.Store(req)
		got <- reply
	})
	cl := newClient(t, ClientOptions{})
	errc := make(chan error, 1)
	go func() {
		resp, err := cl.Invoke(context.Background(), srv.addr, NewRequest(codeAsync, nil, nil))
		if err == nil && resp.Remark != "late" {
			t.Errorf("answer %+v", resp)
		}
		errc <- err
	}()
	reply := <-got
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a batch request was unanswered")
	case <-time.After(50 * time.Millisecond):
		// Not a synchronisation: only a window in which a wrong Close
		// would return; the test passes either way if Close waits.
	}
	reply(func() *Command { return NewResponse(req0.Load(), CodeSuccess, "late") })
	<-closed
	if err := <-errc; err != nil {
		t.Fatalf("answer given during Close was lost: %v", err)
	}
}

// TestInvokeAsync: callbacks get their own responses; calls pending when
// the connection closes get ErrConnClosed, once each; a call on a closed
// connection fails at once.
func TestInvokeAsync(t *testing.T) {
	held := make(chan func(func() *Command), 8)
	srv := asyncServer(t, ServerOptions{}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		if req.Ext("hold") != "" {
			held <- reply
			return
		}
		reply(func() *Command { return NewResponse(req, CodeSuccess, "re "+req.Ext("i")) })
	})
	cl := newClient(t, ClientOptions{})
	conn, err := cl.Conn(ctxTimeout(t, 10*time.Second), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		i    int
		resp *Command
		err  error
	}
	results := make(chan result, 16)
	req := NewRequest(codeAsync, map[string]string{}, nil)
	for i := range 10 {
		// One request object reused: InvokeAsync encodes it before returning.
		req.ExtFields["i"] = strconv.Itoa(i)
		conn.InvokeAsync(req, func(resp *Command, err error) { results <- result{i, resp, err} })
	}
	for range 10 {
		r := <-results
		if r.err != nil || r.resp.Remark != "re "+strconv.Itoa(r.i) {
			t.Fatalf("call %d: %+v %v", r.i, r.resp, r.err)
		}
	}
	var calls atomic.Int32
	for i := range 2 {
		conn.InvokeAsync(NewRequest(codeAsync, map[string]string{"hold": "1"}, nil), func(resp *Command, err error) {
			calls.Add(1)
			results <- result{i, resp, err}
		})
	}
	h1, h2 := <-held, <-held
	// The server waits for its pending replies when it closes.
	t.Cleanup(func() { h1(nil); h2(nil) })
	conn.Close()
	for range 2 {
		if r := <-results; !errors.Is(r.err, ErrConnClosed) {
			t.Fatalf("pending call at close: %+v %v", r.resp, r.err)
		}
	}
	conn.InvokeAsync(echoReq(1), func(resp *Command, err error) { results <- result{-1, resp, err} })
	if r := <-results; !errors.Is(r.err, ErrConnClosed) {
		t.Fatalf("call on a closed connection: %+v %v", r.resp, r.err)
	}
	if calls.Load() != 2 {
		t.Fatalf("pending callbacks ran %d times, want 2", calls.Load())
	}
}
