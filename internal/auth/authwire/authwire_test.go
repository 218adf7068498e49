package authwire

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// dir is a test Directory.
type dir struct {
	users map[string]auth.User
	acls  map[string]auth.Acl
}

func (d dir) User(n string) (auth.User, bool) { u, ok := d.users[n]; return u, ok }
func (d dir) Acl(s string) (auth.Acl, bool)   { a, ok := d.acls[s]; return a, ok }

func mustAcl(t testing.TB, in rmq.AclInfo) auth.Acl {
	t.Helper()
	a, err := AclFromInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testDir(t testing.TB) dir {
	return dir{
		users: map[string]auth.User{
			"root": {Name: "root", Secret: "root-secret", Type: auth.Super, Status: auth.Enabled},
			"bob":  {Name: "bob", Secret: "bob-secret", Type: auth.Normal, Status: auth.Enabled},
			"eve":  {Name: "eve", Secret: "eve-secret", Type: auth.Normal, Status: auth.Enabled},
		},
		acls: map[string]auth.Acl{"User:bob": mustAcl(t, rmq.AclInfo{Subject: "User:bob", Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{
			{Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: "Allow"},
			{Resource: "Cluster:c1", Actions: []string{"Get"}, Decision: "Allow"},
			{Resource: "Topic:local", Actions: []string{"Pub"}, SourceIps: []string{"10.0.0.0/8"}, Decision: "Allow"},
		}}}})},
	}
}

type server struct {
	addr string
	logs *bytes.Buffer
	mu   *sync.Mutex
}

type lockedBuf struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startGuarded serves a few codes behind a guard of role on 127.0.0.1.
func startGuarded(t *testing.T, role Role, d auth.Directory) *server {
	t.Helper()
	s := &server{logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	ck := auth.NewChecker(d, auth.CheckerOptions{Logger: slog.New(slog.NewTextHandler(lockedBuf{s.mu, s.logs}, nil))})
	srv := remoting.NewServer(remoting.ServerOptions{Guard: Guard(Options{Checker: ck, Role: role, Cluster: "c1"})})
	ok := func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.CodeSuccess, "handled")
	}
	for _, c := range []int16{rmq.CodeGetBrokerRuntimeInfo, rmq.CodeHeartBeat, rmq.CodeRegisterBroker, rmq.CodeGetRouteInfoByTopic, rmq.CodePullMessage} {
		srv.Handle(c, ok)
	}
	srv.HandleBatch(func(_ context.Context, _ *remoting.Conn, reqs []*remoting.Command, reply func(int, func() *remoting.Command)) {
		for i, r := range reqs {
			reply(i, func() *remoting.Command { return remoting.NewResponse(r, remoting.CodeSuccess, "sent") })
		}
	}, rmq.CodeSendMessage, rmq.CodeSendMessageV2, rmq.CodeSendBatchMessage)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	s.addr = ln.Addr().String()
	return s
}

func client(t *testing.T, sign func(*remoting.Command)) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Sign: sign})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func invoke(t *testing.T, cl *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func sendReq(topic string, body []byte) *remoting.Command {
	return rmq.AppendSendHeader(remoting.NewRequest(rmq.CodeSendMessageV2, nil, body), rmq.SendHeader{ProducerGroup: "pg", Topic: topic, QueueID: 1, BornTimestamp: 1700000000000})
}

func want(t *testing.T, what string, resp *remoting.Command, code int16, remark string) {
	t.Helper()
	if resp.Code != code || !strings.Contains(resp.Remark, remark) {
		t.Errorf("%s: code %d remark %q, want %d and %q", what, resp.Code, resp.Remark, code, remark)
	}
}

func TestBrokerGuardOverLoopback(t *testing.T) {
	s := startGuarded(t, Broker, testDir(t))
	root := client(t, Signer("root", "root-secret"))
	bob := client(t, Signer("bob", "bob-secret"))
	wrong := client(t, Signer("bob", "not-bobs"))
	unsigned := client(t, nil)
	eve := client(t, Signer("eve", "eve-secret"))

	want(t, "super send", invoke(t, root, s.addr, sendReq("anything", []byte("m"))), 0, "sent")
	want(t, "super unreadable heartbeat", invoke(t, root, s.addr, remoting.NewRequest(rmq.CodeHeartBeat, nil, []byte("{"))), 0, "handled")
	want(t, "normal allowed send", invoke(t, bob, s.addr, sendReq("orders", []byte("m"))), 0, "sent")
	want(t, "normal forbidden send", invoke(t, bob, s.addr, sendReq("payments", []byte("m"))), 16,
		`user "bob" may not Pub on Topic:payments (no policy allows it)`)
	want(t, "source-restricted policy from 127.0.0.1", invoke(t, bob, s.addr, sendReq("local", nil)), 16, "no policy allows it")
	want(t, "cluster named by the guard", invoke(t, bob, s.addr, remoting.NewRequest(rmq.CodeGetBrokerRuntimeInfo, nil, nil)), 0, "handled")
	want(t, "user without policy", invoke(t, eve, s.addr, sendReq("orders", nil)), 16, `user "eve" may not Pub on Topic:orders (no policy allows it)`)
	want(t, "wrong secret", invoke(t, wrong, s.addr, sendReq("orders", nil)), 16, `authentication failed: the signature does not match user "bob"'s secret`)
	want(t, "unsigned", invoke(t, unsigned, s.addr, sendReq("orders", nil)), 16, "the request is not signed: configure the client's AccessKey and SecretKey")
	want(t, "unknown", invoke(t, client(t, Signer("zed", "x")), s.addr, sendReq("orders", nil)), 16, `user "zed" is unknown`)
	want(t, "unparseable heartbeat", invoke(t, eve, s.addr, remoting.NewRequest(rmq.CodeHeartBeat, nil, []byte("{"))), 16,
		`user "eve"'s request cannot be authorized: heartbeat body is not valid JSON`)
	want(t, "pull without a group", invoke(t, bob, s.addr, remoting.NewRequest(rmq.CodePullMessage, map[string]string{"topic": "orders"}, nil)), 16, "names no group")

	// A retried command is signed again: still valid, also after its
	// header was rebuilt and with another user's credentials.
	req := sendReq("orders", []byte("retry me"))
	want(t, "first try", invoke(t, bob, s.addr, req), 0, "sent")
	want(t, "second try", invoke(t, bob, s.addr, req), 0, "sent")
	rmq.AppendSendHeader(req, rmq.SendHeader{ProducerGroup: "pg", Topic: "orders", QueueID: 2})
	want(t, "rebuilt header", invoke(t, bob, s.addr, req), 0, "sent")
	want(t, "signed by root now", invoke(t, root, s.addr, req), 0, "sent")
	if req.Ext("AccessKey") != "root" {
		t.Errorf("AccessKey after re-signing by root = %q", req.Ext("AccessKey"))
	}

	// Batched sends (pipelined, handed to the batch handler together) are
	// each guarded.
	conn, err := bob.Conn(context.Background(), s.addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]*remoting.Command, 40)
	for i := range got {
		topic, code := "orders", rmq.CodeSendMessageV2
		if i%2 == 1 {
			topic = "payments"
		}
		if i%4 >= 2 {
			code = rmq.CodeSendBatchMessage
		}
		r := sendReq(topic, []byte("batch"))
		r.Code = code
		wg.Add(1)
		conn.InvokeAsync(r, func(resp *remoting.Command, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = resp
		})
	}
	wg.Wait()
	for i, r := range got {
		if r == nil {
			continue
		}
		if i%2 == 0 {
			want(t, "batched allowed", r, 0, "sent")
		} else {
			want(t, "batched forbidden", r, 16, "may not Pub on Topic:payments")
		}
	}
	s.mu.Lock()
	logs := s.logs.String()
	s.mu.Unlock()
	if !strings.Contains(logs, "request refused") || strings.Contains(logs, "bob-secret") || !strings.Contains(logs, "remote=127.0.0.1:") {
		t.Errorf("refusal log lacks the line or the remote, or leaks a secret:\n%s", logs)
	}
}

func TestNameServerAndInternalGuards(t *testing.T) {
	d := testDir(t)
	ns := startGuarded(t, NameServer, d)
	root := client(t, Signer("root", "root-secret"))
	bob := client(t, Signer("bob", "bob-secret"))
	anon := client(t, nil)
	route := remoting.NewRequest(rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	want(t, "anonymous read", invoke(t, anon, ns.addr, route), 0, "handled")
	reg := func() *remoting.Command { return remoting.NewRequest(rmq.CodeRegisterBroker, nil, nil) }
	want(t, "anonymous write", invoke(t, anon, ns.addr, reg()), 16, "not signed")
	want(t, "normal write", invoke(t, bob, ns.addr, reg()), 16, `user "bob" may not change the name server's state (request code 103): only super users may`)
	want(t, "super write", invoke(t, root, ns.addr, reg()), 0, "handled")

	in := startGuarded(t, Internal, d)
	want(t, "internal anonymous", invoke(t, anon, in.addr, remoting.NewRequest(rmq.CodeGetBrokerRuntimeInfo, nil, nil)), 16, "not signed")
	want(t, "internal normal", invoke(t, bob, in.addr, remoting.NewRequest(rmq.CodeGetBrokerRuntimeInfo, nil, nil)), 16, "only super users may")
	want(t, "internal super", invoke(t, root, in.addr, remoting.NewRequest(rmq.CodeGetBrokerRuntimeInfo, nil, nil)), 0, "handled")
	// A standalone name server's static directory.
	st := startGuarded(t, NameServer, auth.Static(auth.User{Name: "init", Secret: "s", Type: auth.Super, Status: auth.Enabled}))
	want(t, "static init user", invoke(t, client(t, Signer("init", "s")), st.addr, reg()), 0, "handled")
}

func TestSignerMatchesListedFields(t *testing.T) {
	// A command whose AccessKey is a listed field (it would override the
	// map) is still signed with the signer's key.
	c := remoting.NewRequest(rmq.CodeSendMessageV2, nil, []byte("b")).AppendExt("AccessKey", "other").AppendExt("b", "T")
	Signer("bob", "bob-secret")(c)
	ck := auth.NewChecker(testDir(t), auth.CheckerOptions{})
	if c.Ext("AccessKey") != "bob" {
		t.Fatalf("AccessKey %q", c.Ext("AccessKey"))
	}
	if _, r := ck.AuthenticateRemoting(c, c.Body); r != nil {
		t.Fatal(r)
	}
	// Body parts are signed as their concatenation.
	p := remoting.NewRequest(rmq.CodeSendMessageV2, map[string]string{"b": "T"}, nil)
	p.BodyParts = [][]byte{[]byte("ab"), []byte("cd")}
	Signer("bob", "bob-secret")(p)
	if _, r := ck.AuthenticateRemoting(p, []byte("abcd")); r != nil {
		t.Fatal(r)
	}
}

func TestConversions(t *testing.T) {
	u, err := UserFromInfo(rmq.UserInfo{Username: "alice", Password: "pw", UserType: "normal", UserStatus: "ENABLE"})
	if err != nil || u != (auth.User{Name: "alice", Secret: "pw", Type: auth.Normal, Status: auth.Enabled}) {
		t.Fatalf("UserFromInfo = %+v, %v", u, err)
	}
	if got := UserToInfo(u); got != (rmq.UserInfo{Username: "alice", Password: "pw", UserType: "Normal", UserStatus: "enable"}) {
		t.Errorf("UserToInfo = %+v", got)
	}
	if u, err := UserFromInfo(rmq.UserInfo{Username: "alice"}); err != nil || u.Type != "" || u.Status != "" {
		t.Errorf("partial user: %+v, %v", u, err)
	}
	for _, bad := range []rmq.UserInfo{{}, {Username: "a b"}, {Username: "a", UserType: "root"}, {Username: "a", UserStatus: "on"},
		{Username: "a", Password: strings.Repeat("x", auth.MaxSecretBytes+1)}} {
		if _, err := UserFromInfo(bad); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("UserFromInfo(%+v): %v", bad, err)
		}
	}
	in := rmq.AclInfo{Subject: "user:bob", Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{
		{Resource: "topic:order-*", Actions: []string{"pub", "SUB"}, SourceIps: []string{"10.0.0.1", "10.0.0.0/8"}, Decision: "allow"},
		{Resource: "*", Actions: []string{"All"}, Decision: "DENY"},
	}}}}
	a, err := AclFromInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	out := AclToInfo(a)
	wantOut := rmq.AclInfo{Subject: "User:bob", Policies: []rmq.PolicyInfo{{PolicyType: "Custom", Entries: []rmq.PolicyEntryInfo{
		{Resource: "Topic:order-*", Actions: []string{"Pub", "Sub"}, SourceIps: []string{"10.0.0.1", "10.0.0.0/8"}, Decision: "Allow"},
		{Resource: "*", Actions: []string{"All"}, Decision: "Deny"},
	}}}}
	if !equalAcl(out, wantOut) {
		t.Errorf("AclToInfo = %+v, want %+v", out, wantOut)
	}
	if a2, err := AclFromInfo(out); err != nil || !equalAcl(AclToInfo(a2), out) {
		t.Errorf("round trip: %+v, %v", a2, err)
	}
	entry := func(e rmq.PolicyEntryInfo) rmq.AclInfo {
		return rmq.AclInfo{Subject: "User:bob", Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{e}}}}
	}
	for _, tc := range []struct {
		in  rmq.AclInfo
		msg string
	}{
		{rmq.AclInfo{Subject: "bob"}, "User:NAME"},
		{rmq.AclInfo{Subject: "User:bob"}, "has no policy"},
		{rmq.AclInfo{Subject: "User:bob", Policies: []rmq.PolicyInfo{{}}}, "policy 1 has no entry"},
		{rmq.AclInfo{Subject: "User:bob", Policies: []rmq.PolicyInfo{{PolicyType: "x", Entries: []rmq.PolicyEntryInfo{{}}}}}, "policy 1: policy type"},
		{entry(rmq.PolicyEntryInfo{Resource: "Queue:x", Actions: []string{"Pub"}, Decision: "Allow"}), "policy 1 entry 1: resource"},
		{entry(rmq.PolicyEntryInfo{Resource: "Topic:x", Decision: "Allow"}), "names no action"},
		{entry(rmq.PolicyEntryInfo{Resource: "Topic:x", Actions: []string{"Any"}, Decision: "Allow"}), "Any cannot"},
		{entry(rmq.PolicyEntryInfo{Resource: "Topic:x", Actions: []string{"Pub"}, SourceIps: []string{"10.0.0.0/40"}, Decision: "Allow"}), "source IP"},
		{entry(rmq.PolicyEntryInfo{Resource: "Topic:x", Actions: []string{"Pub"}}), "decision"},
	} {
		_, err := AclFromInfo(tc.in)
		if !errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), tc.msg) || strings.HasPrefix(err.Error(), "auth:") {
			t.Errorf("AclFromInfo(%+v): %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func equalAcl(a, b rmq.AclInfo) bool {
	if a.Subject != b.Subject || len(a.Policies) != len(b.Policies) {
		return false
	}
	for i := range a.Policies {
		pa, pb := a.Policies[i], b.Policies[i]
		if pa.PolicyType != pb.PolicyType || len(pa.Entries) != len(pb.Entries) {
			return false
		}
		for j := range pa.Entries {
			ea, eb := pa.Entries[j], pb.Entries[j]
			if ea.Resource != eb.Resource || ea.Decision != eb.Decision || strings.Join(ea.Actions, ",") != strings.Join(eb.Actions, ",") ||
				strings.Join(ea.SourceIps, ",") != strings.Join(eb.SourceIps, ",") {
				return false
			}
		}
	}
	return true
}

// BenchmarkGuardSend: the guard's work for one signed 1 KiB send, by a
// super user and by a normal user whose policy allows it.
func BenchmarkGuardSend(b *testing.B) {
	d := testDir(b)
	ck := auth.NewChecker(d, auth.CheckerOptions{})
	g := &guard{opts: Options{Checker: ck, Role: Broker, Cluster: "c1"}, log: slog.New(slog.DiscardHandler)}
	remote := netip.MustParseAddrPort("10.1.2.3:40000")
	for _, user := range []string{"root", "bob"} {
		b.Run(user, func(b *testing.B) {
			req := sendReq("orders", bytes.Repeat([]byte("x"), 1024))
			Signer(user, d.users[user].Secret)(req)
			b.ReportAllocs()
			b.SetBytes(1024)
			for b.Loop() {
				if resp := g.check(remote, req); resp != nil {
					b.Fatal(resp.Remark)
				}
			}
		})
	}
}

// BenchmarkSignerSend: the client's signing of one 1 KiB send.
func BenchmarkSignerSend(b *testing.B) {
	req := sendReq("orders", bytes.Repeat([]byte("x"), 1024))
	sign := Signer("root", "s3cret-s3cret")
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		sign(req)
	}
}
