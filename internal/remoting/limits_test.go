package remoting

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// await polls cond until it holds or 10 s pass; what it waits for is a
// condition, the polling interval only its cost.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// declaredFrame is a length prefix declaring n bytes followed by sent of
// them.
func declaredFrame(n uint32, sent int) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	return append(b, make([]byte, sent)...)
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestDeclaredFramesDoNotTakeMemory is the attack: 100 connections
// each declare a 16 MiB frame and send 8 bytes of it. The server holds a
// small chunk per connection (the read budget counts exactly that), not
// the declared 1.6 GiB, and a well-behaved client keeps working.
func TestDeclaredFramesDoNotTakeMemory(t *testing.T) {
	const conns = 100
	srv := startServer(t, ServerOptions{Limits: Limits{ServerReadBudgetBytes: 64 << 20, MaxConnsPerIP: conns + 10}}, nil)
	cl := newClient(t, ClientOptions{})
	invokeEcho(t, cl, srv.addr, 0)
	before := heapInuse()
	for range conns {
		r := dialRaw(t, srv.addr)
		if _, err := r.Write(declaredFrame(DefaultMaxFrameBytes, 8)); err != nil {
			t.Fatal(err)
		}
	}
	want := int64(conns * minFrameChunk)
	await(t, "every connection to reserve its first chunk", func() bool { return srv.Stats().ReadBudgetBytes == want })
	invokeEcho(t, cl, srv.addr, 1)
	grown := int64(heapInuse()) - int64(before)
	t.Logf("heap in use grew by %d KiB; read budget in use %d KiB", grown>>10, srv.Stats().ReadBudgetBytes>>10)
	if grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB for %d declared but unsent 16 MiB frames", grown>>20, conns)
	}
	if got := srv.Stats().ReadBudgetBytes; got != want {
		t.Fatalf("read budget in use %d, want %d (one %d-byte chunk per connection)", got, want, minFrameChunk)
	}
}

// TestServerReadBudgetMakesReadersWait: with the server's budget spent by
// frames that are arriving, another connection's frame waits for it (the
// wait is logged and counted) rather than allocate past it, and is read
// once the budget comes free; the server then serves others as before.
func TestServerReadBudgetMakesReadersWait(t *testing.T) {
	const frame = 1 << 20
	srv := startServer(t, ServerOptions{MaxFrameBytes: frame, Limits: Limits{ServerReadBudgetBytes: frame, ConnReadBudgetBytes: frame}}, nil)
	hog := dialRaw(t, srv.addr)
	// Half a frame, in two writes so that the reader's buffer grows to it.
	big := NewRequest(codeEcho, nil, make([]byte, frame-200))
	enc, err := EncodeFrame(nil, big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hog.Write(enc[:len(enc)-1]); err != nil {
		t.Fatal(err)
	}
	await(t, "the hog to hold most of the budget", func() bool { return srv.Stats().ReadBudgetBytes > frame/2 })
	other := dialRaw(t, srv.addr)
	req := NewRequest(codeEcho, map[string]string{"i": "7"}, make([]byte, frame/2))
	req.Opaque = 7
	other.send(t, req)
	await(t, "the other reader to wait for budget", func() bool { return srv.Stats().ServerReadBudgetWaits == 1 })
	if _, err := hog.Write(enc[len(enc)-1:]); err != nil {
		t.Fatal(err)
	}
	if resp := hog.read(t); resp.Code != CodeSuccess || len(resp.Body) != len(big.Body) {
		t.Fatalf("hog answered %+v", resp)
	}
	if resp := other.read(t); resp.Code != CodeSuccess || resp.Remark != "7" {
		t.Fatalf("waiting connection answered %+v", resp)
	}
	await(t, "the budget to come free", func() bool { return srv.Stats().ReadBudgetBytes == 0 })
	invokeEcho(t, newClient(t, ClientOptions{}), srv.addr, 8)
	if lines := srv.logs.lines("WARN"); len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "limit=server_read_budget") {
		t.Fatalf("no Warn for the budget wait: %q", lines)
	}
}

// blockUntil has codeBlock wait for release before it answers "released".
func blockUntil(release <-chan struct{}) map[int16]Handler {
	return map[int16]Handler{
		codeBlock: func(ctx context.Context, _ *Conn, req *Command) *Command {
			<-release
			return NewResponse(req, CodeSuccess, "released")
		},
	}
}

// TestConnReadBudgetWaitsForItsHandlers: a connection whose requests in
// flight hold its budget reads its next frame once a handler returns.
func TestConnReadBudgetWaitsForItsHandlers(t *testing.T) {
	const frame = 64 << 10
	release := make(chan struct{})
	srv := startServer(t, ServerOptions{MaxFrameBytes: frame, Limits: Limits{ConnReadBudgetBytes: frame}}, blockUntil(release))
	r := dialRaw(t, srv.addr)
	blocked := NewRequest(codeBlock, nil, make([]byte, frame-100))
	blocked.Opaque = 1
	r.send(t, blocked)
	next := NewRequest(codeEcho, map[string]string{"i": "2"}, make([]byte, frame/2))
	next.Opaque = 2
	r.send(t, next)
	await(t, "the reader to wait for its connection's budget", func() bool { return srv.Stats().ConnReadBudgetWaits == 1 })
	// Only that connection waits.
	invokeEcho(t, newClient(t, ClientOptions{}), srv.addr, 3)
	close(release)
	got := map[int32]string{}
	for range 2 {
		resp := r.read(t)
		got[resp.Opaque] = resp.Remark
	}
	if got[1] != "released" || got[2] != "2" {
		t.Fatalf("answers %v", got)
	}
}

// TestSilentHalfFrameClosedAtDeadline: a frame that starts and stops is
// closed once FrameReadTimeout passes; a connection that sends nothing is
// closed at IdleTimeout; a well-behaved client is not.
func TestSilentHalfFrameClosedAtDeadline(t *testing.T) {
	const frameTimeout = 200 * time.Millisecond
	srv := startServer(t, ServerOptions{Limits: Limits{FrameReadTimeout: frameTimeout, IdleTimeout: time.Hour}}, nil)
	cl := newClient(t, ClientOptions{})
	invokeEcho(t, cl, srv.addr, 0)
	half := dialRaw(t, srv.addr)
	start := time.Now()
	if _, err := half.Write(declaredFrame(100, 10)); err != nil {
		t.Fatal(err)
	}
	half.expectClosed(t)
	if took := time.Since(start); took < frameTimeout*9/10 {
		t.Fatalf("closed after %v, before the %v frame timeout", took, frameTimeout)
	}
	if s := srv.Stats(); s.FrameTimeouts != 1 || s.IdleTimeouts != 0 {
		t.Fatalf("stats %+v, want one frame timeout", s)
	}
	if lines := srv.logs.lines("WARN"); len(lines) != 1 || !strings.Contains(lines[0], "limit=frame_timeout") {
		t.Fatalf("Warn lines %q", lines)
	}
	invokeEcho(t, cl, srv.addr, 1)
	await(t, "the closed connection to be gone", func() bool { return srv.ConnCount() == 1 })
}

func TestIdleConnectionClosedAtIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	srv := startServer(t, ServerOptions{Limits: Limits{IdleTimeout: idle}}, nil)
	silent := dialRaw(t, srv.addr)
	start := time.Now()
	silent.expectClosed(t)
	if took := time.Since(start); took < idle*9/10 {
		t.Fatalf("closed after %v, before the %v idle timeout", took, idle)
	}
	if s := srv.Stats(); s.IdleTimeouts != 1 || s.FrameTimeouts != 0 {
		t.Fatalf("stats %+v, want one idle timeout", s)
	}
	// A client that talks is served (it redials after an idle close, as
	// RocketMQ clients do).
	cl := newClient(t, ClientOptions{})
	invokeEcho(t, cl, srv.addr, 1)
}

// TestNonReadingClientIsPaused: a client that sends requests with large
// answers and reads none makes the server stop reading from it once
// ConnWriteQueueBytes are queued; it reads again when the client catches
// up, and every request is answered. Another client is served meanwhile.
func TestNonReadingClientIsPaused(t *testing.T) {
	const (
		answer  = 1 << 20
		limit   = 4 * answer
		inFight = 2
		total   = 128
	)
	body := make([]byte, answer)
	var handled atomic.Int32
	const codeBig int16 = 102
	srv := startServer(t, ServerOptions{MaxInFlightPerConn: inFight, Limits: Limits{ConnWriteQueueBytes: limit}}, map[int16]Handler{
		codeBig: func(_ context.Context, _ *Conn, req *Command) *Command {
			handled.Add(1)
			resp := NewResponse(req, CodeSuccess, "")
			resp.Body = body
			return resp
		},
	})
	cl := newClient(t, ClientOptions{})
	invokeEcho(t, cl, srv.addr, 0)
	r := dialRaw(t, srv.addr)
	_ = r.Conn.(*net.TCPConn).SetReadBuffer(256 << 10)
	_ = r.SetDeadline(time.Now().Add(time.Minute))
	var frames []byte
	for i := range total {
		req := NewRequest(codeBig, nil, nil)
		req.Opaque = int32(i + 1)
		f, err := EncodeFrame(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f...)
	}
	if _, err := r.Write(frames); err != nil {
		t.Fatal(err)
	}
	var conn *Conn
	await(t, "the server to stop reading from the client", func() bool {
		for _, c := range srv.Conns() {
			if c.wpaused.Load() {
				conn = c
				return true
			}
		}
		return false
	})
	if n := handled.Load(); n >= total {
		t.Fatalf("the server read all %d requests of a client that reads nothing", n)
	}
	// What is queued stays within the limit plus what the handlers in
	// flight when it was reached added.
	if q := conn.wbytes.Load(); q > limit+(inFight+1)*(answer+1024) {
		t.Fatalf("%d bytes queued for a client that does not read, limit %d", q, limit)
	}
	if s := srv.Stats(); s.WriteQueuePauses == 0 {
		t.Fatalf("stats %+v: the pause was not counted", s)
	}
	invokeEcho(t, cl, srv.addr, 1)
	for range total {
		if resp := r.read(t); resp.Code != CodeSuccess || len(resp.Body) != answer {
			t.Fatalf("answer code %d with %d bytes", resp.Code, len(resp.Body))
		}
	}
	if n := handled.Load(); n != total {
		t.Fatalf("%d of %d requests handled", n, total)
	}
}

// TestConnectionCaps: past MaxConns, and past MaxConnsPerIP from one
// address, a new connection is closed at once and counted; the
// connections already open keep working, and a slot that frees is taken.
func TestConnectionCaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		count  func(Stats) uint64
		label  string
	}{
		{"total", Limits{MaxConns: 2}, func(s Stats) uint64 { return s.RefusedConns }, "limit=max_conns"},
		{"per ip", Limits{MaxConnsPerIP: 2}, func(s Stats) uint64 { return s.RefusedConnsPerIP }, "limit=max_conns_per_ip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, ServerOptions{Limits: tc.limits}, nil)
			cl := newClient(t, ClientOptions{})
			invokeEcho(t, cl, srv.addr, 0)
			first := dialRaw(t, srv.addr)
			ping := echoReq(1)
			ping.Opaque = 1
			first.send(t, ping)
			if resp := first.read(t); resp.Remark != "1" {
				t.Fatalf("second connection answered %+v", resp)
			}
			extra := dialRaw(t, srv.addr)
			extra.expectClosed(t)
			if n := tc.count(srv.Stats()); n != 1 {
				t.Fatalf("refused count %d, want 1 (stats %+v)", n, srv.Stats())
			}
			if lines := srv.logs.lines("WARN"); len(lines) != 1 || !strings.Contains(lines[0], tc.label) {
				t.Fatalf("Warn lines %q", lines)
			}
			invokeEcho(t, cl, srv.addr, 2)
			first.Close()
			await(t, "the closed connection to free its slot", func() bool { return srv.ConnCount() == 1 })
			again := dialRaw(t, srv.addr)
			again.send(t, ping)
			if resp := again.read(t); resp.Remark != "1" {
				t.Fatalf("connection in the freed slot answered %+v", resp)
			}
		})
	}
}

// TestWideCodeNotSupported: a JSON header whose code does not fit int16
// (RocketMQ 5's POP_MESSAGE, 200050) is answered REQUEST_CODE_NOT_SUPPORTED
// and the connection serves the next request.
func TestWideCodeNotSupported(t *testing.T) {
	srv := startServer(t, ServerOptions{}, nil)
	r := dialRaw(t, srv.addr)
	if _, err := r.Write(jsonFrame(`{"code":200050,"language":"JAVA","version":401,"opaque":5,"flag":0,"extFields":{"topic":"T"}}`, nil)); err != nil {
		t.Fatal(err)
	}
	resp := r.read(t)
	if resp.Code != CodeRequestCodeNotSupported || resp.Opaque != 5 || !resp.IsResponse() || resp.Remark != "request code 200050 is not supported" {
		t.Fatalf("answer %+v", resp)
	}
	next := echoReq(6)
	next.Opaque = 6
	r.send(t, next)
	if resp := r.read(t); resp.Code != CodeSuccess || resp.Opaque != 6 || resp.Remark != "6" {
		t.Fatalf("next request on the connection answered %+v", resp)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := (Limits{}).Validate(0); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (Limits{ConnReadBudgetBytes: 1 << 20}).Validate(16 << 20); err == nil || !strings.Contains(err.Error(), "connection read budget") {
		t.Fatalf("connection budget below the frame: %v", err)
	}
	if err := (Limits{ServerReadBudgetBytes: 32 << 20}).Validate(0); err == nil || !strings.Contains(err.Error(), "server read budget") {
		t.Fatalf("server budget below the connection budget: %v", err)
	}
	if err := (Limits{ConnReadBudgetBytes: -1, ServerReadBudgetBytes: -1}).Validate(0); err != nil {
		t.Fatalf("budgets off: %v", err)
	}
}

// TestReadBudgetWaitIsBounded: a reader that cannot get read budget within
// FrameReadTimeout closes its connection (freeing what it held), so
// readers cannot wait on each other's partial frames for good.
func TestReadBudgetWaitIsBounded(t *testing.T) {
	const frame = 1 << 20
	release := make(chan struct{})
	srv := startServer(t, ServerOptions{MaxFrameBytes: frame, Limits: Limits{ServerReadBudgetBytes: frame, ConnReadBudgetBytes: frame,
		FrameReadTimeout: 200 * time.Millisecond}}, blockUntil(release))
	hog := dialRaw(t, srv.addr)
	held := NewRequest(codeBlock, nil, make([]byte, frame-200))
	held.Opaque = 1
	hog.send(t, held)
	await(t, "the blocked request to hold most of the budget", func() bool { return srv.Stats().ReadBudgetBytes > frame/2 })
	other := dialRaw(t, srv.addr)
	start := time.Now()
	other.send(t, NewRequest(codeEcho, nil, make([]byte, frame/2)))
	other.expectClosed(t)
	if took := time.Since(start); took < 180*time.Millisecond {
		t.Fatalf("closed after %v, before the 200ms frame timeout", took)
	}
	if s := srv.Stats(); s.ServerReadBudgetWaits != 1 || s.FrameTimeouts != 1 {
		t.Fatalf("stats %+v, want one budget wait and one frame timeout", s)
	}
	close(release)
	if resp := hog.read(t); resp.Remark != "released" {
		t.Fatalf("blocked request answered %+v", resp)
	}
	await(t, "the budget to come free", func() bool { return srv.Stats().ReadBudgetBytes == 0 })
	invokeEcho(t, newClient(t, ClientOptions{}), srv.addr, 1)
}

// TestClientThatReadsNothingClosedAtIdleTimeout: a client that keeps
// sending but takes none of a large answer for IdleTimeout is closed, as a
// silent one is: the write of its answer is bounded too.
func TestClientThatReadsNothingClosedAtIdleTimeout(t *testing.T) {
	const idle = 500 * time.Millisecond
	const codeHuge int16 = 103
	body := make([]byte, 8<<20)
	srv := startServer(t, ServerOptions{Limits: Limits{IdleTimeout: idle}}, map[int16]Handler{
		codeHuge: func(_ context.Context, _ *Conn, req *Command) *Command {
			resp := NewResponse(req, CodeSuccess, "")
			resp.Body = body
			return resp
		},
	})
	r := dialRaw(t, srv.addr)
	_ = r.Conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	huge := NewRequest(codeHuge, nil, nil)
	huge.Opaque = 1
	r.send(t, huge)
	ping, err := EncodeFrame(nil, &Command{Code: codeEcho, Flag: FlagOneway, Opaque: 2})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		// Traffic, not synchronisation: the connection is not read-idle.
		defer close(pinged)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := r.Write(ping); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-pinged }()
	await(t, "the server to close the connection that reads nothing", func() bool { return srv.Stats().IdleTimeouts == 1 })
	await(t, "the connection to be gone", func() bool { return srv.ConnCount() == 0 })
	if lines := srv.logs.lines("WARN"); len(lines) != 1 || !strings.Contains(lines[0], "reads none of its answers") {
		t.Fatalf("Warn lines %q", lines)
	}
	invokeEcho(t, newClient(t, ClientOptions{}), srv.addr, 1)
}
