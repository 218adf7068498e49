package remoting

import (
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
