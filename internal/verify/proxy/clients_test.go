package proxy

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/petrelmq/petrel/internal/remoting"
)

const codeEcho = 30001

// TestRemotingClientThroughProxy: Petrel's remoting client, given the
// Network of Client, calls through the link; a blackhole stalls calls on
// the open connection and heal lets the same connection answer again; a
// reset breaks the connection and the client dials anew.
func TestRemotingClientThroughProxy(t *testing.T) {
	n := newNet(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := remoting.NewServer(remoting.ServerOptions{})
	s.Handle(codeEcho, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.CodeSuccess, req.ExtFields["i"])
	})
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		s.Close()
		<-served
	}()
	cl := remoting.NewClient(remoting.ClientOptions{Network: n.Client("producer-0")})
	defer cl.Close()
	addr := ln.Addr().String()
	call := func(d time.Duration, i string) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, map[string]string{"i": i}, nil))
	}
	if resp, err := call(long, "1"); err != nil || resp.Remark != "1" {
		t.Fatalf("call through the proxy: %v, %v", resp, err)
	}
	l := mustLink(t, n, "producer-0", addr)
	if l.Stats().Conns != 1 {
		t.Fatalf("link stats %+v, want the client's one connection", l.Stats())
	}

	setAll(n, Fault{Mode: Blackhole})
	if _, err := call(quiet, "2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call into a blackhole: %v, want the ctx deadline", err)
	}
	n.Heal()
	if resp, err := call(long, "3"); err != nil || resp.Remark != "3" {
		t.Fatalf("call after heal: %v, %v", resp, err)
	}
	if c := l.Stats().Conns; c != 1 {
		t.Fatalf("%d connections after heal, want the same one", c)
	}

	setAll(n, Fault{Mode: Reset})
	if _, err := call(long, "4"); err == nil {
		t.Fatal("call through a resetting link succeeded")
	}
	n.Heal()
	await(t, "the client to dial anew and get an answer", func() bool {
		resp, err := call(long, "5")
		return err == nil && resp.Remark == "5"
	})
}

// TestGRPCClientThroughProxy: a gRPC client dials through the Network of
// Client with grpc.WithContextDialer, and a blackhole stalls its calls.
func TestGRPCClientThroughProxy(t *testing.T) {
	n := newNet(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(ln)
	defer gs.Stop()
	nw := n.Client("grpc-0")
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(nw.Dial))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	check := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %v", resp.Status)
		}
		return err
	}
	if err := check(long); err != nil {
		t.Fatalf("gRPC call through the proxy: %v", err)
	}
	if got := names(n.Links()); len(got) != 1 || got[0] != Name("grpc-0", ln.Addr().String()) {
		t.Fatalf("links %v", got)
	}
	setAll(n, Fault{Mode: Blackhole})
	if err := check(quiet); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("gRPC call into a blackhole: %v, want DeadlineExceeded", err)
	}
	n.Heal()
	if err := check(long); err != nil {
		t.Fatalf("gRPC call after heal: %v", err)
	}
}
