package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// withSecurity is the sample history with a Security line after its
// first line, as a run with on writes it.
func withSecurity(on ...string) []history.Op {
	ops := sampleHistory()
	op := history.New(history.Info, history.Security)
	op.Process, op.Value, op.Time = "verify", history.SecurityValue(on, "as normal user verify-client"), ops[0].Time
	return append([]history.Op{ops[0], op}, ops[1:]...)
}

// TestSecurityInEveryReport: a run with --auth --tls says so in its JSON
// (auth, tls, security), text and HTML; a run with neither has none of
// it (its JSON is the golden one, TestJSONGolden).
func TestSecurityInEveryReport(t *testing.T) {
	s := Build(withSecurity(history.SecurityAuth, history.SecurityTLS), sampleFindings())
	if !s.Auth || !s.TLS || s.SecurityDetail != "as normal user verify-client" {
		t.Fatalf("summary auth %v tls %v detail %q", s.Auth, s.TLS, s.SecurityDetail)
	}
	var buf bytes.Buffer
	if err := JSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Auth     *bool   `json:"auth"`
		TLS      *bool   `json:"tls"`
		Security *string `json:"security"`
	}
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Auth == nil || !*m.Auth || m.TLS == nil || !*m.TLS || m.Security == nil || *m.Security != s.SecurityDetail {
		t.Fatalf("JSON auth %v tls %v security %v:\n%s", m.Auth, m.TLS, m.Security, buf.String())
	}
	buf.Reset()
	if err := Text(&buf, s); err != nil {
		t.Fatal(err)
	}
	if want := "\nsecurity: auth on, tls on (as normal user verify-client)\nduration: "; !strings.Contains(buf.String(), want) {
		t.Fatalf("text lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	if err := HTML(&buf, withSecurity(history.SecurityAuth, history.SecurityTLS), s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "security: auth on, tls on (as normal user verify-client)") {
		t.Fatal("the HTML report does not say that auth and TLS were on")
	}

	tlsOnly := Build(withSecurity(history.SecurityTLS), sampleFindings())
	if tlsOnly.Auth || !tlsOnly.TLS {
		t.Fatalf("TLS only: auth %v tls %v", tlsOnly.Auth, tlsOnly.TLS)
	}
	buf.Reset()
	if err := JSON(&buf, tlsOnly); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"auth"`) || !strings.Contains(buf.String(), `"tls": true`) {
		t.Fatalf("TLS only JSON:\n%s", buf.String())
	}

	plain := Build(sampleHistory(), sampleFindings())
	for _, out := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return JSON(b, plain) },
		func(b *bytes.Buffer) error { return Text(b, plain) },
		func(b *bytes.Buffer) error { return HTML(b, sampleHistory(), plain) },
	} {
		buf.Reset()
		if err := out(&buf); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`"auth"`, `"tls"`, "security:"} {
			if strings.Contains(buf.String(), bad) {
				t.Errorf("a run without auth and TLS writes %q", bad)
			}
		}
	}
}

func TestParseSecurityValue(t *testing.T) {
	on, detail := history.ParseSecurityValue(history.SecurityValue([]string{"auth", "tls"}, "a: b"))
	if strings.Join(on, ",") != "auth,tls" || detail != "a: b" {
		t.Fatalf("on %v detail %q", on, detail)
	}
	if on, _ := history.ParseSecurityValue(""); on != nil {
		t.Fatalf("empty value: %v", on)
	}
}
