package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func TestResolveCredentialsFlagWinsOverEnvAndPairsAreChecked(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	both := env(map[string]string{AccessKeyEnv: "env-ak", SecretKeyEnv: "env-sk"})
	for _, tc := range []struct {
		name, ak, sk   string
		getenv         func(string) string
		wantAK, wantSK string
		usage          string
	}{
		{name: "none", getenv: env(nil)},
		{name: "flags", ak: "a", sk: "s", getenv: env(nil), wantAK: "a", wantSK: "s"},
		{name: "env", getenv: both, wantAK: "env-ak", wantSK: "env-sk"},
		{name: "flags win", ak: "a", sk: "s", getenv: both, wantAK: "a", wantSK: "s"},
		{name: "key flag, secret env", ak: "a", getenv: env(map[string]string{SecretKeyEnv: "env-sk"}), wantAK: "a", wantSK: "env-sk"},
		{name: "key alone", ak: "a", getenv: env(nil), usage: "--secret-key"},
		{name: "secret alone", sk: "s", getenv: env(nil), usage: "--access-key"},
		{name: "env key alone", getenv: env(map[string]string{AccessKeyEnv: "x"}), usage: SecretKeyEnv},
	} {
		ak, sk, err := ResolveCredentials(tc.ak, tc.sk, tc.getenv)
		if tc.usage != "" {
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.usage) {
				t.Fatalf("%s: error %v, want a usage error naming %s", tc.name, err, tc.usage)
			}
			continue
		}
		if err != nil || ak != tc.wantAK || sk != tc.wantSK {
			t.Fatalf("%s: got %q %q %v, want %q %q", tc.name, ak, sk, err, tc.wantAK, tc.wantSK)
		}
	}
}

func TestNewRefusesHalfCredentials(t *testing.T) {
	for _, cfg := range []Config{{AccessKey: "a"}, {SecretKey: "s"}} {
		if _, err := New(cfg); !errors.Is(err, ErrUsage) {
			t.Fatalf("New(%+v): %v, want ErrUsage", cfg, err)
		}
	}
}

func TestTLSConfigOffUnlessAsked(t *testing.T) {
	cfg, err := TLSConfig(false, "", false)
	if err != nil || cfg != nil {
		t.Fatalf("TLSConfig off: %v, %v; want nil, nil", cfg, err)
	}
	if _, err := TLSConfig(true, "ca.pem", true); !errors.Is(err, ErrUsage) {
		t.Fatalf("--tls-ca with --tls-insecure: %v, want ErrUsage", err)
	}
}

func TestTransportHints(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		withTLS bool
		want    string
	}{
		{"unknown CA", fmt.Errorf("remoting: connect x: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), true, "--tls-ca"},
		{"plaintext server", fmt.Errorf("remoting: connect x: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), true, "drop --tls"},
		{"closed in handshake", fmt.Errorf("remoting: connect x: %w", io.EOF), true, "--tls-mode disabled"},
		{"enforcing server", fmt.Errorf("remoting: invoke: %w", remoting.ErrConnClosed), false, "pass --tls"},
		{"refused dial", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false, ""},
		{"refused dial with tls", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true, ""},
	} {
		got := TransportHint(tc.err, tc.withTLS)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Fatalf("%s: hint %q, want one with %q", tc.name, got, tc.want)
		}
	}
}

func TestUserCommandsSendTheRequestsToEveryMaster(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a", "broker-b")
	out := fc.must(Config{}, func(c *CLI) error {
		return c.UserCreate(bg, UserSpec{Name: "alice", Secret: "s3cret"})
	})
	if !strings.Contains(out, "user alice created on broker-a, broker-b") {
		t.Fatalf("create output %q", out)
	}
	fc.must(Config{}, func(c *CLI) error {
		return c.UserUpdate(bg, UserSpec{Name: "alice", Status: "Disable", Type: "SUPER"})
	})
	fc.must(Config{}, func(c *CLI) error { return c.UserDelete(bg, "alice", "") })
	for _, b := range fc.brokers {
		rs := b.requests()
		if len(rs) != 3 {
			t.Fatalf("%s got %d requests, want 3: %+v", b.name, len(rs), rs)
		}
		if rs[0].code != rmq.CodeAuthCreateUser || rs[1].code != rmq.CodeAuthUpdateUser || rs[2].code != rmq.CodeAuthDeleteUser {
			t.Fatalf("%s codes %d %d %d", b.name, rs[0].code, rs[1].code, rs[2].code)
		}
		for _, r := range rs {
			wantExt(t, r, map[string]string{rmq.FieldUsername: "alice"})
			if _, signed := r.ext[rmq.FieldAccessKey]; signed {
				t.Fatalf("unsigned CLI sent AccessKey: %v", r.ext)
			}
		}
		wantBody(t, rs[0].body, `{"username":"alice","password":"s3cret","userType":"Normal","userStatus":"enable"}`)
		wantBody(t, rs[1].body, `{"username":"alice","userType":"Super","userStatus":"disable"}`)
		if len(rs[2].body) != 0 {
			t.Fatalf("delete has a body: %q", rs[2].body)
		}
	}
}

func TestUserGetAndListNeverShowSecretsInTables(t *testing.T) {
	fc := startFakeCluster(t, func(r seenReq) (int16, string, []byte) {
		switch r.code {
		case rmq.CodeAuthGetUser:
			if r.ext[rmq.FieldUsername] == "alice" {
				return 0, "", []byte(`{"username":"alice","password":"topsecret","userType":"Normal","userStatus":"enable"}`)
			}
			return 0, "", nil
		case rmq.CodeAuthListUser:
			return 0, "", []byte(`[{"username":"alice","password":"topsecret","userType":"Normal","userStatus":"enable"},{"username":"root","userType":"Super","userStatus":"enable"}]`)
		}
		return 3, "unexpected", nil
	}, "broker-a")
	table := fc.must(Config{}, func(c *CLI) error { return c.UserGet(bg, "alice", "") })
	if strings.Contains(table, "topsecret") || !strings.Contains(table, "alice") || !strings.Contains(table, "Normal") {
		t.Fatalf("get table:\n%s", table)
	}
	js := fc.must(Config{Output: OutputJSON}, func(c *CLI) error { return c.UserGet(bg, "alice", "") })
	var got struct{ Users []UserInfo }
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Users) != 1 || got.Users[0].Secret != "topsecret" || got.Users[0].Broker != "broker-a" {
		t.Fatalf("get JSON (the secret the server sent, for a super user) %v:\n%s", err, js)
	}
	for _, o := range []string{OutputTable, OutputJSON} {
		out := fc.must(Config{Output: o}, func(c *CLI) error { return c.UserList(bg, "al", "") })
		if strings.Contains(out, "topsecret") || !strings.Contains(out, "root") {
			t.Fatalf("list -o %s shows a secret or misses a user:\n%s", o, out)
		}
	}
	lists := fc.brokers[0].only(rmq.CodeAuthListUser)
	if len(lists) != 2 {
		t.Fatalf("list requests %d", len(lists))
	}
	wantExt(t, lists[0], map[string]string{rmq.FieldFilter: "al"})
	_, err := fc.run(Config{}, func(c *CLI) error { return c.UserGet(bg, "bob", "") })
	wantErr(t, err, ErrNotFound, `"bob"`, "petrel user list")
}

func TestUserUsageErrors(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a")
	for name, spec := range map[string]UserSpec{
		"no secret": {Name: "a"},
		"no name":   {Secret: "s"},
		"bad type":  {Name: "a", Secret: "s", Type: "admin"},
		"bad stat":  {Name: "a", Secret: "s", Status: "off"},
		"colon":     {Name: "a:b", Secret: "s"},
	} {
		if _, err := fc.run(Config{}, func(c *CLI) error { return c.UserCreate(bg, spec) }); !errors.Is(err, ErrUsage) {
			t.Fatalf("%s: %v, want ErrUsage", name, err)
		}
	}
	if _, err := fc.run(Config{}, func(c *CLI) error { return c.UserUpdate(bg, UserSpec{Name: "a"}) }); !errors.Is(err, ErrUsage) {
		t.Fatalf("update with nothing to change: %v", err)
	}
	if n := len(fc.allRequests()); n != 0 {
		t.Fatalf("usage errors sent %d requests", n)
	}
}

func TestReadSecretFileTrimsTheLineBreak(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadSecretFile(p); err != nil || s != "s3cret" {
		t.Fatalf("ReadSecretFile: %q, %v", s, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecretFile(empty); !errors.Is(err, ErrUsage) {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := ReadSecretFile(filepath.Join(dir, "missing")); !errors.Is(err, ErrUsage) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestBrokerAddressSkipsTheNameServer(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a", "broker-b")
	b := fc.brokers[1]
	fc.must(Config{}, func(c *CLI) error { return c.UserDelete(bg, "alice", b.addr) })
	if len(fc.ns.requests()) != 0 || len(fc.brokers[0].requests()) != 0 || len(b.only(rmq.CodeAuthDeleteUser)) != 1 {
		t.Fatalf("--broker ADDR: namesrv %d, a %d, b %d requests", len(fc.ns.requests()), len(fc.brokers[0].requests()), len(b.requests()))
	}
	fc.must(Config{}, func(c *CLI) error { return c.UserDelete(bg, "alice", "broker-a") })
	if len(fc.brokers[0].only(rmq.CodeAuthDeleteUser)) != 1 || len(b.only(rmq.CodeAuthDeleteUser)) != 1 {
		t.Fatal("--broker NAME did not pick broker-a alone")
	}
	_, err := fc.run(Config{}, func(c *CLI) error { return c.UserDelete(bg, "alice", "broker-z") })
	wantErr(t, err, ErrNotFound, "broker-z")
}

func TestAWriteGoesOnPastAFailedBroker(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a", "broker-b")
	fc.brokers[0].setAnswer(func(seenReq) (int16, string, []byte) { return 1, "the user exists already", nil })
	out, err := fc.run(Config{Output: OutputJSON}, func(c *CLI) error {
		return c.UserCreate(bg, UserSpec{Name: "alice", Secret: "s"})
	})
	wantErr(t, err, ErrRefused, "the user exists already", "broker-b only")
	var res AuthResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil || len(res.Brokers) != 1 || res.Brokers[0] != "broker-b" || len(res.Failed) != 1 || res.Failed[0].Broker != "broker-a" {
		t.Fatalf("result %v:\n%s", jerr, out)
	}
	if len(fc.brokers[1].only(rmq.CodeAuthCreateUser)) != 1 {
		t.Fatal("broker-b was not asked after broker-a failed")
	}
}

func TestAclCommandsSendTheRequests(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a")
	b := fc.brokers[0]
	fc.must(Config{}, func(c *CLI) error {
		return c.AclCreate(bg, AclSpec{Subject: "alice", Resources: []string{"Topic:orders,group:g-*", "cluster"},
			Actions: []string{"pub,SUB", "pub"}, Decision: "allow", SourceIPs: []string{"10.0.0.0/24", "192.168.1.7"}})
	})
	fc.must(Config{}, func(c *CLI) error {
		return c.AclUpdate(bg, AclSpec{Subject: "User:alice", Resources: []string{"*"}, Actions: []string{"all"}, Decision: "Deny", PolicyType: "default"})
	})
	fc.must(Config{}, func(c *CLI) error {
		return c.AclDelete(bg, "alice", []string{"Topic:orders"}, "custom", "")
	})
	fc.must(Config{}, func(c *CLI) error { return c.AclDelete(bg, "User:alice", nil, "", "") })
	rs := b.requests()
	if len(rs) != 4 {
		t.Fatalf("%d requests, want 4", len(rs))
	}
	if rs[0].code != rmq.CodeAuthCreateACL || rs[1].code != rmq.CodeAuthUpdateACL || rs[2].code != rmq.CodeAuthDeleteACL || rs[3].code != rmq.CodeAuthDeleteACL {
		t.Fatalf("codes %d %d %d %d", rs[0].code, rs[1].code, rs[2].code, rs[3].code)
	}
	wantExt(t, rs[0], map[string]string{rmq.FieldSubject: "User:alice"})
	wantBody(t, rs[0].body, `{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
		{"resource":"Topic:orders","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/24","192.168.1.7"],"decision":"Allow"},
		{"resource":"Group:g-*","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/24","192.168.1.7"],"decision":"Allow"},
		{"resource":"Cluster","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/24","192.168.1.7"],"decision":"Allow"}]}]}`)
	wantBody(t, rs[1].body, `{"subject":"User:alice","policies":[{"policyType":"Default","entries":[{"resource":"*","actions":["All"],"decision":"Deny"}]}]}`)
	wantExt(t, rs[2], map[string]string{rmq.FieldSubject: "User:alice", rmq.FieldPolicyType: "Custom", rmq.FieldResource: "Topic:orders"})
	wantExt(t, rs[3], map[string]string{rmq.FieldSubject: "User:alice"})
}

func TestAclGetAndList(t *testing.T) {
	acl := `{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:orders","actions":["Pub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]}`
	fc := startFakeCluster(t, func(r seenReq) (int16, string, []byte) {
		switch r.code {
		case rmq.CodeAuthGetACL:
			if r.ext[rmq.FieldSubject] == "User:alice" {
				return 0, "", []byte(acl)
			}
			return 0, "", nil
		case rmq.CodeAuthListACL:
			return 0, "", []byte("[" + acl + "]")
		}
		return 3, "unexpected", nil
	}, "broker-a", "broker-b")
	out := fc.must(Config{}, func(c *CLI) error { return c.AclGet(bg, "alice", "") })
	for _, want := range []string{"SUBJECT", "User:alice", "Custom", "Topic:orders", "Pub", "10.0.0.0/8", "Allow", "broker-a", "broker-b"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get table lacks %q:\n%s", want, out)
		}
	}
	js := fc.must(Config{Output: OutputJSON}, func(c *CLI) error { return c.AclList(bg, "ali", "Topic", "") })
	var got struct{ Acls []AclView }
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Acls) != 2 || got.Acls[0].Policies[0].Entries[0].Resource != "Topic:orders" {
		t.Fatalf("list JSON %v:\n%s", err, js)
	}
	for _, b := range fc.brokers {
		ls := b.only(rmq.CodeAuthListACL)
		if len(ls) != 1 {
			t.Fatalf("%s: %d list requests", b.name, len(ls))
		}
		wantExt(t, ls[0], map[string]string{rmq.FieldSubjectFilter: "ali", rmq.FieldResourceFilter: "Topic"})
		wantExt(t, b.only(rmq.CodeAuthGetACL)[0], map[string]string{rmq.FieldSubject: "User:alice"})
	}
	_, err := fc.run(Config{}, func(c *CLI) error { return c.AclGet(bg, "bob", "") })
	wantErr(t, err, ErrNotFound, "User:bob")
}

func TestAclUsageErrors(t *testing.T) {
	fc := startFakeCluster(t, nil, "broker-a")
	ok := AclSpec{Subject: "alice", Resources: []string{"Topic:a"}, Actions: []string{"Pub"}, Decision: "allow"}
	for name, mut := range map[string]func(*AclSpec){
		"subject type":  func(s *AclSpec) { s.Subject = "Role:x" },
		"no subject":    func(s *AclSpec) { s.Subject = "User:" },
		"resource type": func(s *AclSpec) { s.Resources = []string{"Queue:a"} },
		"no name":       func(s *AclSpec) { s.Resources = []string{"Topic:"} },
		"inner star":    func(s *AclSpec) { s.Resources = []string{"Topic:a*b"} },
		"no resource":   func(s *AclSpec) { s.Resources = nil },
		"action":        func(s *AclSpec) { s.Actions = []string{"Pub,Write"} },
		"no action":     func(s *AclSpec) { s.Actions = nil },
		"decision":      func(s *AclSpec) { s.Decision = "maybe" },
		"no decision":   func(s *AclSpec) { s.Decision = "" },
		"source ip":     func(s *AclSpec) { s.SourceIPs = []string{"10.0.0.300"} },
		"policy type":   func(s *AclSpec) { s.PolicyType = "special" },
	} {
		spec := ok
		mut(&spec)
		if _, err := fc.run(Config{}, func(c *CLI) error { return c.AclCreate(bg, spec) }); !errors.Is(err, ErrUsage) {
			t.Fatalf("%s: %v, want ErrUsage", name, err)
		}
	}
	if n := len(fc.allRequests()); n != 0 {
		t.Fatalf("usage errors sent %d requests", n)
	}
	for in, want := range map[string]string{"alice": "User:alice", "user:bob": "User:bob", "User:c": "User:c"} {
		if got, err := ParseSubject(in); err != nil || got != want {
			t.Fatalf("ParseSubject(%q) = %q, %v", in, got, err)
		}
	}
}

func TestNoPermissionSaysToPassCredentials(t *testing.T) {
	const msg = `authentication failed: the request is not signed: configure the client's AccessKey and SecretKey`
	fc := startFakeCluster(t, func(seenReq) (int16, string, []byte) { return rmq.RespNoPermission, msg, nil }, "broker-a")
	_, err := fc.run(Config{}, func(c *CLI) error { return c.UserList(bg, "", "") })
	wantErr(t, err, ErrRefused, msg, credentialsHint)
	_, err = fc.run(Config{}, func(c *CLI) error { return c.TopicList(bg, false) })
	wantErr(t, err, ErrRefused, msg, "--access-key and --secret-key")
	// Another refusal gets no credentials hint.
	fc.brokers[0].setAnswer(func(seenReq) (int16, string, []byte) { return 1, "system busy", nil })
	_, err = fc.run(Config{}, func(c *CLI) error { return c.UserList(bg, "", "") })
	if err == nil || strings.Contains(err.Error(), "--access-key") {
		t.Fatalf("code 1 error %v carries the credentials hint", err)
	}
}

func TestPlaintextAgainstATLSServerSuggestsTLS(t *testing.T) {
	srvCfg, _ := serverTLS(t)
	ns := startFake(t, "namesrv", nil, func(ln net.Listener) net.Listener { return tls.NewListener(ln, srvCfg) })
	var out strings.Builder
	c, err := New(Config{NameServers: []string{ns.addr}, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.ClusterList(bg)
	wantErr(t, err, ErrUnreachable, ns.addr, "--tls")
}
