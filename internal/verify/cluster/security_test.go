package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSecurityArgsOnEveryProcess: with auth and TLS every process of
// every kind of topology gets --auth, the init user's file and the TLS
// flags, before Options.Args (so those still win); the zero Security adds
// nothing, the command lines stay those of a run without it.
func TestSecurityArgsOnEveryProcess(t *testing.T) {
	sec := Security{AdminUser: "verify-admin", AdminSecret: "s3cret", TLS: &CertFiles{CA: "/x/ca.pem", Cert: "/x/server.pem", Key: "/x/server-key.pem"}}
	for _, spec := range []string{"single", "groups=2,replicas=2,namesrv=2", "replicas=2,namesrv=2,controllers=1"} {
		top, err := ParseTopology(spec)
		if err != nil {
			t.Fatal(err)
		}
		plain := laidOut(t, top, Options{Args: []string{"--transaction-timeout", "2s"}})
		secure := laidOut(t, top, Options{Args: []string{"--transaction-timeout", "2s"}, Security: sec})
		if len(plain.procs) != len(secure.procs) {
			t.Fatalf("%s: %d processes without security, %d with", spec, len(plain.procs), len(secure.procs))
		}
		for i, p := range secure.procs {
			a := p.args
			for _, f := range []string{"--auth-init-user", "--tls-mode", "--tls-cert", "--tls-key", "--auth"} {
				if slices.Contains(plain.procs[i].args, f) {
					t.Errorf("%s: %s without Security has %s: %q", spec, p.info.Name, f, plain.procs[i].args)
				}
			}
			if !slices.Contains(a, "--auth") {
				t.Errorf("%s: %s has no --auth: %q", spec, p.info.Name, a)
			}
			if f, _ := argValue(a, "--auth-init-user-file"); f != filepath.Join(secure.opts.Dir, initUserFile) {
				t.Errorf("%s: %s --auth-init-user-file %q", spec, p.info.Name, f)
			}
			if m, _ := argValue(a, "--tls-mode"); m != "enforcing" {
				t.Errorf("%s: %s --tls-mode %q, want enforcing", spec, p.info.Name, m)
			}
			if c, _ := argValue(a, "--tls-cert"); c != sec.TLS.Cert {
				t.Errorf("%s: %s --tls-cert %q", spec, p.info.Name, c)
			}
			if k, _ := argValue(a, "--tls-key"); k != sec.TLS.Key {
				t.Errorf("%s: %s --tls-key %q", spec, p.info.Name, k)
			}
			if strings.Contains(strings.Join(a, " "), sec.AdminSecret) {
				t.Errorf("%s: %s carries the admin's secret on its command line: %q", spec, p.info.Name, a)
			}
			if p.info.Role != RoleNamesrv {
				// Options.Args come after, so they override.
				if slices.Index(a, "--transaction-timeout") < slices.Index(a, "--tls-key") {
					t.Errorf("%s: %s: Options.Args before the security flags: %q", spec, p.info.Name, a)
				}
			}
			// The rest of the command line is the one without security.
			rest := slices.DeleteFunc(slices.Clone(a), func(s string) bool {
				return slices.Contains(sec.args(secure.opts.Dir), s)
			})
			want := slices.Clone(plain.procs[i].args)
			if !sameShape(rest, want) {
				t.Errorf("%s: %s without the security flags %q; without Security %q", spec, p.info.Name, rest, want)
			}
		}
	}
}

// sameShape compares two command lines flag by flag, ignoring the values
// that are addresses or paths (each layout picks its own ports and dirs).
func sameShape(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.HasPrefix(a[i], "-") || strings.HasPrefix(b[i], "-") || !strings.ContainsAny(a[i]+b[i], ":/") {
			if a[i] != b[i] {
				return false
			}
		}
	}
	return true
}

func TestSecurityArgs(t *testing.T) {
	if got := (Security{}).args("/d"); got != nil {
		t.Fatalf("zero Security adds %q", got)
	}
	got := Security{AdminUser: "a", AdminSecret: "b"}.args("/d")
	if strings.Join(got, " ") != "--auth --auth-init-user-file /d/auth-init-user" {
		t.Fatalf("auth only: %q", got)
	}
	got = Security{TLS: &CertFiles{CA: "c", Cert: "s", Key: "k"}}.args("/d")
	if strings.Join(got, " ") != "--tls-mode enforcing --tls-cert s --tls-key k" {
		t.Fatalf("TLS only: %q", got)
	}
}

func TestSecurityRefusesWhatCannotRun(t *testing.T) {
	for _, s := range []Security{
		{AdminUser: "a"},                     // no secret
		{AdminUser: "a:b", AdminSecret: "c"}, // the file's separator in the name
		{AdminUser: "a", AdminSecret: "b\nc"},
		{TLS: &CertFiles{Cert: "c", Key: "k"}}, // no CA for the clients
	} {
		if err := s.check(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (Security{AdminUser: "a", AdminSecret: "b", TLS: &CertFiles{CA: "x", Cert: "c", Key: "k"}}).check(); err != nil {
		t.Fatal(err)
	}
}

// TestInitUserFile: the file holds NAME:SECRET and a newline, mode 0600
// (the daemon refuses a looser one), even over an older file.
func TestInitUserFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, initUserFile)
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Security{AdminUser: "verify-admin", AdminSecret: "xyz"}).writeInitUser(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "verify-admin:xyz\n" {
		t.Fatalf("init user file %q", b)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	other := t.TempDir()
	if err := (Security{}).writeInitUser(other); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, initUserFile)); !os.IsNotExist(err) {
		t.Fatalf("without auth a file was written: %v", err)
	}
}

// TestGeneratedCertsServeLoopbackTLS: the server certificate chains to
// the CA for 127.0.0.1 and localhost, a client trusting only the CA
// completes a handshake with it, and one trusting nothing does not.
func TestGeneratedCertsServeLoopbackTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	f, err := GenerateCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(f.Key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, want 0600", st.Mode().Perm())
	}
	pool, err := f.CertPool()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Cert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("server.pem holds no PEM block")
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: pool}); err == nil {
		t.Error("the certificate verifies for example.com")
	}

	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	get := func(cfg *tls.Config) error {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer c.CloseIdleConnections()
		resp, err := c.Get(srv.URL)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(&tls.Config{RootCAs: pool}); err != nil {
		t.Fatalf("a client of the CA: %v", err)
	}
	if err := get(&tls.Config{RootCAs: x509.NewCertPool()}); err == nil {
		t.Fatal("a client trusting nothing completed the handshake")
	}
}

// TestProbesUseTheSecurity: with TLS and auth, the readiness probe and
// the metrics read go over HTTPS verified against the CA, with the
// admin's Basic credentials.
func TestProbesUseTheSecurity(t *testing.T) {
	f, err := GenerateCerts(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	sec := Security{AdminUser: "verify-admin", AdminSecret: "pw", TLS: &f}
	var authOK, authBad int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "verify-admin" || p != "pw" {
			authBad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		authOK++
		w.Write([]byte(inSyncSeries + `{slave="1"} 1` + "\n"))
	}))
	srv.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	cfg, err := sec.clientTLS()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{opts: Options{Security: sec}, http: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}
	p := &proc{info: Process{Name: "b", HTTP: ln.Addr().String()}}
	probe, what := c.readyProbe(p)
	if what != "/readyz" {
		t.Fatalf("probe %q", what)
	}
	if ok, why := probe(context.Background()); !ok {
		t.Fatalf("readyz over TLS with auth: %s", why)
	}
	in, err := c.inSync(context.Background(), sec.httpScheme()+"://"+ln.Addr().String()+"/metrics")
	if err != nil || !in["1"] {
		t.Fatalf("metrics over TLS with auth: %v %v", in, err)
	}
	if authOK != 2 || authBad != 0 {
		t.Fatalf("%d requests with the admin's credentials, %d without; want 2 and 0", authOK, authBad)
	}
	// Without the credentials the same server says no: the probe saw
	// the refusal, not a success.
	c.opts.Security.AdminUser = ""
	if ok, _ := probe(context.Background()); ok {
		t.Fatal("a probe without credentials passed")
	}
}
