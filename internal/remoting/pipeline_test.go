package remoting

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestPipelinedBigFramesBothWays: a client that keeps many large requests
// in flight, issuing the next one from each answer's callback, against an
// async handler that answers at once with an equally large body. Both
// directions carry megabytes at a time, so a connection reader that writes
// instead of reading would wedge the two processes against each other;
// every call must still be answered.
func TestPipelinedBigFramesBothWays(t *testing.T) {
	const (
		inFlight = 64
		total    = 400
		size     = 256 << 10
	)
	body := bytes.Repeat([]byte("p"), size)
	srv := asyncServer(t, ServerOptions{MaxFrameBytes: 2 * size}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		reply(func() *Command {
			resp := NewResponse(req, CodeSuccess, "")
			resp.Body = body
			return resp
		})
	})
	cl := newClient(t, ClientOptions{MaxFrameBytes: 2 * size})
	conn, err := cl.Conn(ctxTimeout(t, 10*time.Second), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	var issued, answered atomic.Int32
	done := make(chan error, 1)
	var issue func()
	issue = func() {
		if issued.Add(1) > total {
			return
		}
		req := NewRequest(codeAsync, map[string]string{}, nil)
		req.Body = body
		conn.InvokeAsync(req, func(resp *Command, err error) {
			if err == nil && len(resp.Body) != size {
				err = ErrMalformed
			}
			if err != nil {
				select {
				case done <- err:
				default:
				}
				return
			}
			if answered.Add(1) == total {
				done <- nil
				return
			}
			issue()
		})
	}
	for range inFlight {
		issue()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctxTimeout(t, 30*time.Second).Done():
		t.Fatalf("stuck: %d of %d calls answered", answered.Load(), total)
	}
}
