package tlsx_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// TestMutualTLS: with a ClientCA a client without a certificate, or with
// one from another CA, is refused; one with a certificate of the CA is
// served, and so is a Petrel peer dialing with PeerConfig.
func TestMutualTLS(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	f.ClientCA = ca
	tlsxtest.Files(t, other)
	s := newServer(t, f)
	addr := serveRemoting(t, s, tlsx.Enforcing)

	noCert := caConfig(t, ca)
	refusedQuickly(t, "a client without a certificate", tlsClient(t, noCert), addr)

	foreign := caConfig(t, ca)
	foreign.Certificates = []tls.Certificate{tlsxtest.ClientCertificate(t, other)}
	refusedQuickly(t, "a client with another CA's certificate", tlsClient(t, foreign), addr)

	withCert := caConfig(t, ca)
	withCert.Certificates = []tls.Certificate{tlsxtest.ClientCertificate(t, dir)}
	if err := invoke(tlsClient(t, withCert), addr, "1"); err != nil {
		t.Fatalf("a client with the CA's certificate: %v", err)
	}

	peer := newServer(t, f) // another process with the same files
	if err := invoke(tlsClient(t, peer.PeerConfig()), addr, "2"); err != nil {
		t.Fatalf("a peer dialing with PeerConfig: %v", err)
	}
	if c := peer.PeerConfig(); c.InsecureSkipVerify || c.RootCAs == nil {
		t.Fatal("PeerConfig with a ClientCA does not verify the peer against it")
	}
	// A peer from a cluster with another CA is refused, and refuses.
	of, oca := tlsxtest.Files(t, other)
	of.ClientCA = oca
	stranger := newServer(t, of)
	refusedQuickly(t, "a peer of another CA", tlsClient(t, stranger.PeerConfig()), addr)
}

// TestPeerConfigWithoutClientCA: without a CA a peer link is encrypted
// and does not verify (the server certificate may be self-signed), and
// still presents the certificate.
func TestPeerConfigWithoutClientCA(t *testing.T) {
	dir := t.TempDir()
	f, _ := tlsxtest.Files(t, dir)
	s := newServer(t, f)
	addr := serveRemoting(t, s, tlsx.Enforcing)
	c := s.PeerConfig()
	if !c.InsecureSkipVerify {
		t.Fatal("PeerConfig without a ClientCA verifies against the system roots: test certificates would fail")
	}
	if err := invoke(tlsClient(t, c), addr, "1"); err != nil {
		t.Fatal(err)
	}
}

func servedSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := tlsx.DialNetwork(netx.TCP, cfg).Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	return nc.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
}

// TestReloadSwapsTheCertificate: after Reload new connections get the new
// certificate; a Reload that fails keeps the old one and says which file
// is at fault.
func TestReloadSwapsTheCertificate(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	s := newServer(t, f)
	addr := serveRemoting(t, s, tlsx.Permissive)
	cfg := caConfig(t, ca)
	cl := tlsClient(t, cfg)
	if err := invoke(cl, addr, "1"); err != nil {
		t.Fatal(err)
	}
	first := servedSerial(t, addr, cfg)
	if first.Cmp(s.Leaf().SerialNumber) != 0 {
		t.Fatalf("served serial %v, Leaf %v", first, s.Leaf().SerialNumber)
	}

	tlsxtest.Files(t, dir) // a new certificate in the same files
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	second := servedSerial(t, addr, cfg)
	if second.Cmp(first) == 0 || second.Cmp(s.Leaf().SerialNumber) != 0 {
		t.Fatalf("after Reload the serial is %v (was %v, Leaf %v): want the new certificate", second, first, s.Leaf().SerialNumber)
	}
	if err := invoke(cl, addr, "2"); err != nil { // the open connection goes on
		t.Fatalf("the connection opened before Reload: %v", err)
	}

	if err := os.WriteFile(f.Cert, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Reload()
	if err == nil || !strings.Contains(err.Error(), f.Cert) || !strings.Contains(err.Error(), "stays in use") {
		t.Fatalf("Reload of a broken certificate: %v, want an error naming %s and saying the old one stays", err, f.Cert)
	}
	if got := servedSerial(t, addr, cfg); got.Cmp(second) != 0 {
		t.Fatalf("after a failed Reload the serial is %v, want the previous %v", got, second)
	}
}

// TestReloadSwapsTheClientCA: the mutual TLS pool reloads too.
func TestReloadSwapsTheClientCA(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	_, otherCA := tlsxtest.Files(t, other)
	f.ClientCA = filepath.Join(t.TempDir(), "client-ca.pem")
	copyFile(t, ca, f.ClientCA)
	s := newServer(t, f)
	addr := serveRemoting(t, s, tlsx.Enforcing)
	client := func(d string) *tls.Config {
		c := caConfig(t, ca)
		c.Certificates = []tls.Certificate{tlsxtest.ClientCertificate(t, d)}
		return c
	}
	mine, theirs := client(dir), client(other)
	if err := invoke(tlsClient(t, mine), addr, "1"); err != nil {
		t.Fatal(err)
	}
	refusedQuickly(t, "other CA before the reload", tlsClient(t, theirs), addr)

	copyFile(t, otherCA, f.ClientCA)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := invoke(tlsClient(t, theirs), addr, "2"); err != nil {
		t.Fatalf("the new CA's client after the reload: %v", err)
	}
	refusedQuickly(t, "old CA after the reload", tlsClient(t, mine), addr)
}

// TestSilentPeerBlocksNoOne: peers that connect and send nothing, or
// half a TLS record, do not stop the listener serving others.
func TestSilentPeerBlocksNoOne(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	for _, mode := range []tlsx.Mode{tlsx.Permissive, tlsx.Enforcing} {
		t.Run(string(mode), func(t *testing.T) {
			s := newServer(t, f)
			addr := serveRemoting(t, s, mode)
			for _, first := range [][]byte{nil, {0x16}, {0x16, 0x03}} {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				if _, err := nc.Write(first); err != nil {
					t.Fatal(err)
				}
			}
			if err := invoke(tlsClient(t, caConfig(t, ca)), addr, "1"); err != nil {
				t.Fatalf("TLS client behind silent peers: %v", err)
			}
			if mode == tlsx.Permissive {
				if err := invoke(plainClient(t), addr, "2"); err != nil {
					t.Fatalf("plaintext client behind silent peers: %v", err)
				}
			}
		})
	}
}

// TestListenNetworkOverMem: the wrappers work on any netx.Network.
func TestListenNetworkOverMem(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	s := newServer(t, f)
	mem := netx.NewMem()
	nw := s.ListenNetwork(mem.Host("10.0.0.1"), tlsx.Enforcing)
	ln, err := nw.Listen("10.0.0.1:10911")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	defer ln.Close()
	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: ca, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tlsx.DialNetwork(mem.Host("10.0.0.2"), cfg).Dial(ctx, "10.0.0.1:10911")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo over TLS over netx.Mem: %q, %v", b, err)
	}
	if h := mem.Host("10.0.0.3"); s.ListenNetwork(h, tlsx.Disabled) != h {
		t.Fatal("ListenNetwork(Disabled) wraps the network")
	}
}

// TestDialNetwork: the server name defaults to the dialed host, a
// mismatch or an unknown CA fails the dial with a hint, a plaintext
// server is named as such, and the handshake ends with the dial's ctx,
// closing the connection.
func TestDialNetwork(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	_, otherCA := tlsxtest.Files(t, other)
	s := newServer(t, f)
	addr := serveRemoting(t, s, tlsx.Enforcing)
	_, port, _ := net.SplitHostPort(addr)
	dial := func(cfg *tls.Config, addr string, d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		c, err := tlsx.DialNetwork(nil, cfg).Dial(ctx, addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(caConfig(t, ca), "localhost:"+port, 10*time.Second); err != nil {
		t.Fatalf("dial by name: %v", err)
	}
	if err := dial(caConfig(t, ca), addr, 10*time.Second); err != nil {
		t.Fatalf("dial by address: %v", err)
	}
	named, _ := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: ca, ServerName: "broker.example"})
	var hn x509.HostnameError
	if err := dial(named, addr, 10*time.Second); !errors.As(err, &hn) || !strings.Contains(err.Error(), "not for the address") {
		t.Fatalf("dial with a server name the certificate lacks: %v", err)
	}
	var ua x509.UnknownAuthorityError
	if err := dial(caConfig(t, otherCA), addr, 10*time.Second); !errors.As(err, &ua) || !strings.Contains(err.Error(), "not signed by a CA") {
		t.Fatalf("dial with another CA: %v", err)
	}

	// A plaintext HTTP server and a server that never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	go func() {
		c := <-accepted
		defer c.Close()
		io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\n")
	}()
	if err := dial(caConfig(t, ca), ln.Addr().String(), 10*time.Second); err == nil || !strings.Contains(err.Error(), "does not speak TLS") {
		t.Fatalf("dial of a plaintext server: %v", err)
	}
	start := time.Now()
	err = dial(caConfig(t, ca), ln.Addr().String(), 200*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("dial of a silent server: %v after %v, want the ctx deadline", err, time.Since(start))
	}
	silent := <-accepted
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(silent); err != nil { // the ClientHello, then EOF
		t.Fatalf("the failed dial left its connection open: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name string
		f    tlsx.Files
		want []string
	}{
		{"no files", tlsx.Files{}, []string{"certificate file and its key"}},
		{"missing cert", tlsx.Files{Cert: missing, Key: f.Key}, []string{missing, "PEM certificate"}},
		{"missing key", tlsx.Files{Cert: f.Cert, Key: missing}, []string{missing, "private key"}},
		{"swapped", tlsx.Files{Cert: f.Key, Key: f.Cert}, []string{f.Key, "no PEM CERTIFICATE"}},
		{"key of another", tlsx.Files{Cert: f.Cert, Key: filepath.Join(dir, tlsxtest.CAKeyFile)}, []string{f.Cert, "do not make a pair"}},
		{"missing CA", tlsx.Files{Cert: f.Cert, Key: f.Key, ClientCA: missing}, []string{missing, "client CA"}},
		{"CA not PEM", tlsx.Files{Cert: f.Cert, Key: f.Key, ClientCA: f.Key}, []string{f.Key, "no PEM certificate"}},
	} {
		_, err := tlsx.NewServer(tc.f)
		if err == nil {
			t.Errorf("%s: NewServer succeeded", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", tc.name, err, w)
			}
		}
	}
	if _, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: ca, Insecure: true}); err == nil {
		t.Error("ClientConfig with a CA and insecure: no error")
	}
	if _, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ClientConfig with a missing CA: %v", err)
	}
	c, err := tlsx.ClientConfig(tlsx.ClientOptions{Insecure: true})
	if err != nil || !c.InsecureSkipVerify || c.MinVersion != tls.VersionTLS12 {
		t.Errorf("ClientConfig(Insecure): %+v, %v", c, err)
	}
	s := newServer(t, f)
	if sc := s.Config(); sc.MinVersion != tls.VersionTLS12 || sc.ClientAuth != tls.NoClientCert {
		t.Errorf("Config without a ClientCA: MinVersion %x ClientAuth %v", sc.MinVersion, sc.ClientAuth)
	}
	f.ClientCA = ca
	if sc := newServer(t, f).Config(); sc.ClientAuth != tls.RequireAndVerifyClientCert || sc.ClientCAs == nil {
		t.Errorf("Config with a ClientCA: ClientAuth %v", sc.ClientAuth)
	}
}
