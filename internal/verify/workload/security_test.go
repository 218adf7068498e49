package workload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/cluster"
)

// testCerts makes a run's CA and server certificate: the server side and
// a client side trusting only that CA.
func testCerts(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	f, err := cluster.GenerateCerts(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := f.CertPool()
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestRemotingClientsSignAndDialTLS: with Credentials, Admin and TLS in
// the env, a workload client signs as the normal user, a setup client as
// the admin, both over TLS verified against the CA; a client trusting
// another CA gets no connection.
func TestRemotingClientsSignAndDialTLS(t *testing.T) {
	srvTLS, cliTLS := testCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var keys []string
	checker := auth.NewChecker(auth.Static(
		auth.User{Name: "verify-client", Secret: "c", Type: auth.Normal, Status: auth.Enabled},
		auth.User{Name: "verify-admin", Secret: "a", Type: auth.Super, Status: auth.Enabled}), auth.CheckerOptions{})
	srv := remoting.NewServer(remoting.ServerOptions{})
	srv.HandleDefault(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		u, ref := checker.AuthenticateRemoting(req, req.Body)
		mu.Lock()
		keys = append(keys, u.Name+"/"+boolText(ref == nil))
		mu.Unlock()
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	})
	go srv.Serve(tls.NewListener(ln, srvTLS))
	defer srv.Close()
	addr := ln.Addr().String()

	env := testEnv(addr)
	env.Credentials = &Credentials{AccessKey: "verify-client", SecretKey: "c"}
	env.Admin = &Credentials{AccessKey: "verify-admin", SecretKey: "a"}
	env.TLS = cliTLS
	e, err := env.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	hb := func() *remoting.Command { return rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "x"}) }
	for _, c := range []*Client{NewClient(e, "queue-p0"), NewAdminClient(e, "queue-setup")} {
		resp, err := c.Call(context.Background(), addr, hb(), 0)
		c.Close()
		if err != nil || resp.Code != rmq.RespSuccess {
			t.Fatalf("%s: %v %v", c.Name(), resp, err)
		}
	}
	mu.Lock()
	got := strings.Join(keys, " ")
	mu.Unlock()
	if got != "verify-client/signed verify-admin/signed" {
		t.Fatalf("requests signed as %q; want the client's, then the admin's", got)
	}

	// Without Admin the setup client signs as the workload user.
	e.Admin = nil
	setup := NewAdminClient(e, "queue-setup")
	_, err = setup.Call(context.Background(), addr, hb(), 0)
	setup.Close()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := keys[len(keys)-1]
	mu.Unlock()
	if last != "verify-client/signed" {
		t.Fatalf("setup without an admin signed as %q", last)
	}

	e.TLS = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	c := NewClient(e, "queue-p1")
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, addr, hb(), 0); err == nil || Outcome(err) != "fail" {
		t.Fatalf("a client that does not trust the server's CA: %v (outcome %s), want a failed connection", err, Outcome(err))
	}
}

func boolText(b bool) string {
	if b {
		return "signed"
	}
	return "unsigned"
}

// fakeFront is a MessagingService that records the metadata of each
// QueryRoute.
type fakeFront struct {
	v2.UnimplementedMessagingServiceServer
	mu  sync.Mutex
	mds []metadata.MD
}

func (f *fakeFront) QueryRoute(ctx context.Context, _ *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.mds = append(f.mds, md)
	f.mu.Unlock()
	return &v2.QueryRouteResponse{Status: &v2.Status{Code: v2.Code_OK}}, nil
}

// TestGRPCClientSignsEveryCallOverVerifiedTLS: with credentials every
// call carries x-mq-date-time and the MQv2-HMAC-SHA1 authorization of the
// user over it, made per call; with the run's CA the client verifies the
// front, also behind a list of endpoints (whose target names no host).
func TestGRPCClientSignsEveryCallOverVerifiedTLS(t *testing.T) {
	srvTLS, cliTLS := testCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := &fakeFront{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(srvTLS)))
	v2.RegisterMessagingServiceServer(gs, front)
	go gs.Serve(ln)
	defer gs.Stop()
	live := ln.Addr().String()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	now := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	sec := grpcSecurity{TLS: cliTLS, Credentials: &Credentials{AccessKey: "verify-client", SecretKey: "c"}, Now: func() time.Time { return now }}
	for _, addr := range []string{live, deadAddr + "," + live} {
		c, err := dialGRPC(netx.TCP, addr, "verify@test@"+addr, &v2.Settings{}, sec)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := c.stub.QueryRoute(c.ctx(ctx), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "t"}})
			cancel()
			if err != nil {
				c.close()
				t.Fatalf("%s: query route over TLS: %v", addr, err)
			}
			now = now.Add(time.Second)
		}
		c.close()
	}
	front.mu.Lock()
	defer front.mu.Unlock()
	if len(front.mds) != 4 {
		t.Fatalf("%d calls arrived, want 4", len(front.mds))
	}
	checker := auth.NewChecker(auth.Static(auth.User{Name: "verify-client", Secret: "c", Type: auth.Normal, Status: auth.Enabled}), auth.CheckerOptions{})
	var dates []string
	for _, md := range front.mds {
		dt, authz := md.Get(grpcDateTimeKey), md.Get(grpcAuthorizationKey)
		if len(dt) != 1 || len(authz) != 1 {
			t.Fatalf("metadata %v: want one %s and one %s", md, grpcDateTimeKey, grpcAuthorizationKey)
		}
		if u, ref := checker.AuthenticateGRPC(authz[0], dt[0]); ref != nil || u.Name != "verify-client" {
			t.Fatalf("authorization %q over %q: the checker says %v", authz[0], dt[0], ref)
		}
		if strings.Contains(authz[0], "=c,") || strings.HasSuffix(authz[0], "=c") {
			t.Fatalf("authorization %q carries the secret", authz[0])
		}
		if len(md.Get("x-mq-client-id")) != 1 {
			t.Fatalf("the client's own headers are gone: %v", md)
		}
		dates = append(dates, dt[0])
	}
	if dates[0] == dates[1] {
		t.Fatalf("two calls a second apart signed the same date-time %q: not signed per call", dates[0])
	}

	// A client without the CA does not get through.
	bad := sec
	bad.TLS = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	c, err := dialGRPC(netx.TCP, live, "verify@test@bad", &v2.Settings{}, bad)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.stub.QueryRoute(c.ctx(ctx), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "t"}}); err == nil {
		t.Fatal("a client that does not trust the front's CA got an answer")
	}
}

// TestGRPCClientWithoutCredentialsSendsNoAuthorization: the default run
// sends the metadata it sent before --auth existed.
func TestGRPCClientWithoutCredentialsSendsNoAuthorization(t *testing.T) {
	c := &grpcClient{md: metadata.Pairs("x-mq-client-id", "x")}
	md, _ := metadata.FromOutgoingContext(c.ctx(context.Background()))
	if len(md.Get(grpcAuthorizationKey)) != 0 || len(md.Get(grpcDateTimeKey)) != 0 || len(md) != 1 {
		t.Fatalf("metadata without credentials: %v", md)
	}
}
