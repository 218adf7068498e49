package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// startMux serves a remoting echo of CodeGroups and a raft-side echo that
// upper-cases 5 bytes, both on one 127.0.0.1 port.
func startMux(t *testing.T, cfg MuxConfig) *Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMux(ln, cfg)
	srv := remoting.NewServer(remoting.ServerOptions{})
	srv.Handle(api.CodeGroups, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, 0, "")
		resp.Body = append([]byte("echo:"), req.Body...)
		return resp
	})
	go srv.Serve(m.Listener())
	go func() {
		for {
			c, err := m.RaftStream().Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 5)
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				for i := range b {
					b[i] -= 'a' - 'A'
				}
				c.Write(b)
			}()
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	return m
}

func raftEcho(t *testing.T, m *Mux, addr string) {
	t.Helper()
	c, err := m.RaftStream().Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatalf("raft dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("raft read: %v", err)
	}
	// The magic was consumed by the mux: the raft side saw only "hello".
	if string(b) != "HELLO" {
		t.Fatalf("raft side answered %q, want HELLO", b)
	}
}

func remotingEcho(t *testing.T, nw netx.Network, addr string) error {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Network: nw, DialTimeout: 5 * time.Second})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(api.CodeGroups, nil, []byte("x")))
	if err != nil {
		return err
	}
	if string(resp.Body) != "echo:x" {
		t.Fatalf("remoting answer %q, want echo:x", resp.Body)
	}
	return nil
}

func TestMuxRoutesRaftAndRemotingOnOnePort(t *testing.T) {
	m := startMux(t, MuxConfig{})
	addr := m.Addr().String()
	// A probe that connects and closes disturbs nothing.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
	}
	raftEcho(t, m, addr)
	if err := remotingEcho(t, nil, addr); err != nil {
		t.Fatalf("remoting through the mux: %v", err)
	}
	raftEcho(t, m, addr)
	if got := m.RaftStream().Addr().String(); got != addr {
		t.Fatalf("raft stream Addr %s, want the advertised %s", got, addr)
	}
}

func TestMuxServesRaftAndRemotingOverTLS(t *testing.T) {
	cfg := selfSignedTLS(t)
	m := startMux(t, MuxConfig{TLS: cfg})
	addr := m.Addr().String()
	raftEcho(t, m, addr)
	if err := remotingEcho(t, TLSNetwork(nil, cfg), addr); err != nil {
		t.Fatalf("remoting over TLS: %v", err)
	}
	// A plaintext client gets nothing through.
	if err := remotingEcho(t, nil, addr); err == nil {
		t.Fatal("a plaintext remoting client was served by a TLS controller port")
	}
}

func TestMuxBoundsUnclassifiedConnections(t *testing.T) {
	m := startMux(t, MuxConfig{MaxPending: 1, PeekTimeout: 300 * time.Millisecond})
	addr := m.Addr().String()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Let the silent connection take the one slot: its write of one byte
	// (not a whole head) cannot be classified yet.
	if _, err := silent.Write([]byte("P")); err != nil {
		t.Fatal(err)
	}
	await(t, "the silent connection holds the slot", func() bool { return len(m.pending) == 1 })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("a connection beyond MaxPending: read %v, want it closed", err)
	}
	// The silent one is closed at its peek timeout, freeing the slot.
	silent.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("a connection silent past the peek timeout: read %v, want it closed", err)
	}
	await(t, "the slot is free", func() bool { return len(m.pending) == 0 })
	raftEcho(t, m, addr)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// selfSignedTLS is a config that serves and trusts one certificate for
// 127.0.0.1.
func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "petrel controller test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}
