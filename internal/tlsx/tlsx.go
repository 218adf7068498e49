// Package tlsx is TLS for every Petrel listener and link: the three
// modes of the remoting listeners (disabled, permissive: TLS and
// plaintext on one port, told apart by the first byte; enforcing), a
// certificate that reloads on demand (SIGHUP), mutual TLS, and netx
// wrappers so that a listener or a dialer becomes TLS without the code
// above it knowing.
//
// This file is the contract the other packages are written against;
// server.go holds the reloadable identity, listen.go the listeners of
// the three modes and dial.go the client side.
package tlsx

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/petrelmq/petrel/internal/netx"
)

// Mode of a listener (RocketMQ's names).
type Mode string

const (
	Disabled   Mode = "disabled"
	Permissive Mode = "permissive"
	Enforcing  Mode = "enforcing"
)

// ParseMode parses a --tls-mode value, with an error naming the choices.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Disabled, Permissive, Enforcing:
		return m, nil
	}
	return "", fmt.Errorf("tlsx: unknown TLS mode %q: use disabled, permissive (TLS and plaintext on one port) or enforcing (TLS only)", s)
}

// Files are the server's certificate, key and, for mutual TLS, the CA
// that client certificates must chain to.
type Files struct {
	Cert, Key, ClientCA string
}

// NewServer loads f (Cert and Key required), with errors that name the
// file and say what to do.
func NewServer(f Files) (*Server, error) { return newServer(f) }

// Reload reads the files again; on error the old ones stay in use.
func (s *Server) Reload() error { return s.reload() }

// Config is the server-side tls.Config: the current certificate (read per
// handshake, so Reload applies to new connections), TLS 1.2+, and with a
// ClientCA RequireAndVerifyClientCert.
func (s *Server) Config() *tls.Config { return s.config() }

// PeerConfig is the client-side config for links between Petrel processes
// (broker to name server, slave to master, controller peers): it presents
// the current certificate (mutual TLS) and verifies the peer against
// ClientCA when one is given; without one it encrypts but does not verify
// (stated in docs/security.md).
func (s *Server) PeerConfig() *tls.Config { return s.peerConfig() }

// Listener wraps ln: Disabled returns ln; Enforcing makes every accepted
// connection a TLS server connection; Permissive looks at each
// connection's first byte (0x16, a TLS handshake record, which no
// RocketMQ frame nor HTTP request starts with) on its first Read, so
// Accept never waits on a peer.
func (s *Server) Listener(ln net.Listener, mode Mode) net.Listener {
	return s.listener(ln, mode)
}

// ListenNetwork returns nw with Listen wrapped by Listener(mode); Dial is
// unchanged.
func (s *Server) ListenNetwork(nw netx.Network, mode Mode) netx.Network {
	if mode == Disabled {
		return nw
	}
	s.checkMode(mode)
	return listenNetwork{nw: nw, s: s, mode: mode}
}

// ClientOptions are a client's TLS settings (the CLI's --tls, --tls-ca,
// --tls-insecure).
type ClientOptions struct {
	CAFile   string // verify the server against this CA; "" the system roots
	Insecure bool   // skip verification (self-signed test servers)
	// ServerName overrides the name verified; default the dialed host.
	ServerName string
}

// ClientConfig builds the client tls.Config.
func ClientConfig(o ClientOptions) (*tls.Config, error) { return clientConfig(o) }

// DialNetwork returns nw with Dial wrapped in a TLS client handshake
// (bounded by the dial's ctx; ServerName defaults to the dialed host);
// Listen is unchanged.
func DialNetwork(nw netx.Network, cfg *tls.Config) netx.Network {
	return dialNetwork{nw: netx.Or(nw), cfg: cfg}
}
