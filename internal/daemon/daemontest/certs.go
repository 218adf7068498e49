package daemontest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files of a test CA, a server certificate it signed
// (for 127.0.0.1, ::1 and localhost; also usable as a client certificate,
// as Petrel's own links present theirs) and a client certificate it
// signed. Keys are written with mode 0600.
type TLSFiles struct {
	CA                    string
	Cert, Key             string
	ClientCert, ClientKey string
}

// WriteTLSFiles makes a fresh CA and its certificates in a temporary
// directory of t. Each call makes new keys, so a second call's server
// certificate differs from the first's (for reload tests).
func WriteTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert := newCert(t, "petrel test CA", nil, nil, true)
	f := TLSFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		Cert:       filepath.Join(dir, "server.pem"),
		Key:        filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	writePEM(t, f.CA, "CERTIFICATE", caCert.Raw, 0o644)
	srvKey, srvCert := newCert(t, "localhost", caKey, caCert, false)
	writePEM(t, f.Cert, "CERTIFICATE", srvCert.Raw, 0o644)
	writeKey(t, f.Key, srvKey)
	cliKey, cliCert := newCert(t, "petrel test client", caKey, caCert, false)
	writePEM(t, f.ClientCert, "CERTIFICATE", cliCert.Raw, 0o644)
	writeKey(t, f.ClientKey, cliKey)
	return f
}

func newCert(t testing.TB, cn string, parentKey *ecdsa.PrivateKey, parent *x509.Certificate, ca bool) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"petrel tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage, tmpl.DNSNames, tmpl.IPAddresses = nil, nil, nil
	}
	signer, issuer := key, tmpl
	if parent != nil {
		signer, issuer = parentKey, parent
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "PRIVATE KEY", der, 0o600)
}

func writePEM(t testing.TB, path, typ string, der []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
}
