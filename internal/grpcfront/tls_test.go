package grpcfront

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
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
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	e.createTopic("T1", 1)
	resp, err := v2.NewMessagingServiceClient(conn).QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"}})
	if err != nil || code(resp.Status) != v2.Code_OK {
		t.Fatalf("route over TLS: %v %v", resp, err)
	}
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
