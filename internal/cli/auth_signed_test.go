package cli

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

// Tests with the real signer (authwire.Signer), guard and TLS dialer
// (tlsx.ClientConfig, DialNetwork) and listeners.

func TestSignedCLISignsEveryRequest(t *testing.T) {
	fc := startFakeCluster(t, func(r seenReq) (int16, string, []byte) {
		if r.code == rmq.CodeGetAllTopicConfig {
			return 0, "", []byte(`{"topicConfigTable":{}}`)
		}
		return 0, "", nil
	}, "broker-a", "broker-b")
	cfg := Config{AccessKey: "admin", SecretKey: "s3cret"}
	fc.must(cfg, func(c *CLI) error { return c.UserCreate(bg, UserSpec{Name: "alice", Secret: "pw", Type: "super"}) })
	fc.must(cfg, func(c *CLI) error {
		return c.AclCreate(bg, AclSpec{Subject: "alice", Resources: []string{"Topic:a"}, Actions: []string{"Pub"}, Decision: "allow"})
	})
	fc.must(cfg, func(c *CLI) error { return c.AclDelete(bg, "alice", nil, "", "") })
	fc.must(cfg, func(c *CLI) error { return c.TopicList(bg, true) })
	rs := fc.allRequests()
	if len(rs) < 10 {
		t.Fatalf("only %d requests", len(rs))
	}
	for _, r := range rs {
		wantSigned(t, r, "admin", "s3cret")
	}
	if len(fc.ns.requests()) == 0 {
		t.Fatal("the name server was not asked")
	}
}

func TestNoPermissionWithCredentialsNamesTheUser(t *testing.T) {
	const msg = `user "bob" may not Create on Cluster (no policy allows it)`
	fc := startFakeCluster(t, func(seenReq) (int16, string, []byte) { return rmq.RespNoPermission, msg, nil }, "broker-a")
	_, err := fc.run(Config{AccessKey: "bob", SecretKey: "pw"}, func(c *CLI) error {
		return c.UserCreate(bg, UserSpec{Name: "x", Secret: "y"})
	})
	wantErr(t, err, ErrRefused, msg, `user "bob"`, "petrel acl get --subject User:bob")
	if strings.Contains(err.Error(), credentialsHint) {
		t.Fatalf("error %q tells a signed CLI to pass credentials", err)
	}
}

func TestTLSDialsVerifiesAndExplainsMismatches(t *testing.T) {
	srvCfg, caFile := serverTLS(t)
	wrap := func(ln net.Listener) net.Listener { return tls.NewListener(ln, srvCfg) }
	fc := startFakeClusterOn(t, wrap, nil, "broker-a")
	verified, err := TLSConfig(false, caFile, false) // --tls-ca implies --tls
	if err != nil || verified == nil {
		t.Fatalf("TLSConfig with a CA: %v, %v", verified, err)
	}
	fc.must(Config{TLS: verified}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
	if len(fc.brokers[0].only(rmq.CodeAuthDeleteUser)) != 1 {
		t.Fatal("the delete did not reach the TLS broker")
	}
	insecure, err := TLSConfig(false, "", true)
	if err != nil {
		t.Fatal(err)
	}
	fc.must(Config{TLS: insecure}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })

	system, err := TLSConfig(true, "", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fc.run(Config{TLS: system}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
	wantErr(t, err, ErrUnreachable, "--tls-ca", "--tls-insecure")

	plain := startFakeCluster(t, nil, "broker-a")
	_, err = plain.run(Config{TLS: insecure}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
	wantErr(t, err, ErrUnreachable, "drop --tls")
}

// TestTheBrokersGuardAcceptsTheCLIsSignature: against authwire's guard
// (the broker's), a CLI with a super user's credentials gets through; a
// wrong secret and no credentials are refused with the server's message
// and the matching hint.
func TestTheBrokersGuardAcceptsTheCLIsSignature(t *testing.T) {
	checker := auth.NewChecker(auth.Static(
		auth.User{Name: "admin", Secret: "s3cret", Type: auth.Super, Status: auth.Enabled},
	), auth.CheckerOptions{})
	guard := authwire.Guard(authwire.Options{Checker: checker, Role: authwire.Broker, Cluster: "DefaultCluster"})
	b := startGuardedFake(t, "broker-a", func(r seenReq) (int16, string, []byte) {
		return 0, "", []byte(`[{"username":"admin","userType":"Super","userStatus":"enable"}]`)
	}, nil, guard)
	run := func(cfg Config) (string, error) {
		var out strings.Builder
		cfg.Out, cfg.NameServers = &out, []string{"127.0.0.1:1"}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.UserList(bg, "", b.addr)
		return out.String(), err
	}
	out, err := run(Config{AccessKey: "admin", SecretKey: "s3cret"})
	if err != nil || !strings.Contains(out, "admin") {
		t.Fatalf("signed list: %v\n%s", err, out)
	}
	_, err = run(Config{})
	wantErr(t, err, ErrRefused, "code 16", "not signed", credentialsHint)
	_, err = run(Config{AccessKey: "admin", SecretKey: "wrong"})
	wantErr(t, err, ErrRefused, "code 16", `"admin"`, "does not match")
	if strings.Contains(err.Error(), "acl get") {
		t.Fatalf("an authentication failure points at policies: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("a refusal shows a secret: %v", err)
	}
	if n := len(b.requests()); n != 1 {
		t.Fatalf("the handler saw %d requests, want only the signed one", n)
	}
}

// TestTLSModesOfPetrelsListeners: against tlsx's enforcing listener a
// plaintext CLI is told to pass --tls and a CLI with the CA gets through;
// a permissive one takes both.
func TestTLSModesOfPetrelsListeners(t *testing.T) {
	files, ca := tlsxtest.Files(t, t.TempDir())
	srv, err := tlsx.NewServer(files)
	if err != nil {
		t.Fatal(err)
	}
	verified, err := TLSConfig(false, ca, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []tlsx.Mode{tlsx.Enforcing, tlsx.Permissive} {
		fc := startFakeClusterOn(t, func(ln net.Listener) net.Listener { return srv.Listener(ln, mode) }, nil, "broker-a")
		_, err := fc.run(Config{}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
		if mode == tlsx.Enforcing {
			wantErr(t, err, ErrUnreachable, "--tls-mode enforcing", "pass --tls")
		} else if err != nil {
			t.Fatalf("plaintext against permissive: %v", err)
		}
		fc.must(Config{TLS: verified}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
		if n := len(fc.brokers[0].only(rmq.CodeAuthDeleteUser)); mode == tlsx.Enforcing && n != 1 || mode == tlsx.Permissive && n != 2 {
			t.Fatalf("%s: %d deletes reached the broker", mode, n)
		}
	}
}
