package netx

import (
	"context"
	"net"
)

// Network makes listeners and connections. TCP and Mem.Host implement it.
type Network interface {
	// Listen listens on addr ("host:port").
	Listen(addr string) (net.Listener, error)
	// Dial connects to addr ("host:port"); ctx bounds the dial only, not
	// the connection it returns.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// TCP is the real network: net.Listen("tcp", addr) and a net.Dialer.
var TCP Network = tcpNetwork{}

// Or returns nw, or TCP when nw is nil (the default of every Network
// field in Petrel's configurations).
func Or(nw Network) Network {
	if nw == nil {
		return TCP
	}
	return nw
}

type tcpNetwork struct{}

func (tcpNetwork) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
