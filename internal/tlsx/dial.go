package tlsx

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/petrelmq/petrel/internal/netx"
)

func clientConfig(o ClientOptions) (*tls.Config, error) {
	if o.CAFile != "" && o.Insecure {
		return nil, errors.New("tlsx: both a CA file to verify the server against and insecure (no verification) were given: give one of them")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
	if o.Insecure {
		// Asked for: a test server with a self-signed certificate.
		cfg.InsecureSkipVerify = true
	}
	if o.CAFile != "" {
		caPEM, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tlsx: read the CA file: %w: give the path of the PEM certificate of the CA that signed the server's certificate", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("tlsx: the CA file %s holds no PEM certificate: give the PEM certificate of the CA that signed the server's certificate", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

type dialNetwork struct {
	nw  netx.Network
	cfg *tls.Config
}

func (n dialNetwork) Listen(addr string) (net.Listener, error) { return n.nw.Listen(addr) }

// Dial connects and completes the handshake before returning, so a
// server that does not speak TLS or whose certificate does not verify
// fails the dial (and the connection is closed), not the first request.
func (n dialNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	raw, err := n.nw.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	cfg := n.cfg
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, handshakeError(addr, err)
	}
	return tc, nil
}

// handshakeError says what a failed handshake means for the operator.
func handshakeError(addr string, err error) error {
	var (
		rh   tls.RecordHeaderError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		inv  x509.CertificateInvalidError
		hint string
	)
	switch {
	case errors.As(err, &rh):
		hint = "the server does not speak TLS on this port: dial it without TLS, or run it with --tls-mode permissive or enforcing"
	case errors.As(err, &ua):
		hint = "the server's certificate is not signed by a CA this client trusts: give the CA that signed it (--tls-ca)"
	case errors.As(err, &hn):
		hint = "the server's certificate is not for the address dialed: dial a name or address the certificate lists, or set the server name to verify"
	case errors.As(err, &inv):
		hint = "the server's certificate is not valid (expired, or not for server use): renew it"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		hint = "the server did not complete the handshake in time: is it a TLS port?"
	default:
		return fmt.Errorf("tlsx: TLS handshake with %s: %w", addr, err)
	}
	return fmt.Errorf("tlsx: TLS handshake with %s: %w: %s", addr, err, hint)
}
