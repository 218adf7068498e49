package brokerfront

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// oneEntry is an ACL body for User:u of one Custom policy with e alone.
func oneEntry(e rmq.PolicyEntryInfo) rmq.AclInfo {
	return rmq.AclInfo{Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{e}}}}
}

// TestACLResourcesReadAndWriteCanonically: the resource strings RocketMQ
// writes, types in any case, read into the auth core's Resource and are
// answered canonically; the rest are refused naming the entry and the
// string.
func TestACLResourcesReadAndWriteCanonically(t *testing.T) {
	for in, want := range map[string]struct {
		r   auth.Resource
		out string
	}{
		"*":              {auth.Resource{Type: auth.ResourceAny, Pattern: auth.AnyName}, "*"},
		"Cluster":        {auth.Resource{Type: auth.ResourceCluster, Pattern: auth.Literal}, "Cluster"},
		"cluster:":       {auth.Resource{Type: auth.ResourceCluster, Pattern: auth.Literal}, "Cluster"},
		"Cluster:c1":     {auth.Resource{Type: auth.ResourceCluster, Name: "c1", Pattern: auth.Literal}, "Cluster:c1"},
		"topic:orders":   {auth.Resource{Type: auth.ResourceTopic, Name: "orders", Pattern: auth.Literal}, "Topic:orders"},
		"Topic:order-*":  {auth.Resource{Type: auth.ResourceTopic, Name: "order-", Pattern: auth.Prefixed}, "Topic:order-*"},
		"TOPIC:*":        {auth.Resource{Type: auth.ResourceTopic, Pattern: auth.AnyName}, "Topic:*"},
		"Group:g":        {auth.Resource{Type: auth.ResourceGroup, Name: "g", Pattern: auth.Literal}, "Group:g"},
		"Group:%RETRY%*": {auth.Resource{Type: auth.ResourceGroup, Name: "%RETRY%", Pattern: auth.Prefixed}, "Group:%RETRY%*"},
	} {
		a, err := aclFromInfo("User:u", oneEntry(rmq.PolicyEntryInfo{Resource: in, Actions: []string{"Pub"}, Decision: "Allow"}))
		if err != nil || a.Policies[0].Entries[0].Resource != want.r {
			t.Errorf("resource %q read as %+v %v, want %+v", in, a, err, want.r)
			continue
		}
		if got := authwire.AclToInfo(a).Policies[0].Entries[0].Resource; got != want.out {
			t.Errorf("resource %+v answered as %q, want %q", want.r, got, want.out)
		}
	}
	for in, want := range map[string]string{
		"":                                  "the resource is empty",
		"Namespace:n":                       "has no known type",
		"Any:x":                             "has no known type",
		"Topic":                             "names no topic",
		"Group:":                            "names no group",
		"Topic:a*b":                         "may only end a name",
		"Topic:**":                          "may only end a name",
		"Topic:a b":                         "spaces, control characters",
		"Topic:\xff":                        "invalid UTF-8",
		"Topic:" + strings.Repeat("t", 300): "longer than 255 bytes",
	} {
		_, err := aclFromInfo("User:u", oneEntry(rmq.PolicyEntryInfo{Resource: in, Actions: []string{"Pub"}, Decision: "Allow"}))
		if !errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "policy 1 entry 1: ") {
			t.Errorf("resource %.40q: %v, want an error for policy 1 entry 1 with %q", in, err, want)
		}
	}
}

// TestSourceIPsReadAndWriteAsSent: addresses stay addresses, ranges lose
// their host bits, zones and nonsense are refused, and so are more than
// the limit.
func TestSourceIPsReadAndWriteAsSent(t *testing.T) {
	in := []string{"10.1.2.3", "10.1.2.3/8", "::1", "fd00::/8"}
	a, err := aclFromInfo("User:u", oneEntry(rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Sub"}, SourceIps: in, Decision: "Allow"}))
	if err != nil {
		t.Fatal(err)
	}
	out := authwire.AclToInfo(a).Policies[0].Entries[0].SourceIps
	if want := []string{"10.1.2.3", "10.0.0.0/8", "::1", "fd00::/8"}; !reflect.DeepEqual(out, want) {
		t.Fatalf("source IPs %v, want %v", out, want)
	}
	for _, bad := range []string{"", "10.0.0", "fe80::1%eth0", "10.0.0.0/40", "host.example"} {
		_, err := aclFromInfo("User:u", oneEntry(rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Sub"}, SourceIps: []string{bad}, Decision: "Allow"}))
		if err == nil || !strings.Contains(err.Error(), "source IP") {
			t.Errorf("source IP %q: %v, want a refusal naming the source IP", bad, err)
		}
	}
	many := make([]string, auth.MaxSourceIPs+1)
	for i := range many {
		many[i] = "10.0.0.1"
	}
	if _, err := aclFromInfo("User:u", oneEntry(rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Sub"}, SourceIps: many, Decision: "Allow"})); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the limit of %d", auth.MaxSourceIPs)) {
		t.Errorf("%d source IPs: %v", len(many), err)
	}
}

// TestACLConversionBounds: an ACL over the entry limit, an entry with too
// many actions, and duplicate actions (dropped) behave as documented.
func TestACLConversionBounds(t *testing.T) {
	entry := rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Pub", "pub", "PUB", "Sub"}, Decision: "allow"}
	a, err := aclFromInfo("User:u", oneEntry(entry))
	if err != nil || !reflect.DeepEqual(a.Policies[0].Entries[0].Actions, []auth.Action{auth.ActionPub, auth.ActionSub}) || a.Policies[0].Entries[0].Decision != auth.Allow {
		t.Fatalf("%+v %v", a, err)
	}
	many := make([]rmq.PolicyEntryInfo, auth.MaxPolicyEntries+1)
	for i := range many {
		many[i] = entry
	}
	if _, err := aclFromInfo("User:u", rmq.AclInfo{Policies: []rmq.PolicyInfo{{Entries: many}}}); err == nil || !strings.Contains(err.Error(), "more than 1024 entries") {
		t.Fatalf("%d entries: %v", len(many), err)
	}
	entry.Actions = make([]string, auth.MaxPolicyActions+1)
	if _, err := aclFromInfo("User:u", oneEntry(entry)); err == nil || !strings.Contains(err.Error(), "more than the limit of 16") {
		t.Fatalf("%d actions: %v", len(entry.Actions), err)
	}
}

// TestHeaderAndBodyMustNameTheSameUser: the body may repeat the header's
// user (a subject's type in any case) but not name another one, nor an
// invalid one; a create needs a password and takes RocketMQ's defaults.
func TestHeaderAndBodyMustNameTheSameUser(t *testing.T) {
	good := oneEntry(rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: "Allow"})
	body := good
	body.Subject = "user:u"
	if a, err := aclFromInfo("User:u", body); err != nil || a.Subject != "User:u" {
		t.Fatalf("the same subject in the body: %+v %v", a, err)
	}
	for subject, want := range map[string]string{
		"User:v":   `the body's subject "User:v" is not the header's "User:u"`,
		"User:a b": "in the body: user name",
		"Group:g":  `in the body: subject "Group:g"`,
	} {
		body.Subject = subject
		if _, err := aclFromInfo("User:u", body); !errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("body subject %q: %v, want %q", subject, err, want)
		}
	}
	if _, err := aclFromInfo("u", good); err == nil || !strings.Contains(err.Error(), "User:NAME") {
		t.Errorf("header subject without a type: %v", err)
	}

	u, err := userFromInfo("u", rmq.UserInfo{Username: "u", Password: "p"}, true)
	if err != nil || u != (auth.User{Name: "u", Secret: "p", Type: auth.Normal, Status: auth.Enabled}) {
		t.Fatalf("create with the defaults: %+v %v", u, err)
	}
	if u, err := userFromInfo("u", rmq.UserInfo{UserStatus: "disable"}, false); err != nil || u != (auth.User{Name: "u", Status: auth.Disabled}) {
		t.Fatalf("an update keeps what it does not name: %+v %v", u, err)
	}
	for _, c := range []struct {
		info   rmq.UserInfo
		create bool
		want   string
	}{
		{rmq.UserInfo{Username: "v", Password: "p"}, true, `the body's username "v" is not the header's "u"`},
		{rmq.UserInfo{Username: "v w", Password: "p"}, false, "in the body: user name"},
		{rmq.UserInfo{}, true, "password is empty"},
	} {
		if _, err := userFromInfo("u", c.info, c.create); !errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("user %+v (create %v): %v, want %q", c.info, c.create, err, c.want)
		}
	}
	if info := userToInfo(auth.User{Name: "u", Secret: "p", Type: auth.Normal, Status: auth.Enabled}, false); info.Password != "" || info.UserType != "Normal" {
		t.Errorf("an answer without the secret: %+v", info)
	}
}

// FuzzAclFromInfo: the conversion of a client's ACL body never panics,
// and what it accepts converts back to a body that converts to the same
// ACL (the canonical spelling is a fixed point).
func FuzzAclFromInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, subject string, body []byte) {
		info, err := rmq.DecodeAclInfo(body)
		if err != nil {
			return
		}
		a, err := aclFromInfo(subject, info)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty refusal")
			}
			return
		}
		back := authwire.AclToInfo(a)
		again, err := aclFromInfo(a.Subject, back)
		if err != nil || !reflect.DeepEqual(again, a) {
			t.Fatalf("%+v wrote %+v, which reads %+v %v", a, back, again, err)
		}
	})
}

// FuzzUserFromInfo: likewise for users, create and update.
func FuzzUserFromInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string, body []byte, create bool) {
		info, err := rmq.DecodeUserInfo(body)
		if err != nil {
			return
		}
		u, err := userFromInfo(name, info, create)
		if err != nil {
			return
		}
		if create && (u.Secret == "" || u.Type == "" || u.Status == "") {
			t.Fatalf("a created user without secret, type or status: %+v", u)
		}
		again, err := userFromInfo(u.Name, userToInfo(u, true), create)
		if err != nil || again != u {
			t.Fatalf("%+v read back as %+v %v", u, again, err)
		}
	})
}
