package loadgen

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
)

func TestHalfCredentialsAreAConfigError(t *testing.T) {
	for _, sec := range []Security{{AccessKey: "a"}, {SecretKey: "s"}} {
		if _, err := Produce(context.Background(), ProduceConfig{NameServers: []string{"127.0.0.1:1"}, Security: sec}); !errors.Is(err, ErrConfig) {
			t.Fatalf("produce with %+v: %v, want ErrConfig", sec, err)
		}
		if _, err := Consume(context.Background(), ConsumeConfig{NameServers: []string{"127.0.0.1:1"}, Security: sec}); !errors.Is(err, ErrConfig) {
			t.Fatalf("consume with %+v: %v, want ErrConfig", sec, err)
		}
		if _, err := Receive(context.Background(), ReceiveConfig{GRPC: "127.0.0.1:1", Group: "G", Security: sec}); !errors.Is(err, ErrConfig) {
			t.Fatalf("receive with %+v: %v, want ErrConfig", sec, err)
		}
	}
}

// TestRemotingRequestsAreSigned: the clients of a run with credentials
// add AccessKey and the official clients' Signature to every request.
func TestRemotingRequestsAreSigned(t *testing.T) {
	var mu sync.Mutex
	var got []*remoting.Command
	srv := remoting.NewServer(remoting.ServerOptions{})
	srv.HandleDefault(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		c := remoting.NewRequest(req.Code, map[string]string{}, bytes.Clone(req.Body))
		req.EachExt(func(k, v string) { c.ExtFields[k] = v })
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
		return remoting.NewResponse(req, 0, "")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	defer func() { srv.Close(); <-done }()

	sec := Security{AccessKey: "bench", SecretKey: "s3cret"}
	cl := remoting.NewClient(sec.clientOptions(remoting.ClientOptions{Handler: ignoreRequests, LazyResponses: true}))
	defer cl.Close()
	for i, body := range []string{"one", ""} {
		req := remoting.NewRequest(310, map[string]string{"a": "A", "topic": "T", "z": string(rune('0' + i))}, []byte(body))
		if _, err := cl.Invoke(testContext(t), ln.Addr().String(), req); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	for _, r := range got {
		if r.ExtFields["AccessKey"] != "bench" {
			t.Fatalf("AccessKey %q", r.ExtFields["AccessKey"])
		}
		var keys []string
		for k := range r.ExtFields {
			if k != "Signature" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		mac := hmac.New(sha1.New, []byte("s3cret"))
		for _, k := range keys {
			mac.Write([]byte(r.ExtFields[k]))
		}
		mac.Write(r.Body)
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); r.ExtFields["Signature"] != want {
			t.Fatalf("Signature %q, want %q", r.ExtFields["Signature"], want)
		}
	}
}

// TestGRPCCallsCarryTheAuthorizationMetadata: every call of a run with
// credentials carries x-mq-date-time and the 5.x clients' authorization
// over it.
func TestGRPCCallsCarryTheAuthorizationMetadata(t *testing.T) {
	var mu sync.Mutex
	var mds []metadata.MD
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		mds = append(mds, md)
		mu.Unlock()
		return h(ctx, req)
	}))
	v2.RegisterMessagingServiceServer(gs, v2.UnimplementedMessagingServiceServer{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()

	c, err := dialGRPC(ln.Addr().String(), 1, true, Security{AccessKey: "bench", SecretKey: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for range 2 {
		_, _ = c.stubs[0].QueryRoute(c.ctx(testContext(t)), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T"}})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(mds) != 2 {
		t.Fatalf("%d calls seen", len(mds))
	}
	dateRE := regexp.MustCompile(`^\d{8}T\d{6}Z$`)
	for _, md := range mds {
		dt := first(md, "x-mq-date-time")
		if !dateRE.MatchString(dt) {
			t.Fatalf("x-mq-date-time %q", dt)
		}
		mac := hmac.New(sha1.New, []byte("s3cret"))
		mac.Write([]byte(dt))
		want := "MQv2-HMAC-SHA1 Credential=bench//Rocketmq, SignedHeaders=x-mq-date-time, Signature=" + hex.EncodeToString(mac.Sum(nil))
		if got := first(md, "authorization"); got != want {
			t.Fatalf("authorization %q, want %q", got, want)
		}
		if first(md, "x-mq-client-id") == "" {
			t.Fatal("the client's own headers were lost")
		}
	}
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

// TestGRPCProduceAgainstAnAuthenticatingFront: the gRPC front with a
// Checker takes a signed run's sends and refuses an unsigned run's.
func TestGRPCProduceAgainstAnAuthenticatingFront(t *testing.T) {
	checker := auth.NewChecker(auth.Static(auth.User{Name: "bench", Secret: "s3cret", Type: auth.Super, Status: auth.Enabled}), auth.CheckerOptions{})
	d := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		cfg.NameServers = nil
		cfg.GRPCListen = "127.0.0.1:0"
		cfg.GRPC.Plaintext = true
		cfg.GRPC.Auth = checker
	})
	addr := d.Broker.GRPCAddr().String()
	res, err := Produce(testContext(t), ProduceConfig{GRPC: addr, GRPCPlaintext: true, Topic: "AuthBench", BodyBytes: 64, InFlight: 4, Count: 50,
		Security: Security{AccessKey: "bench", SecretKey: "s3cret"}})
	if err != nil || res.Msgs != 50 || res.Errors != 0 {
		t.Fatalf("signed produce: %v, %+v", err, res)
	}
	res, err = Produce(testContext(t), ProduceConfig{GRPC: addr, GRPCPlaintext: true, Topic: "AuthBench", BodyBytes: 64, InFlight: 4, Count: 50, MaxErrors: 5,
		Security: Security{AccessKey: "bench", SecretKey: "wrong"}})
	text := ""
	if err != nil {
		text = err.Error()
	}
	if res != nil {
		text += " " + res.FirstError
	}
	if res != nil && res.Msgs != 0 || !strings.Contains(text, "UNAUTHORIZED") {
		t.Fatalf("wrong secret: %v, %+v", err, res)
	}
}
