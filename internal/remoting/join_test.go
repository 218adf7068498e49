package remoting

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
)

// writesConn records each Write; it is not a *net.TCPConn, so a Conn on
// it gathers its frames (coalesce).
type writesConn struct {
	net.Conn
	writes [][]byte
}

func (w *writesConn) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

// On a connection without writev (TLS, in memory) the frames of one batch
// go out in as few Writes as joinChunk allows, in order, and a large part
// is written where it is, not copied.
func TestWriteJoinedGathersFrames(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	wc := &writesConn{Conn: a}
	c := newConn(t.Context(), wc, &owner{log: slog.New(slog.DiscardHandler)})
	if !c.coalesce {
		t.Fatal("a connection that is not TCP does not coalesce")
	}
	part := func(n int, x byte) []byte { return bytes.Repeat([]byte{x}, n) }
	bufs := net.Buffers{part(10, 'a'), part(20, 'b'), part(joinChunk-40, 'c'), part(30, 'd'), part(joinChunk, 'e'), part(5, 'f')}
	var want []byte
	for _, p := range bufs {
		want = append(want, p...)
	}
	if err := c.writeJoined(bufs); err != nil {
		t.Fatal(err)
	}
	sizes := []int{}
	var got []byte
	for _, w := range wc.writes {
		sizes = append(sizes, len(w))
		got = append(got, w...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the bytes written differ from the frames (%d vs %d bytes)", len(got), len(want))
	}
	// a+b+c fill one chunk; d alone before the large e; e as it is; f.
	wantSizes := []int{joinChunk - 10, 30, joinChunk, 5}
	if len(sizes) != len(wantSizes) {
		t.Fatalf("writes of %v bytes, want %v", sizes, wantSizes)
	}
	for i := range sizes {
		if sizes[i] != wantSizes[i] {
			t.Fatalf("writes of %v bytes, want %v", sizes, wantSizes)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tcp := newConn(t.Context(), nc, &owner{log: slog.New(slog.DiscardHandler)}); tcp.coalesce {
		t.Fatal("a TCP connection coalesces instead of using writev")
	}
}
