package brokerfront

import (
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestParseResource: the resource strings RocketMQ writes, types in any
// case, parse to the auth core's Resource and write back canonically;
// the rest are refused naming the string.
func TestParseResource(t *testing.T) {
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
		r, err := parseResource(in)
		if err != nil || r != want.r {
			t.Errorf("parseResource(%q) = %+v %v, want %+v", in, r, err, want.r)
			continue
		}
		if got := resourceString(r); got != want.out {
			t.Errorf("resourceString(%+v) = %q, want %q", r, got, want.out)
		}
	}
	for in, want := range map[string]string{
		"":                                  "is not one of",
		"Namespace:n":                       "is not one of",
		"Any:x":                             "is not one of",
		"Topic":                             "names no Topic",
		"Group:":                            "names no Group",
		"Topic:a*b":                         "does not end it",
		"Topic:**":                          "does not end it",
		"Topic:a b":                         "space or a control character",
		"Topic:\xff":                        "not valid UTF-8",
		"Topic:" + strings.Repeat("t", 300): "more than the limit of 256",
	} {
		if _, err := parseResource(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseResource(%.40q): %v, want an error with %q", in, err, want)
		}
	}
}

// TestSourceIPsReadAndWriteAsSent: addresses stay addresses, ranges lose
// their host bits, zones and nonsense are refused.
func TestSourceIPsReadAndWriteAsSent(t *testing.T) {
	ps, err := parseSourceIPs("e", []string{"10.1.2.3", "10.1.2.3/8", "::1", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, sourceIPString(p))
	}
	if want := []string{"10.1.2.3", "10.0.0.0/8", "::1", "fd00::/8"}; !reflect.DeepEqual(out, want) {
		t.Fatalf("source IPs %v, want %v", out, want)
	}
	for _, bad := range []string{"", "10.0.0", "fe80::1%eth0", "10.0.0.0/40", "host.example"} {
		if _, err := parseSourceIPs("e", []string{bad}); err == nil {
			t.Errorf("source IP %q accepted", bad)
		}
	}
	if _, err := parseSourceIPs("e", make([]string, maxPolicySourceIPs+1)); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("%d source IPs: %v", maxPolicySourceIPs+1, err)
	}
}

// TestACLConversionBounds: an ACL over the entry limit, an entry with too
// many actions, and duplicate actions (dropped) behave as documented.
func TestACLConversionBounds(t *testing.T) {
	entry := rmq.PolicyEntryInfo{Resource: "Topic:a", Actions: []string{"Pub", "pub", "PUB", "Sub"}, Decision: "allow"}
	a, err := aclFromInfo("User:u", rmq.AclInfo{Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{entry}}}})
	if err != nil || !reflect.DeepEqual(a.Policies[0].Entries[0].Actions, []auth.Action{auth.ActionPub, auth.ActionSub}) || a.Policies[0].Entries[0].Decision != auth.Allow {
		t.Fatalf("%+v %v", a, err)
	}
	many := make([]rmq.PolicyEntryInfo, maxACLEntries+1)
	for i := range many {
		many[i] = entry
	}
	if _, err := aclFromInfo("User:u", rmq.AclInfo{Policies: []rmq.PolicyInfo{{Entries: many}}}); err == nil || !strings.Contains(err.Error(), "more than 1024 entries") {
		t.Fatalf("%d entries: %v", len(many), err)
	}
	entry.Actions = make([]string, maxPolicyActions+1)
	if _, err := aclFromInfo("User:u", rmq.AclInfo{Policies: []rmq.PolicyInfo{{Entries: []rmq.PolicyEntryInfo{entry}}}}); err == nil || !strings.Contains(err.Error(), "more than the limit of 16") {
		t.Fatalf("%d actions: %v", len(entry.Actions), err)
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
		back := aclToInfo(a)
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
