package grpcfront

// The TLS certificate: the official Go client always dials with TLS and
// accepts any certificate, so a self-signed one generated on first start
// is enough.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names of the generated certificate files in Config.CertDir.
const (
	CertFileName = "grpc-tls.crt"
	KeyFileName  = "grpc-tls.key"
)

// certValidity is how long a generated certificate is valid.
const certValidity = 10 * 365 * 24 * time.Hour

// loadOrCreateCert returns the certificate to serve: certFile/keyFile when
// given; else the pair in dir, generated there when missing; else (dir
// empty) one generated in memory.
func loadOrCreateCert(certFile, keyFile, dir string, now time.Time) (tls.Certificate, error) {
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("grpcfront: load the TLS certificate %s and key %s: %w", certFile, keyFile, err)
		}
		return c, nil
	}
	if dir == "" {
		certPEM, keyPEM, err := selfSigned(now)
		if err != nil {
			return tls.Certificate{}, err
		}
		return tls.X509KeyPair(certPEM, keyPEM)
	}
	certPath, keyPath := filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err == nil {
		return c, nil
	}
	// The key is written first, so a missing certificate (with or without
	// its key) is a generation that did not finish: generate again. A
	// certificate without its key, or files that do not load, are not
	// ours to replace.
	if _, cerr := os.Stat(certPath); !errors.Is(cerr, fs.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("grpcfront: the self-signed certificate %s / %s cannot be loaded (delete both files to have new ones generated): %w", certPath, keyPath, err)
	}
	certPEM, keyPEM, err := selfSigned(now)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tls.Certificate{}, fmt.Errorf("grpcfront: create the certificate directory %s: %w", dir, err)
	}
	// The key first: a certificate file without its key is never left.
	if err := writeFileSync(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeFileSync(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// selfSigned makes an ECDSA P-256 certificate for localhost, the loopback
// addresses and the host name.
func selfSigned(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("grpcfront: generate a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("grpcfront: generate a certificate serial: %w", err)
	}
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append(names, h)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "petrel gRPC (self-signed)", Organization: []string{"Petrel"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("grpcfront: create the self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("grpcfront: encode the TLS key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// writeFileSync writes a new file through a temporary one renamed into
// place and syncs the directory, so a crash never leaves half a file and
// files written one after the other appear in that order.
func writeFileSync(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("grpcfront: write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("grpcfront: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("grpcfront: write %s: %w", path, err)
	}
	// The rename must be durable before the next file is written: the
	// key's before the certificate's.
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("grpcfront: sync the directory of %s: %w", path, err)
	}
	serr = d.Sync()
	d.Close()
	if serr != nil {
		return fmt.Errorf("grpcfront: sync the directory of %s: %w", path, serr)
	}
	return nil
}
