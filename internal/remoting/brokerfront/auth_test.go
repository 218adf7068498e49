package brokerfront

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// authFront is a Front over a fake user and ACL store, served over the
// real remoting codec on 127.0.0.1.
type authFront struct {
	addr string
	cl   *remoting.Client
	logs *logtest.Buffer
}

// startAuthFront serves the front's handlers with adm as the broker's
// store (nil: a broker without one).
func startAuthFront(t *testing.T, adm authAdmin, authenticated bool) *authFront {
	t.Helper()
	logs := &logtest.Buffer{}
	f := &Front{log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		authAdm: adm, authenticated: authenticated}
	s := remoting.NewServer(remoting.ServerOptions{})
	f.Register(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() {
		cl.Close()
		if err := s.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after Close", err)
		}
	})
	return &authFront{addr: ln.Addr().String(), cl: cl, logs: logs}
}

func (a *authFront) do(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := a.cl.Invoke(ctx, a.addr, req)
	if err != nil {
		t.Fatalf("code %d: %v", req.Code, err)
	}
	return resp
}

// as signs req's AccessKey field as user would (the guard, not this
// front, checks the signature).
func as(user string, req *remoting.Command) *remoting.Command {
	req.SetExt(rmq.FieldAccessKey, user)
	return req
}

func wantCode(t *testing.T, what string, resp *remoting.Command, code int16, remark string) {
	t.Helper()
	if resp.Code != code || !strings.Contains(resp.Remark, remark) {
		t.Fatalf("%s: code %d remark %q, want code %d with %q", what, resp.Code, resp.Remark, code, remark)
	}
}

func javaBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../rmq/testdata/auth/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	root  = auth.User{Name: "root", Secret: "root-secret", Type: auth.Super, Status: auth.Enabled}
	plain = auth.User{Name: "plain", Secret: "plain-secret", Type: auth.Normal, Status: auth.Enabled}
)

// TestUserManagementOverRemoting: mqadmin's create, get, update, list and
// delete user bodies (Java's bytes) do what RocketMQ does, with its
// answers: exists / unknown are NO_PERMISSION, get of an unknown user and
// delete of one succeed (get without a body), list is a JSON array.
func TestUserManagementOverRemoting(t *testing.T) {
	store := newFakeAuth()
	a := startAuthFront(t, store, false)

	create := remoting.NewRequest(rmq.CodeAuthCreateUser, map[string]string{rmq.FieldUsername: "alice"}, javaBody(t, "create_user_super.json"))
	wantCode(t, "create alice", a.do(t, create), rmq.RespSuccess, "")
	if u, _ := store.GetUser("alice"); u != (auth.User{Name: "alice", Secret: "secret", Type: auth.Super, Status: auth.Enabled}) {
		t.Fatalf("stored %+v", u)
	}
	wantCode(t, "create alice again", a.do(t, create), rmq.RespNoPermission, `user "alice" exists already`)
	bob := rmq.EncodeCreateUser(rmq.UserInfo{Username: "bob", Password: "pw", UserType: "normal", UserStatus: "DISABLE"})
	wantCode(t, "create bob, lower-case type", a.do(t, bob), rmq.RespSuccess, "")
	if u, _ := store.GetUser("bob"); u.Type != auth.Normal || u.Status != auth.Disabled {
		t.Fatalf("bob stored as %+v, want the canonical Normal / disable", u)
	}

	got := a.do(t, rmq.EncodeGetUser("alice"))
	wantCode(t, "get alice", got, rmq.RespSuccess, "")
	info, err := rmq.DecodeUserInfo(got.Body)
	if err != nil || info != (rmq.UserInfo{Username: "alice", UserType: "Super", UserStatus: "enable"}) {
		t.Fatalf("get alice answered %s (%v); want her without the password", got.Body, err)
	}

	update := remoting.NewRequest(rmq.CodeAuthUpdateUser, map[string]string{rmq.FieldUsername: "alice"}, javaBody(t, "update_user_status.json"))
	wantCode(t, "update alice", a.do(t, update), rmq.RespSuccess, "")
	if u, _ := store.GetUser("alice"); u.Status != auth.Disabled || u.Secret != "secret" || u.Type != auth.Super {
		t.Fatalf("after the update alice is %+v: only the status should change", u)
	}
	wantCode(t, "update carol", a.do(t, rmq.EncodeUpdateUser(rmq.UserInfo{Username: "carol", Password: "x"})),
		rmq.RespNoPermission, `user "carol" does not exist`)

	list := a.do(t, rmq.EncodeListUsers(rmq.ListUsersRequest{}))
	users, err := rmq.DecodeUserInfos(list.Body)
	want := []rmq.UserInfo{{Username: "alice", UserType: "Super", UserStatus: "disable"}, {Username: "bob", UserType: "Normal", UserStatus: "disable"}}
	if list.Code != rmq.RespSuccess || err != nil || !reflect.DeepEqual(users, want) {
		t.Fatalf("list: code %d body %s (%v)", list.Code, list.Body, err)
	}
	if list := a.do(t, rmq.EncodeListUsers(rmq.ListUsersRequest{Filter: "ob"})); string(list.Body) != `[{"username":"bob","userType":"Normal","userStatus":"disable"}]` {
		t.Fatalf("list filtered by ob: %s", list.Body)
	}
	if list := a.do(t, rmq.EncodeListUsers(rmq.ListUsersRequest{Filter: "zz"})); list.Code != rmq.RespSuccess || string(list.Body) != `[]` {
		t.Fatalf("list without a match: code %d body %q", list.Code, list.Body)
	}

	wantCode(t, "delete carol", a.do(t, rmq.EncodeDeleteUser("carol")), rmq.RespSuccess, `user "carol" does not exist`)
	wantCode(t, "delete bob", a.do(t, rmq.EncodeDeleteUser("bob")), rmq.RespSuccess, "")
	if _, ok := store.GetUser("bob"); ok {
		t.Fatal("bob is still there")
	}
	gone := a.do(t, rmq.EncodeGetUser("bob"))
	if gone.Code != rmq.RespSuccess || len(gone.Body) != 0 || !strings.Contains(gone.Remark, `user "bob" does not exist`) {
		t.Fatalf("get of a deleted user: code %d body %q remark %q; want success without a body, as RocketMQ", gone.Code, gone.Body, gone.Remark)
	}
}

// TestGetUserAnswersTheSecretOnlyToAnAuthenticatedSuperUser: RocketMQ
// sends the password to anyone; Petrel only to a super user whose
// AccessKey the guard verified.
func TestGetUserAnswersTheSecretOnlyToAnAuthenticatedSuperUser(t *testing.T) {
	for _, c := range []struct {
		authenticated bool
		caller        string
		secret        bool
	}{
		{true, "root", true},
		{true, "plain", false},
		{true, "", false},
		{false, "root", false}, // the AccessKey is not verified
		{false, "", false},
	} {
		a := startAuthFront(t, newFakeAuth(root, plain), c.authenticated)
		req := rmq.EncodeGetUser("plain")
		if c.caller != "" {
			as(c.caller, req)
		}
		resp := a.do(t, req)
		info, err := rmq.DecodeUserInfo(resp.Body)
		if err != nil || info.Username != "plain" || (info.Password == "plain-secret") != c.secret {
			t.Errorf("authenticated %v, caller %q: %s (%v); want the secret: %v", c.authenticated, c.caller, resp.Body, err, c.secret)
		}
		list := a.do(t, as(c.caller, rmq.EncodeListUsers(rmq.ListUsersRequest{})))
		if strings.Contains(string(list.Body), "secret") {
			t.Errorf("list answered a secret: %s", list.Body)
		}
		if strings.Contains(a.logs.String(), "secret") {
			t.Errorf("a secret is in the log:\n%s", a.logs.String())
		}
	}
}

// TestOnlyASuperUserChangesSuperUsers: as RocketMQ's
// isNotSuperUserLogin: a caller signing as a normal user may not create,
// promote, update or delete a super user; one without AccessKey (no
// authentication) or a super user may.
func TestOnlyASuperUserChangesSuperUsers(t *testing.T) {
	store := newFakeAuth(root, plain)
	a := startAuthFront(t, store, true)
	newSuper := rmq.UserInfo{Username: "boss", Password: "pw", UserType: "Super"}
	wantCode(t, "plain creates a super user", a.do(t, as("plain", rmq.EncodeCreateUser(newSuper))), rmq.RespNoPermission, `user "plain" is not a super user`)
	wantCode(t, "an unknown caller creates a super user", a.do(t, as("ghost", rmq.EncodeCreateUser(newSuper))), rmq.RespNoPermission, "not a super user")
	wantCode(t, "plain promotes itself", a.do(t, as("plain", rmq.EncodeUpdateUser(rmq.UserInfo{Username: "plain", UserType: "Super"}))), rmq.RespNoPermission, "may not update")
	wantCode(t, "plain changes root's secret", a.do(t, as("plain", rmq.EncodeUpdateUser(rmq.UserInfo{Username: "root", Password: "mine"}))), rmq.RespNoPermission, `the super user "root"`)
	wantCode(t, "plain deletes root", a.do(t, as("plain", rmq.EncodeDeleteUser("root"))), rmq.RespNoPermission, "may not delete")
	if store.writeCount() != 0 {
		t.Fatalf("%d refused writes reached the store", store.writeCount())
	}
	wantCode(t, "plain creates a normal user", a.do(t, as("plain", rmq.EncodeCreateUser(rmq.UserInfo{Username: "n", Password: "pw"}))), rmq.RespSuccess, "")
	wantCode(t, "root creates a super user", a.do(t, as("root", rmq.EncodeCreateUser(newSuper))), rmq.RespSuccess, "")
	wantCode(t, "no AccessKey updates a super user", a.do(t, rmq.EncodeUpdateUser(rmq.UserInfo{Username: "boss", UserStatus: "disable"})), rmq.RespSuccess, "")
	if u, _ := store.GetUser("root"); u.Secret != "root-secret" {
		t.Fatalf("root's secret changed to %q", u.Secret)
	}
}

// TestACLManagementOverRemoting: mqadmin's createAcl / updateAcl bodies
// (Java's bytes, no policyType: Custom), get and list answers matching
// what RocketMQ answers, deletes by resource and whole, and RocketMQ's
// NO_PERMISSION for an unknown subject or ACL.
func TestACLManagementOverRemoting(t *testing.T) {
	store := newFakeAuth(auth.User{Name: "alice", Secret: "s", Type: auth.Normal, Status: auth.Enabled},
		auth.User{Name: "bob", Secret: "s", Type: auth.Normal, Status: auth.Enabled})
	a := startAuthFront(t, store, false)

	create := remoting.NewRequest(rmq.CodeAuthCreateACL, map[string]string{rmq.FieldSubject: "User:alice"}, javaBody(t, "create_acl.json"))
	wantCode(t, "create alice's ACL", a.do(t, create), rmq.RespSuccess, "")
	acl, _ := store.GetAcl("User:alice")
	wantACL := auth.Acl{Subject: "User:alice", Policies: []auth.Policy{{Type: auth.Custom, Entries: []auth.PolicyEntry{
		{Resource: auth.Resource{Type: auth.ResourceTopic, Name: "orders", Pattern: auth.Literal}, Actions: []auth.Action{auth.ActionPub, auth.ActionSub},
			SourceIPs: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, Decision: auth.Allow},
		{Resource: auth.Resource{Type: auth.ResourceGroup, Name: "g-", Pattern: auth.Prefixed}, Actions: []auth.Action{auth.ActionPub, auth.ActionSub},
			SourceIPs: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, Decision: auth.Allow},
	}}}}
	if !reflect.DeepEqual(acl, wantACL) {
		t.Fatalf("stored %+v\nwant %+v", acl, wantACL)
	}
	got := a.do(t, rmq.EncodeGetACL("User:alice"))
	info, err := rmq.DecodeAclInfo(got.Body)
	javaInfo, _ := rmq.DecodeAclInfo(javaBody(t, "get_acl_answer.json"))
	if got.Code != rmq.RespSuccess || err != nil || !reflect.DeepEqual(info, javaInfo) {
		t.Fatalf("get alice's ACL: code %d body %s (%v); want what RocketMQ answers: %+v", got.Code, got.Body, err, javaInfo)
	}

	update := remoting.NewRequest(rmq.CodeAuthUpdateACL, map[string]string{rmq.FieldSubject: "User:bob"}, javaBody(t, "update_acl.json"))
	wantCode(t, "update bob's ACL (creates it)", a.do(t, update), rmq.RespSuccess, "")
	list := a.do(t, rmq.EncodeListACLs(rmq.ListAclsRequest{}))
	acls, err := rmq.DecodeAclInfos(list.Body)
	if err != nil || len(acls) != 2 || acls[0].Subject != "User:alice" || acls[1].Subject != "User:bob" || acls[1].Policies[0].Entries[0].Resource != "Topic:*" {
		t.Fatalf("list: %s (%v)", list.Body, err)
	}
	if list := a.do(t, rmq.EncodeListACLs(rmq.ListAclsRequest{ResourceFilter: "Group:"})); !strings.Contains(string(list.Body), "User:alice") || strings.Contains(string(list.Body), "User:bob") {
		t.Fatalf("list by resource Group: %s", list.Body)
	}

	wantCode(t, "ACL of an unknown user", a.do(t, rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:carol", Policies: []rmq.PolicyInfo{{
		Entries: []rmq.PolicyEntryInfo{{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: "Allow"}}}}})), rmq.RespNoPermission, `user "carol" does not exist`)
	wantCode(t, "get the ACL of an unknown user", a.do(t, rmq.EncodeGetACL("User:carol")), rmq.RespNoPermission, `user "carol" does not exist`)

	del := rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "user:alice", Resource: "topic:orders"})
	wantCode(t, "delete Topic:orders from alice's ACL", a.do(t, del), rmq.RespSuccess, "")
	if acl, _ := store.GetAcl("User:alice"); len(acl.Policies[0].Entries) != 1 || acl.Policies[0].Entries[0].Resource.Type != auth.ResourceGroup {
		t.Fatalf("after deleting Topic:orders alice's ACL is %+v", acl)
	}
	wantCode(t, "delete it again", a.do(t, del), rmq.RespNoPermission, "subject User:alice has no ACL matching")
	wantCode(t, "delete alice's whole ACL", a.do(t, rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:alice"})), rmq.RespSuccess, "")
	gone := a.do(t, rmq.EncodeGetACL("User:alice"))
	if gone.Code != rmq.RespSuccess || len(gone.Body) != 0 {
		t.Fatalf("get of a deleted ACL: code %d body %q; want success without a body, as RocketMQ", gone.Code, gone.Body)
	}
	wantCode(t, "delete a missing ACL", a.do(t, rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:alice"})), rmq.RespNoPermission, "has no ACL")
	wantCode(t, "delete from an unknown user", a.do(t, rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:carol"})), rmq.RespNoPermission, `user "carol" does not exist`)
}

// TestAuthInvalidInputIsRefusedByField: a malformed header or body, or a
// value the field does not allow, is INVALID_PARAMETER naming the field
// and what it must be; nothing reaches the store.
func TestAuthInvalidInputIsRefusedByField(t *testing.T) {
	store := newFakeAuth(plain)
	a := startAuthFront(t, store, false)
	acl := func(e rmq.PolicyEntryInfo) *remoting.Command {
		return rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain", Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{e}}}})
	}
	good := rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: "Allow"}
	with := func(edit func(*rmq.PolicyEntryInfo)) *remoting.Command {
		e := good
		edit(&e)
		return acl(e)
	}
	for _, c := range []struct {
		name   string
		req    *remoting.Command
		remark string
	}{
		{"no username", remoting.NewRequest(rmq.CodeAuthCreateUser, nil, []byte(`{"password":"x"}`)), "field username is missing"},
		{"get without username", remoting.NewRequest(rmq.CodeAuthGetUser, nil, nil), "field username is missing"},
		{"no body", remoting.NewRequest(rmq.CodeAuthCreateUser, map[string]string{rmq.FieldUsername: "u"}, nil), "no UserInfo JSON body"},
		{"bad JSON", remoting.NewRequest(rmq.CodeAuthCreateUser, map[string]string{rmq.FieldUsername: "u"}, []byte(`{"password":`)), "not valid JSON"},
		{"password a number", remoting.NewRequest(rmq.CodeAuthUpdateUser, map[string]string{rmq.FieldUsername: "plain"}, []byte(`{"password":1}`)), "password must be a JSON string"},
		{"oversized user", remoting.NewRequest(rmq.CodeAuthCreateUser, map[string]string{rmq.FieldUsername: "u"},
			[]byte(`{"password":"`+strings.Repeat("p", rmq.MaxUserInfoBytes)+`"}`)), "more than the limit of 65536"},
		{"no password", rmq.EncodeCreateUser(rmq.UserInfo{Username: "u"}), "password is empty"},
		{"long password", rmq.EncodeCreateUser(rmq.UserInfo{Username: "u", Password: strings.Repeat("p", 2000)}), `the password of user "u" is longer than 1024 bytes`},
		{"bad type", rmq.EncodeCreateUser(rmq.UserInfo{Username: "u", Password: "p", UserType: "Admin"}), `user type "Admin" is unknown: use Super or Normal`},
		{"bad status", rmq.EncodeUpdateUser(rmq.UserInfo{Username: "plain", UserStatus: "off"}), `user status "off" is unknown: use enable or disable`},
		{"names differ", remoting.NewRequest(rmq.CodeAuthCreateUser, map[string]string{rmq.FieldUsername: "u"}, []byte(`{"username":"v","password":"p"}`)), "is not the header's"},
		{"space in name", rmq.EncodeCreateUser(rmq.UserInfo{Username: "a b", Password: "p"}), `user name "a b" has spaces, control characters`},
		{"no subject", remoting.NewRequest(rmq.CodeAuthCreateACL, nil, []byte(`{}`)), "field subject is missing"},
		{"group subject", rmq.EncodeGetACL("Group:g"), `subject "Group:g" is not of the form User:NAME`},
		{"acl no body", remoting.NewRequest(rmq.CodeAuthUpdateACL, map[string]string{rmq.FieldSubject: "User:plain"}, []byte("null")), "no AclInfo JSON body"},
		{"oversized acl", remoting.NewRequest(rmq.CodeAuthCreateACL, map[string]string{rmq.FieldSubject: "User:plain"},
			[]byte(`{"subject":"`+strings.Repeat("s", rmq.MaxAclInfoBytes)+`"}`)), "more than the limit of 1048576"},
		{"no policies", rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain"}), "the ACL of User:plain has no policy"},
		{"policy without entries", rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain", Policies: []rmq.PolicyInfo{{PolicyType: "Custom"}}}), "policy 1 has no entry"},
		{"bad policy type", rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain", Policies: []rmq.PolicyInfo{{PolicyType: "Strict", Entries: []rmq.PolicyEntryInfo{good}}}}), `policy 1: policy type "Strict" is unknown`},
		{"subjects differ", remoting.NewRequest(rmq.CodeAuthCreateACL, map[string]string{rmq.FieldSubject: "User:plain"}, rmq.EncodeAclInfo(rmq.AclInfo{Subject: "User:root",
			Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{good}}}})), "is not the header's"},
		{"namespace resource", with(func(e *rmq.PolicyEntryInfo) { e.Resource = "Namespace:n" }), `policy 1 entry 1: resource "Namespace:n" has no known type`},
		{"no resource", with(func(e *rmq.PolicyEntryInfo) { e.Resource = "" }), "policy 1 entry 1: the resource is empty"},
		{"topic without a name", with(func(e *rmq.PolicyEntryInfo) { e.Resource = "Topic" }), `resource "Topic" names no topic`},
		{"star inside", with(func(e *rmq.PolicyEntryInfo) { e.Resource = "Topic:a*b" }), "* may only end a name"},
		{"no actions", with(func(e *rmq.PolicyEntryInfo) { e.Actions = nil }), "policy 1 entry 1: a policy entry names no action"},
		{"action Any", with(func(e *rmq.PolicyEntryInfo) { e.Actions = []string{"Any"} }), "action Any cannot be granted"},
		{"unknown action", with(func(e *rmq.PolicyEntryInfo) { e.Actions = []string{"Pub", "Fly"} }), `action "Fly" is unknown`},
		{"bad source IP", with(func(e *rmq.PolicyEntryInfo) { e.SourceIps = []string{"10.0.0.0/33"} }), `source IP "10.0.0.0/33" is neither`},
		{"no decision", with(func(e *rmq.PolicyEntryInfo) { e.Decision = "" }), "the decision is missing: give Allow or Deny"},
		{"bad decision", with(func(e *rmq.PolicyEntryInfo) { e.Decision = "Maybe" }), `decision "Maybe" is unknown: use Allow or Deny`},
		{"delete: bad policy type", rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:plain", PolicyType: "x"}), `policy type "x" is unknown`},
		{"delete: bad resource", rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:plain", Resource: "Queue:q"}), `resource "Queue:q"`},
		{"delete: no subject", remoting.NewRequest(rmq.CodeAuthDeleteACL, nil, nil), "field subject is missing"},
	} {
		wantCode(t, c.name, a.do(t, c.req), rmq.RespInvalidParameter, c.remark)
	}
	if store.writeCount() != 0 {
		t.Fatalf("%d refused requests reached the store", store.writeCount())
	}
	// The connection still serves.
	wantCode(t, "a good ACL after them", a.do(t, acl(good)), rmq.RespSuccess, "")
}

// TestAuthWritesOnASlaveAreRefused: every management write answers the
// broker's not-master refusal (SYSTEM_ERROR naming the slave, as other
// admin writes on a slave); reads are served.
func TestAuthWritesOnASlaveAreRefused(t *testing.T) {
	store := newFakeAuth(root, plain)
	store.slave = true
	a := startAuthFront(t, store, false)
	entry := []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{{Resource: "Topic:a", Actions: []string{"Sub"}, Decision: "Allow"}}}}
	for _, req := range []*remoting.Command{
		rmq.EncodeCreateUser(rmq.UserInfo{Username: "n", Password: "p"}),
		rmq.EncodeUpdateUser(rmq.UserInfo{Username: "plain", Password: "p2"}),
		rmq.EncodeDeleteUser("plain"),
		rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain", Policies: entry}),
		rmq.EncodeUpdateACL(rmq.AclInfo{Subject: "User:plain", Policies: entry}),
		rmq.EncodeDeleteACL(rmq.DeleteAclRequest{Subject: "User:plain"}),
	} {
		wantCode(t, fmt.Sprintf("code %d on a slave", req.Code), a.do(t, req), rmq.RespSystemError, "broker b is a slave")
	}
	if got := a.do(t, rmq.EncodeGetUser("plain")); got.Code != rmq.RespSuccess || len(got.Body) == 0 {
		t.Fatalf("get user on a slave: code %d remark %q", got.Code, got.Remark)
	}
	if got := a.do(t, rmq.EncodeListACLs(rmq.ListAclsRequest{})); got.Code != rmq.RespSuccess || string(got.Body) != "[]" {
		t.Fatalf("list ACLs on a slave: code %d body %q", got.Code, got.Body)
	}
	if strings.Contains(a.logs.String(), "level=WARN") {
		t.Fatalf("slave refusals are logged at Warn:\n%s", a.logs.String())
	}
}

// TestAuthStoreFailureKeepsItsCauseInTheLog: a store failure is
// SYSTEM_ERROR with a remark that tells the client to retry; the cause
// (here a path) is only in the log.
func TestAuthStoreFailureKeepsItsCauseInTheLog(t *testing.T) {
	store := newFakeAuth(plain)
	store.setFail(fmt.Errorf("meta: write /var/lib/petrel/users.json: %w", errors.New("no space left on device")))
	a := startAuthFront(t, store, false)
	resp := a.do(t, rmq.EncodeUpdateUser(rmq.UserInfo{Username: "plain", Password: "s3cr3t-value"}))
	wantCode(t, "update with a failing store", resp, rmq.RespSystemError, "failed inside the broker; retry")
	if strings.Contains(resp.Remark, "/var/lib") {
		t.Fatalf("remark %q carries the cause", resp.Remark)
	}
	if !strings.Contains(a.logs.String(), "users.json") || strings.Contains(a.logs.String(), "s3cr3t-value") {
		t.Fatalf("the cause is not logged (or the secret is):\n%s", a.logs.String())
	}
	store.setFail(fmt.Errorf("store acl: %w: resource names a topic longer than 127 bytes", auth.ErrInvalid))
	resp = a.do(t, rmq.EncodeCreateACL(rmq.AclInfo{Subject: "User:plain", Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{
		{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: "Allow"}}}}}))
	wantCode(t, "ACL the store finds invalid", resp, rmq.RespInvalidParameter, "invalid: store acl: resource names a topic longer than 127 bytes")
}
