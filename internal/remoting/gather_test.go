package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
)

const (
	codeBatchA  int16 = 103 // with codeAsync: one registration
	codeBatchB  int16 = 104 // another registration
	memSrvAddr        = "10.0.0.1:9876"
	memSrvHost        = "10.0.0.1"
	memCliHost        = "10.0.0.9"
	oneReadWait       = 10 * time.Second
)

// callLog records the batches a BatchHandler was called with.
type callLog struct {
	mu    sync.Mutex
	calls [][]string // the "i" field of each request, per call
}

func (l *callLog) record(reqs []*Command) {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.Ext("i")
	}
	l.mu.Lock()
	l.calls = append(l.calls, ids)
	l.mu.Unlock()
}

func (l *callLog) sizes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, len(l.calls))
	for i, c := range l.calls {
		out[i] = len(c)
	}
	return out
}

// memServer serves over an in-memory network, where one Write of the
// client is one read of the server: codeAsync and codeBatchA with one
// batch handler and codeBatchB with another, both answering every request
// at once and recording their calls; codeEcho on a goroutine.
func memServer(t *testing.T, opts ServerOptions) (*Server, *callLog, net.Conn) {
	t.Helper()
	mem := netx.NewMem()
	ln, err := mem.Host(memSrvHost).Listen(memSrvAddr)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger, _ = newLogger(t)
	s := NewServer(opts)
	s.Handle(codeEcho, echo)
	calls := &callLog{}
	answer := func(_ context.Context, _ *Conn, reqs []*Command, reply func(int, func() *Command)) {
		calls.record(reqs)
		for i, req := range reqs {
			reply(i, func() *Command { return NewResponse(req, CodeSuccess, "re "+req.Ext("i")) })
			reply(i, func() *Command { return NewResponse(req, CodeSystemError, "second reply") }) // ignored
		}
	}
	s.HandleBatch(answer, codeAsync, codeBatchA)
	s.HandleBatch(answer, codeBatchB)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after Close", err)
		}
	})
	nc, err := mem.Host(memCliHost).Dial(context.Background(), memSrvAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(oneReadWait))
	return s, calls, nc
}

// frames encodes requests of the given codes, numbered from first, with
// opaque = number.
func frames(t *testing.T, first int, codes ...int16) []byte {
	t.Helper()
	var out []byte
	for k, code := range codes {
		i := first + k
		var err error
		out, err = EncodeFrame(out, &Command{Code: code, Opaque: int32(i), ExtFields: map[string]string{"i": strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func repeat(code int16, n int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = code
	}
	return out
}

// readAnswers reads n responses and returns them by opaque.
func readAnswers(t *testing.T, br *bufio.Reader, n int) map[int32]*Command {
	t.Helper()
	got := make(map[int32]*Command, n)
	for range n {
		c, err := ReadFrame(br, 0)
		if err != nil {
			t.Fatalf("after %d of %d answers: %v", len(got), n, err)
		}
		if _, dup := got[c.Opaque]; dup {
			t.Fatalf("request %d answered twice", c.Opaque)
		}
		got[c.Opaque] = c
	}
	return got
}

func wantSizes(t *testing.T, got []int, want ...int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("batch handler calls of %v requests, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("batch handler calls of %v requests, want %v", got, want)
		}
	}
}

// TestBatchHandlerGetsWhatOneReadBrought: the consecutive requests of one
// registration that one read brought reach the handler in one call, in
// order; a frame of another kind (a goroutine handler's code, another
// registration) ends the batch; every request is answered once.
func TestBatchHandlerGetsWhatOneReadBrought(t *testing.T) {
	_, calls, nc := memServer(t, ServerOptions{})
	codes := append(repeat(codeAsync, 5), codeBatchA, codeBatchA, codeEcho)
	codes = append(codes, repeat(codeAsync, 3)...)
	codes = append(codes, codeBatchB, codeBatchB, codeAsync)
	if _, err := nc.Write(frames(t, 1, codes...)); err != nil {
		t.Fatal(err)
	}
	got := readAnswers(t, bufio.NewReader(nc), len(codes))
	for i := range codes {
		c := got[int32(i+1)]
		if c == nil || c.Code != CodeSuccess {
			t.Fatalf("request %d answered %+v", i+1, c)
		}
	}
	wantSizes(t, calls.sizes(), 7, 3, 2, 1)
	calls.mu.Lock()
	defer calls.mu.Unlock()
	for k, id := range calls.calls[0] {
		if id != strconv.Itoa(k+1) {
			t.Fatalf("first batch %v: not in arrival order", calls.calls[0])
		}
	}
}

// TestBatchBounds: a batch ends at MaxBatchRequests requests, and with the
// request whose body reaches MaxBatchBodyBytes.
func TestBatchBounds(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		_, calls, nc := memServer(t, ServerOptions{MaxInFlightPerConn: 1024})
		n := 2*MaxBatchRequests + 44
		if _, err := nc.Write(frames(t, 1, repeat(codeAsync, n)...)); err != nil {
			t.Fatal(err)
		}
		readAnswers(t, bufio.NewReader(nc), n)
		wantSizes(t, calls.sizes(), MaxBatchRequests, MaxBatchRequests, 44)
	})
	t.Run("bytes", func(t *testing.T) {
		_, calls, nc := memServer(t, ServerOptions{})
		big, err := EncodeFrame(nil, &Command{Code: codeAsync, Opaque: 1, ExtFields: map[string]string{"i": "1"}, Body: make([]byte, MaxBatchBodyBytes)})
		if err != nil {
			t.Fatal(err)
		}
		// The big frame takes several reads; the two small ones come with
		// its last bytes.
		go nc.Write(append(big, frames(t, 2, codeAsync, codeAsync)...))
		readAnswers(t, bufio.NewReader(nc), 3)
		wantSizes(t, calls.sizes(), 1, 2)
	})
}

// TestBatchHandlerRunsBeforeTheReaderWaitsForASlot: with every in-flight
// slot taken by the gathered batch, the reader hands it on before it waits
// for a slot — else requests answered in the handler would stall for good.
func TestBatchHandlerRunsBeforeTheReaderWaitsForASlot(t *testing.T) {
	_, calls, nc := memServer(t, ServerOptions{MaxInFlightPerConn: 2})
	if _, err := nc.Write(frames(t, 1, repeat(codeAsync, 16)...)); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, bufio.NewReader(nc), 16)
	wantSizes(t, calls.sizes(), 2, 2, 2, 2, 2, 2, 2, 2)
}

// TestClosedConnectionMidBatch: requests gathered when the reader fails (a
// malformed frame after them in the same read) are still handed to the
// handler, once, and their answers reach the peer before the socket
// closes: none lost, none answered twice.
func TestClosedConnectionMidBatch(t *testing.T) {
	closed := make(chan struct{})
	_, calls, nc := memServer(t, ServerOptions{OnConnClose: func(*Conn) { close(closed) }})
	stream := frames(t, 1, codeAsync, codeAsync, codeAsync)
	stream = append(stream, 0, 0, 0, 6, 0, 0, 0, 9, '{', '}') // header longer than frame
	if _, err := nc.Write(stream); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	got := readAnswers(t, br, 3)
	for i := int32(1); i <= 3; i++ {
		if got[i] == nil || got[i].Remark != "re "+strconv.Itoa(int(i)) {
			t.Fatalf("request %d answered %+v", i, got[i])
		}
	}
	if b, err := io.ReadAll(br); len(b) != 0 || (err != nil && !errors.Is(err, net.ErrClosed)) {
		t.Fatalf("after the answers: %d more bytes, %v; want the close", len(b), err)
	}
	<-closed
	wantSizes(t, calls.sizes(), 3)
}

func TestFrameBuffered(t *testing.T) {
	frame, err := EncodeFrame(nil, NewRequest(codeAsync, map[string]string{"k": "v"}, []byte("body")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   []byte
		want bool
	}{
		{nil, false},
		{frame[:3], false},
		{frame[:len(frame)-1], false},
		{frame, true},
		{append(append([]byte{}, frame...), frame[:2]...), true},
	} {
		br := bufio.NewReader(bytes.NewReader(c.in))
		if len(c.in) > 0 {
			_, _ = br.Peek(len(c.in)) // fill the buffer
		}
		if got := frameBuffered(br); got != c.want {
			t.Errorf("%d of a %d-byte frame buffered: frameBuffered = %v, want %v", len(c.in), len(frame), got, c.want)
		}
	}
}
