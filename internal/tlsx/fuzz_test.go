package tlsx

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// memConn serves bytes to Read and swallows what is written.
type memConn struct {
	r *bytes.Reader
}

func (c *memConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzSniff: whatever a peer sends to a permissive listener, a first
// byte other than 0x16 makes it plaintext with every byte given back in
// order, and 0x16 hands it to the TLS server, which fails on what is not
// a handshake it can complete; either way reading ends (no hang, no
// panic). The guard of enforcing listeners refuses exactly the
// non-0x16 first bytes.
func FuzzSniff(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x16})
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5})
	f.Add([]byte{0, 0, 0, 0x20, 0, 0, 0, 0x10, '{', '}'}) // a RocketMQ frame's start
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("no certificate in the fuzz test")
	}}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Server{}
		c := newSniffConn(&memConn{r: bytes.NewReader(data)}, s, cfg)
		got, err := io.ReadAll(c)
		switch {
		case len(data) == 0:
			if err != nil || len(got) != 0 {
				t.Fatalf("empty input: %q, %v", got, err)
			}
		case data[0] != recordTypeHandshake:
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("plaintext came out as %q, %v; want %q", got, err, data)
			}
			if _, ok := c.ConnectionState(); ok || s.Counts().PlaintextAccepted != 1 {
				t.Fatal("plaintext connection taken for TLS or not counted")
			}
		default:
			// The TLS server fails, or ends at the input's end (a clean
			// EOF between records): it never yields bytes.
			if len(got) != 0 {
				t.Fatalf("a TLS record without a handshake read %q, %v", got, err)
			}
			if _, ok := c.ConnectionState(); !ok {
				t.Fatal("a connection opening with 0x16 was not handed to TLS")
			}
		}

		g := &guardConn{Conn: &memConn{r: bytes.NewReader(data)}, s: s}
		buf := make([]byte, 8)
		n, err := g.Read(buf)
		refused := errors.Is(err, ErrPlaintextRefused)
		if len(data) > 0 && refused != (data[0] != recordTypeHandshake) {
			t.Fatalf("guard on first byte %#x: refused=%v", data[0], refused)
		}
		if !refused && len(data) > 0 && !bytes.Equal(buf[:n], data[:n]) {
			t.Fatalf("guard changed the bytes: %q", buf[:n])
		}
	})
}
