package verify

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/cluster"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/workload"
)

// TestUserAndACLRequestEncoding: the management requests carry RocketMQ
// 5.3's header fields and JSON bodies (mqadmin createUser / createAcl).
func TestUserAndACLRequestEncoding(t *testing.T) {
	req := rmq.EncodeCreateUser(clientUser("pw"))
	if req.Code != 3001 || req.Ext(rmq.FieldUsername) != ClientUser {
		t.Fatalf("create user: code %d, username %q", req.Code, req.Ext(rmq.FieldUsername))
	}
	var u map[string]string
	if err := json.Unmarshal(req.Body, &u); err != nil || len(u) != 4 || u["username"] != ClientUser || u["password"] != "pw" ||
		u["userType"] != "Normal" || u["userStatus"] != "enable" {
		t.Fatalf("create user body %s (%v)", req.Body, err)
	}
	if up := rmq.EncodeUpdateUser(clientUser("pw")); up.Code != 3002 || string(up.Body) != string(req.Body) {
		t.Fatalf("update user: code %d body %s", up.Code, up.Body)
	}

	acl := clientACL("0badcafe")
	req = rmq.EncodeCreateACL(acl)
	if req.Code != 3006 || req.Ext(rmq.FieldSubject) != "User:verify-client" {
		t.Fatalf("create ACL: code %d, subject %q", req.Code, req.Ext(rmq.FieldSubject))
	}
	var body any
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{"subject":"User:verify-client","policies":[{"policyType":"Custom","entries":[`+
		`{"resource":"Topic:verify-0badcafe-*","actions":["Pub","Sub","Get"],"decision":"Allow"},`+
		`{"resource":"Group:verify-0badcafe-*","actions":["Sub"],"decision":"Allow"}]}]}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body, want) {
		t.Fatalf("create ACL body\n%s\nwant\n%v", req.Body, want)
	}
	// The broker front's own decoder takes it as the ACL verify means.
	back, err := rmq.DecodeAclInfo(req.Body)
	if err != nil || !reflect.DeepEqual(back, acl) {
		t.Fatalf("decoded %+v (%v), want %+v", back, err, acl)
	}
	if up := rmq.EncodeUpdateACL(acl); up.Code != 3007 {
		t.Fatalf("update ACL code %d", up.Code)
	}
	// The prefixed resources cover every topic and group the workloads
	// name (retry topics are their group's resource).
	env := &workload.Env{RunID: "0badcafe"}
	for _, w := range workload.Names() {
		for _, name := range []string{env.Topic(w), env.Group(w), env.Topic(w) + "-drain"} {
			if !strings.HasPrefix(name, strings.TrimSuffix(strings.TrimPrefix(acl.Policies[0].Entries[0].Resource, "Topic:"), "*")) {
				t.Errorf("%s is outside the ACL's prefix", name)
			}
		}
	}
}

// fakeBroker answers what the setup sends: the name server's cluster
// info (listing itself as a master) and, as a broker with --auth, the
// user and ACL writes, heartbeats (refused unsigned) and topic creations
// (refused to the normal user).
type fakeBroker struct {
	t    *testing.T
	addr string
	srv  *remoting.Server

	mu        sync.Mutex
	masters   map[string]string // group -> address, the cluster info
	refuse    map[int16]string  // code -> remark to refuse it with
	openDoor  bool              // accept unsigned heartbeats
	letCreate bool              // let anyone create a topic
	users     map[string]rmq.UserInfo
	acls      map[string]rmq.AclInfo
	codes     []int16
}

// testSigner signs as the fake broker checks: the access key and a
// signature made of the secret.
func testSigner(ak, sk string) func(*remoting.Command) {
	return func(c *remoting.Command) {
		c.SetExt(rmq.FieldAccessKey, ak)
		c.SetExt(rmq.FieldSignature, "sig:"+sk)
	}
}

func newFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBroker{t: t, addr: ln.Addr().String(), refuse: map[int16]string{},
		users: map[string]rmq.UserInfo{}, acls: map[string]rmq.AclInfo{}}
	f.srv = remoting.NewServer(remoting.ServerOptions{})
	f.srv.HandleDefault(f.handle)
	go f.srv.Serve(ln)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// locked runs fn holding the broker's lock (the handlers run on the
// server's goroutines).
func (f *fakeBroker) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeBroker) handle(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = append(f.codes, req.Code)
	if remark, ok := f.refuse[req.Code]; ok {
		return remoting.NewResponse(req, 1, remark)
	}
	ak := req.Ext(rmq.FieldAccessKey)
	ok := remoting.NewResponse(req, rmq.RespSuccess, "")
	switch req.Code {
	case rmq.CodeGetBrokerClusterInfo:
		ci := rmq.ClusterInfo{BrokerAddrTable: map[string]rmq.BrokerData{}}
		for g, a := range f.masters {
			ci.BrokerAddrTable[g] = rmq.BrokerData{BrokerName: g, BrokerAddrs: map[int64]string{rmq.MasterID: a}}
		}
		ok.Body = rmq.EncodeClusterInfoBody(ci)
		return ok
	case rmq.CodeAuthCreateUser, rmq.CodeAuthUpdateUser:
		if ak != AdminUser {
			return remoting.NewResponse(req, rmq.RespNoPermission, "not the admin")
		}
		var u rmq.UserInfo
		if err := json.Unmarshal(req.Body, &u); err != nil || u.Username != req.Ext(rmq.FieldUsername) {
			return remoting.NewResponse(req, 1, "bad user body")
		}
		f.users[u.Username] = u
		return ok
	case rmq.CodeAuthCreateACL, rmq.CodeAuthUpdateACL:
		if ak != AdminUser {
			return remoting.NewResponse(req, rmq.RespNoPermission, "not the admin")
		}
		var a rmq.AclInfo
		if err := json.Unmarshal(req.Body, &a); err != nil || a.Subject != req.Ext(rmq.FieldSubject) {
			return remoting.NewResponse(req, 1, "bad ACL body")
		}
		f.acls[a.Subject] = a
		return ok
	case rmq.CodeHeartBeat:
		if ak == "" && !f.openDoor {
			return remoting.NewResponse(req, rmq.RespNoPermission, "not signed")
		}
		if u, known := f.users[ak]; ak != "" && (!known || req.Ext(rmq.FieldSignature) != "sig:"+u.Password) {
			return remoting.NewResponse(req, rmq.RespNoPermission, "unknown user or wrong signature")
		}
		return ok
	case rmq.CodeUpdateAndCreateTopic:
		if ak == ClientUser && !f.letCreate {
			return remoting.NewResponse(req, rmq.RespNoPermission, "may not Create")
		}
		return ok
	}
	return remoting.NewResponse(req, 3, "not supported")
}

// nsCluster is the part of a cluster the auth setup uses: its topology
// and name servers.
type nsCluster struct {
	clusterOps
	top cluster.Topology
	ns  []string
}

func (c nsCluster) Topology() cluster.Topology { return c.top }
func (c nsCluster) NameServers() []string      { return c.ns }

// authRun is a run with --auth against the fake brokers: the first one
// also plays the name server, listing every broker as its group's master.
func authRun(t *testing.T, brokers ...*fakeBroker) *run {
	t.Helper()
	masters := map[string]string{}
	var groups []cluster.Group
	for i, b := range brokers {
		g := "broker-" + string(rune('a'+i))
		masters[g] = b.addr
		groups = append(groups, cluster.Group{Name: g, Replicas: 1})
	}
	brokers[0].locked(func() { brokers[0].masters = masters })
	hist, err := history.Create(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hist.Close() })
	sec := &security{signer: testSigner,
		admin:  &workload.Credentials{AccessKey: AdminUser, SecretKey: "admin-pw"},
		client: &workload.Credentials{AccessKey: ClientUser, SecretKey: "client-pw"}}
	return &run{cfg: Config{Auth: true}, log: slog.New(slog.DiscardHandler), sec: sec, hist: hist,
		cl: nsCluster{top: cluster.Topology{Groups: groups}, ns: []string{brokers[0].addr}}}
}

func TestSetupAuthCreatesTheUserAndACLOnEveryMaster(t *testing.T) {
	a, b := newFakeBroker(t), newFakeBroker(t)
	r := authRun(t, a, b)
	detail, err := r.setupAuth(context.Background(), "0badcafe")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeBroker{a, b} {
		f.mu.Lock()
		defer f.mu.Unlock()
		u, ok := f.users[ClientUser]
		if !ok || u.Password != "client-pw" || u.UserType != "Normal" || u.UserStatus != "enable" {
			t.Fatalf("%s: user %+v (%v)", f.addr, u, ok)
		}
		acl, ok := f.acls["User:"+ClientUser]
		if !ok || len(acl.Policies) != 1 || len(acl.Policies[0].Entries) != 2 {
			t.Fatalf("%s: ACL %+v (%v)", f.addr, acl, ok)
		}
	}
	for _, want := range []string{"normal user verify-client", "Pub/Sub/Get on Topic:verify-0badcafe-*", "Sub on Group:verify-0badcafe-*", "2 master(s)"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q lacks %q", detail, want)
		}
	}
	if strings.Contains(detail, "client-pw") || strings.Contains(detail, "admin-pw") {
		t.Fatalf("the detail carries a secret: %q", detail)
	}
}

// TestSetupAuthUpdatesWhatIsThere: a create the broker refuses (the user
// or ACL exists already) is followed by an update.
func TestSetupAuthUpdatesWhatIsThere(t *testing.T) {
	a := newFakeBroker(t)
	a.locked(func() {
		a.refuse[rmq.CodeAuthCreateUser] = "the user exists already"
		a.refuse[rmq.CodeAuthCreateACL] = "the subject has an ACL already"
	})
	if _, err := authRun(t, a).setupAuth(context.Background(), "0badcafe"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.users[ClientUser]; !ok {
		t.Fatal("the user was not updated")
	}
	if _, ok := a.acls["User:"+ClientUser]; !ok {
		t.Fatal("the ACL was not updated")
	}
}

// TestSetupAuthStopsTheRun: every way the setup can go wrong is an
// ErrSetup that says what was refused, by whom, and why.
func TestSetupAuthStopsTheRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		prep  func(*fakeBroker)
		wants []string
	}{
		{"user refused", func(f *fakeBroker) {
			f.refuse[rmq.CodeAuthCreateUser] = "no room"
			f.refuse[rmq.CodeAuthUpdateUser] = "no such user"
		}, []string{"create user verify-client on broker-a", "no room", "no such user", "broker's log"}},
		{"ACL refused", func(f *fakeBroker) {
			f.refuse[rmq.CodeAuthCreateACL] = "bad resource"
			f.refuse[rmq.CodeAuthUpdateACL] = "bad resource"
		}, []string{"create the ACL of User:verify-client on broker-a", "bad resource"}},
		{"auth not enforced", func(f *fakeBroker) { f.openDoor = true }, []string{"unsigned heartbeat", "does not enforce --auth"}},
		{"ACL not enforced", func(f *fakeBroker) { f.letCreate = true }, []string{"topic creation by normal user verify-client", "does not authorize"}},
		{"no name server answer", func(f *fakeBroker) { f.refuse[rmq.CodeGetBrokerClusterInfo] = "busy" }, []string{"find the masters", "busy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeBroker(t)
			f.locked(func() { c.prep(f) })
			r := authRun(t, f)
			ctx := context.Background()
			if c.name == "no name server answer" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			_, err := r.setupAuth(ctx, "0badcafe")
			if !errors.Is(err, ErrSetup) {
				t.Fatalf("error %v, want an ErrSetup", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestSetupAuthWaitsForEveryGroupsMaster: a group whose master the name
// server does not list yet is waited for, not skipped.
func TestSetupAuthWaitsForEveryGroupsMaster(t *testing.T) {
	a := newFakeBroker(t)
	r := authRun(t, a)
	r.cl = nsCluster{top: cluster.Topology{Groups: []cluster.Group{{Name: "broker-a"}, {Name: "broker-b"}}}, ns: []string{a.addr}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := r.setupAuth(ctx, "0badcafe")
	if err == nil || !strings.Contains(err.Error(), "1 of the 2 groups' masters") {
		t.Fatalf("error %v, want one saying a master is missing", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.users) != 0 {
		t.Fatal("a user was created before every master was known")
	}
}

// TestSecurityLine: a run with --auth and --tls writes one Security line
// naming both; a run without writes none (its history is as before).
func TestSecurityLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		auth, tls bool
		want      string
	}{{false, false, ""}, {true, false, "auth: set up"}, {true, true, "auth,tls: set up; every process with --tls-mode enforcing"}, {false, true, "tls: every process"}} {
		p := filepath.Join(dir, strings.ReplaceAll(c.want, " ", "_")+"h.jsonl")
		hist, err := history.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		r := &run{cfg: Config{Auth: c.auth, TLS: c.tls}, hist: hist}
		if err := r.recordSecurity("set up"); err != nil {
			t.Fatal(err)
		}
		if err := hist.Close(); err != nil {
			t.Fatal(err)
		}
		ops, err := history.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if len(ops) != 0 {
				t.Fatalf("without auth and TLS: %d lines", len(ops))
			}
			continue
		}
		if len(ops) != 1 || ops[0].F != history.Security || !strings.HasPrefix(ops[0].Value, c.want) {
			t.Fatalf("auth %v tls %v: lines %+v, want one Security line starting %q", c.auth, c.tls, ops, c.want)
		}
	}
}

// TestAuthAndTLSExcludeAnExistingCluster: verify has no credentials nor
// CA of a cluster it did not start.
func TestAuthAndTLSExcludeAnExistingCluster(t *testing.T) {
	for _, cfg := range []Config{{NameSrv: []string{"127.0.0.1:9876"}, Auth: true}, {NameSrv: []string{"127.0.0.1:9876"}, TLS: true}} {
		err := cfg.fill()
		if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "--namesrv") {
			t.Fatalf("%+v: %v", cfg, err)
		}
	}
}

// TestNewSecurity: --auth makes two users with fresh, different secrets;
// --tls a CA the clients trust; neither, nothing.
func TestNewSecurity(t *testing.T) {
	s, err := newSecurity(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.admin != nil || s.client != nil || s.tls != nil || s.cluster() != (cluster.Security{}) {
		t.Fatalf("without flags: %+v", s)
	}
	dir := t.TempDir()
	s, err = newSecurity(Config{Dir: dir, Auth: true, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := newSecurity(Config{Dir: t.TempDir(), Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.admin.AccessKey != AdminUser || s.client.AccessKey != ClientUser || len(s.admin.SecretKey) < 20 ||
		s.admin.SecretKey == s.client.SecretKey || s.admin.SecretKey == other.admin.SecretKey {
		t.Fatalf("users %+v %+v (another run: %+v)", s.admin, s.client, other.admin)
	}
	cs := s.cluster()
	if cs.AdminUser != AdminUser || cs.AdminSecret != s.admin.SecretKey || cs.TLS == nil || filepath.Dir(cs.TLS.CA) != filepath.Join(dir, "tls") {
		t.Fatalf("cluster security %+v", cs)
	}
	if s.tls == nil || s.tls.RootCAs == nil || s.tls.InsecureSkipVerify {
		t.Fatalf("client TLS %+v", s.tls)
	}
	// The signer is the official clients' (authwire's): its signature
	// carries the user's access key.
	cmd := remoting.NewRequest(rmq.CodeHeartBeat, nil, []byte("{}"))
	s.sign(s.client)(cmd)
	if cmd.Ext(rmq.FieldAccessKey) != ClientUser || cmd.Ext(rmq.FieldSignature) == "" {
		t.Fatalf("signed request: AccessKey %q Signature %q", cmd.Ext(rmq.FieldAccessKey), cmd.Ext(rmq.FieldSignature))
	}
	env := &workload.Env{}
	s.apply(env)
	if env.Credentials != s.client || env.Admin != s.admin || env.TLS != s.tls {
		t.Fatalf("env %+v", env)
	}
}
