package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

func TestParseResource(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Resource
		canon string
	}{
		{"*", Resource{ResourceAny, "", AnyName}, "*"},
		{" * ", Resource{ResourceAny, "", AnyName}, "*"},
		{"Cluster", Resource{ResourceCluster, "", Literal}, "Cluster"},
		{"cluster:", Resource{ResourceCluster, "", Literal}, "Cluster"},
		{"Cluster:DefaultCluster", Resource{ResourceCluster, "DefaultCluster", Literal}, "Cluster:DefaultCluster"},
		{"Cluster:*", Resource{ResourceCluster, "", AnyName}, "Cluster:*"},
		{"Topic:orders", Resource{ResourceTopic, "orders", Literal}, "Topic:orders"},
		{"TOPIC:orders", Resource{ResourceTopic, "orders", Literal}, "Topic:orders"},
		{"topic:order-*", Resource{ResourceTopic, "order-", Prefixed}, "Topic:order-*"},
		{"Topic:*", Resource{ResourceTopic, "", AnyName}, "Topic:*"},
		{"Group:g1", Resource{ResourceGroup, "g1", Literal}, "Group:g1"},
		{"group:G*", Resource{ResourceGroup, "G", Prefixed}, "Group:G*"},
		{"Group:%RETRY%g", Resource{ResourceGroup, "%RETRY%g", Literal}, "Group:%RETRY%g"},
	} {
		got, err := ParseResource(tc.in)
		if err != nil {
			t.Errorf("ParseResource(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.String() != tc.canon {
			t.Errorf("ParseResource(%q) = %+v %q, want %+v %q", tc.in, got, got.String(), tc.want, tc.canon)
		}
		again, err := ParseResource(got.String())
		if err != nil || again != got {
			t.Errorf("round trip of %q: %+v, %v", got.String(), again, err)
		}
	}
	for _, in := range []string{"", "Topic", "Topic:", "Group", "Any", "Namespace:x", "Queue:x", "Topic:a*b", "Topic:**", "Topic:a b",
		"Topic:\x00", "Topic:" + strings.Repeat("x", MaxResourceNameBytes+1), "Topic:\xff"} {
		_, err := ParseResource(in)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseResource(%q): err %v, want ErrInvalid", in, err)
		}
	}
	_, err := ParseResource("Queue:x")
	if err == nil || !strings.Contains(err.Error(), "Topic:NAME") || strings.Contains(err.Error(), "auth:") {
		t.Errorf("error %q should say what a resource looks like, without a package prefix", err)
	}
}

func mustRes(t *testing.T, s string) Resource {
	t.Helper()
	r, err := ParseResource(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResourceMatches(t *testing.T) {
	topic := func(n string) Resource { return Resource{ResourceTopic, n, Literal} }
	group := func(n string) Resource { return Resource{ResourceGroup, n, Literal} }
	cluster := func(n string) Resource { return Resource{ResourceCluster, n, Literal} }
	for _, tc := range []struct {
		policy string
		req    Resource
		want   bool
	}{
		{"*", topic("a"), true},
		{"*", group("g"), true},
		{"*", cluster("c"), true},
		{"Topic:*", topic("a"), true},
		{"Topic:*", group("a"), false},
		{"Topic:a", topic("a"), true},
		{"Topic:a", topic("ab"), false},
		{"Topic:a", topic("A"), false},
		{"Topic:a*", topic("ab"), true},
		{"Topic:a*", topic("a"), true},
		{"Topic:a*", topic("ba"), false},
		{"Topic:a*", group("ab"), false},
		{"Group:g", group("g"), true},
		{"Group:g", topic("g"), false},
		{"Cluster", cluster("DefaultCluster"), true},
		{"Cluster", cluster(""), true},
		{"Cluster:c1", cluster("c1"), true},
		{"Cluster:c1", cluster("c2"), false},
		{"Cluster:c1", cluster(""), false},
		{"Cluster:*", cluster("c2"), true},
		{"Cluster", topic("x"), false},
	} {
		if got := mustRes(t, tc.policy).Matches(tc.req); got != tc.want {
			t.Errorf("%s matches %s: %v, want %v", tc.policy, tc.req, got, tc.want)
		}
	}
}

func TestParseHelpers(t *testing.T) {
	for in, want := range map[string]Action{"pub": ActionPub, "SUB": ActionSub, " All ": ActionAll, "get": ActionGet, "list": ActionList,
		"create": ActionCreate, "UPDATE": ActionUpdate, "Delete": ActionDelete, "any": ActionAny} {
		if got, err := ParseAction(in); err != nil || got != want {
			t.Errorf("ParseAction(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseAction("publish"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Pub") {
		t.Errorf("ParseAction(publish): %v", err)
	}
	as, err := ParsePolicyActions([]string{"pub", "Sub", "PUB"})
	if err != nil || !slices.Equal(as, []Action{ActionPub, ActionSub}) {
		t.Errorf("ParsePolicyActions = %v, %v", as, err)
	}
	for _, bad := range [][]string{nil, {"Any"}, {"Pub", "x"}} {
		if _, err := ParsePolicyActions(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParsePolicyActions(%q): %v", bad, err)
		}
	}
	if d, err := ParseDecision("deny"); err != nil || d != Deny {
		t.Errorf("ParseDecision(deny) = %q, %v", d, err)
	}
	if d, err := ParseDecision("ALLOW"); err != nil || d != Allow {
		t.Errorf("ParseDecision(ALLOW) = %q, %v", d, err)
	}
	if _, err := ParseDecision(""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "decision is missing") {
		t.Errorf("ParseDecision(\"\"): %v", err)
	}
	if _, err := ParsePolicyActions(make([]string, MaxPolicyActions+1)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than the limit of 16") {
		t.Errorf("ParsePolicyActions of %d actions: %v", MaxPolicyActions+1, err)
	}
	if _, err := ParseResource(" "); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "the resource is empty") {
		t.Errorf("ParseResource(blank): %v", err)
	}
	if ut, err := ParseUserType("super"); err != nil || ut != Super {
		t.Errorf("ParseUserType(super) = %q, %v", ut, err)
	}
	if _, err := ParseUserType("root"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseUserType(root): %v", err)
	}
	if st, err := ParseUserStatus("DISABLE"); err != nil || st != Disabled {
		t.Errorf("ParseUserStatus(DISABLE) = %q, %v", st, err)
	}
	if pt, err := ParsePolicyType(""); err != nil || pt != Custom {
		t.Errorf("ParsePolicyType(\"\") = %q, %v", pt, err)
	}
	if pt, err := ParsePolicyType("default"); err != nil || pt != Default {
		t.Errorf("ParsePolicyType(default) = %q, %v", pt, err)
	}
	if n, err := ParseSubject("user:alice"); err != nil || n != "alice" {
		t.Errorf("ParseSubject = %q, %v", n, err)
	}
	for _, bad := range []string{"alice", "Group:x", "User:", "User:a b"} {
		if _, err := ParseSubject(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSubject(%q): %v", bad, err)
		}
	}
}

func TestParseSourceIP(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3":            "10.1.2.3",
		"10.1.2.3/8":          "10.0.0.0/8",
		"192.168.0.0/16":      "192.168.0.0/16",
		"::ffff:10.1.2.3":     "10.1.2.3",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"fd00::1":             "fd00::1",
		"fd00::/8":            "fd00::/8",
		" 127.0.0.1 ":         "127.0.0.1",
	} {
		p, err := ParseSourceIP(in)
		if err != nil || FormatSourceIP(p) != want {
			t.Errorf("ParseSourceIP(%q) = %v (%q), %v; want %q", in, p, FormatSourceIP(p), err, want)
		}
	}
	for _, bad := range []string{"", "10.1.2", "10.0.0.0/33", "fe80::1%eth0", "10.1.2.3-9", "10.1.*", "::ffff:10.0.0.0/8", "host"} {
		if _, err := ParseSourceIP(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSourceIP(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func entry(t *testing.T, res string, d Decision, ips []string, acts ...Action) PolicyEntry {
	t.Helper()
	e := PolicyEntry{Resource: mustRes(t, res), Actions: acts, Decision: d}
	for _, s := range ips {
		p, err := ParseSourceIP(s)
		if err != nil {
			t.Fatal(err)
		}
		e.SourceIPs = append(e.SourceIPs, p)
	}
	return e
}

func TestDecide(t *testing.T) {
	normal := User{Name: "bob", Type: Normal, Status: Enabled}
	super := User{Name: "root", Type: Super, Status: Enabled}
	ip := netip.MustParseAddr
	pub := func(topic string) Request {
		return Request{Resource: Resource{ResourceTopic, topic, Literal}, Actions: []Action{ActionPub}}
	}
	sub := func(typ ResourceType, name string) Request {
		return Request{Resource: Resource{typ, name, Literal}, Actions: []Action{ActionSub}}
	}
	route := Request{Resource: Resource{ResourceTopic, "orders", Literal}, Actions: []Action{ActionPub, ActionSub, ActionGet}}
	for _, tc := range []struct {
		name    string
		user    User
		entries []PolicyEntry
		req     Request
		src     netip.Addr
		want    Verdict
	}{
		{"super passes without an ACL", super, nil, pub("x"), netip.Addr{}, Allowed},
		{"super passes a deny", super, []PolicyEntry{entry(t, "*", Deny, nil, ActionAll)}, pub("x"), ip("1.2.3.4"), Allowed},
		{"normal without ACL", normal, nil, pub("x"), ip("1.2.3.4"), NoPolicy},
		{"literal allow", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionPub)}, pub("x"), ip("1.2.3.4"), Allowed},
		{"literal other topic", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionPub)}, pub("y"), ip("1.2.3.4"), NoPolicy},
		{"wrong action", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionSub)}, pub("x"), ip("1.2.3.4"), NoPolicy},
		{"All covers Pub", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionAll)}, pub("x"), ip("1.2.3.4"), Allowed},
		{"All covers Delete", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionAll)},
			Request{Resource: Resource{ResourceTopic, "x", Literal}, Actions: []Action{ActionDelete}}, ip("1.2.3.4"), Allowed},
		{"any one action of the request", normal, []PolicyEntry{entry(t, "Topic:orders", Allow, nil, ActionGet)}, route, ip("1.2.3.4"), Allowed},
		{"request Any matches any action", normal, []PolicyEntry{entry(t, "Topic:orders", Allow, nil, ActionList)},
			Request{Resource: Resource{ResourceTopic, "orders", Literal}, Actions: []Action{ActionAny}}, ip("1.2.3.4"), Allowed},
		{"empty entry actions match nothing", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil)}, pub("x"), ip("1.2.3.4"), NoPolicy},
		{"request without actions", normal, []PolicyEntry{entry(t, "Topic:x", Allow, nil, ActionAll)},
			Request{Resource: Resource{ResourceTopic, "x", Literal}}, ip("1.2.3.4"), NoPolicy},
		{"prefix allow", normal, []PolicyEntry{entry(t, "Topic:order-*", Allow, nil, ActionPub)}, pub("order-eu"), ip("1.2.3.4"), Allowed},
		{"prefix miss", normal, []PolicyEntry{entry(t, "Topic:order-*", Allow, nil, ActionPub)}, pub("orders"), ip("1.2.3.4"), NoPolicy},
		{"wildcard topic", normal, []PolicyEntry{entry(t, "Topic:*", Allow, nil, ActionPub)}, pub("anything"), ip("1.2.3.4"), Allowed},
		{"wildcard topic is not a group", normal, []PolicyEntry{entry(t, "Topic:*", Allow, nil, ActionSub)}, sub(ResourceGroup, "g"), ip("1.2.3.4"), NoPolicy},
		{"star covers groups", normal, []PolicyEntry{entry(t, "*", Allow, nil, ActionSub)}, sub(ResourceGroup, "g"), ip("1.2.3.4"), Allowed},
		{"deny wins over allow", normal, []PolicyEntry{entry(t, "Topic:*", Allow, nil, ActionAll), entry(t, "Topic:secret", Deny, nil, ActionPub)}, pub("secret"), ip("1.2.3.4"), Denied},
		{"deny wins whatever the order", normal, []PolicyEntry{entry(t, "Topic:secret", Deny, nil, ActionPub), entry(t, "Topic:secret", Allow, nil, ActionPub)}, pub("secret"), ip("1.2.3.4"), Denied},
		{"broad deny beats literal allow", normal, []PolicyEntry{entry(t, "Topic:a", Allow, nil, ActionPub), entry(t, "*", Deny, nil, ActionAll)}, pub("a"), ip("1.2.3.4"), Denied},
		{"deny of another action does not apply", normal, []PolicyEntry{entry(t, "Topic:a", Allow, nil, ActionPub), entry(t, "Topic:a", Deny, nil, ActionSub)}, pub("a"), ip("1.2.3.4"), Allowed},
		{"deny of another topic does not apply", normal, []PolicyEntry{entry(t, "Topic:*", Allow, nil, ActionPub), entry(t, "Topic:b", Deny, nil, ActionPub)}, pub("a"), ip("1.2.3.4"), Allowed},
		{"deny from another source does not apply", normal, []PolicyEntry{entry(t, "Topic:a", Allow, nil, ActionPub), entry(t, "Topic:a", Deny, []string{"10.0.0.0/8"}, ActionPub)}, pub("a"), ip("192.168.1.1"), Allowed},
		{"deny from this source applies", normal, []PolicyEntry{entry(t, "Topic:a", Allow, nil, ActionPub), entry(t, "Topic:a", Deny, []string{"10.0.0.0/8"}, ActionPub)}, pub("a"), ip("10.9.9.9"), Denied},
		{"source in CIDR", normal, []PolicyEntry{entry(t, "Topic:a", Allow, []string{"10.0.0.0/8"}, ActionPub)}, pub("a"), ip("10.1.2.3"), Allowed},
		{"source mapped v4 in CIDR", normal, []PolicyEntry{entry(t, "Topic:a", Allow, []string{"10.0.0.0/8"}, ActionPub)}, pub("a"), ip("::ffff:10.1.2.3"), Allowed},
		{"source outside CIDR", normal, []PolicyEntry{entry(t, "Topic:a", Allow, []string{"10.0.0.0/8"}, ActionPub)}, pub("a"), ip("11.1.2.3"), NoPolicy},
		{"source exact address", normal, []PolicyEntry{entry(t, "Topic:a", Allow, []string{"127.0.0.1", "::1"}, ActionPub)}, pub("a"), ip("::1"), Allowed},
		{"unknown source never matches a restricted entry", normal, []PolicyEntry{entry(t, "Topic:a", Allow, []string{"0.0.0.0/0"}, ActionPub)}, pub("a"), netip.Addr{}, NoPolicy},
		{"unknown source matches an open entry", normal, []PolicyEntry{entry(t, "Topic:a", Allow, nil, ActionPub)}, pub("a"), netip.Addr{}, Allowed},
		{"retry group", normal, []PolicyEntry{entry(t, "Group:cg", Allow, nil, ActionSub)}, sub(ResourceGroup, "cg"), ip("1.2.3.4"), Allowed},
		{"retry group needs the group, not a topic", normal, []PolicyEntry{entry(t, "Topic:%RETRY%cg", Allow, nil, ActionSub)}, sub(ResourceGroup, "cg"), ip("1.2.3.4"), NoPolicy},
		{"cluster policy", normal, []PolicyEntry{entry(t, "Cluster", Allow, nil, ActionGet)},
			Request{Resource: Resource{ResourceCluster, "c1", Literal}, Actions: []Action{ActionGet}}, ip("1.2.3.4"), Allowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var acl *Acl
			if tc.entries != nil {
				// Split the entries over both policy types: every entry counts.
				half := len(tc.entries) / 2
				acl = &Acl{Subject: "User:" + tc.user.Name, Policies: []Policy{
					{Type: Default, Entries: tc.entries[:half]}, {Type: Custom, Entries: tc.entries[half:]}}}
			}
			if got := Decide(tc.user, acl, tc.req, tc.src); got != tc.want {
				t.Fatalf("Decide = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeDir is a Directory over maps.
type fakeDir struct {
	mu    sync.Mutex
	users map[string]User
	acls  map[string]Acl
}

func (d *fakeDir) User(n string) (User, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[n]
	return u, ok
}

func (d *fakeDir) Acl(s string) (Acl, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.acls[s]
	return a, ok
}

// fields is a Fields over a list (a key may repeat; the last wins).
type fields [][2]string

func (f fields) Ext(k string) string {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i][0] == k {
			return f[i][1]
		}
	}
	return ""
}

func (f fields) EachExt(fn func(k, v string)) {
	for _, p := range f {
		fn(p[0], p[1])
	}
}

func mapFields(m map[string]string) fields {
	var f fields
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f = append(f, [2]string{k, m[k]})
	}
	return f
}

// Signatures computed by the official Go 4.x client's ACLInterceptor
// (github.com/apache/rocketmq-client-go/v2 internal/remote, at 2173d07)
// for these commands: the golden vectors both sides must agree on.
var goClientVectors = []struct {
	ak, sk, token string
	ext           map[string]string
	body          string
	sig           string
}{
	{"alice", "secret-a", "", map[string]string{"b": "TopicA", "a": "pg", "c": "TBW102"}, "hello", "RSiCSeYnC5bIwGg+ZgmAkb9aNd8="},
	{"bob", "k", "tok123", map[string]string{"topic": "T", "queueId": "3"}, "", "4T4/Ju79i4fFij971bqgfmZuCpI="},
	{"carol", "0123456789012345678901234567890123456789012345678901234567890123456789", "", map[string]string{}, "body-only", "PHi0cRsUGdyFseKRF/EPiO3GN8Q="},
}

func newTestChecker(t *testing.T, dir Directory, opts CheckerOptions) *Checker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	return NewChecker(dir, opts)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestAuthenticateRemotingGoClientVectors(t *testing.T) {
	dir := &fakeDir{users: map[string]User{}}
	for _, v := range goClientVectors {
		dir.users[v.ak] = User{Name: v.ak, Secret: v.sk, Type: Normal, Status: Enabled}
	}
	c := newTestChecker(t, dir, CheckerOptions{})
	for _, v := range goClientVectors {
		m := maps.Clone(v.ext)
		m["AccessKey"], m["Signature"] = v.ak, v.sig
		if v.token != "" {
			m["SecurityToken"] = v.token
		}
		u, r := c.AuthenticateRemoting(mapFields(m), []byte(v.body))
		if r != nil || u.Name != v.ak {
			t.Errorf("%s: refused %v", v.ak, r)
		}
		// Our signer computes the same content when there is no token.
		if v.token == "" {
			delete(m, "Signature")
			if got := SignRemoting(v.sk, mapFields(m), []byte(v.body)); got != v.sig {
				t.Errorf("%s: SignRemoting = %s, want the Go client's %s", v.ak, got, v.sig)
			}
		}
		// A changed body or field no longer verifies.
		if _, r := c.AuthenticateRemoting(mapFields(m), []byte(v.body+"x")); r == nil {
			t.Errorf("%s: a changed body was accepted", v.ak)
		}
	}
}

func TestAuthenticateRemotingJavaFormsAndRefusals(t *testing.T) {
	var reasons []string
	dir := &fakeDir{users: map[string]User{
		"alice": {Name: "alice", Secret: "s3cret", Type: Normal, Status: Enabled},
		"off":   {Name: "off", Secret: "x", Type: Normal, Status: Disabled},
	}}
	c := newTestChecker(t, dir, CheckerOptions{Refused: func(p, r string) {
		if p != "remoting" {
			t.Errorf("protocol %q", p)
		}
		reasons = append(reasons, r)
	}})
	body := []byte("payload")
	// Java signs SecurityToken too.
	java := fields{{"AccessKey", "alice"}, {"SecurityToken", "tok"}, {"topic", "T"}}
	java = append(java, [2]string{"Signature", SignRemoting("s3cret", java, body)})
	if _, r := c.AuthenticateRemoting(java, body); r != nil {
		t.Errorf("Java form (token signed) refused: %v", r)
	}
	// Java <= 4.9.3 adds _UNIQUE_KEY_QUERY after signing.
	old := fields{{"AccessKey", "alice"}, {"topic", "T"}}
	old = append(old, [2]string{"Signature", SignRemoting("s3cret", old, body)}, [2]string{"_UNIQUE_KEY_QUERY", "true"})
	if _, r := c.AuthenticateRemoting(old, body); r != nil {
		t.Errorf("old Java form (_UNIQUE_KEY_QUERY unsigned) refused: %v", r)
	}
	// A duplicate key: the last one is what is signed and read.
	dup := fields{{"topic", "A"}, {"AccessKey", "alice"}, {"topic", "B"}}
	dup = append(dup, [2]string{"Signature", SignRemoting("s3cret", fields{{"AccessKey", "alice"}, {"topic", "B"}}, body)})
	if _, r := c.AuthenticateRemoting(dup, body); r != nil {
		t.Errorf("duplicate key, last signed: refused %v", r)
	}
	good := fields{{"AccessKey", "alice"}, {"topic", "T"}}
	sig := SignRemoting("s3cret", good, body)
	for _, tc := range []struct {
		name   string
		f      fields
		reason string
		msg    string
		user   string
	}{
		{"unsigned", fields{{"topic", "T"}}, ReasonUnsigned, "the request is not signed: configure the client's AccessKey and SecretKey", ""},
		{"no signature", fields{{"AccessKey", "alice"}, {"topic", "T"}}, ReasonUnsigned, `user "alice" carries no Signature`, "alice"},
		{"unknown", fields{{"AccessKey", "mallory"}, {"Signature", sig}}, ReasonUnknownUser, `user "mallory" is unknown`, "mallory"},
		{"disabled", fields{{"AccessKey", "off"}, {"Signature", sig}}, ReasonDisabled, `user "off" is disabled`, "off"},
		{"bad signature", fields{{"AccessKey", "alice"}, {"topic", "T"}, {"Signature", sig[:27] + "A"}}, ReasonBadSignature, `the signature does not match user "alice"'s secret`, "alice"},
		{"tampered field", fields{{"AccessKey", "alice"}, {"topic", "U"}, {"Signature", sig}}, ReasonBadSignature, `does not match user "alice"'s secret`, "alice"},
		{"short signature", fields{{"AccessKey", "alice"}, {"topic", "T"}, {"Signature", "abc"}}, ReasonBadSignature, "does not match", "alice"},
	} {
		reasons = nil
		_, r := c.AuthenticateRemoting(tc.f, body)
		if r == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if r.Kind != Unauthenticated || r.User != tc.user || !strings.Contains(r.Msg, tc.msg) || !strings.HasPrefix(r.Msg, "authentication failed: ") {
			t.Errorf("%s: refusal %+v, want user %q and %q", tc.name, r, tc.user, tc.msg)
		}
		if strings.Contains(r.Msg, "s3cret") || r.GRPCCode() != 40100 {
			t.Errorf("%s: refusal %q leaks the secret or has gRPC code %d", tc.name, r.Msg, r.GRPCCode())
		}
		if !slices.Equal(reasons, []string{tc.reason}) {
			t.Errorf("%s: hook reasons %v, want %q", tc.name, reasons, tc.reason)
		}
	}
	if _, r := c.AuthenticateRemoting(good.with("Signature", sig), body); r != nil {
		t.Errorf("the right signature was refused: %v", r)
	}
}

func (f fields) with(k, v string) fields { return append(slices.Clone(f), [2]string{k, v}) }

func TestAuthenticateGRPC(t *testing.T) {
	dir := &fakeDir{users: map[string]User{
		"alice": {Name: "alice", Secret: "secret-a", Type: Normal, Status: Enabled},
		"off":   {Name: "off", Secret: "secret-a", Type: Normal, Status: Disabled},
	}}
	c := newTestChecker(t, dir, CheckerOptions{})
	const dt = "20261202T011500Z"
	// openssl: echo -n 20261202T011500Z | openssl dgst -sha1 -hmac secret-a
	const golden = "53f9682377ece6dff4e8309f15aefc859a70f148"
	// The Go 5.x client's exact form (rocketmq-clients golang v5.1.2, client.go Sign).
	goForm := "MQv2-HMAC-SHA1 Credential=alice//Rocketmq, SignedHeaders=x-mq-date-time, Signature=" + golden
	if got := GRPCAuthorization("alice", "secret-a", dt); got != goForm {
		t.Fatalf("GRPCAuthorization = %q, want %q", got, goForm)
	}
	for _, ok := range []string{
		goForm,
		"MQv2-HMAC-SHA1 Credential=alice/Rocketmq,SignedHeaders=x-mq-date-time,Signature=" + strings.ToUpper(golden),
		"mqv2-hmac-sha1   Signature=" + golden + " ,  Credential=alice ,SignedHeaders=X-MQ-DATE-TIME",
		"MQv2-HMAC-SHA1 Credential=alice, Signature=" + golden,
	} {
		if u, r := c.AuthenticateGRPC(ok, dt); r != nil || u.Name != "alice" {
			t.Errorf("%q refused: %v", ok, r)
		}
	}
	for _, tc := range []struct{ auth, dt, msg string }{
		{"", dt, "not signed"},
		{"Basic abc", dt, "scheme"},
		{"MQv2-HMAC-SHA1 Credential=alice, Signature=zz", dt, "40 hex"},
		{"MQv2-HMAC-SHA1 Signature=" + golden, dt, "no Credential"},
		{"MQv2-HMAC-SHA1 Credential=alice", dt, "no Signature"},
		{"MQv2-HMAC-SHA1 Credential=alice, SignedHeaders=host, Signature=" + golden, dt, "x-mq-date-time"},
		{goForm, "20261202T011501Z", `does not match user "alice"'s secret`},
		{goForm, "", "x-mq-date-time"},
		{strings.Replace(goForm, "alice", "bob", 1), dt, `user "bob" is unknown`},
		{strings.Replace(goForm, "alice", "off", 1), dt, `user "off" is disabled`},
		{goForm + strings.Repeat(" ", MaxAuthorizationBytes), dt, "too long"},
	} {
		_, r := c.AuthenticateGRPC(tc.auth, tc.dt)
		if r == nil || r.Kind != Unauthenticated || !strings.Contains(r.Msg, tc.msg) || r.GRPCCode() != 40100 {
			t.Errorf("%q at %q: refusal %+v, want %q", tc.auth, tc.dt, r, tc.msg)
		}
	}
	if got := GRPCDateTime(time.Date(2026, 12, 2, 1, 15, 0, 0, time.FixedZone("X", 3600))); got != "20261202T011500Z" {
		t.Errorf("GRPCDateTime = %q", got)
	}
}

func TestAuthenticateBasic(t *testing.T) {
	dir := &fakeDir{users: map[string]User{
		"root": {Name: "root", Secret: "pw", Type: Super, Status: Enabled},
		"off":  {Name: "off", Secret: "pw", Type: Super, Status: Disabled},
	}}
	var reasons []string
	c := newTestChecker(t, dir, CheckerOptions{Refused: func(p, r string) { reasons = append(reasons, p+"/"+r) }})
	if u, r := c.AuthenticateBasic("root", "pw"); r != nil || u.Type != Super {
		t.Fatalf("root refused: %v", r)
	}
	for _, tc := range []struct{ u, s, msg string }{
		{"root", "pw2", `the secret does not match user "root"'s`},
		{"root", "", "does not match"},
		{"nobody", "pw", `user "nobody" is unknown`},
		{"off", "pw", `user "off" is disabled`},
		{"", "", "no credentials"},
	} {
		if _, r := c.AuthenticateBasic(tc.u, tc.s); r == nil || !strings.Contains(r.Msg, tc.msg) || strings.Contains(r.Msg, "pw") {
			t.Errorf("%q/%q: %+v, want %q", tc.u, tc.s, r, tc.msg)
		}
	}
	want := []string{"http/bad-signature", "http/bad-signature", "http/unknown-user", "http/disabled", "http/unsigned"}
	if !slices.Equal(reasons, want) {
		t.Errorf("reasons %v, want %v", reasons, want)
	}
}

func TestAuthorize(t *testing.T) {
	bob := User{Name: "bob", Secret: "x", Type: Normal, Status: Enabled}
	dir := &fakeDir{users: map[string]User{"bob": bob}, acls: map[string]Acl{
		"User:bob": {Subject: "User:bob", Policies: []Policy{{Type: Custom, Entries: []PolicyEntry{
			entry(t, "Topic:A", Allow, nil, ActionPub),
			entry(t, "Topic:*", Allow, nil, ActionSub),
			entry(t, "Topic:B", Deny, nil, ActionSub),
			entry(t, "Group:g", Allow, []string{"10.0.0.0/8"}, ActionSub),
		}}}},
	}}
	var reasons []string
	c := newTestChecker(t, dir, CheckerOptions{Refused: func(p, r string) { reasons = append(reasons, p+"/"+r) }})
	src := netip.MustParseAddr("10.1.1.1")
	topic := func(n string, a ...Action) Request {
		return Request{Resource: Resource{ResourceTopic, n, Literal}, Actions: a}
	}
	if r := c.Authorize("remoting", bob, []Request{topic("A", ActionPub), topic("C", ActionSub), {Resource: Resource{ResourceGroup, "g", Literal}, Actions: []Action{ActionSub}}}, src); r != nil {
		t.Fatalf("allowed requests refused: %v", r)
	}
	for _, tc := range []struct {
		reqs []Request
		src  netip.Addr
		msg  string
	}{
		{[]Request{topic("A", ActionPub), topic("B", ActionPub)}, src, `user "bob" may not Pub on Topic:B (no policy allows it)`},
		{[]Request{topic("B", ActionSub)}, src, `user "bob" may not Sub on Topic:B (denied by a policy)`},
		{[]Request{topic("Z", ActionPub, ActionSub, ActionGet)}, src, ""},
		{[]Request{topic("X", ActionPub, ActionGet)}, src, `user "bob" may not Pub or Get on Topic:X (no policy allows it)`},
		{[]Request{topic("X", ActionPub, ActionUpdate, ActionGet)}, src, `user "bob" may not Pub, Update or Get on Topic:X (no policy allows it)`},
		{[]Request{{Resource: Resource{ResourceGroup, "g", Literal}, Actions: []Action{ActionSub}}}, netip.MustParseAddr("192.168.0.1"), `user "bob" may not Sub on Group:g (no policy allows it)`},
	} {
		r := c.Authorize("grpc", bob, tc.reqs, tc.src)
		if tc.msg == "" {
			if r != nil {
				t.Errorf("%v: refused %v", tc.reqs, r)
			}
			continue
		}
		if r == nil || r.Msg != tc.msg || r.Kind != Forbidden || r.User != "bob" || r.GRPCCode() != 40300 {
			t.Errorf("%v: refusal %+v, want %q", tc.reqs, r, tc.msg)
		}
	}
	if len(reasons) != 5 || reasons[0] != "grpc/forbidden" {
		t.Errorf("reasons %v", reasons)
	}
	// A normal user without an ACL may do nothing; a super user anything;
	// a disabled user nothing.
	carol := User{Name: "carol", Type: Normal, Status: Enabled}
	if r := c.Authorize("remoting", carol, []Request{topic("A", ActionPub)}, src); r == nil || !strings.Contains(r.Msg, "no policy allows it") {
		t.Errorf("carol: %v", r)
	}
	if r := c.Authorize("remoting", User{Name: "root", Type: Super, Status: Enabled}, []Request{topic("B", ActionSub)}, src); r != nil {
		t.Errorf("super refused: %v", r)
	}
	if r := c.Authorize("remoting", User{Name: "root", Type: Super, Status: Disabled}, nil, src); r == nil || r.Kind != Unauthenticated {
		t.Errorf("disabled super: %v", r)
	}
}

func TestRefusalLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewChecker(&fakeDir{users: map[string]User{}}, CheckerOptions{Clock: clk,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))})
	lines := func() int { mu.Lock(); defer mu.Unlock(); return strings.Count(buf.String(), "\n") }
	f := fields{{"AccessKey", "ghost"}, {"Signature", "x"}}
	for range 10 {
		c.AuthenticateRemotingAt(Where{Remote: netip.MustParseAddrPort("10.0.0.1:5555"), Code: 10}, f, nil)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d lines for 10 refusals within a second, want 1:\n%s", n, buf.String())
	}
	out := buf.String()
	for _, want := range []string{"level=WARN", `user=ghost`, "remote=10.0.0.1:5555", "code=10", "reason=unknown-user"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %s: %s", want, out)
		}
	}
	// Another user, or the other kind, logs at once.
	c.AuthenticateRemoting(fields{{"AccessKey", "ghost2"}}, nil)
	c.Authorize("remoting", User{Name: "ghost", Type: Normal}, []Request{{Resource: Resource{ResourceTopic, "t", Literal}, Actions: []Action{ActionPub}}}, netip.Addr{})
	if n := lines(); n != 3 {
		t.Fatalf("%d lines, want 3", n)
	}
	clk.Advance(999 * time.Millisecond)
	c.AuthenticateRemoting(f, nil)
	if n := lines(); n != 3 {
		t.Fatalf("logged again before a second passed")
	}
	clk.Advance(time.Millisecond)
	c.AuthenticateRemoting(f, nil)
	if n := lines(); n != 4 {
		t.Fatalf("%d lines after a second, want 4", n)
	}
	// Many distinct unknown users do not grow the limiter without bound.
	for i := range 2 * maxLogKeys {
		c.AuthenticateRemoting(fields{{"AccessKey", "u" + strconv.Itoa(i)}}, nil)
	}
	c.mu.Lock()
	n := len(c.logged)
	c.mu.Unlock()
	if n > maxLogKeys {
		t.Fatalf("limiter holds %d keys, bound %d", n, maxLogKeys)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestStaticDirectory(t *testing.T) {
	d := Static(User{Name: "a", Secret: "1"}, User{Name: "b"}, User{Name: "a", Secret: "2"})
	if u, ok := d.User("a"); !ok || u.Secret != "2" {
		t.Errorf("User(a) = %+v, %v", u, ok)
	}
	if _, ok := d.User("c"); ok {
		t.Error("User(c) found")
	}
	if _, ok := d.Acl("User:a"); ok {
		t.Error("a static directory has ACLs")
	}
}
