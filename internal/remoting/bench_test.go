package remoting

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"
)

// BenchmarkCodecSendRequest encodes and decodes a typical SEND_MESSAGE
// request (13 ext fields, 1 KiB body).
func BenchmarkCodecSendRequest(b *testing.B) {
	c := sendRequest()
	buf, err := EncodeFrame(nil, c)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = EncodeFrame(buf[:0], c)
		if _, _, err := DecodeFrame(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSendRequest(b *testing.B) {
	c := sendRequest()
	buf, _ := EncodeFrame(nil, c)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = EncodeFrame(buf[:0], c)
	}
}

func BenchmarkDecodeSendRequest(b *testing.B) {
	buf, _ := EncodeFrame(nil, sendRequest())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeFrame(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeLoopback: one request/response round trip over loopback
// TCP, 64 callers in parallel sharing one connection.
func BenchmarkInvokeLoopback(b *testing.B) {
	s := NewServer(ServerOptions{})
	s.Handle(codeEcho, func(_ context.Context, _ *Conn, req *Command) *Command {
		return NewResponse(req, CodeSuccess, "")
	})
	ln := listen(b)
	go s.Serve(ln)
	defer s.Close()
	cl := NewClient(ClientOptions{})
	defer cl.Close()
	addr := ln.Addr().String()
	body := make([]byte, 1024)
	b.SetParallelism(32) // × GOMAXPROCS callers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := sendRequest()
			c.Code, c.Body = codeEcho, body
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := cl.Invoke(ctx, addr, c); err != nil {
				b.Error(err)
			}
			cancel()
		}
	})
}

// benchReadFrames reads SEND_MESSAGE frames (1 KiB body) from a buffered
// stream as a server connection's reader does: lazily (no ext map), each
// frame whole in the read buffer. read returns what to give back.
func benchReadFrames(b *testing.B, read func(br *bufio.Reader) (*Command, error)) {
	frame, err := EncodeFrame(nil, sendRequest())
	if err != nil {
		b.Fatal(err)
	}
	stream := bytes.Repeat(frame, 64)
	r := bytes.NewReader(stream)
	br := bufio.NewReaderSize(r, readBufferBytes)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if br.Buffered() == 0 && r.Len() == 0 {
			r.Reset(stream)
		}
		if _, err := read(br); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFrame: the read path without limits (a Client's reader).
func BenchmarkReadFrame(b *testing.B) {
	benchReadFrames(b, func(br *bufio.Reader) (*Command, error) {
		c, _, err := readFrame(br, 0, true, nil)
		return c, err
	})
}

// BenchmarkReadFrameBudget: the read path of a server connection, each
// frame reserved from the connection's and the server's read budgets and
// given back once handled.
func BenchmarkReadFrameBudget(b *testing.B) {
	c := &Conn{own: &owner{limits: newLimitState(Limits{})}, closing: make(chan struct{})}
	c.rbudget = &budget{limit: c.own.limits.ConnReadBudgetBytes}
	benchReadFrames(b, func(br *bufio.Reader) (*Command, error) {
		cmd, held, err := readFrame(br, 0, true, c)
		if err == nil {
			cmd.held = held
			c.unreserveCmd(cmd)
		}
		return cmd, err
	})
}
