package broker

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

var bg = context.Background()

func topicRes(name string) auth.Resource {
	return auth.Resource{Type: auth.ResourceTopic, Name: name, Pattern: auth.Literal}
}

func entry(r auth.Resource, d auth.Decision, acts ...auth.Action) auth.PolicyEntry {
	return auth.PolicyEntry{Resource: r, Actions: acts, Decision: d}
}

func aclOf(subject string, pt auth.PolicyType, es ...auth.PolicyEntry) auth.Acl {
	return auth.Acl{Subject: subject, Policies: []auth.Policy{{Type: pt, Entries: es}}}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}

func TestUserManagement(t *testing.T) {
	e := newEnv(t)
	b := e.b
	dir := b.AuthDirectory()
	mustOK(t, b.CreateUser(bg, auth.User{Name: "bob", Secret: "b1"}))
	got, ok := dir.User("bob")
	if want := (auth.User{Name: "bob", Secret: "b1", Type: auth.Normal, Status: auth.Enabled}); !ok || got != want {
		t.Fatalf("bob = %+v %v, want %+v (RocketMQ's defaults: Normal, enable)", got, ok, want)
	}
	wantErr(t, b.CreateUser(bg, auth.User{Name: "bob", Secret: "x"}), auth.ErrUserExists, "second create")
	wantErr(t, b.CreateUser(bg, auth.User{Name: "", Secret: "x"}), auth.ErrInvalid, "empty name")
	wantErr(t, b.CreateUser(bg, auth.User{Name: "carol"}), auth.ErrInvalid, "empty secret")
	wantErr(t, b.CreateUser(bg, auth.User{Name: "carol", Secret: "x", Type: "Admin"}), auth.ErrInvalid, "unknown type")
	wantErr(t, b.CreateUser(bg, auth.User{Name: "ca rol", Secret: "x"}), auth.ErrInvalid, "space in name")
	if err := b.CreateUser(bg, auth.User{Name: "carol", Secret: "x", Status: "off"}); KindOf(err) != KindMessageIllegal || !errors.Is(err, auth.ErrInvalid) {
		t.Fatalf("unknown status: %v (kind %v)", err, KindOf(err))
	}
	mustOK(t, b.CreateUser(bg, auth.User{Name: "alice", Secret: "a1", Type: auth.Super}))

	// Update keeps what is not given.
	mustOK(t, b.UpdateUser(bg, auth.User{Name: "bob", Status: auth.Disabled}))
	if got, _ := b.GetUser("bob"); got.Secret != "b1" || got.Status != auth.Disabled || got.Type != auth.Normal {
		t.Fatalf("bob after a status update: %+v", got)
	}
	mustOK(t, b.UpdateUser(bg, auth.User{Name: "bob", Secret: "b2", Type: auth.Super}))
	if got, _ := dir.User("bob"); got.Secret != "b2" || got.Type != auth.Super || got.Status != auth.Disabled {
		t.Fatalf("bob after a secret and type update: %+v", got)
	}
	wantErr(t, b.UpdateUser(bg, auth.User{Name: "nobody", Secret: "x"}), auth.ErrUserNotFound, "update of a missing user")
	wantErr(t, b.UpdateUser(bg, auth.User{Name: "bob", Type: "x"}), auth.ErrInvalid, "update to a bad type")

	if got := b.ListUsers(""); len(got) != 2 || got[0].Name != "alice" || got[1].Name != "bob" {
		t.Fatalf("ListUsers(\"\") = %+v, want alice, bob", got)
	}
	if got := b.ListUsers("li"); len(got) != 1 || got[0].Name != "alice" {
		t.Fatalf("ListUsers(li) = %+v", got)
	}

	mustOK(t, b.CreateAcl(bg, aclOf("User:bob", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))))
	mustOK(t, b.DeleteUser(bg, "bob"))
	if _, ok := dir.User("bob"); ok {
		t.Fatal("bob is still in the directory")
	}
	if _, ok := dir.Acl("User:bob"); ok {
		t.Fatal("deleting bob left his ACL")
	}
	wantErr(t, b.DeleteUser(bg, "bob"), auth.ErrUserNotFound, "second delete")
	// A new bob does not inherit the old one's policies.
	mustOK(t, b.CreateUser(bg, auth.User{Name: "bob", Secret: "b3"}))
	if _, ok := b.GetAcl("User:bob"); ok {
		t.Fatal("a recreated user has the old ACL")
	}
}

func TestAclManagementFollowsRocketMQ(t *testing.T) {
	e := newEnv(t)
	b := e.b
	wantErr(t, b.CreateAcl(bg, aclOf("User:ghost", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))), auth.ErrUserNotFound, "ACL of a missing user")
	mustOK(t, b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}))
	for name, a := range map[string]auth.Acl{
		"bad subject":  aclOf("u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub)),
		"no policies":  {Subject: "User:u"},
		"no entries":   aclOf("User:u", auth.Custom),
		"no actions":   aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow)),
		"action Any":   aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionAny)),
		"bad action":   aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, "Fly")),
		"bad decision": aclOf("User:u", auth.Custom, entry(topicRes("T"), "Maybe", auth.ActionPub)),
		"bad type":     aclOf("User:u", "Odd", entry(topicRes("T"), auth.Allow, auth.ActionPub)),
		"empty topic":  aclOf("User:u", auth.Custom, entry(topicRes(""), auth.Allow, auth.ActionPub)),
		"bad resource": aclOf("User:u", auth.Custom, entry(auth.Resource{Type: "Queue", Name: "q", Pattern: auth.Literal}, auth.Allow, auth.ActionPub)),
	} {
		wantErr(t, b.CreateAcl(bg, a), auth.ErrInvalid, name)
	}
	if _, ok := b.GetAcl("User:u"); ok {
		t.Fatal("a refused ACL was stored")
	}

	src := netip.MustParsePrefix("10.0.0.0/8")
	first := entry(topicRes("A"), auth.Allow, auth.ActionPub)
	first.SourceIPs = []netip.Prefix{src}
	// An empty policy type is Custom.
	mustOK(t, b.CreateAcl(bg, aclOf("User:u", "", first, entry(auth.Resource{Type: auth.ResourceGroup, Name: "g-", Pattern: auth.Prefixed}, auth.Allow, auth.ActionSub))))
	// Create again merges (RocketMQ never answers "exists"): A is replaced, B added.
	mustOK(t, b.CreateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("A"), auth.Deny, auth.ActionAll), entry(topicRes("B"), auth.Allow, auth.ActionGet))))
	// Update merges the same way, and adds a Default policy.
	mustOK(t, b.UpdateAcl(bg, aclOf("User:u", auth.Default, entry(auth.Resource{Type: auth.ResourceAny, Pattern: auth.AnyName}, auth.Allow, auth.ActionList))))
	got, ok := b.GetAcl("User:u")
	want := auth.Acl{Subject: "User:u", Policies: []auth.Policy{
		{Type: auth.Custom, Entries: []auth.PolicyEntry{
			entry(topicRes("A"), auth.Deny, auth.ActionAll),
			entry(auth.Resource{Type: auth.ResourceGroup, Name: "g-", Pattern: auth.Prefixed}, auth.Allow, auth.ActionSub),
			entry(topicRes("B"), auth.Allow, auth.ActionGet),
		}},
		{Type: auth.Default, Entries: []auth.PolicyEntry{entry(auth.Resource{Type: auth.ResourceAny, Pattern: auth.AnyName}, auth.Allow, auth.ActionList)}},
	}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("merged ACL\n got %+v\nwant %+v", got, want)
	}
	if d, _ := b.AuthDirectory().Acl("User:u"); !reflect.DeepEqual(d, want) {
		t.Fatalf("the directory's ACL %+v", d)
	}
	// A copy: changing it does not change the broker's.
	got.Policies[0].Entries[0].Actions[0] = auth.ActionPub
	if again, _ := b.GetAcl("User:u"); !reflect.DeepEqual(again, want) {
		t.Fatal("GetAcl hands out the broker's slices")
	}

	// Listing filters by subject and by resource string.
	mustOK(t, b.CreateUser(bg, auth.User{Name: "v", Secret: "s"}))
	mustOK(t, b.CreateAcl(bg, aclOf("User:v", auth.Custom, entry(topicRes("A"), auth.Allow, auth.ActionSub))))
	if l := b.ListAcls("", ""); len(l) != 2 || l[0].Subject != "User:u" || l[1].Subject != "User:v" {
		t.Fatalf("ListAcls all: %+v", l)
	}
	if l := b.ListAcls("User:v", ""); len(l) != 1 || l[0].Subject != "User:v" {
		t.Fatalf("ListAcls by subject: %+v", l)
	}
	l := b.ListAcls("", "Group:")
	if len(l) != 1 || l[0].Subject != "User:u" || len(l[0].Policies) != 1 || len(l[0].Policies[0].Entries) != 1 ||
		l[0].Policies[0].Entries[0].Resource.Name != "g-" {
		t.Fatalf("ListAcls by resource Group: %+v", l)
	}

	// Deletes: an entry; a missing entry is no change; a policy left
	// empty goes; the last one takes the ACL with it.
	mustOK(t, b.DeleteAcl(bg, "User:u", auth.Custom, "Topic:A"))
	mustOK(t, b.DeleteAcl(bg, "User:u", "", "Topic:nope"))
	mustOK(t, b.DeleteAcl(bg, "User:u", auth.Default, "*"))
	got, _ = b.GetAcl("User:u")
	if len(got.Policies) != 1 || got.Policies[0].Type != auth.Custom || len(got.Policies[0].Entries) != 2 {
		t.Fatalf("after the deletes: %+v", got)
	}
	mustOK(t, b.DeleteAcl(bg, "User:u", "", "Group:g-*"))
	mustOK(t, b.DeleteAcl(bg, "User:u", "", "Topic:B"))
	if _, ok := b.GetAcl("User:u"); ok {
		t.Fatal("an ACL without entries is still there")
	}
	wantErr(t, b.DeleteAcl(bg, "User:u", "", ""), auth.ErrAclNotFound, "delete of a missing ACL")
	wantErr(t, b.DeleteAcl(bg, "User:v", "", "Queue:x"), auth.ErrInvalid, "delete with a bad resource")
	mustOK(t, b.DeleteAcl(bg, "User:v", "", ""))
	if _, ok := b.AuthDirectory().Acl("User:v"); ok {
		t.Fatal("the whole-ACL delete left it in the directory")
	}
}

func TestResourceStrings(t *testing.T) {
	for s, r := range map[string]auth.Resource{
		"*":           {Type: auth.ResourceAny, Pattern: auth.AnyName},
		"Cluster":     {Type: auth.ResourceCluster, Pattern: auth.Literal},
		"Cluster:c1":  {Type: auth.ResourceCluster, Name: "c1", Pattern: auth.Literal},
		"Topic:t":     {Type: auth.ResourceTopic, Name: "t", Pattern: auth.Literal},
		"Topic:ord-*": {Type: auth.ResourceTopic, Name: "ord-", Pattern: auth.Prefixed},
		"Group:*":     {Type: auth.ResourceGroup, Pattern: auth.AnyName},
	} {
		if got := resourceString(r); got != s {
			t.Errorf("resourceString(%+v) = %q, want %q", r, got, s)
		}
		if got, err := parseResource(s); err != nil || got != r {
			t.Errorf("parseResource(%q) = %+v %v, want %+v", s, got, err, r)
		}
	}
	for _, s := range []string{"", "Topic", "Topic:", "Queue:q", "topic:t"} {
		if _, err := parseResource(s); err == nil {
			t.Errorf("parseResource(%q) accepted", s)
		}
	}
	if got := ipString(netip.MustParsePrefix("10.1.2.3/32")); got != "10.1.2.3" {
		t.Errorf("a single address is kept as an address: %q", got)
	}
	if p, err := parseIP("10.1.2.3/8"); err != nil || p.String() != "10.0.0.0/8" {
		t.Errorf("parseIP of a CIDR: %v %v", p, err)
	}
}

func TestEnsureInitUser(t *testing.T) {
	e := newDiskEnv(t)
	wantErr(t, func() error { _, err := e.b.EnsureInitUser(bg, "root", ""); return err }(), auth.ErrInvalid, "empty secret")
	created, err := e.b.EnsureInitUser(bg, "root", "r00t")
	if err != nil || !created {
		t.Fatalf("first EnsureInitUser = %v %v", created, err)
	}
	if u, ok := e.b.AuthDirectory().User("root"); !ok || u.Type != auth.Super || u.Status != auth.Enabled || u.Secret != "r00t" {
		t.Fatalf("init user %+v %v", u, ok)
	}
	// Durable: it is there after a restart, and the call is idempotent.
	e.restart()
	if _, ok := e.b.AuthDirectory().User("root"); !ok {
		t.Fatal("the init user is gone after a restart")
	}
	mustOK(t, e.b.UpdateUser(bg, auth.User{Name: "root", Secret: "changed"}))
	if created, err := e.b.EnsureInitUser(bg, "root", "r00t"); err != nil || created {
		t.Fatalf("EnsureInitUser with users = %v %v", created, err)
	}
	if u, _ := e.b.GetUser("root"); u.Secret != "changed" {
		t.Fatalf("EnsureInitUser overwrote the secret: %+v", u)
	}
	if created, err := e.b.EnsureInitUser(bg, "other", "x"); err != nil || created {
		t.Fatalf("EnsureInitUser of another name with users present = %v %v", created, err)
	}
}

func TestSlaveRefusesUserAndAclWrites(t *testing.T) {
	e := newEnv(t, ssSlave)
	for name, err := range map[string]error{
		"create user": e.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}),
		"update user": e.b.UpdateUser(bg, auth.User{Name: "u", Secret: "s"}),
		"delete user": e.b.DeleteUser(bg, "u"),
		"create acl":  e.b.CreateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))),
		"update acl":  e.b.UpdateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))),
		"delete acl":  e.b.DeleteAcl(bg, "User:u", "", ""),
	} {
		if !errors.Is(err, ErrNotMaster) || KindOf(err) != KindSystemError {
			t.Errorf("%s on a slave: %v (kind %v), want the slave refusal", name, err, KindOf(err))
		}
	}
	if created, err := e.b.EnsureInitUser(bg, "root", "r"); created || err != nil {
		t.Fatalf("EnsureInitUser on a slave = %v %v, want false, nil", created, err)
	}
	if len(e.md.Users()) != 0 {
		t.Fatal("a slave stored a user")
	}
}

func TestUserChangesAreDurable(t *testing.T) {
	e := newDiskEnv(t)
	mustOK(t, e.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}))
	mustOK(t, e.b.CreateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))))
	// The write returned: a crash now keeps it.
	c := e.crashClone()
	if _, ok := c.b.AuthDirectory().User("u"); !ok {
		t.Fatal("the user is lost after a crash")
	}
	if a, ok := c.b.AuthDirectory().Acl("User:u"); !ok || a.Policies[0].Entries[0].Resource != topicRes("T") {
		t.Fatalf("the ACL after a crash: %+v %v", a, ok)
	}
}

// TestAuthDirectoryReadsDuringWrites: readers never block and always see
// a whole state (race detector).
func TestAuthDirectoryReadsDuringWrites(t *testing.T) {
	e := newEnv(t)
	dir := e.b.AuthDirectory()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if u, ok := dir.User("u"); ok && u.Secret == "" {
					t.Error("a user without its secret")
				}
				if a, ok := dir.Acl("User:u"); ok && len(a.Policies) == 0 {
					t.Error("an ACL without policies")
				}
			}
		}()
	}
	for i := range 50 {
		mustOK(t, e.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}))
		mustOK(t, e.b.CreateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("T"), auth.Allow, auth.ActionPub))))
		if i%2 == 0 {
			mustOK(t, e.b.DeleteAcl(bg, "User:u", "", ""))
		}
		mustOK(t, e.b.DeleteUser(bg, "u"))
	}
	close(stop)
	wg.Wait()
}

// --- replication ------------------------------------------------------

func authOf(b *Broker) ([]auth.User, []auth.Acl) { return b.ListUsers(""), b.ListAcls("", "") }

func sameAuth(t *testing.T, m, s *env, when string) {
	t.Helper()
	mu, ma := authOf(m.b)
	su, sa := authOf(s.b)
	if !reflect.DeepEqual(mu, su) || !reflect.DeepEqual(ma, sa) {
		t.Fatalf("%s: the slave's users/ACLs differ\nmaster %+v %+v\nslave  %+v %+v", when, mu, ma, su, sa)
	}
	if !reflect.DeepEqual(m.md.Users(), s.md.Users()) || !reflect.DeepEqual(m.md.Acls(), s.md.Acls()) {
		t.Fatalf("%s: the slave's meta tables differ", when)
	}
}

// TestUsersAndAclsReplicateAndSurvivePromotion: users and ACLs made on a
// master reach the slave's tables and directory through the state stream,
// deletions too, and the promoted slave has them and takes writes.
func TestUsersAndAclsReplicateAndSurvivePromotion(t *testing.T) {
	m, s := newStatePair(t)
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "root", Secret: "r", Type: auth.Super}))
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "bob", Secret: "b"}))
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "eve", Secret: "e"}))
	a := aclOf("User:bob", auth.Custom, entry(topicRes("orders"), auth.Allow, auth.ActionPub, auth.ActionSub))
	a.Policies[0].Entries[0].SourceIPs = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}
	mustOK(t, m.b.CreateAcl(bg, a))
	mustOK(t, m.b.CreateAcl(bg, aclOf("User:eve", auth.Custom, entry(topicRes("x"), auth.Deny, auth.ActionAll))))
	flushState(t, m)
	ship(t, m, s)
	sameAuth(t, m, s, "after the creates")
	if got, ok := s.b.AuthDirectory().Acl("User:bob"); !ok || !reflect.DeepEqual(got, a) {
		t.Fatalf("the slave's directory has bob's ACL %+v %v, want %+v", got, ok, a)
	}

	mustOK(t, m.b.UpdateUser(bg, auth.User{Name: "bob", Status: auth.Disabled}))
	mustOK(t, m.b.DeleteUser(bg, "eve"))
	mustOK(t, m.b.DeleteAcl(bg, "User:bob", "", "Topic:orders"))
	mustOK(t, m.b.CreateAcl(bg, aclOf("User:root", auth.Custom, entry(topicRes("y"), auth.Allow, auth.ActionGet))))
	flushState(t, m)
	ship(t, m, s)
	sameAuth(t, m, s, "after the updates and deletes")
	if _, ok := s.b.AuthDirectory().User("eve"); ok {
		t.Fatal("eve's deletion did not reach the slave")
	}
	if _, ok := s.b.AuthDirectory().Acl("User:bob"); ok {
		t.Fatal("bob's emptied ACL is still on the slave")
	}
	if u, _ := s.b.GetUser("bob"); u.Status != auth.Disabled {
		t.Fatalf("bob on the slave: %+v", u)
	}

	// Failover: the slave turns master with everything, and takes writes.
	s.b.SetRole(RoleMaster)
	sameAuth(t, m, s, "right after SetRole(master)")
	if u, ok := s.b.AuthDirectory().User("root"); !ok || u.Type != auth.Super {
		t.Fatalf("the promoted slave's root: %+v %v", u, ok)
	}
	mustOK(t, s.b.CreateUser(bg, auth.User{Name: "new", Secret: "n"}))
	// The restarted promoted broker has them from its own files.
	s.bcfg.Role, s.bcfg.BrokerID = RoleMaster, 0
	s.restart()
	for _, n := range []string{"root", "bob", "new"} {
		if _, ok := s.b.AuthDirectory().User(n); !ok {
			t.Fatalf("user %s is gone after the promoted broker's restart", n)
		}
	}
}

// TestSnapshotCarriesUsersAndAcls: a fresh slave that starts from a log
// whose beginning retention removed gets the users and ACLs from the
// master's snapshot, and loses a stale user of an earlier life.
func TestSnapshotCarriesUsersAndAcls(t *testing.T) {
	m, s := newStatePair(t)
	mustOK(t, s.md.PutUser(meta.User{Name: "stale", Secret: "x", Type: "Normal", Status: "enable"}))
	mustOK(t, s.md.PutAcl(meta.Acl{Subject: "User:stale", Policies: []meta.AclPolicy{{Type: "Custom", Entries: []meta.AclEntry{{Resource: "*", Actions: []string{"All"}, Decision: "Allow"}}}}}))
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}))
	mustOK(t, m.b.CreateAcl(bg, aclOf("User:u", auth.Custom, entry(topicRes("Big"), auth.Allow, auth.ActionPub))))
	flushState(t, m)
	cut := m.st.Durable()
	m.createTopic("Big", 1)
	body := strings.Repeat("x", 16<<10)
	for m.st.Durable()-cut <= m.st.Config().SegmentBytes/2 {
		m.send("Big", 0, body)
	}
	snaps := m.b.state.snapID.Load()
	m.clk.Advance(m.b.cfg.StateFlushInterval)
	flushState(t, m)
	if m.b.state.snapID.Load() != snaps+1 {
		t.Fatal("no snapshot was written")
	}
	m.stores.Mem.RemoveBefore(cut + 1)
	ship(t, m, s)
	sameAuth(t, m, s, "after the snapshot")
	if _, ok := s.b.AuthDirectory().User("u"); !ok {
		t.Fatal("user u (created before the cut) is not on the slave")
	}
	if _, ok := s.b.AuthDirectory().User("stale"); ok {
		t.Fatal("the stale user survived the snapshot")
	}
	if _, ok := s.md.Acl("User:stale"); ok {
		t.Fatal("the stale ACL survived the snapshot")
	}
}

// TestUserWriteWaitsForTheCommitPoint: under sync replication a write is
// answered only once the commit point covers its state record; when the
// slaves do not confirm in time the answer says the change is durable on
// the master only.
func TestUserWriteWaitsForTheCommitPoint(t *testing.T) {
	f := newFakeRepl()
	m := newEnv(t, stateMember(RoleMaster), withRepl(f))
	done := make(chan error, 1)
	go func() { done <- m.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}) }()
	end := f.nextPoll(t)
	if end <= 0 {
		t.Fatalf("waits for end %d", end)
	}
	select {
	case err := <-done:
		t.Fatalf("answered before the commit point moved: %v", err)
	default:
	}
	if _, ok := m.b.AuthDirectory().User("u"); !ok {
		t.Fatal("the user is not applied locally while it waits for the slaves")
	}
	f.set(end, false)
	select {
	case err := <-done:
		mustOK(t, err)
	case <-time.After(waitLimit):
		t.Fatal("not answered once the commit point covered it")
	}

	// No confirmation: the replication timeout answers, naming the state.
	go func() { done <- m.b.CreateUser(bg, auth.User{Name: "v", Secret: "s"}) }()
	f.nextPoll(t)
	m.clk.Advance(m.b.cfg.ReplicationTimeout)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "durable on broker") || !strings.Contains(err.Error(), "not yet on its slaves") {
			t.Fatalf("timeout answer: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("not answered at the replication timeout")
	}
	if _, ok := m.md.User("v"); !ok {
		t.Fatal("the timed-out change is not kept locally")
	}
}

// TestAsyncReplicationDoesNotWaitForSlaves: with async replication (and no
// Replicator) a write does not ask the replicator.
func TestAsyncReplicationDoesNotWaitForSlaves(t *testing.T) {
	f := newFakeRepl()
	m := newEnv(t, stateMember(RoleMaster), func(_ *store.Config, c *Config) { c.Replicator, c.ReplicationAsync = f, true })
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "u", Secret: "s"}))
	select {
	case end := <-f.polled:
		t.Fatalf("an async group waited for end %d", end)
	default:
	}
}

// TestStateRecordsStayInside: the state topic's records carry secrets; a
// read by commit-log offset (message id lookup, a consumer's send-back)
// does not hand them out nor copy them into a topic clients read.
func TestStateRecordsStayInside(t *testing.T) {
	m := newEnv(t, stateMember(RoleMaster))
	mustOK(t, m.b.CreateUser(bg, auth.User{Name: "root", Secret: "top-secret", Type: auth.Super}))
	flushState(t, m)
	mustOK(t, m.st.WaitDispatched(bg))
	res, err := m.st.GetMessages(StateTopic, 0, 0, 64, 4<<20, nil)
	if err != nil || res.Count == 0 {
		t.Fatalf("state topic read: %v (%d records)", err, res.Count)
	}
	var offs []int64
	res.Records(func(r message.Record) {
		if strings.Contains(string(r.Body()), "top-secret") {
			offs = append(offs, r.PhysicalOffset())
		}
	})
	res.Release()
	if len(offs) == 0 {
		t.Fatal("no state record holds the user (the test would prove nothing)")
	}
	for _, off := range offs {
		if r, err := m.b.ViewByOffset(off); err == nil {
			t.Fatalf("ViewByOffset(%d) handed out a state record of %d bytes", off, len(r))
		}
		if _, err := m.b.SendBack(bg, &SendBackRequest{Offset: off, Group: "g"}); err == nil {
			t.Fatalf("SendBack(%d) copied a state record", off)
		}
	}
	if _, ok := m.b.Topic(RetryGroupTopicPrefix + "g"); ok {
		t.Fatal("a refused send-back created the retry topic")
	}
}
