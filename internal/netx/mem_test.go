package netx

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/nettest"
)

// pair dials from host from to a fresh listener of host to and returns the
// two ends (dialer first). The listener stays open until the test ends.
func pair(t *testing.T, m *Mem, from, to string) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := m.Host(to).Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := m.Host(from).Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestMemConnIsANetConn runs x/net's net.Conn conformance suite (basic
// I/O, racing reads and writes, past, present and future deadlines, a
// Close that wakes blocked calls, concurrent methods) on Mem connections.
func TestMemConnIsANetConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		m := NewMem()
		ln, err := m.Host("server").Listen("server:9876")
		if err != nil {
			return nil, nil, nil, err
		}
		defer ln.Close()
		c1, err = m.Host("client").Dial(context.Background(), "server:9876")
		if err != nil {
			return nil, nil, nil, err
		}
		c2, err = ln.Accept()
		if err != nil {
			return nil, nil, nil, err
		}
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}

func TestMemAddressesNameTheHosts(t *testing.T) {
	m := NewMem()
	ln, err := m.Host("ns").Listen("ns:9876")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := ln.Addr().String(); got != "ns:9876" || ln.Addr().Network() != "mem" {
		t.Fatalf("listener address %s/%s, want mem ns:9876", ln.Addr().Network(), got)
	}
	c, err := m.Host("broker").Dial(context.Background(), "ns:9876")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c.RemoteAddr().String() != "ns:9876" || s.LocalAddr().String() != "ns:9876" {
		t.Fatalf("server side is %s / %s, want ns:9876", c.RemoteAddr(), s.LocalAddr())
	}
	if h, _, _ := net.SplitHostPort(c.LocalAddr().String()); h != "broker" || s.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("client side is %s, server sees %s; want the same broker:port", c.LocalAddr(), s.RemoteAddr())
	}
}

func TestMemListenAndDialErrors(t *testing.T) {
	m := NewMem()
	h := m.Host("a")
	ln, err := h.Listen(":7000")
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != "a:7000" {
		t.Fatalf("Listen(:7000) on a is at %s", ln.Addr())
	}
	if _, err := h.Listen("a:7000"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("second Listen on a:7000: %v, want EADDRINUSE", err)
	}
	if _, err := h.Listen("b:7001"); err == nil {
		t.Fatal("host a listened on b's address")
	}
	wild, err := h.Listen("0.0.0.0:7002")
	if err != nil || wild.Addr().String() != "a:7002" {
		t.Fatalf("Listen(0.0.0.0:7002) on a: %v, %v; want a:7002", wild, err)
	}
	wild.Close()
	if _, err := m.Host("b").Dial(context.Background(), "a:7999"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to a port nobody listens on: %v, want ECONNREFUSED", err)
	}
	if _, err := m.Host("b").Dial(context.Background(), "a"); err == nil {
		t.Fatal("dial without a port succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Host("b").Dial(ctx, "a:7000"); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial with a cancelled ctx: %v", err)
	}

	// A connection dialed but not accepted is closed with the listener.
	c, err := m.Host("b").Dial(context.Background(), "a:7000")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on a connection its listener never accepted: %v, want EOF", err)
	}
	if _, err := m.Host("b").Dial(context.Background(), "a:7000"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to a closed listener: %v, want ECONNREFUSED", err)
	}
	if _, err := h.Listen("a:7000"); err != nil {
		t.Fatalf("listen again after Close: %v", err)
	}
}

func TestMemCloseEndsBothSides(t *testing.T) {
	m := NewMem()
	c, s := pair(t, m, "client", "server")
	if _, err := c.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		blocked <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a read blocked when its end closed returned %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write on a closed end: %v, want net.ErrClosed", err)
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "last words" {
		t.Fatalf("the peer read %q, %v; want the bytes written before the close, then EOF", got, err)
	}
	if _, err := s.Write([]byte("anyone?")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a closed peer: %v, want EPIPE", err)
	}
}

func TestMemDeadlines(t *testing.T) {
	m := NewMem()
	c, s := pair(t, m, "client", "server")

	// A deadline in the past fails at once, even with bytes to read.
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read after clearing the deadline: %d, %v", n, err)
	}

	// Setting a deadline wakes a blocked read (remoting's Conn.Close
	// relies on it).
	blocked := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		blocked <- err
	}()
	c.SetReadDeadline(time.Now())
	if err := <-blocked; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocked read after SetReadDeadline(now): %v", err)
	}

	// A writer waits while the queue is full, until its deadline; what it
	// queued is counted.
	c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	n, err := c.Write(make([]byte, DefaultBufferBytes+10))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n != DefaultBufferBytes {
		t.Fatalf("write beyond the buffer: %d, %v; want %d and a timeout", n, err, DefaultBufferBytes)
	}
}

func TestMemPartitionBlackholesUntilHealed(t *testing.T) {
	m := NewMem()
	c, s := pair(t, m, "broker", "ns")
	other, otherSrv := pair(t, m, "client", "ns")
	m.Partition("ns", "broker")
	if !m.Partitioned("broker", "ns") {
		t.Fatal("the link does not report the partition (either order of the hosts)")
	}

	// Writes are queued, reads see nothing, in both directions.
	for _, w := range []net.Conn{c, s} {
		if _, err := w.Write([]byte("ping")); err != nil {
			t.Fatalf("write into a partition: %v (it should be queued, as TCP would)", err)
		}
	}
	for _, r := range []net.Conn{c, s} {
		r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read across a partition: %d bytes, %v; want a timeout", n, err)
		}
		r.SetReadDeadline(time.Time{})
	}
	if _, err := m.Host("broker").Dial(context.Background(), s.LocalAddr().String()); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("dial across a partition: %v, want ErrUnreachable", err)
	}
	// Another host's link is untouched.
	if _, err := other.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if b := readN(t, otherSrv, 2); string(b) != "hi" {
		t.Fatalf("a link outside the partition carried %q", b)
	}

	// A read blocked across the partition gets the bytes at Heal.
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 4)
		_, err := io.ReadFull(s, b)
		if err != nil {
			b = []byte(err.Error())
		}
		got <- b
	}()
	m.Heal("broker", "ns")
	if b := <-got; string(b) != "ping" {
		t.Fatalf("after Heal the server read %q, want ping", b)
	}
	if b := readN(t, c, 4); string(b) != "ping" {
		t.Fatalf("after Heal the client read %q, want ping", b)
	}
	d, err := m.Host("broker").Dial(context.Background(), s.LocalAddr().String())
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	d.Close()
}

func TestMemPartitionHoldsACloseBack(t *testing.T) {
	m := NewMem()
	c, s := pair(t, m, "a", "b")
	m.Partition("a", "b")
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the peer saw the close across a partition: %v", err)
	}
	// The close has not come through, so writes still go into the void.
	if _, err := s.Write([]byte("still there?")); err != nil {
		t.Fatalf("write to a peer whose close is held back: %v", err)
	}
	s.SetReadDeadline(time.Time{})
	m.Heal("b", "a")
	if got, err := io.ReadAll(s); string(got) != "bye" || err != nil {
		t.Fatalf("after Heal the peer read %q, %v; want bye, then EOF", got, err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write after the close came through: %v, want EPIPE", err)
	}
}

func TestMemResetDropsTheLinksConnections(t *testing.T) {
	m := NewMem()
	c1, s1 := pair(t, m, "a", "b")
	c2, s2 := pair(t, m, "b", "a")
	o, oPeer := pair(t, m, "a", "c")
	if n := m.Reset("a", "b"); n != 2 {
		t.Fatalf("Reset dropped %d connections, want 2", n)
	}
	for _, x := range []net.Conn{c1, s1, c2, s2} {
		if _, err := x.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read on a reset connection: %v, want ECONNRESET", err)
		}
		if _, err := x.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("write on a reset connection: %v, want ECONNRESET", err)
		}
	}
	if _, err := o.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if b := readN(t, oPeer, 2); string(b) != "ok" {
		t.Fatalf("a connection of another link read %q after Reset", b)
	}
}

func TestMemLatencyDelaysBytes(t *testing.T) {
	m := NewMem()
	c, s := pair(t, m, "a", "b")
	const lat = 50 * time.Millisecond
	m.SetLatency("b", "a", lat)
	start := time.Now()
	if _, err := c.Write([]byte("slow")); err != nil {
		t.Fatal(err)
	}
	if b := readN(t, s, 4); string(b) != "slow" {
		t.Fatalf("read %q", b)
	}
	if took := time.Since(start); took < lat {
		t.Fatalf("bytes crossed a %v link in %v", lat, took)
	}
	// A read deadline before the bytes are due times out.
	c.Write([]byte("late"))
	s.SetReadDeadline(time.Now().Add(lat / 5))
	if _, err := s.Read(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of bytes still in flight: %v, want a timeout", err)
	}
	s.SetReadDeadline(time.Time{})
	if b := readN(t, s, 4); string(b) != "late" {
		t.Fatalf("read %q", b)
	}
}

func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOrDefaultsToTCP(t *testing.T) {
	if Or(nil) != TCP {
		t.Fatal("Or(nil) is not TCP")
	}
	h := NewMem().Host("x")
	if Or(h) != Network(h) {
		t.Fatal("Or(h) is not h")
	}
	ln, err := TCP.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := TCP.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
