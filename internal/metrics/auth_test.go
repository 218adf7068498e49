package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BasicAuth: the probes answer without credentials, /metrics wants
// credentials allow accepts (401 with a Basic challenge otherwise), and
// the refusal counter exists at zero for every protocol and reason and
// counts what AuthRefused is told.
func TestBasicAuthAndRefusalCounter(t *testing.T) {
	m := New(Options{})
	h := BasicAuth(m.Handler(), func(r *http.Request, user, secret string) bool {
		return user == "admin" && secret == "s3cret" && r.RemoteAddr != ""
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(path, user, secret string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, secret)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if resp, _ := do(p, "", ""); resp.StatusCode != 200 {
			t.Errorf("%s without credentials: %d, want the open probe", p, resp.StatusCode)
		}
	}
	for _, cred := range [][2]string{{"", ""}, {"admin", "wrong"}, {"eve", "s3cret"}} {
		resp, body := do("/metrics", cred[0], cred[1])
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("/metrics as %q: %d %q, want 401 with a Basic challenge", cred[0], resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if strings.Contains(body, "petrel_") {
			t.Errorf("/metrics as %q leaked series: %q", cred[0], body)
		}
	}
	m.AuthRefused("remoting", "unsigned")
	m.AuthRefused("remoting", "unsigned")
	m.AuthRefused("grpc", "forbidden")
	resp, body := do("/metrics", "admin", "s3cret")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics as admin: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`petrel_auth_refusals_total{protocol="remoting",reason="unsigned"} 2`,
		`petrel_auth_refusals_total{protocol="grpc",reason="forbidden"} 1`,
		`petrel_auth_refusals_total{protocol="http",reason="bad-signature"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
