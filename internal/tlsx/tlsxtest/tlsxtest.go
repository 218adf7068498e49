// Package tlsxtest makes certificates for tests: a CA, a server
// certificate for 127.0.0.1, ::1 and localhost signed by it, and client
// certificates for mutual TLS, written as PEM files in a directory.
package tlsxtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/tlsx"
)

// Names of the files in the directory.
const (
	CAFile     = "ca.crt"
	CAKeyFile  = "ca.key"
	CertFile   = "server.crt"
	KeyFile    = "server.key"
	ClientCert = "client.crt"
	ClientKey  = "client.key"
)

// Files writes a server certificate for 127.0.0.1, ::1 and localhost
// (usable for client authentication too, as Petrel's peers present it)
// and its key into dir, signed by the CA in dir, which is made on the
// first call. It returns the server's files (ClientCA empty: set it to
// caFile for mutual TLS) and the CA certificate's file. Each call makes
// a new server certificate with a new serial, over the previous one,
// signed by the same CA: a test of Reload calls it twice.
func Files(t testing.TB, dir string) (f tlsx.Files, caFile string) {
	t.Helper()
	ca, caKey := loadOrMakeCA(t, dir)
	f = tlsx.Files{Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}
	issue(t, ca, caKey, f.Cert, f.Key, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "petrel test server"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	return f, filepath.Join(dir, CAFile)
}

// ClientPair writes a client certificate (for client authentication
// only) signed by dir's CA and its key, and returns their files. Files
// must have been called on dir before.
func ClientPair(t testing.TB, dir string) (cert, key string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatalf("tlsxtest: no CA in %s: call Files(t, dir) first: %v", dir, err)
	}
	ca, caKey := loadOrMakeCA(t, dir)
	cert, key = filepath.Join(dir, ClientCert), filepath.Join(dir, ClientKey)
	issue(t, ca, caKey, cert, key, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "petrel test client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return cert, key
}

// ClientCertificate is ClientPair loaded, for a tls.Config's Certificates.
func ClientCertificate(t testing.TB, dir string) tls.Certificate {
	t.Helper()
	cert, key := ClientPair(t, dir)
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatalf("tlsxtest: load the client pair: %v", err)
	}
	return c
}

// Pool returns a pool holding the CA of caFile.
func Pool(t testing.TB, caFile string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatalf("tlsxtest: no certificate in %s", caFile)
	}
	return p
}

func loadOrMakeCA(t testing.TB, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	if certPEM, err := os.ReadFile(certPath); err == nil {
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			t.Fatalf("tlsxtest: %v", err)
		}
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			t.Fatalf("tlsxtest: the CA files in %s are not PEM", dir)
		}
		ca, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			t.Fatalf("tlsxtest: %v", err)
		}
		k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			t.Fatalf("tlsxtest: %v", err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			t.Fatalf("tlsxtest: the CA key in %s is not ECDSA", dir)
		}
		return ca, ek
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("tlsxtest: %v", err)
	}
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "petrel test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("tlsxtest: create the CA: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
	writePair(t, certPath, keyPath, der, key)
	return ca, key
}

func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string, tmpl *x509.Certificate) {
	t.Helper()
	key := newKey(t)
	now := time.Now()
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("tlsxtest: create a certificate: %v", err)
	}
	writePair(t, certPath, keyPath, der, key)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlsxtest: generate a key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
	return n
}

// writePair writes the key, then the certificate, each through a
// temporary file renamed into place, so a server reloading meanwhile
// reads whole files.
func writePair(t testing.TB, certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
	write(t, keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	write(t, certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func write(t testing.TB, path string, data []byte, perm os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("tlsxtest: %v", err)
	}
}
