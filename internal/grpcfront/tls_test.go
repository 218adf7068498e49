package grpcfront

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

// TestTLSWithGeneratedCertificate: without a certificate the front makes
// a self-signed one in CertDir, serves TLS with it (as the Go client
// dials: any certificate accepted) and reuses it on the next start.
func TestTLSWithGeneratedCertificate(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(o *envOptions) { o.front = func(c *Config) { c.Plaintext = false; c.CertDir = dir } })
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFileName))
	if err != nil {
		t.Fatalf("no certificate generated: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, KeyFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	routeOverTLS(t, e, "route over TLS")
	// A second start reuses the certificate.
	if _, err := loadOrCreateCert("", "", dir, t0); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, CertFileName))
	if !bytes.Equal(certPEM, again) {
		t.Fatal("the certificate was generated again instead of reused")
	}
	// Given files are used as they are.
	if _, err := loadOrCreateCert(filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName), "", t0); err != nil {
		t.Fatalf("load given files: %v", err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, CertFileName), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateCert("", "", dir, t0); err == nil {
		t.Fatal("a broken certificate file was accepted")
	}
	// A certificate without its key is not replaced.
	keyless := t.TempDir()
	if err := os.WriteFile(filepath.Join(keyless, CertFileName), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateCert("", "", keyless, t0); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
	if _, err := loadOrCreateCert(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), "", t0); err == nil {
		t.Fatal("missing certificate files were accepted")
	}
	e := newEnv(t)
	for _, cfg := range []Config{{TLSCert: "a.crt"}, {Plaintext: true, TLSCert: "a", TLSKey: "b"}, {ClientExpiry: 10}} {
		if _, err := New(e.b, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestServeAfterShutdownAndTwice(t *testing.T) {
	e := newEnv(t)
	s, err := New(e.b, Config{Plaintext: true, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err != nil {
		t.Fatalf("serve after shutdown: %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener is still open")
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if err := e.s.Serve(ln2); !errors.Is(err, ErrServed) {
		t.Fatalf("second serve: %v, want ErrServed", err)
	}
}

// TestTLSGenerationCutShortIsRedone: a crash after the key was written and
// before the certificate (the key goes first) leaves only the key; the
// next start generates a pair that loads instead of refusing to start.
func TestTLSGenerationCutShortIsRedone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFileName), []byte("-----BEGIN PRIVATE KEY-----\ntruncat"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateCert("", "", dir, t0); err != nil {
		t.Fatalf("start after an unfinished generation: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)); err != nil {
		t.Fatalf("the regenerated pair does not load: %v", err)
	}
}

// TestTLSGetCertificateServesTheCurrentCertificate: with GetCertificate
// the front asks it on every handshake, so a new connection after a swap
// (a tlsx.Server's Reload) gets the new certificate; one certificate
// source excludes the others.
func TestTLSGetCertificateServesTheCurrentCertificate(t *testing.T) {
	dir := t.TempDir()
	load := func() *tls.Certificate {
		t.Helper()
		f, _ := tlsxtest.Files(t, dir) // a new serial on each call
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	var cur atomic.Pointer[tls.Certificate]
	cur.Store(load())
	e := newEnv(t, func(o *envOptions) {
		o.front = func(c *Config) {
			c.Plaintext = false
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cur.Load(), nil }
		}
	})
	served := func() *big.Int {
		t.Helper()
		conn, err := tls.Dial("tcp", e.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatalf("TLS handshake with the front: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	first := cur.Load().Leaf.SerialNumber
	if got := served(); got.Cmp(first) != 0 {
		t.Fatalf("served serial %v, want the current certificate's %v", got, first)
	}
	cur.Store(load())
	second := cur.Load().Leaf.SerialNumber
	if second.Cmp(first) == 0 {
		t.Fatal("the test's two certificates have one serial")
	}
	if got := served(); got.Cmp(second) != 0 {
		t.Fatalf("after the swap a new connection got serial %v, want the new certificate's %v (the old was %v)", got, second, first)
	}

	// Still a working gRPC endpoint.
	routeOverTLS(t, e, "route over TLS with GetCertificate")

	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cur.Load(), nil }
	for _, cfg := range []Config{{GetCertificate: get, TLSCert: "a", TLSKey: "b"}, {GetCertificate: get, Plaintext: true}} {
		if _, err := New(e.b, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("GetCertificate with TLSCert %q / plaintext %v: %v, want ErrConfig", cfg.TLSCert, cfg.Plaintext, err)
		}
	}
}

// routeOverTLS creates topic T1 and asks the front for its route over
// TLS (not verifying the certificate); what names the step on failure.
func routeOverTLS(t *testing.T, e *env, what string) {
	t.Helper()
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	e.createTopic("T1", 1)
	resp, err := v2.NewMessagingServiceClient(conn).QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"}})
	if err != nil || code(resp.Status) != v2.Code_OK {
		t.Fatalf("%s: %v %v", what, resp, err)
	}
}
