package cluster

// The certificates of a `petrel verify --tls` run: a CA made for the run
// and one server certificate it signed, valid for the loopback addresses
// every process listens on. Each process serves the same certificate
// (--tls-cert, --tls-key); verify's clients trust only the CA. Keys are
// ECDSA P-256, made fresh for every run and never leave its directory.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CertFiles are the PEM files of a run's TLS identity.
type CertFiles struct {
	// CA is the certificate of the run's CA: what clients verify the
	// servers against.
	CA string
	// Cert and Key are the servers' certificate and private key (0600).
	Cert, Key string
}

// certValidity is how long the certificates are valid: a run's length
// with room; NotBefore is set an hour back for clocks a little behind.
const certValidity = 7 * 24 * time.Hour

// GenerateCerts makes a CA and a server certificate for 127.0.0.1, ::1
// and localhost, signed by it, and writes them under dir (ca.pem,
// server.pem, server-key.pem; created when missing).
func GenerateCerts(dir string) (CertFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: %w", err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "petrel verify CA", Organization: []string{"petrel verify"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "petrel verify server", Organization: []string{"petrel verify"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Client auth too: the processes present it on their own links
		// (tlsx's PeerConfig), where a peer with a client CA checks it.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: server: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: certificates: server key: %w", err)
	}
	f := CertFiles{
		CA:   filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, "server.pem"),
		Key:  filepath.Join(dir, "server-key.pem"),
	}
	for _, w := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{
		{f.CA, "CERTIFICATE", caDER, 0o644},
		{f.Cert, "CERTIFICATE", der, 0o644},
		{f.Key, "PRIVATE KEY", keyDER, 0o600},
	} {
		b := pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der})
		if err := os.WriteFile(w.path, b, w.mode); err != nil {
			return CertFiles{}, fmt.Errorf("cluster: certificates: %w", err)
		}
	}
	return f, nil
}

// serial is a random 128-bit certificate serial number (never 0).
func serial() *big.Int {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return new(big.Int).Add(new(big.Int).SetBytes(b), big.NewInt(1))
}

// CertPool returns a pool holding the CA of f.
func (f CertFiles) CertPool() (*x509.CertPool, error) {
	b, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster: read the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("cluster: %s holds no PEM certificate", f.CA)
	}
	return pool, nil
}
