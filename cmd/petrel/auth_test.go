package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// --auth-init-user-file must not be readable by group or others: the
// error says to chmod 600 the file; at 0600 (or 0400) its NAME:SECRET
// line is read, trailing newline and all.
func TestInitUserFileMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "init-user")
	if err := os.WriteFile(path, []byte("admin:s3cret:with:colons\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &securityOptions{initUserFile: path}
	if _, _, err := s.initCredentials(); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("mode 0644: err %v, want one saying chmod 600 %s", err, path)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.initCredentials(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: err %v, want the chmod 600 advice", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		name, secret, err := s.initCredentials()
		if err != nil || name != "admin" || secret != "s3cret:with:colons" {
			t.Fatalf("mode %04o: %q %q %v, want admin and the secret after the first colon", mode, name, secret, err)
		}
	}
	s.initUser = "other:x"
	if _, _, err := s.initCredentials(); err == nil || !strings.Contains(err.Error(), "exclude") {
		t.Fatalf("both flags: err %v, want one saying they exclude each other", err)
	}
	if _, _, err := (&securityOptions{initUserFile: filepath.Join(dir, "missing")}).initCredentials(); err == nil || !strings.Contains(err.Error(), "--auth-init-user-file") {
		t.Fatalf("a missing file: err %v, want one naming the flag", err)
	}
	for _, bad := range []string{"admin", ":secret", "admin:", "ad min:secret"} {
		if _, _, err := (&securityOptions{initUser: bad}).initCredentials(); err == nil || !strings.Contains(err.Error(), "NAME:SECRET") {
			t.Errorf("--auth-init-user %q: err %v, want one showing NAME:SECRET", bad, err)
		}
	}
	if name, secret, err := (&securityOptions{}).initCredentials(); name != "" || secret != "" || err != nil {
		t.Fatalf("no init user: %q %q %v", name, secret, err)
	}
}

// Every server command takes the security flags, from the command line
// and as YAML keys of the same names; petrel controller takes the TLS
// ones only.
func TestSecurityFlagsAndYAMLKeys(t *testing.T) {
	auth := []string{"auth", "auth-init-user", "auth-init-user-file"}
	tlsFlags := []string{"tls-mode", "tls-cert", "tls-key", "tls-client-ca"}
	for _, c := range []struct {
		name     string
		flags    []string
		notFlags []string
	}{
		{"server", append(auth, tlsFlags...), nil},
		{"broker", append(auth, tlsFlags...), nil},
		{"namesrv", append(auth, tlsFlags...), nil},
		{"controller", tlsFlags, auth},
	} {
		cmd := map[string]func() *cobra.Command{"server": newServerCmd, "broker": newBrokerCmd, "namesrv": newNamesrvCmd, "controller": newControllerCmd}[c.name]()
		for _, f := range c.flags {
			if cmd.Flags().Lookup(f) == nil {
				t.Errorf("petrel %s lacks --%s", c.name, f)
			}
		}
		for _, f := range c.notFlags {
			if cmd.Flags().Lookup(f) != nil {
				t.Errorf("petrel %s has --%s", c.name, f)
			}
		}
	}

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "petrel.yaml")
	yaml := "auth: true\nauth-init-user-file: /etc/petrel/init-user\ntls-mode: permissive\ntls-cert: /c.pem\ntls-key: /k.pem\ntls-client-ca: /ca.pem\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &options{}
	cmd := newServerCmd()
	if err := cmd.Flags().Parse([]string{"--config", cfgPath, "--tls-mode", "enforcing"}); err != nil {
		t.Fatal(err)
	}
	// newServerCmd bound its own options; read them through the flags.
	o.config = cfgPath
	if err := loadConfig(cmd, o); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"auth": "true", "auth-init-user-file": "/etc/petrel/init-user", "tls-mode": "enforcing",
		"tls-cert": "/c.pem", "tls-key": "/k.pem", "tls-client-ca": "/ca.pem", "auth-init-user": ""}
	for k, v := range want {
		if got := cmd.Flags().Lookup(k).Value.String(); got != v {
			t.Errorf("--%s = %q after the YAML file, want %q (the command line wins)", k, got, v)
		}
	}
}

// The TLS flags are checked before anything starts: a mode other than
// disabled needs --tls-cert and --tls-key, an unknown mode names the
// choices, a client CA needs TLS.
func TestTLSFlagErrors(t *testing.T) {
	for _, c := range []struct {
		s    securityOptions
		want []string
	}{
		{securityOptions{tlsMode: "enforcing"}, []string{"--tls-cert", "--tls-key"}},
		{securityOptions{tlsMode: "permissive", tlsCert: "/c.pem"}, []string{"--tls-cert", "--tls-key"}},
		{securityOptions{tlsMode: "strict"}, []string{"disabled", "permissive", "enforcing"}},
		{securityOptions{tlsClientCA: "/ca.pem"}, []string{"--tls-mode"}},
	} {
		_, _, err := c.s.tlsServer()
		if err == nil {
			t.Errorf("%+v: no error", c.s)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want it to name %s", c.s, err, w)
			}
		}
	}
	for _, s := range []securityOptions{{}, {tlsMode: "disabled"}, {tlsMode: "DISABLED", tlsCert: "/c.pem", tlsKey: "/k.pem"}} {
		srv, mode, err := s.tlsServer()
		if err != nil || srv != nil || mode != tlsx.Disabled {
			t.Errorf("%+v: %v %q %v, want TLS off", s, srv, mode, err)
		}
	}
}

// petrel server with --auth needs the init user (its broker signs its
// registrations and controller heartbeats with it); petrel broker with
// --auth and an empty store too.
func TestAuthNeedsTheInitUser(t *testing.T) {
	o := testOptions(t.TempDir())
	o.sec.auth = true
	err := runServer(context.Background(), o, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--auth-init-user") {
		t.Fatalf("petrel server --auth: %v, want an error naming --auth-init-user", err)
	}
	o = testOptions(t.TempDir())
	o.sec.auth, o.grpc.listen, o.httpListen = true, "", ""
	err = runBroker(context.Background(), o, nil, &bytes.Buffer{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "--auth-init-user") {
		t.Fatalf("petrel broker --auth on an empty store: %v, want an error naming --auth-init-user", err)
	}
}

// servedSerial is the serial number of the certificate a TLS handshake
// with ln's server gets.
func servedSerial(t *testing.T, srv *tlsx.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tln := srv.Listener(ln, tlsx.Enforcing)
	go func() {
		c, err := tln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Read(make([]byte, 1)) // runs the handshake
	}()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func fileSerial(t *testing.T, path string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(path, strings.TrimSuffix(path, ".pem")+"-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.String()
}

// SIGHUP's reload (called directly): new certificate files are served to
// new connections and logged; files that do not load leave the old
// certificate in use, and the error is logged.
func TestReloadTLSCertificate(t *testing.T) {
	first, second := daemontest.WriteTLSFiles(t), daemontest.WriteTLSFiles(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls-key.pem")
	copyFile := func(from, to string) {
		raw, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(first.Cert, cert)
	copyFile(first.Key, key)
	s := &securityOptions{tlsMode: "enforcing", tlsCert: cert, tlsKey: key}
	srv, mode, err := s.tlsServer()
	if err != nil || mode != tlsx.Enforcing {
		t.Fatalf("%v %q", err, mode)
	}
	want1 := fileSerial(t, cert)
	if got := servedSerial(t, srv); got != want1 {
		t.Fatalf("served serial %s, want the first certificate's %s", got, want1)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	copyFile(second.Cert, cert)
	copyFile(second.Key, key)
	want2 := fileSerial(t, cert)
	if err := reloadTLS(srv, logger); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "reloaded the TLS certificate") {
		t.Fatalf("log after a reload: %q", logs.String())
	}
	if got := servedSerial(t, srv); got != want2 {
		t.Fatalf("after reload: served serial %s, want the new certificate's %s", got, want2)
	}

	logs.Reset()
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := reloadTLS(srv, logger); err == nil {
		t.Fatal("a reload of a broken certificate file succeeded")
	}
	if !strings.Contains(logs.String(), "cannot reload the TLS certificate") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("log after a failed reload: %q", logs.String())
	}
	if got := servedSerial(t, srv); got != want2 {
		t.Fatalf("after a failed reload: served serial %s, want the previous certificate's %s", got, want2)
	}
}

// petrel server --auth --auth-init-user ... --tls-mode enforcing: its
// broker registers with its name server and heartbeats its embedded
// controller over TLS, signed as the init user, and becomes the master:
// the init user (a TLS client signing as it) creates a topic, an unsigned
// TLS request is refused with NO_PERMISSION, a plaintext one is not
// answered.
func TestServerWithAuthAndEnforcedTLS(t *testing.T) {
	files := daemontest.WriteTLSFiles(t)
	o := testOptions(t.TempDir())
	o.sec = securityOptions{auth: true, initUser: "admin:s3cret", tlsMode: "enforcing", tlsCert: files.Cert, tlsKey: files.Key}
	_, out := startTestServer(t, o)
	m := regexp.MustCompile(`broker broker-a listening on (\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no broker address in the output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "authentication on") || !strings.Contains(out.String(), "TLS enforcing") {
		t.Fatalf("the startup lines do not state authentication and TLS:\n%s", out.String())
	}
	addr := m[1]
	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	tlsNet := tlsx.DialNetwork(netx.TCP, cfg)
	signed := remoting.NewClient(remoting.ClientOptions{Network: tlsNet, Sign: authwire.Signer("admin", "s3cret")})
	defer signed.Close()
	unsigned := remoting.NewClient(remoting.ClientOptions{Network: tlsNet})
	defer unsigned.Close()
	plain := remoting.NewClient(remoting.ClientOptions{DialTimeout: 5 * time.Second})
	defer plain.Close()
	create := func() *remoting.Command {
		return remoting.NewRequest(rmq.CodeUpdateAndCreateTopic, map[string]string{
			"topic": "Orders", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
			"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
		}, nil)
	}
	call := func(c *remoting.Client) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.Invoke(ctx, addr, create())
	}
	if resp, err := call(unsigned); err != nil || resp.Code != auth.RemotingCode {
		t.Fatalf("unsigned topic create over TLS: %v, %v; want code %d", resp, err, auth.RemotingCode)
	}
	if resp, err := call(plain); err == nil {
		t.Fatalf("a plaintext request was answered: code %d", resp.Code)
	}
	// The broker takes writes once the controller has made it master.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := call(signed)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code == remoting.CodeSuccess {
			break
		}
		if resp.Code == auth.RemotingCode || time.Now().After(deadline) {
			t.Fatalf("the init user's topic create: code %d %q", resp.Code, resp.Remark)
		}
	}
}

// The gRPC endpoint serves --tls-cert/--tls-key unless its own certificate
// flags or --grpc-plaintext are given.
func TestGRPCUsesTheSharedCertificate(t *testing.T) {
	sec := &securityOptions{tlsCert: "/etc/petrel/tls.pem", tlsKey: "/etc/petrel/tls-key.pem"}
	for _, c := range []struct {
		o                  grpcOptions
		wantCert, wantKey  string
		wantDescribePrefix string
	}{
		{grpcOptions{listen: ":8081"}, sec.tlsCert, sec.tlsKey, "TLS, certificate /etc/petrel/tls.pem (--tls-cert)"},
		{grpcOptions{listen: ":8081", tlsCert: "/g.pem", tlsKey: "/g-key.pem"}, "/g.pem", "/g-key.pem", "TLS, certificate /g.pem"},
		{grpcOptions{listen: ":8081", plaintext: true}, "", "", "plaintext"},
	} {
		var cfg daemon.BrokerConfig
		if err := c.o.apply(&cfg, sec); err != nil {
			t.Fatal(err)
		}
		if cfg.GRPC.TLSCert != c.wantCert || cfg.GRPC.TLSKey != c.wantKey {
			t.Errorf("%+v: gRPC certificate %q / %q, want %q / %q", c.o, cfg.GRPC.TLSCert, cfg.GRPC.TLSKey, c.wantCert, c.wantKey)
		}
		if got := c.o.describe("/data"); got != c.wantDescribePrefix {
			t.Errorf("%+v: describe %q, want %q", c.o, got, c.wantDescribePrefix)
		}
	}
}
