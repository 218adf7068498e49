package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

// seenReq is a request a fake server received: its code, ext fields and
// body, copied.
type seenReq struct {
	code int16
	ext  map[string]string
	body []byte
}

// answerFunc answers a request of a fake server: code, remark, body.
type answerFunc func(r seenReq) (int16, string, []byte)

// fakeServer is a remoting server on a loopback port that records every
// request and answers with its answer function (SUCCESS and no body by
// default).
type fakeServer struct {
	name string
	addr string

	mu     sync.Mutex
	reqs   []seenReq
	answer answerFunc
}

func startFake(t *testing.T, name string, answer answerFunc, wrap func(net.Listener) net.Listener) *fakeServer {
	t.Helper()
	return startGuardedFake(t, name, answer, wrap, nil)
}

// startGuardedFake is startFake with a server guard (authwire's), which
// sees each request before the fake records it.
func startGuardedFake(t *testing.T, name string, answer answerFunc, wrap func(net.Listener) net.Listener, guard remoting.Guard) *fakeServer {
	t.Helper()
	f := &fakeServer{name: name, answer: answer}
	srv := remoting.NewServer(remoting.ServerOptions{Guard: guard})
	srv.HandleDefault(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		r := seenReq{code: req.Code, ext: map[string]string{}, body: bytes.Clone(req.Body)}
		req.EachExt(func(k, v string) { r.ext[k] = v })
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		answer := f.answer
		f.mu.Unlock()
		code, remark, body := int16(rmq.RespSuccess), "", []byte(nil)
		if answer != nil {
			code, remark, body = answer(r)
		}
		resp := remoting.NewResponse(req, code, remark)
		resp.Body = body
		return resp
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return f
}

func (f *fakeServer) setAnswer(a answerFunc) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

// requests returns what the server received, in order.
func (f *fakeServer) requests() []seenReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenReq(nil), f.reqs...)
}

// only returns the requests of code.
func (f *fakeServer) only(code int16) []seenReq {
	var out []seenReq
	for _, r := range f.requests() {
		if r.code == code {
			out = append(out, r)
		}
	}
	return out
}

// fakeCluster is a fake name server listing fake master brokers.
type fakeCluster struct {
	t       *testing.T
	ns      *fakeServer
	brokers []*fakeServer
}

// startFakeCluster starts a name server and one master per name, each
// answering with answer.
func startFakeCluster(t *testing.T, answer answerFunc, names ...string) *fakeCluster {
	t.Helper()
	return startFakeClusterOn(t, nil, answer, names...)
}

// startFakeClusterOn is startFakeCluster with every listener wrapped by
// wrap (TLS).
func startFakeClusterOn(t *testing.T, wrap func(net.Listener) net.Listener, answer answerFunc, names ...string) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{t: t}
	ci := rmq.ClusterInfo{BrokerAddrTable: map[string]rmq.BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for _, n := range names {
		b := startFake(t, n, answer, wrap)
		fc.brokers = append(fc.brokers, b)
		ci.BrokerAddrTable[n] = rmq.BrokerData{BrokerName: n, Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{rmq.MasterID: b.addr}}
		ci.ClusterAddrTable["DefaultCluster"] = append(ci.ClusterAddrTable["DefaultCluster"], n)
	}
	body := rmq.EncodeClusterInfoBody(ci)
	fc.ns = startFake(t, "namesrv", func(r seenReq) (int16, string, []byte) {
		if r.code == rmq.CodeGetBrokerClusterInfo {
			return rmq.RespSuccess, "", body
		}
		return 3, "not supported by the fake", nil
	}, wrap)
	return fc
}

// run runs fn against a CLI of the fake cluster with cfg's credentials
// and output and returns what it wrote.
func (fc *fakeCluster) run(cfg Config, fn func(*CLI) error) (string, error) {
	fc.t.Helper()
	var out bytes.Buffer
	cfg.NameServers = []string{fc.ns.addr}
	cfg.Out = &out
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	c, err := New(cfg)
	if err != nil {
		fc.t.Fatal(err)
	}
	defer c.Close()
	err = fn(c)
	return out.String(), err
}

// must is run failing the test on an error.
func (fc *fakeCluster) must(cfg Config, fn func(*CLI) error) string {
	fc.t.Helper()
	out, err := fc.run(cfg, fn)
	if err != nil {
		fc.t.Fatalf("command failed: %v\noutput:\n%s", err, out)
	}
	return out
}

// allRequests is every request the cluster's servers received.
func (fc *fakeCluster) allRequests() []seenReq {
	out := fc.ns.requests()
	for _, b := range fc.brokers {
		out = append(out, b.requests()...)
	}
	return out
}

// wantBody checks that body is the JSON document want (compared as
// decoded values, so field order does not matter).
func wantBody(t *testing.T, body []byte, want string) {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("body\n %s\nwant\n %s", body, want)
	}
}

// wantExt checks a request's ext fields other than the signature ones.
func wantExt(t *testing.T, r seenReq, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for k, v := range r.ext {
		if k != rmq.FieldAccessKey && k != rmq.FieldSignature && k != rmq.FieldSecurityToken {
			got[k] = v
		}
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("code %d ext fields %v, want %v", r.code, got, want)
	}
}

// wantSigned checks that r carries accessKey and the signature the
// official clients compute: Base64 of HMAC-SHA1(secret, the values of
// every other ext field in ascending key order, then the body).
func wantSigned(t *testing.T, r seenReq, accessKey, secret string) {
	t.Helper()
	if r.ext[rmq.FieldAccessKey] != accessKey {
		t.Fatalf("code %d: AccessKey %q, want %q (ext %v)", r.code, r.ext[rmq.FieldAccessKey], accessKey, r.ext)
	}
	keys := make([]string, 0, len(r.ext))
	for k := range r.ext {
		if k != rmq.FieldSignature {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	mac := hmac.New(sha1.New, []byte(secret))
	for _, k := range keys {
		mac.Write([]byte(r.ext[k]))
	}
	mac.Write(r.body)
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); r.ext[rmq.FieldSignature] != want {
		t.Fatalf("code %d: Signature %q, want %q", r.code, r.ext[rmq.FieldSignature], want)
	}
}

// serverTLS writes a test CA and a server certificate for 127.0.0.1 it
// signed (tlsxtest's) into a temporary directory and returns the server's
// tls.Config and the CA's file (what a client verifies it with).
func serverTLS(t *testing.T) (*tls.Config, string) {
	t.Helper()
	f, caFile := tlsxtest.Files(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caFile
}
