package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/petrelmq/petrel/internal/clock"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestFaultString(t *testing.T) {
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{}, "pass"},
		{Fault{Mode: Drop}, "drop"},
		{Fault{Mode: Blackhole, Delay: time.Second}, "blackhole"},
		{Fault{Mode: Delay, Delay: 50 * time.Millisecond}, "delay 50ms"},
		{Fault{Mode: Delay, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond}, "delay 50ms±10ms"},
		{Fault{Mode: Reset}, "reset"},
		{Fault{Mode: 9}, "mode(9)"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.f, got, c.want)
		}
	}
	if got := (Fault{Mode: 9}).normal(); got != (Fault{}) {
		t.Errorf("an unknown mode normalises to %v, want pass", got)
	}
	if got := (Fault{Mode: Delay, Delay: -1, Jitter: -1}).normal(); got != (Fault{Mode: Delay}) {
		t.Errorf("negative durations normalise to %v, want 0", got)
	}
}

func TestPassEchoes(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c1", s.addr())
	expectEcho(t, c, "hello")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, larger than a window
	go func() { c.Write(big) }()
	if got := readN(t, c, len(big)); !bytes.Equal(got, big) {
		t.Fatal("1 MiB echoed through the link came back different")
	}
	l, err := n.Link("c1", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	if l.Name() != "c1→"+s.addr() || l.From() != "c1" || l.To() != s.addr() {
		t.Fatalf("link name %q from %q to %q", l.Name(), l.From(), l.To())
	}
	st := l.Stats()
	want := int64(len("hello") + len(big))
	if st.Conns != 1 || st.Open != 1 || st.UpBytes != want || st.DownBytes != want || st.DroppedBytes != 0 {
		t.Fatalf("stats %+v, want 1 conn open, %d bytes each way", st, want)
	}
	c.Close()
	await(t, "the link to see the connection close", func() bool { return l.Stats().Open == 0 })
}

// TestClientNetwork: the Network of Client dials through the link named
// after the client and the address, and listens on plain TCP.
func TestClientNetwork(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	nw := n.Client("producer-1")
	ctx := context.Background()
	c, err := nw.Dial(ctx, s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectEcho(t, c, "via client")
	ls := n.Links()
	if len(ls) != 1 || ls[0].Name() != "producer-1→"+s.addr() {
		t.Fatalf("links %v, want the one producer-1→%s", names(ls), s.addr())
	}
	if c.RemoteAddr().String() != ls[0].Addr() {
		t.Fatalf("client connected to %s, want the link's listener %s", c.RemoteAddr(), ls[0].Addr())
	}
	ln, err := nw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func names(ls []*Link) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name()
	}
	return out
}

func setAll(n *Net, f Fault) []string {
	return n.Set(func(string, string) bool { return true }, f)
}

func TestDropOpenConnectionDiscards(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "before")
	setAll(n, Fault{Mode: Drop})
	write(t, c, []byte("dropped"))
	expectNothing(t, c)
	l, _ := n.Link("c", s.addr())
	await(t, "the bytes to be counted as dropped", func() bool { return l.Stats().DroppedBytes == int64(len("dropped")) })
	if got := s.received.Load(); got != int64(len("before")) {
		t.Fatalf("server received %d bytes, want only %d from before the drop", got, len("before"))
	}
	n.Heal()
	expectEcho(t, c, "after")
}

func TestDropNewConnectionClosed(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	setAll(n, Fault{Mode: Drop}) // before the link exists: applies when it is made
	c := dial(t, n, "c", s.addr())
	expectEOF(t, c)
	if a := s.accepted.Load(); a != 0 {
		t.Fatalf("server accepted %d connections through a dropping link", a)
	}
	n.Heal()
	expectEcho(t, dial(t, n, "c", s.addr()), "healed")
}

func TestBlackholeOpenConnectionHoldsThenReleasesInOrder(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "x")
	setAll(n, Fault{Mode: Blackhole})
	var want bytes.Buffer
	for i := range 100 {
		msg := fmt.Sprintf("<%d>", i)
		want.WriteString(msg)
		write(t, c, []byte(msg))
	}
	expectNothing(t, c)
	if got := s.received.Load(); got != 1 {
		t.Fatalf("server received %d bytes, want 1: a blackhole forwards nothing", got)
	}
	l, _ := n.Link("c", s.addr())
	if st := l.Stats(); st.HeldBytes == 0 || st.Open != 1 {
		t.Fatalf("stats %+v, want bytes held on the open connection", st)
	}
	n.Heal()
	if got := readN(t, c, want.Len()); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("after heal got %q, want %q", got, want.Bytes())
	}
	expectEcho(t, c, "y")
	await(t, "held bytes to drain", func() bool { return l.Stats().HeldBytes == 0 })
}

func TestBlackholeNewConnectionHeld(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	setAll(n, Fault{Mode: Blackhole})
	c := dial(t, n, "c", s.addr())
	write(t, c, []byte("held"))
	expectNothing(t, c)
	if a := s.accepted.Load(); a != 0 {
		t.Fatalf("server accepted %d connections: a blackholed new connection must not reach it", a)
	}
	n.Heal()
	if got := string(readN(t, c, 4)); got != "held" {
		t.Fatalf("after heal got %q, want the held bytes", got)
	}
	if a := s.accepted.Load(); a != 1 {
		t.Fatalf("server accepted %d connections after heal, want 1", a)
	}
}

// TestBlackholeNewConnectionLeftBeforeHeal: a held new connection whose
// client closes never reaches the target, even after heal.
func TestBlackholeNewConnectionLeftBeforeHeal(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	setAll(n, Fault{Mode: Blackhole})
	c := dial(t, n, "c", s.addr())
	c.Close()
	l := mustLink(t, n, "c", s.addr())
	await(t, "the proxy to hold the client's FIN", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for pc := range l.conns {
			return pc.up.headFIN()
		}
		return false
	})
	n.Heal()
	await(t, "the held connection to end", func() bool { return l.Stats().Open == 0 })
	if a := s.accepted.Load(); a != 0 {
		t.Fatalf("server accepted %d connections from a client that had left", a)
	}
}

// TestBlackholeHoldsFIN: a close during a blackhole is held behind the
// bytes and delivered after them.
func TestBlackholeHoldsFIN(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "a")
	setAll(n, Fault{Mode: Blackhole})
	write(t, c, []byte("bc"))
	c.(*net.TCPConn).CloseWrite()
	expectNothing(t, c)
	n.Heal()
	if got := string(readN(t, c, 2)); got != "bc" {
		t.Fatalf("got %q, want bc", got)
	}
	expectEOF(t, c) // the echo server closed after our FIN reached it
}

func TestDelayKeepsOrderAndDelays(t *testing.T) {
	const d, j = 40 * time.Millisecond, 30 * time.Millisecond
	n := newNet(t, WithSeed(7))
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "warm")
	setAll(n, Fault{Mode: Delay, Delay: d, Jitter: j})
	const msgs = 200
	var sent [msgs]atomic.Int64 // UnixNano of each write
	go func() {
		var b [8]byte
		for i := range msgs {
			binary.BigEndian.PutUint64(b[:], uint64(i))
			sent[i].Store(time.Now().UnixNano())
			if _, err := c.Write(b[:]); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(long))
	var b [8]byte
	for i := range msgs {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		now := time.Now()
		if got := binary.BigEndian.Uint64(b[:]); got != uint64(i) {
			t.Fatalf("message %d arrived as number %d: order broken", i, got)
		}
		// Both directions are delayed, each by at least d-j.
		if el := now.Sub(time.Unix(0, sent[i].Load())); el < 2*(d-j) {
			t.Fatalf("message %d echoed after %v, want at least %v", i, el, 2*(d-j))
		}
	}
	n.Heal()
	expectEcho(t, c, "healed")
}

// TestDelayNewConnection: a connection made during a delay is delayed too.
func TestDelayNewConnection(t *testing.T) {
	const d = 60 * time.Millisecond
	n := newNet(t)
	s := newServer(t, true, false)
	setAll(n, Fault{Mode: Delay, Delay: d})
	c := dial(t, n, "c", s.addr())
	start := time.Now()
	expectEcho(t, c, "slow")
	if el := time.Since(start); el < 2*d {
		t.Fatalf("echo took %v, want at least %v through a delay of %v each way", el, 2*d, d)
	}
}

// TestHealReleasesDelayedAtOnce: chunks waiting on a long delay go at heal.
func TestHealReleasesDelayedAtOnce(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "a")
	setAll(n, Fault{Mode: Delay, Delay: time.Hour})
	write(t, c, []byte("late"))
	expectNothing(t, c)
	n.Heal()
	if got := string(readN(t, c, 4)); got != "late" {
		t.Fatalf("got %q, want late", got)
	}
}

func TestResetOpenConnectionBothSides(t *testing.T) {
	n := newNet(t)
	s := newServer(t, false, true)
	c := dial(t, n, "c", s.addr())
	write(t, c, []byte("x"))
	var sc net.Conn
	select {
	case sc = <-s.conns:
	case <-time.After(long):
		t.Fatal("server saw no connection")
	}
	if got := string(readN(t, sc, 1)); got != "x" {
		t.Fatalf("server read %q", got)
	}
	names := setAll(n, Fault{Mode: Reset})
	if len(names) != 1 {
		t.Fatalf("Set changed %v, want one link", names)
	}
	expectReset(t, c)
	expectReset(t, sc)
	l, _ := n.Link("c", s.addr())
	await(t, "the link to drop the reset connection", func() bool { return l.Stats().Open == 0 })
}

func TestResetNewConnection(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	setAll(n, Fault{Mode: Reset})
	expectResetDial(t, func() (net.Conn, error) { return n.Dial(context.Background(), "c", s.addr()) })
	if a := s.accepted.Load(); a != 0 {
		t.Fatalf("server accepted %d connections through a resetting link", a)
	}
	n.Heal()
	expectEcho(t, dial(t, n, "c", s.addr()), "ok")
}

// TestTargetDown: when the target cannot be dialled, Net.Dial fails with
// the refusal, as a dial without the proxy would; a process dialling the
// link's address directly has its connection reset; a connection held by
// a blackhole is reset at heal.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	n := newNet(t)
	if _, err := n.Dial(context.Background(), "c", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Net.Dial to a dead target: %v, want connection refused", err)
	}
	l := mustLink(t, n, "c", addr)
	expectResetDial(t, func() (net.Conn, error) { return net.Dial("tcp", l.Addr()) })

	l.Set(Fault{Mode: Blackhole})
	held := dial(t, n, "c", addr) // held: the dial succeeds, as a SYN into a partition would not fail yet
	write(t, held, []byte("x"))
	expectNothing(t, held)
	n.Heal()
	expectReset(t, held)
}

// TestDialContextBoundsTheTargetDial: Net.Dial's ctx bounds its wait for
// the link's dial of the target.
func TestDialContextBoundsTheTargetDial(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.Dial(ctx, "c", s.addr()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial with a cancelled ctx: %v, want context.Canceled", err)
	}
	expectEcho(t, dial(t, n, "c", s.addr()), "still fine")
}

// TestModeChangesOnOpenConnection walks one open connection through every
// mode and back, checking each takes effect at once.
func TestModeChangesOnOpenConnection(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "pass")

	setAll(n, Fault{Mode: Blackhole})
	write(t, c, []byte("held1"))
	expectNothing(t, c)
	setAll(n, Fault{Mode: Delay, Delay: 30 * time.Millisecond}) // releases the held bytes, delayed
	if got := string(readN(t, c, 5)); got != "held1" {
		t.Fatalf("got %q, want held1", got)
	}
	setAll(n, Fault{Mode: Blackhole})
	write(t, c, []byte("held2"))
	expectNothing(t, c)
	setAll(n, Fault{Mode: Drop}) // held bytes are dropped
	expectNothing(t, c)
	setAll(n, Fault{})
	expectEcho(t, c, "pass again")
	setAll(n, Fault{Mode: Reset})
	expectReset(t, c)
}

// TestSetMatchesFromTo: Set changes only the links its match accepts,
// existing and made later, until Heal.
func TestSetMatchesFromTo(t *testing.T) {
	n := newNet(t)
	x := newServer(t, true, false)
	y := newServer(t, true, false)
	ax := dial(t, n, "a", x.addr())
	bx := dial(t, n, "b", x.addr())
	ay := dial(t, n, "a", y.addr())
	by := dial(t, n, "b", y.addr())
	for _, c := range []net.Conn{ax, bx, ay, by} {
		expectEcho(t, c, "up")
	}
	got := n.Set(func(from, to string) bool { return from == "a" }, Fault{Mode: Blackhole})
	want := []string{Name("a", x.addr()), Name("a", y.addr())}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Set from a changed %v, want %v", got, want)
	}
	got = n.Set(func(from, to string) bool { return to == y.addr() }, Fault{Mode: Drop})
	if want := []string{Name("a", y.addr()), Name("b", y.addr())}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Set to y changed %v, want %v", got, want)
	}
	if f := mustLink(t, n, "a", y.addr()).Fault(); f.Mode != Drop {
		t.Fatalf("a→y is %v, want drop (the later Set wins)", f)
	}
	if f := mustLink(t, n, "a", x.addr()).Fault(); f.Mode != Blackhole {
		t.Fatalf("a→x is %v, want blackhole", f)
	}
	expectEcho(t, bx, "b to x passes")
	write(t, ax, []byte("held"))
	expectNothing(t, ax)

	// A link made while the faults hold takes the last matching one.
	z := newServer(t, true, false)
	az := dial(t, n, "a", z.addr())
	write(t, az, []byte("new"))
	expectNothing(t, az)
	if f := mustLink(t, n, "a", z.addr()).Fault(); f.Mode != Blackhole {
		t.Fatalf("new link a→z is %v, want blackhole", f)
	}
	expectEOF(t, dial(t, n, "c", y.addr())) // to y: drop closes new connections

	n.Heal()
	if got := string(readN(t, ax, 4)); got != "held" {
		t.Fatalf("a→x after heal got %q", got)
	}
	if got := string(readN(t, az, 3)); got != "new" {
		t.Fatalf("a→z after heal got %q", got)
	}
	expectEcho(t, dial(t, n, "a", newServer(t, true, false).addr()), "healed: new links pass")
	if got, want := len(n.Links()), 7; got != want {
		t.Fatalf("%d links, want %d: %v", got, want, names(n.Links()))
	}
}

func mustLink(t *testing.T, n *Net, from, to string) *Link {
	t.Helper()
	l, err := n.Link(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLinkSetAndClose: one link's own Set, and Close making a new link.
func TestLinkSetAndClose(t *testing.T) {
	n := newNet(t)
	s := newServer(t, true, false)
	l := mustLink(t, n, "p", s.addr())
	c := dial(t, n, "p", s.addr())
	expectEcho(t, c, "a")
	l.Set(Fault{Mode: Blackhole})
	write(t, c, []byte("b"))
	expectNothing(t, c)
	addr := l.Addr()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, c)
	l2 := mustLink(t, n, "p", s.addr())
	if l2 == l || l2.Addr() == addr {
		t.Fatal("Link after Close returned the closed link")
	}
	expectEcho(t, dial(t, n, "p", s.addr()), "new link")
}

// TestBlackholeBoundsBuffering: a writer into a blackhole blocks once the
// window (and the kernel's buffers) are full; the proxy holds no more than
// the window per direction, and heal delivers every byte in order.
func TestBlackholeBoundsBuffering(t *testing.T) {
	const window = 64 << 10
	n := newNet(t, WithWindow(window))
	s := newServer(t, false, true)
	c := dial(t, n, "w", s.addr())
	write(t, c, []byte{0})
	var sc net.Conn
	select {
	case sc = <-s.conns:
	case <-time.After(long):
		t.Fatal("server saw no connection")
	}
	readN(t, sc, 1)
	l := mustLink(t, n, "w", s.addr())
	l.Set(Fault{Mode: Blackhole})

	const total = 32 << 20
	data := make([]byte, total)
	for i := range data {
		data[i] = byte(i * 7 >> 3)
	}
	c.SetWriteDeadline(time.Now().Add(time.Second))
	wrote, err := c.Write(data)
	if !isTimeout(err) || wrote >= total {
		t.Fatalf("wrote %d of %d bytes into a blackhole, err %v: want the writer blocked", wrote, total, err)
	}
	st := l.Stats()
	if st.MaxHeldBytes > window || st.HeldBytes > window {
		t.Fatalf("proxy held %d bytes (max %d), window %d", st.HeldBytes, st.MaxHeldBytes, window)
	}
	if st.MaxHeldBytes < window/2 {
		t.Fatalf("proxy held at most %d bytes, want the window (%d) used", st.MaxHeldBytes, window)
	}
	t.Logf("blackhole: writer blocked after %d bytes, proxy held %d", wrote, st.MaxHeldBytes)

	n.Heal()
	done := make(chan error, 1)
	go func() {
		c.SetWriteDeadline(time.Now().Add(long))
		_, err := c.Write(data[wrote:])
		done <- err
	}()
	got := readN(t, sc, total)
	if !bytes.Equal(got, data) {
		t.Fatal("bytes after heal differ from what was written")
	}
	if err := <-done; err != nil {
		t.Fatalf("rest of the write: %v", err)
	}
	if st := l.Stats(); st.MaxHeldBytes > window {
		t.Fatalf("proxy held up to %d bytes, window %d", st.MaxHeldBytes, window)
	}
}

// TestConcurrentUse: clients echo while faults change under them and
// links are closed, listed and read; under -race. Connections may break
// (resets, drops, closed links); after the final heal every client echoes
// on a new connection, and Close leaves no goroutine.
func TestConcurrentUse(t *testing.T) {
	n := newNet(t, WithSeed(3))
	s := newServer(t, true, false)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var echoes, dials atomic.Int64
	const clients = 8
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("c%d", i%3)
			buf := make([]byte, 64)
			for ctx.Err() == nil {
				c, err := n.Dial(ctx, from, s.addr())
				if err != nil {
					continue
				}
				dials.Add(1)
				for j := 0; j < 20 && ctx.Err() == nil; j++ {
					msg := []byte(fmt.Sprintf("%d-%d", i, j))
					c.SetDeadline(time.Now().Add(20 * time.Millisecond))
					if _, err := c.Write(msg); err != nil {
						break
					}
					if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
						break
					}
					if !bytes.Equal(buf[:len(msg)], msg) {
						t.Errorf("echo %q, want %q: bytes reordered or mixed", buf[:len(msg)], msg)
					}
					echoes.Add(1)
				}
				c.Close()
			}
		}()
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	modes := []Fault{{Mode: Drop}, {Mode: Blackhole}, {Mode: Delay, Delay: time.Millisecond, Jitter: time.Millisecond}, {Mode: Reset}}
	for k := 0; k < 300 || dials.Load() < 100 || echoes.Load() < 200; k++ {
		if k > 100000 {
			t.Fatalf("only %d dials and %d echoes under changing faults", dials.Load(), echoes.Load())
		}
		from := fmt.Sprintf("c%d", rnd.IntN(3))
		n.Set(func(f, _ string) bool { return f == from }, modes[rnd.IntN(len(modes))])
		for _, l := range n.Links() {
			_ = l.Stats()
			_ = l.Fault()
		}
		switch rnd.IntN(10) {
		case 0, 1, 2:
			n.Heal()
		case 3:
			if ls := n.Links(); len(ls) > 0 {
				ls[rnd.IntN(len(ls))].Close()
			}
		}
		runtime.Gosched()
	}
	n.Heal()
	cancel()
	wg.Wait()
	t.Logf("%d dials, %d echoes under changing faults", dials.Load(), echoes.Load())
	for i := range 3 {
		c := dial(t, n, fmt.Sprintf("c%d", i), s.addr())
		expectEcho(t, c, "after the storm")
	}
}

// TestCloseEndsEverything: Close with connections in every state returns
// after all goroutines exit, the clients see their connections end, and
// Dial fails after.
func TestCloseEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		n := NewNet(nil)
		s := newServerNoCleanup(t)
		defer s.close()
		pass := mustDial(t, n, "a", s.addr())
		expectEcho(t, pass, "a")
		held := mustDial(t, n, "b", s.addr())
		expectEcho(t, held, "b")
		n.Set(func(f, _ string) bool { return f == "b" }, Fault{Mode: Blackhole})
		write(t, held, []byte("held"))
		pending := mustDial(t, n, "b", s.addr()) // accepted, held, never dialled its target
		write(t, pending, []byte("p"))
		delayed := mustDial(t, n, "c", s.addr())
		expectEcho(t, delayed, "c")
		n.Set(func(f, _ string) bool { return f == "c" }, Fault{Mode: Delay, Delay: time.Hour})
		write(t, delayed, []byte("late"))
		await(t, "the proxy to hold what was written", func() bool {
			return mustLink(t, n, "b", s.addr()).Stats().HeldBytes > 0 && mustLink(t, n, "c", s.addr()).Stats().HeldBytes > 0
		})

		ls := n.Links()
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if r := n.running.Load(); r != 0 {
			t.Fatalf("%d goroutines running after Close returned", r)
		}
		for _, l := range ls {
			if st := l.Stats(); st.HeldBytes != 0 || st.Open != 0 {
				t.Fatalf("%s after Close: %+v, want nothing held or open", l.Name(), st)
			}
		}
		for _, c := range []net.Conn{pass, held, pending, delayed} {
			c.SetReadDeadline(time.Now().Add(long))
			if _, err := io.ReadAll(c); err != nil && isTimeout(err) {
				t.Fatalf("a connection stayed open after Close: %v", err)
			}
			c.Close()
		}
		if _, err := n.Dial(context.Background(), "a", s.addr()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Dial after Close: %v, want ErrClosed", err)
		}
		if err := n.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}()
	await(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
}

// TestCloseWaitsForGoroutines: Close does not return while a goroutine of
// the Net is still on its way out.
func TestCloseWaitsForGoroutines(t *testing.T) {
	gate := make(chan struct{})
	n := NewNet(nil)
	n.exitHook = func() { <-gate }
	s := newServer(t, true, false)
	c := mustDial(t, n, "a", s.addr())
	defer c.Close()
	expectEcho(t, c, "a")
	closed := make(chan struct{})
	go func() {
		n.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while the Net's goroutines were still running")
	case <-time.After(quiet):
	}
	close(gate)
	select {
	case <-closed:
	case <-time.After(long):
		t.Fatal("Close did not return after its goroutines ended")
	}
	if r := n.running.Load(); r != 0 {
		t.Fatalf("%d goroutines running after Close returned", r)
	}
}

func mustDial(t *testing.T, n *Net, from, to string) net.Conn {
	t.Helper()
	c, err := n.Dial(context.Background(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newServerNoCleanup is an echo server closed by the caller, so that a
// goroutine count can be taken after it is gone.
type plainServer struct {
	ln net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	cs []net.Conn
}

func newServerNoCleanup(t *testing.T) *plainServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &plainServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs = append(s.cs, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	return s
}

func (s *plainServer) addr() string { return s.ln.Addr().String() }

func (s *plainServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.cs {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// expectResetDial checks that the connection dial makes is reset: the RST
// can come so soon that the dial itself reports it.
func expectResetDial(t *testing.T, dial func() (net.Conn, error)) {
	t.Helper()
	c, err := dial()
	if err != nil {
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("dial: %v, want success or a connection reset", err)
		}
		return
	}
	defer c.Close()
	expectReset(t, c)
}

// TestDelayRunsOnTheInjectedClock: a Delay fault waits on the Net's clock,
// so a test can hold bytes for an hour and release them at once.
func TestDelayRunsOnTheInjectedClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	n := newNet(t, WithClock(clk))
	s := newServer(t, true, false)
	c := dial(t, n, "c", s.addr())
	expectEcho(t, c, "warm")
	setAll(n, Fault{Mode: Delay, Delay: time.Hour})
	write(t, c, []byte("late"))
	for dir := 0; dir < 2; dir++ { // to the server, then the echo back
		awaitTimer(t, clk)
		if dir == 0 {
			expectNothing(t, c)
		}
		clk.Advance(time.Hour)
	}
	if got := string(readN(t, c, 4)); got != "late" {
		t.Fatalf("echo = %q, want %q", got, "late")
	}
}

// awaitTimer waits until something waits on clk.
func awaitTimer(t *testing.T, clk *clock.Manual) {
	t.Helper()
	deadline := time.Now().Add(long)
	for clk.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no delay timer was armed on the injected clock")
		}
		runtime.Gosched()
	}
}
