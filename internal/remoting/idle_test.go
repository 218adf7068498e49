package remoting

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestReadIdleAnswersDeferredWork: an async handler that only queues its
// work, done by the idle hook, is answered — the reader runs the hook
// before it waits for more bytes, and before it waits for a handler slot
// (MaxInFlightPerConn 2 with 16 requests in flight would otherwise stall
// for good). Replies given inside the hook reach their callers.
func TestReadIdleAnswersDeferredWork(t *testing.T) {
	type job struct {
		req   *Command
		reply func(func() *Command)
	}
	var mu sync.Mutex
	var queued []job
	idles := 0
	srv := asyncServer(t, ServerOptions{MaxInFlightPerConn: 2}, func(_ context.Context, _ *Conn, req *Command, reply func(func() *Command)) {
		mu.Lock()
		queued = append(queued, job{req, reply})
		mu.Unlock()
	})
	srv.OnReadIdle(func(*Conn) {
		mu.Lock()
		jobs := queued
		queued = nil
		idles++
		mu.Unlock()
		for _, j := range jobs {
			j.reply(func() *Command { return NewResponse(j.req, CodeSuccess, "done "+j.req.Ext("i")) })
		}
	})
	cl := newClient(t, ClientOptions{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), srv.addr, NewRequest(codeAsync, map[string]string{"i": strconv.Itoa(i)}, nil))
			if err != nil {
				t.Error(err)
				return
			}
			if resp.Remark != "done "+strconv.Itoa(i) {
				t.Errorf("request %d answered %q", i, resp.Remark)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if idles < 2 {
		t.Fatalf("idle hook ran %d times for 16 requests", idles)
	}
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
