package tlsx_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

const codeEcho int16 = 1234

func echo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.CodeSuccess, req.Ext("i"))
	resp.Body = req.Body
	return resp
}

func newServer(t *testing.T, f tlsx.Files) *tlsx.Server {
	t.Helper()
	s, err := tlsx.NewServer(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serveRemoting serves echo on 127.0.0.1 through s's listener in mode.
func serveRemoting(t *testing.T, s *tlsx.Server, mode tlsx.Mode) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := remoting.NewServer(remoting.ServerOptions{})
	rs.Handle(codeEcho, echo)
	served := make(chan error, 1)
	go func() { served <- rs.Serve(s.Listener(ln, mode)) }()
	t.Cleanup(func() {
		if err := rs.Close(); err != nil {
			t.Errorf("remoting Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func plainClient(t *testing.T) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func tlsClient(t *testing.T, cfg *tls.Config) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Network: tlsx.DialNetwork(netx.TCP, cfg)})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func caConfig(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func invoke(cl *remoting.Client, addr, i string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, map[string]string{"i": i}, []byte("b"+i)))
	if err != nil {
		return err
	}
	if resp.Code != remoting.CodeSuccess || resp.Remark != i || string(resp.Body) != "b"+i {
		return errors.New("wrong echo: " + resp.Remark)
	}
	return nil
}

// refusedQuickly checks that a refused call fails by the connection
// closing, well before its 10 s deadline.
func refusedQuickly(t *testing.T, what string, cl *remoting.Client, addr string) {
	t.Helper()
	start := time.Now()
	err := invoke(cl, addr, "x")
	if err == nil {
		t.Fatalf("%s: the call was answered, want it refused", what)
	}
	if errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("%s: refused after %v (%v), want the connection closed at once", what, time.Since(start), err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []tlsx.Mode{tlsx.Disabled, tlsx.Permissive, tlsx.Enforcing} {
		if got, err := tlsx.ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	_, err := tlsx.ParseMode("strict")
	if err == nil || !strings.Contains(err.Error(), `"strict"`) || !strings.Contains(err.Error(), "disabled, permissive") || !strings.Contains(err.Error(), "enforcing") {
		t.Fatalf("ParseMode(strict): %v, want an error naming the value and the choices", err)
	}
}

// TestModesWithRemoting: disabled serves plaintext only, permissive
// plaintext and TLS on the same port, enforcing TLS only, refusing a
// plaintext client by closing its connection at once, counted.
func TestModesWithRemoting(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	for _, tc := range []struct {
		mode         tlsx.Mode
		plain, tlsOK bool
	}{
		{tlsx.Disabled, true, false},
		{tlsx.Permissive, true, true},
		{tlsx.Enforcing, false, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			s := newServer(t, f)
			refused := make(chan net.Addr, 1)
			s.OnPlaintextRefused(func(a net.Addr) { refused <- a })
			addr := serveRemoting(t, s, tc.mode)
			plain, secure := plainClient(t), tlsClient(t, caConfig(t, ca))
			for i := range 3 { // several requests on one connection each
				n := string(rune('0' + i))
				if tc.plain {
					if err := invoke(plain, addr, n); err != nil {
						t.Fatalf("plaintext client: %v", err)
					}
				}
				if tc.tlsOK {
					if err := invoke(secure, addr, n); err != nil {
						t.Fatalf("TLS client: %v", err)
					}
				}
			}
			if !tc.plain {
				refusedQuickly(t, "plaintext client", plain, addr)
			}
			if !tc.tlsOK {
				refusedQuickly(t, "TLS client", secure, addr)
			}
			c := s.Counts()
			switch tc.mode {
			case tlsx.Enforcing:
				if c.PlaintextRefused != 1 {
					t.Fatalf("Counts = %+v, want one plaintext connection refused", c)
				}
				select {
				case a := <-refused:
					if !strings.HasPrefix(a.String(), "127.0.0.1:") {
						t.Fatalf("refused remote %v", a)
					}
				default:
					t.Fatal("OnPlaintextRefused was not called")
				}
			case tlsx.Permissive:
				if c.PlaintextAccepted != 1 || c.PlaintextRefused != 0 {
					t.Fatalf("Counts = %+v, want one plaintext connection accepted", c)
				}
			}
		})
	}
}

// TestModesWithHTTP: the listeners serve net/http too: https in both
// modes, http on the same port in permissive mode only.
func TestModesWithHTTP(t *testing.T) {
	dir := t.TempDir()
	f, ca := tlsxtest.Files(t, dir)
	s := newServer(t, f)
	get := func(cl *http.Client, url string) error {
		resp, err := cl.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || string(b) != "ok" {
			return errors.New("unexpected answer " + resp.Status + " " + string(b))
		}
		if (resp.TLS != nil) != strings.HasPrefix(url, "https:") {
			return errors.New("the answer came over the wrong protocol")
		}
		return nil
	}
	plain := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: tlsxtest.Pool(t, ca)}}}
	for _, mode := range []tlsx.Mode{tlsx.Permissive, tlsx.Enforcing} {
		t.Run(string(mode), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok")
			}), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(tWriter{t}, "", 0)}
			done := make(chan error, 1)
			go func() { done <- hs.Serve(s.Listener(ln, mode)) }()
			defer func() {
				hs.Close()
				if err := <-done; !errors.Is(err, http.ErrServerClosed) {
					t.Errorf("Serve: %v", err)
				}
			}()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			if err := get(secure, "https://localhost:"+port+"/"); err != nil {
				t.Fatalf("https: %v", err)
			}
			start := time.Now()
			err = get(plain, "http://127.0.0.1:"+port+"/")
			if mode == tlsx.Permissive && err != nil {
				t.Fatalf("http on the permissive port: %v", err)
			}
			if mode == tlsx.Enforcing && (err == nil || time.Since(start) > 5*time.Second) {
				t.Fatalf("http on the enforcing port: %v after %v, want refused at once", err, time.Since(start))
			}
		})
	}
}

// tWriter sends the HTTP server's log to the test's.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
