package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// quiet is how long a test waits to see that nothing arrives.
const quiet = 150 * time.Millisecond

// long bounds every wait for something that must happen.
const long = 10 * time.Second

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// newNet makes a Net that Cleanup closes, checking that every goroutine of
// it has exited when Close returns.
func newNet(t *testing.T, opts ...Option) *Net {
	t.Helper()
	lg := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	n := NewNet(lg, opts...)
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if r := n.running.Load(); r != 0 {
			t.Errorf("%d proxy goroutines still running after Close", r)
		}
	})
	return n
}

// server is a test target on 127.0.0.1: it echoes (or only reads, if
// sink) and counts what it accepted and received.
type server struct {
	ln       net.Listener
	echo     bool
	accepted atomic.Int64
	received atomic.Int64
	conns    chan net.Conn // every accepted conn, if hold: not served
	hold     bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn
}

func newServer(t *testing.T, echo, hold bool) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, echo: echo, hold: hold, conns: make(chan net.Conn, 64)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			if s.hold {
				s.conns <- c
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					s.received.Add(int64(n))
					if n > 0 && s.echo {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

func dial(t *testing.T, n *Net, from, to string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	c, err := n.Dial(ctx, from, to)
	if err != nil {
		t.Fatalf("Dial %s→%s: %v", from, to, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, p []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(long))
	if _, err := c.Write(p); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readN reads exactly n bytes, or fails the test.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(long))
	p := make([]byte, n)
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return p
}

func expectEcho(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	write(t, c, []byte(msg))
	if got := string(readN(t, c, len(msg))); got != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

// expectNothing checks that no byte arrives on c for quiet.
func expectNothing(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	var b [64]byte
	n, err := c.Read(b[:])
	if n > 0 {
		t.Fatalf("read %q, want nothing", b[:n])
	}
	if !isTimeout(err) {
		t.Fatalf("read: %v, want a timeout (nothing arriving, connection open)", err)
	}
}

// expectEOF checks that c was closed by the other side (a FIN).
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(long))
	var b [64]byte
	n, err := c.Read(b[:])
	if n > 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d bytes, %v; want EOF", n, err)
	}
}

// expectReset checks that c sees a connection reset, the error of an RST.
func expectReset(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(long))
	var b [64]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue // bytes in flight before the reset
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read: %v, want a connection reset", err)
		}
		return
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// await polls cond until it holds or long passes.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(long)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
