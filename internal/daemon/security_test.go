package daemon_test

// The daemon's wiring of issue 18: --auth guards on the broker and name
// server ports and the HTTP listener, the broker's signed registrations,
// and TLS in each mode on the remoting and HTTP listeners.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
)

const (
	initUser   = "admin"
	initSecret = "s3cret-of-the-admin"
)

func createTopic(name string) *remoting.Command {
	return remoting.NewRequest(rmq.CodeUpdateAndCreateTopic, map[string]string{
		"topic": name, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
}

func newClient(t *testing.T, opts remoting.ClientOptions) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) (*remoting.Command, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Invoke(ctx, addr, req)
}

func mustInvoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := invoke(t, c, addr, req)
	if err != nil {
		t.Fatalf("code %d to %s: %v", req.Code, addr, err)
	}
	return resp
}

// awaitReady waits until the broker is ready: its (signed, or TLS)
// registration was accepted by the name server.
func awaitReady(t *testing.T, b *daemon.Broker) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for b.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("broker not ready after 15 s: %v", b.Ready())
		}
		<-tick.C
	}
}

func authSecurity() daemon.Security {
	a := daemon.NewAuth(daemon.AuthConfig{InitUser: initUser, InitSecret: initSecret})
	return daemon.Security{Auth: a, AccessKey: initUser, SecretKey: initSecret}
}

// startSecuredPair starts a name server, a master serving replication on
// 127.0.0.1 and its slave (broker id 1), each with its own sec() (so its
// own Auth). tuneMaster and tuneSlave, when not nil, adjust each broker's
// config before it starts. It returns once both brokers are ready; all
// three close when the test ends.
func startSecuredPair(t *testing.T, sec func() daemon.Security, tuneMaster, tuneSlave func(*daemon.BrokerConfig)) (master, slave *daemon.Broker) {
	t.Helper()
	ns, err := daemon.StartNameServerWith("127.0.0.1:0", namesrv.Options{}, sec())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	mcfg := daemontest.Config()
	mcfg.NameServers, mcfg.Security = []string{ns.Addr().String()}, sec()
	mcfg.HA = daemon.HAConfig{Listen: "127.0.0.1:0"}
	if tuneMaster != nil {
		tuneMaster(&mcfg)
	}
	master, err = daemon.StartBroker(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	scfg := daemontest.Config()
	scfg.NameServers, scfg.Security = []string{ns.Addr().String()}, sec()
	scfg.Broker.BrokerID, scfg.Broker.Role = 1, broker.RoleSlave
	if tuneSlave != nil {
		tuneSlave(&scfg)
	}
	slave, err = daemon.StartBroker(scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	awaitReady(t, master)
	awaitReady(t, slave)
	return master, slave
}

// syncReplication makes a master acknowledge a send only once its slave
// holds it.
func syncReplication(cfg *daemon.BrokerConfig) {
	cfg.HA.SyncReplicas = 1
	cfg.Broker.ReplicationTimeout = 5 * time.Second
}

func get(t *testing.T, c *http.Client, url, user, secret string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, secret)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// With --auth the broker refuses an unsigned or wrongly signed admin
// request with NO_PERMISSION (16) and serves the super user's; the name
// server refuses an unsigned registration but answers route reads; the
// broker's own registration, signed as the init user, is accepted (it
// becomes ready); the HTTP listener wants Basic credentials except on the
// probes, and counts the refusals.
func TestAuthRefusesUnsignedAdminAndServesTheSuperUser(t *testing.T) {
	c := daemontest.StartWith(t, authSecurity(), func(cfg *daemon.BrokerConfig) { cfg.HTTPListen = "127.0.0.1:0" })
	awaitReady(t, c.Broker)
	baddr, nsaddr := c.Broker.Addr().String(), c.NameServerAddr()

	unsigned := newClient(t, remoting.ClientOptions{})
	resp := mustInvoke(t, unsigned, baddr, createTopic("Orders"))
	if resp.Code != auth.RemotingCode || resp.Remark == "" {
		t.Fatalf("unsigned topic create: code %d remark %q, want %d with a reason", resp.Code, resp.Remark, auth.RemotingCode)
	}
	if strings.Contains(resp.Remark, initSecret) {
		t.Fatalf("the refusal's remark carries the secret: %q", resp.Remark)
	}
	wrong := newClient(t, remoting.ClientOptions{Sign: authwire.Signer(initUser, "not-the-secret")})
	if resp := mustInvoke(t, wrong, baddr, createTopic("Orders")); resp.Code != auth.RemotingCode {
		t.Fatalf("wrongly signed topic create: code %d remark %q, want %d", resp.Code, resp.Remark, auth.RemotingCode)
	}
	signed := newClient(t, remoting.ClientOptions{Sign: authwire.Signer(initUser, initSecret)})
	if resp := mustInvoke(t, signed, baddr, createTopic("Orders")); resp.Code != remoting.CodeSuccess {
		t.Fatalf("the super user's topic create: code %d remark %q, want success", resp.Code, resp.Remark)
	}

	reg := remoting.NewRequest(rmq.CodeRegisterBroker, map[string]string{
		"brokerName": "intruder", "brokerAddr": "127.0.0.1:1", "clusterName": "DefaultCluster", "brokerId": "0",
	}, nil)
	if resp := mustInvoke(t, unsigned, nsaddr, reg); resp.Code != auth.RemotingCode {
		t.Fatalf("unsigned registration with the name server: code %d remark %q, want %d", resp.Code, resp.Remark, auth.RemotingCode)
	}
	route := remoting.NewRequest(rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "Orders"}, nil)
	if resp := mustInvoke(t, unsigned, nsaddr, route); resp.Code != remoting.CodeSuccess {
		t.Fatalf("unsigned route query: code %d remark %q, want the route (reads are open)", resp.Code, resp.Remark)
	}

	base := "http://" + c.Broker.HTTPAddr().String()
	hc := &http.Client{Timeout: 10 * time.Second}
	if resp, body := get(t, hc, base+"/healthz", "", ""); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("/healthz without credentials: %d %q, want the open probe", resp.StatusCode, body)
	}
	for _, cred := range [][2]string{{"", ""}, {initUser, "not-the-secret"}, {"nobody", initSecret}} {
		resp, _ := get(t, hc, base+"/metrics", cred[0], cred[1])
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Fatalf("/metrics as %q: %d, WWW-Authenticate %q; want 401 with a Basic challenge", cred[0], resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp2, body := get(t, hc, base+"/metrics", initUser, initSecret)
	if resp2.StatusCode != 200 {
		t.Fatalf("/metrics as the super user: %d", resp2.StatusCode)
	}
	for _, series := range []string{
		`petrel_auth_refusals_total{protocol="remoting",reason="unsigned"} 2`,
		`petrel_auth_refusals_total{protocol="remoting",reason="bad-signature"} 1`,
		`petrel_auth_refusals_total{protocol="http",reason="forbidden"} 0`,
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %s:\n%s", series, grep(body, "petrel_auth_refusals_total"))
		}
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// --auth without any user (no store of users, no init user) is refused at
// start, naming the flag that fixes it.
func TestAuthWithoutAnyUserIsAStartupError(t *testing.T) {
	sec := daemon.Security{Auth: daemon.NewAuth(daemon.AuthConfig{})}
	if _, err := daemon.StartNameServerWith("127.0.0.1:0", namesrv.Options{}, sec); err == nil || !strings.Contains(err.Error(), "--auth-init-user") {
		t.Fatalf("name server with --auth and no init user: err %v, want one naming --auth-init-user", err)
	}
	cfg := daemontest.Config()
	cfg.Security = sec
	b, err := daemon.StartBroker(cfg)
	if err == nil {
		b.Close()
		t.Fatal("broker started with --auth and no user")
	}
	if !strings.Contains(err.Error(), "--auth-init-user") {
		t.Fatalf("broker with --auth and no user: %v, want an error naming --auth-init-user", err)
	}
}

// tlsClients are a TLS remoting client and HTTPS client trusting files.CA
// (presenting the client certificate when withCert), and their plaintext
// twins.
func tlsClients(t *testing.T, files daemontest.TLSFiles, withCert bool) (*remoting.Client, *http.Client) {
	t.Helper()
	opts := tlsx.ClientOptions{CAFile: files.CA}
	cfg, err := tlsx.ClientConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	if withCert {
		cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	rc := newClient(t, remoting.ClientOptions{Network: tlsx.DialNetwork(netx.TCP, cfg), DialTimeout: 5 * time.Second})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg.Clone()}}
	t.Cleanup(hc.CloseIdleConnections)
	return rc, hc
}

func startTLS(t *testing.T, mode tlsx.Mode, files daemontest.TLSFiles, clientCA string) *daemontest.Cluster {
	t.Helper()
	srv, err := tlsx.NewServer(tlsx.Files{Cert: files.Cert, Key: files.Key, ClientCA: clientCA})
	if err != nil {
		t.Fatal(err)
	}
	c := daemontest.StartWith(t, daemon.Security{TLS: srv, TLSMode: mode}, func(cfg *daemon.BrokerConfig) { cfg.HTTPListen = "127.0.0.1:0" })
	awaitReady(t, c.Broker)
	return c
}

// plainHealthz reports whether a plaintext GET of /healthz is served.
func plainHealthz(t *testing.T, addr string) bool {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && string(body) == "ok\n"
}

func topicList() *remoting.Command { return remoting.NewRequest(rmq.CodeGetAllTopicConfig, nil, nil) }

// --tls-mode enforcing: the broker port and the HTTP listener refuse
// plaintext and serve TLS; the broker registered with its enforcing name
// server over TLS. With --tls-client-ca the broker's own links present its
// certificate (the registration passes) and a client without one is
// refused.
func TestTLSEnforcingRefusesPlaintext(t *testing.T) {
	files := daemontest.WriteTLSFiles(t)
	for _, mutual := range []bool{false, true} {
		clientCA := ""
		if mutual {
			clientCA = files.CA
		}
		c := startTLS(t, tlsx.Enforcing, files, clientCA)
		baddr := c.Broker.Addr().String()
		plain := newClient(t, remoting.ClientOptions{DialTimeout: 5 * time.Second})
		if resp, err := invoke(t, plain, baddr, topicList()); err == nil {
			t.Fatalf("mutual=%v: a plaintext request to the enforcing broker port was answered: code %d", mutual, resp.Code)
		}
		if resp, err := invoke(t, plain, c.NameServerAddr(), remoting.NewRequest(rmq.CodeGetBrokerClusterInfo, nil, nil)); err == nil {
			t.Fatalf("mutual=%v: a plaintext request to the enforcing name server was answered: code %d", mutual, resp.Code)
		}
		if plainHealthz(t, c.Broker.HTTPAddr().String()) {
			t.Fatalf("mutual=%v: the enforcing HTTP listener served plaintext", mutual)
		}
		rc, hc := tlsClients(t, files, mutual)
		if resp := mustInvoke(t, rc, baddr, topicList()); resp.Code != remoting.CodeSuccess {
			t.Fatalf("mutual=%v: TLS topic list: code %d %q", mutual, resp.Code, resp.Remark)
		}
		if resp, body := get(t, hc, "https://"+c.Broker.HTTPAddr().String()+"/healthz", "", ""); resp.StatusCode != 200 || body != "ok\n" {
			t.Fatalf("mutual=%v: HTTPS /healthz: %d %q", mutual, resp.StatusCode, body)
		}
		if mutual {
			anon, _ := tlsClients(t, files, false)
			if resp, err := invoke(t, anon, baddr, topicList()); err == nil {
				t.Fatalf("a TLS client without a certificate was answered under mutual TLS: code %d", resp.Code)
			}
		}
	}
}

// --tls-mode permissive: TLS and plaintext on the same broker port and
// HTTP listener.
func TestTLSPermissiveAcceptsBoth(t *testing.T) {
	files := daemontest.WriteTLSFiles(t)
	c := startTLS(t, tlsx.Permissive, files, "")
	baddr := c.Broker.Addr().String()
	plain := newClient(t, remoting.ClientOptions{})
	if resp := mustInvoke(t, plain, baddr, topicList()); resp.Code != remoting.CodeSuccess {
		t.Fatalf("plaintext topic list: code %d %q", resp.Code, resp.Remark)
	}
	rc, hc := tlsClients(t, files, false)
	if resp := mustInvoke(t, rc, baddr, topicList()); resp.Code != remoting.CodeSuccess {
		t.Fatalf("TLS topic list: code %d %q", resp.Code, resp.Remark)
	}
	if !plainHealthz(t, c.Broker.HTTPAddr().String()) {
		t.Fatal("the permissive HTTP listener did not serve plaintext")
	}
	if resp, body := get(t, hc, "https://"+c.Broker.HTTPAddr().String()+"/healthz", "", ""); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("HTTPS /healthz: %d %q", resp.StatusCode, body)
	}
}

// The test CA is the one the certificate chains to (a sanity check of
// daemontest.WriteTLSFiles, which the TLS tests rely on).
func TestWriteTLSFilesChain(t *testing.T) {
	files := daemontest.WriteTLSFiles(t)
	pool := x509.NewCertPool()
	raw, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	if !pool.AppendCertsFromPEM(raw) {
		t.Fatal("no CA certificate in", files.CA)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("server certificate does not verify for 127.0.0.1: %v", err)
	}
	if fi, err := os.Stat(files.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
}

func send(topic, id string, body []byte) *remoting.Command {
	return remoting.NewRequest(rmq.CodeSendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
		"properties": "UNIQ_KEY\x01" + id + "\x02", "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "batch": "false", "bname": "broker-a",
	}, body)
}

// sendUntil sends until the answer is SEND_OK (a sync send answers
// SLAVE_NOT_AVAILABLE until the slave has joined, a forward may time out
// while the master is busy; the same id is deduplicated).
func sendUntil(t *testing.T, c *remoting.Client, addr string, req func() *remoting.Command) *remoting.Command {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := mustInvoke(t, c, addr, req())
		if resp.Code == remoting.CodeSuccess {
			return resp
		}
		if resp.Code == auth.RemotingCode || time.Now().After(deadline) {
			t.Fatalf("send to %s: code %d %q", addr, resp.Code, resp.Remark)
		}
	}
}

// A replicated group with --auth and --tls-mode enforcing with mutual
// TLS: each broker has its own Auth (the name server its own, with the
// init user only), the slave fetches from the master over TLS presenting
// its certificate (a sync send is acknowledged once the slave holds it),
// and a send to the slave is forwarded to the master signed as the init
// user. An unsigned send over TLS is refused.
func TestReplicationAndForwardsOverMutualTLSWithAuth(t *testing.T) {
	files := daemontest.WriteTLSFiles(t)
	srv, err := tlsx.NewServer(tlsx.Files{Cert: files.Cert, Key: files.Key, ClientCA: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	sec := func() daemon.Security {
		s := authSecurity()
		s.TLS, s.TLSMode = srv, tlsx.Enforcing
		return s
	}
	master, slave := startSecuredPair(t, sec, syncReplication, nil)

	rc, _ := tlsClients(t, files, true)
	if resp := mustInvoke(t, rc, master.Advertised(), send("Orders", "UNSIGNED", []byte("x"))); resp.Code != auth.RemotingCode {
		t.Fatalf("unsigned send over TLS: code %d %q, want %d", resp.Code, resp.Remark, auth.RemotingCode)
	}
	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	signed := newClient(t, remoting.ClientOptions{Network: tlsx.DialNetwork(netx.TCP, cfg), Sign: authwire.Signer(initUser, initSecret)})
	first := sendUntil(t, signed, master.Advertised(), func() *remoting.Command { return send("Orders", "FIRST", []byte("hello")) })
	if first.Ext("queueOffset") != "0" {
		t.Fatalf("first send: queue offset %q, want 0", first.Ext("queueOffset"))
	}
	fwd := sendUntil(t, signed, slave.Advertised(), func() *remoting.Command { return send("Orders", "FORWARDED", []byte("x")) })
	if fwd.Ext("queueOffset") != "1" {
		t.Fatalf("send to the slave: queue offset %q, want the master's next (1)", fwd.Ext("queueOffset"))
	}
}

// The init user is created in the master's store when it has none; a
// normal user made there is known to the name server that shares the
// broker's users (petrel server's arrangement) but may not register a
// broker (a write: super users only), and is let into the HTTP listener
// once a policy allows it Get on the cluster.
func TestInitUserIsStoredAndTheNameServerSharesTheBrokersUsers(t *testing.T) {
	c := daemontest.StartWith(t, authSecurity(), func(cfg *daemon.BrokerConfig) { cfg.HTTPListen = "127.0.0.1:0" })
	awaitReady(t, c.Broker)
	core := c.Broker.Core()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if u, ok := core.GetUser(initUser); ok {
			if u.Type != auth.Super || u.Secret != initSecret {
				t.Fatalf("stored init user %+v, want a super user with the flag's secret", u)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the init user was not created in the store within 10 s")
		}
		<-tick.C
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := core.CreateUser(ctx, auth.User{Name: "app", Secret: "app-secret", Type: auth.Normal, Status: auth.Enabled}); err != nil {
		t.Fatal(err)
	}
	app := newClient(t, remoting.ClientOptions{Sign: authwire.Signer("app", "app-secret")})
	reg := remoting.NewRequest(rmq.CodeRegisterBroker, map[string]string{
		"brokerName": "intruder", "brokerAddr": "127.0.0.1:1", "clusterName": "DefaultCluster", "brokerId": "0",
	}, nil)
	resp := mustInvoke(t, app, c.NameServerAddr(), reg)
	if resp.Code != auth.RemotingCode || !strings.Contains(resp.Remark, "app") || strings.Contains(resp.Remark, "unknown") {
		t.Fatalf("a normal user's registration: code %d %q, want a refusal of the known user app", resp.Code, resp.Remark)
	}

	hc := &http.Client{Timeout: 10 * time.Second}
	url := "http://" + c.Broker.HTTPAddr().String() + "/metrics"
	if resp, _ := get(t, hc, url, "app", "app-secret"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics as app without a policy: %d, want 401", resp.StatusCode)
	}
	acl := auth.Acl{Subject: "User:app", Policies: []auth.Policy{{Type: auth.Custom, Entries: []auth.PolicyEntry{{
		Resource: auth.Resource{Type: auth.ResourceCluster, Pattern: auth.Literal},
		Actions:  []auth.Action{auth.ActionGet}, Decision: auth.Allow,
	}}}}}
	if err := core.CreateAcl(ctx, acl); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, hc, url, "app", "app-secret"); resp.StatusCode != 200 || !strings.Contains(body, `petrel_auth_refusals_total{protocol="http",reason="forbidden"} 1`) {
		t.Fatalf("/metrics as app allowed Get on the cluster: %d\n%s", resp.StatusCode, grep(body, "petrel_auth_refusals_total"))
	}
}

// awaitUser waits until b's store has the user name.
func awaitUser(t *testing.T, b *daemon.Broker, name string) auth.User {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if u, ok := b.Core().GetUser(name); ok {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s not in the store within 10 s", name)
		}
		<-tick.C
	}
}

// A restart whose --auth-init-user secret differs from the stored one
// creates nothing and warns (the broker signs its own requests with the
// flag's secret, which other ports would refuse); the stored user stays.
func TestRestartWithAnotherInitSecretWarns(t *testing.T) {
	cfg := daemontest.Config()
	cfg.Security = authSecurity()
	b, err := daemon.StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	awaitUser(t, b, initUser)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Security = daemon.Security{Auth: daemon.NewAuth(daemon.AuthConfig{InitUser: initUser, InitSecret: "rotated"}), AccessKey: initUser, SecretKey: "rotated"}
	b, err = daemon.StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(logs.Lines("differs from the one in the broker's store")) != 1 {
		t.Fatalf("no warning about the init user's secret:\n%s", logs.String())
	}
	if u := awaitUser(t, b, initUser); u.Secret != initSecret {
		t.Fatalf("the restart changed the stored secret to %q", u.Secret)
	}
	if strings.Contains(logs.String(), "rotated") || strings.Contains(logs.String(), initSecret) {
		t.Fatalf("a secret is in the log:\n%s", logs.String())
	}
}

// With --auth the gRPC front gets the process's checker: an unsigned 5.x
// send is refused in-band with UNAUTHORIZED (40100), one signed as the
// init user is stored.
func TestAuthReachesTheGRPCFront(t *testing.T) {
	c := daemontest.StartWith(t, authSecurity(), func(cfg *daemon.BrokerConfig) { cfg.GRPCListen = "127.0.0.1:0" })
	conn, err := grpc.NewClient(c.Broker.GRPCAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ms := v2.NewMessagingServiceClient(conn)
	send := func(ctx context.Context, id string) *v2.SendMessageResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := ms.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{{Topic: &v2.Resource{Name: "T1"}, Body: []byte("hi"),
			SystemProperties: &v2.SystemProperties{MessageId: id, MessageType: v2.MessageType_NORMAL}}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	base := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "c1")
	if resp := send(base, "ID-1"); resp.GetStatus().GetCode() != v2.Code_UNAUTHORIZED {
		t.Fatalf("unsigned 5.x send: %v, want UNAUTHORIZED", resp.GetStatus())
	}
	now := auth.GRPCDateTime(time.Now())
	signed := metadata.AppendToOutgoingContext(base, "x-mq-date-time", now, "authorization", auth.GRPCAuthorization(initUser, initSecret, now))
	if resp := send(signed, "ID-2"); resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("signed 5.x send: %v, want OK", resp.GetStatus())
	}
}
