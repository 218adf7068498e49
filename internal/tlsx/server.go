package tlsx

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// Server is a reloadable server identity. It is safe for concurrent use:
// handshakes read the identity loaded last, Reload swaps it atomically.
type Server struct {
	files Files
	cur   atomic.Pointer[identity]

	reloadMu sync.Mutex // one Reload at a time

	plainRefused  atomic.Uint64
	plainAccepted atomic.Uint64
	onRefused     atomic.Pointer[func(remote net.Addr)]
}

// identity is one loading of the files.
type identity struct {
	cert *tls.Certificate
	pool *x509.CertPool // ClientCA's certificates; nil without one
}

func newServer(f Files) (*Server, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("tlsx: a TLS server needs a certificate file and its key file: give both (--tls-cert, --tls-key)")
	}
	id, err := load(f)
	if err != nil {
		return nil, err
	}
	s := &Server{files: f}
	s.cur.Store(id)
	return s, nil
}

func (s *Server) reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	id, err := load(s.files)
	if err != nil {
		return fmt.Errorf("%w (the certificate loaded before stays in use)", err)
	}
	s.cur.Store(id)
	return nil
}

// Files returns the files the server loads.
func (s *Server) Files() Files { return s.files }

// Leaf returns the certificate in use (the first of its chain), to log
// its subject, serial and expiry after a load.
func (s *Server) Leaf() *x509.Certificate { return s.cur.Load().cert.Leaf }

// load reads f, checking each file on its own so that an error names the
// file at fault.
func load(f Files) (*identity, error) {
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("tlsx: read the TLS certificate file: %w: give the path of a PEM certificate", err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("tlsx: read the TLS key file: %w: give the path of the certificate's PEM private key", err)
	}
	if !hasPEM(certPEM, "CERTIFICATE") {
		return nil, fmt.Errorf("tlsx: the certificate file %s holds no PEM CERTIFICATE block: give a PEM certificate (a key file given in its place?)", f.Cert)
	}
	if !hasPEMKey(keyPEM) {
		return nil, fmt.Errorf("tlsx: the key file %s holds no PEM private key: give the certificate's PEM private key (a certificate given in its place?)", f.Key)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsx: the certificate %s and the key %s do not make a pair: %w: give the private key of that certificate", f.Cert, f.Key, err)
	}
	if cert.Leaf == nil {
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("tlsx: parse the certificate %s: %w", f.Cert, err)
		}
		cert.Leaf = leaf
	}
	id := &identity{cert: &cert}
	if f.ClientCA != "" {
		caPEM, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("tlsx: read the client CA file: %w: give the path of the PEM certificates client certificates must chain to", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("tlsx: the client CA file %s holds no PEM certificate: give the PEM certificates of the CA that signs the client certificates", f.ClientCA)
		}
		id.pool = pool
	}
	return id, nil
}

func hasPEM(data []byte, typ string) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == typ {
			return true
		}
	}
}

func hasPEMKey(data []byte) bool {
	return hasPEM(data, "PRIVATE KEY") || hasPEM(data, "EC PRIVATE KEY") || hasPEM(data, "RSA PRIVATE KEY")
}

func (s *Server) config() *tls.Config {
	id := s.cur.Load()
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
	}
	if id.pool == nil {
		return cfg
	}
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = id.pool
	// The pool reloads too. While it is the one this config was made
	// with, the handshake uses the config as the caller has it (a Clone
	// with NextProtos added, say); after a Reload it uses a copy of this
	// config with the new pool.
	base := cfg.Clone()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cur := s.cur.Load()
		if cur.pool == id.pool {
			return nil, nil
		}
		c := base.Clone()
		c.ClientCAs = cur.pool
		return c, nil
	}
	return cfg
}

// peerConfig: the certificate presented is read per handshake (a Reload
// applies to the next dial); the CA that verifies the peer is the one
// loaded when peerConfig is called.
func (s *Server) peerConfig() *tls.Config {
	id := s.cur.Load()
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
	}
	if id.pool != nil {
		// Petrel's processes share one CA under mutual TLS: the peer's
		// certificate must chain to it, as ours must for the peer.
		cfg.RootCAs = id.pool
	} else {
		// Without a ClientCA there is no CA to verify a peer against:
		// the server certificates may be self-signed, or signed by a CA
		// only the clients know. The link is encrypted but does not
		// authenticate the peer (docs/security.md says so); give
		// --tls-client-ca to have peers verified.
		cfg.InsecureSkipVerify = true
	}
	return cfg
}
