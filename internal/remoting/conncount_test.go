package remoting

import (
	"testing"
	"time"
)

func TestConnCountFollowsOpenConnections(t *testing.T) {
	connClosed := make(chan struct{}, 4)
	srv := startServer(t, ServerOptions{OnConnClose: func(*Conn) { connClosed <- struct{}{} }}, nil)
	if n := srv.ConnCount(); n != 0 {
		t.Fatalf("ConnCount = %d before any client, want 0", n)
	}
	a, b := newClient(t, ClientOptions{}), newClient(t, ClientOptions{})
	invokeEcho(t, a, srv.addr, 1)
	invokeEcho(t, b, srv.addr, 2)
	if n := srv.ConnCount(); n != 2 || n != len(srv.Conns()) {
		t.Fatalf("ConnCount = %d with two clients (Conns has %d), want 2", n, len(srv.Conns()))
	}
	a.Close()
	select {
	case <-connClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not see the client close its connection")
	}
	if n := srv.ConnCount(); n != 1 {
		t.Fatalf("ConnCount = %d after one client left, want 1", n)
	}
}
