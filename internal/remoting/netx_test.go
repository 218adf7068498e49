package remoting

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
)

// TestClientAndServerOverMemNetwork: a Client given a netx.Mem host dials
// a Server serving a Mem listener; a partition stalls calls on the open
// connection (they time out, the connection stays) and fails new dials,
// Heal lets the same connection answer again, and Reset makes the client
// dial anew.
func TestClientAndServerOverMemNetwork(t *testing.T) {
	mem := netx.NewMem()
	ln, err := mem.Host("10.0.0.1").Listen("10.0.0.1:9876")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(ServerOptions{})
	s.Handle(codeEcho, echo)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after Close", err)
		}
	}()
	cl := NewClient(ClientOptions{Network: mem.Host("10.0.0.9")})
	defer cl.Close()
	const addr = "10.0.0.1:9876"

	call := func(ctx context.Context, i string) (*Command, error) {
		return cl.Invoke(ctx, addr, NewRequest(codeEcho, map[string]string{"i": i}, nil))
	}
	ctx := context.Background()
	if resp, err := call(ctx, "1"); err != nil || resp.Remark != "1" {
		t.Fatalf("echo over the in-memory network: %v, %v", resp, err)
	}
	conns := s.Conns()
	if len(conns) != 1 {
		t.Fatalf("server has %d connections, want 1", len(conns))
	}
	if h, _, _ := net.SplitHostPort(conns[0].RemoteAddr().String()); h != "10.0.0.9" {
		t.Fatalf("server sees the client at %s, want host 10.0.0.9", conns[0].RemoteAddr())
	}
	first, err := cl.Conn(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}

	mem.Partition("10.0.0.9", "10.0.0.1")
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = call(short, "2")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call across a partition: %v, want the ctx deadline", err)
	}
	other := NewClient(ClientOptions{Network: mem.Host("10.0.0.9")})
	if _, err := other.Invoke(ctx, addr, NewRequest(codeEcho, nil, nil)); !errors.Is(err, netx.ErrUnreachable) {
		t.Fatalf("dial across a partition: %v, want netx.ErrUnreachable", err)
	}
	other.Close()

	mem.Heal("10.0.0.1", "10.0.0.9")
	if resp, err := call(ctx, "3"); err != nil || resp.Remark != "3" {
		t.Fatalf("echo after Heal: %v, %v", resp, err)
	}
	if c, _ := cl.Conn(ctx, addr); c != first {
		t.Fatal("the client dialed again after Heal; the connection should have survived the partition")
	}

	if n := mem.Reset("10.0.0.1", "10.0.0.9"); n != 1 {
		t.Fatalf("Reset dropped %d connections, want 1", n)
	}
	<-first.Closed()
	if resp, err := call(ctx, "4"); err != nil || resp.Remark != "4" {
		t.Fatalf("echo after Reset: %v, %v (the client should dial again)", resp, err)
	}
}
