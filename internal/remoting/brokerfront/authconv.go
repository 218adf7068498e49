package brokerfront

// Conversions between rmq's ACL 2.0 wire bodies (UserInfo, AclInfo) and
// the auth core's types, validating what a client sent. RocketMQ reads
// the names of types, statuses, policy types, actions, decisions and
// resource types case-insensitively; so do these, and they answer the
// canonical spelling. Every error's text is a sentence for the client
// naming the field and what it must be (it holds only what the client
// sent).

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Bounds of what one request may define.
const (
	maxAuthNameLen     = 256  // a user name; a resource name
	maxAuthSecretLen   = 1024 // a user's secret
	maxACLEntries      = 1024 // entries in one create or update
	maxPolicyActions   = 16   // actions in one entry, as sent
	maxPolicySourceIPs = 256  // source IPs in one entry
)

// subjectUserPrefix starts every subject: RocketMQ's only subject type.
const subjectUserPrefix = "User:"

// quoteInput quotes a client's value for a remark, cut to 64 bytes.
func quoteInput(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}

// checkAuthName checks a user name (or a subject's): not empty, at most
// maxAuthNameLen bytes of UTF-8 without spaces or control characters.
func checkAuthName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty; send the user's name", field)
	case len(name) > maxAuthNameLen:
		return fmt.Errorf("%s is %d bytes long, more than the limit of %d", field, len(name), maxAuthNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s %s is not valid UTF-8", field, quoteInput(name))
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%s %s holds a space or a control character; user names may not", field, quoteInput(name))
	}
	return nil
}

// parseUserType reads userType: "" is none (the default), else Super or
// Normal in any case.
func parseUserType(s string) (auth.UserType, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, string(auth.Super)):
		return auth.Super, nil
	case strings.EqualFold(s, string(auth.Normal)):
		return auth.Normal, nil
	}
	return "", fmt.Errorf("userType %s is neither Super nor Normal", quoteInput(s))
}

// parseUserStatus reads userStatus: "" is none, else enable or disable.
func parseUserStatus(s string) (auth.UserStatus, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, string(auth.Enabled)):
		return auth.Enabled, nil
	case strings.EqualFold(s, string(auth.Disabled)):
		return auth.Disabled, nil
	}
	return "", fmt.Errorf("userStatus %s is neither enable nor disable", quoteInput(s))
}

// userFromInfo converts the body of a create (create true) or update
// user request whose header names name. The body's username, when there
// is one, must be that name. A create needs a password and defaults the
// type to Normal and the status to enable, as RocketMQ does; an update
// leaves empty fields empty (the broker keeps the user's values).
func userFromInfo(name string, info rmq.UserInfo, create bool) (auth.User, error) {
	if err := checkAuthName("the username", name); err != nil {
		return auth.User{}, err
	}
	if info.Username != "" && info.Username != name {
		return auth.User{}, fmt.Errorf("the body's username %s is not the header's %s; send the same name in both", quoteInput(info.Username), quoteInput(name))
	}
	u := auth.User{Name: name, Secret: info.Password}
	if create && u.Secret == "" {
		return auth.User{}, errors.New("password is empty; a new user needs a secret")
	}
	if len(u.Secret) > maxAuthSecretLen {
		return auth.User{}, fmt.Errorf("password is %d bytes long, more than the limit of %d", len(u.Secret), maxAuthSecretLen)
	}
	var err error
	if u.Type, err = parseUserType(info.UserType); err != nil {
		return auth.User{}, err
	}
	if u.Status, err = parseUserStatus(info.UserStatus); err != nil {
		return auth.User{}, err
	}
	if create {
		if u.Type == "" {
			u.Type = auth.Normal
		}
		if u.Status == "" {
			u.Status = auth.Enabled
		}
	}
	return u, nil
}

// userToInfo is a get or list answer's entry; the secret only when
// withSecret.
func userToInfo(u auth.User, withSecret bool) rmq.UserInfo {
	info := rmq.UserInfo{Username: u.Name, UserType: string(u.Type), UserStatus: string(u.Status)}
	if withSecret {
		info.Password = u.Secret
	}
	return info
}

// parseSubject reads "User:NAME" (the type in any case) and returns the
// canonical subject and the user's name.
func parseSubject(s string) (subject, name string, err error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || !strings.EqualFold(typ, "User") {
		return "", "", fmt.Errorf("subject %s is not User:NAME (users are the only subjects)", quoteInput(s))
	}
	if err := checkAuthName("the subject's user name", name); err != nil {
		return "", "", err
	}
	return subjectUserPrefix + name, name, nil
}

// parsePolicyType reads a policy type: "" is Custom, as in RocketMQ.
func parsePolicyType(s string) (auth.PolicyType, error) {
	switch {
	case s == "", strings.EqualFold(s, string(auth.Custom)):
		return auth.Custom, nil
	case strings.EqualFold(s, string(auth.Default)):
		return auth.Default, nil
	}
	return "", fmt.Errorf("policyType %s is neither Custom nor Default", quoteInput(s))
}

// resourceTypes are the resource types a policy may name, by lower-case
// name.
var resourceTypes = map[string]auth.ResourceType{
	"cluster": auth.ResourceCluster,
	"topic":   auth.ResourceTopic,
	"group":   auth.ResourceGroup,
}

// parseResource reads a policy's resource: "*" (anything), "Cluster",
// "Cluster:NAME", "Topic:NAME", "Topic:PREFIX*", "Topic:*" and the same
// for Group (types in any case).
func parseResource(s string) (auth.Resource, error) {
	const want = `"*", Cluster, Cluster:NAME, Topic:NAME, Topic:PREFIX*, Topic:*, Group:NAME, Group:PREFIX* or Group:*`
	if s == "*" {
		return auth.Resource{Type: auth.ResourceAny, Pattern: auth.AnyName}, nil
	}
	typ, name, hasName := strings.Cut(s, ":")
	rt, ok := resourceTypes[strings.ToLower(typ)]
	if !ok {
		return auth.Resource{}, fmt.Errorf("resource %s is not one of %s", quoteInput(s), want)
	}
	if !hasName || name == "" {
		if rt == auth.ResourceCluster {
			return auth.Resource{Type: rt, Pattern: auth.Literal}, nil
		}
		return auth.Resource{}, fmt.Errorf("resource %s names no %s; write %s:NAME, %s:PREFIX* or %s:*", quoteInput(s), rt, rt, rt, rt)
	}
	if name == "*" {
		return auth.Resource{Type: rt, Pattern: auth.AnyName}, nil
	}
	pattern := auth.Literal
	if strings.HasSuffix(name, "*") {
		pattern, name = auth.Prefixed, strings.TrimSuffix(name, "*")
	}
	switch {
	case len(name) > maxAuthNameLen:
		return auth.Resource{}, fmt.Errorf("resource %s: the name is %d bytes long, more than the limit of %d", quoteInput(s), len(name), maxAuthNameLen)
	case !utf8.ValidString(name):
		return auth.Resource{}, fmt.Errorf("resource %s is not valid UTF-8", quoteInput(s))
	case strings.Contains(name, "*"):
		return auth.Resource{}, fmt.Errorf("resource %s has a * that does not end it; a prefix is written PREFIX*", quoteInput(s))
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return auth.Resource{}, fmt.Errorf("resource %s holds a space or a control character", quoteInput(s))
	}
	return auth.Resource{Type: rt, Name: name, Pattern: pattern}, nil
}

// resourceString writes r as parseResource reads it.
func resourceString(r auth.Resource) string {
	if r.Type == auth.ResourceAny {
		return "*"
	}
	switch r.Pattern {
	case auth.AnyName:
		return string(r.Type) + ":*"
	case auth.Prefixed:
		return string(r.Type) + ":" + r.Name + "*"
	}
	if r.Name == "" && r.Type == auth.ResourceCluster {
		return string(auth.ResourceCluster)
	}
	return string(r.Type) + ":" + r.Name
}

// policyActions are the actions a policy may name, by lower-case name
// (Any is what requests ask, never what a policy grants, as in RocketMQ).
var policyActions = map[string]auth.Action{
	"all": auth.ActionAll, "pub": auth.ActionPub, "sub": auth.ActionSub, "create": auth.ActionCreate,
	"update": auth.ActionUpdate, "delete": auth.ActionDelete, "get": auth.ActionGet, "list": auth.ActionList,
}

// parseActions reads an entry's actions: at least one, each a known
// action; duplicates are dropped.
func parseActions(where string, in []string) ([]auth.Action, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%s has no actions; give at least one of All, Pub, Sub, Create, Update, Delete, Get, List", where)
	}
	if len(in) > maxPolicyActions {
		return nil, fmt.Errorf("%s has %d actions, more than the limit of %d", where, len(in), maxPolicyActions)
	}
	out := make([]auth.Action, 0, len(in))
	for _, s := range in {
		a, ok := policyActions[strings.ToLower(s)]
		if !ok {
			if strings.EqualFold(s, string(auth.ActionAny)) {
				return nil, fmt.Errorf("%s: action Any cannot be granted; give All or the actions themselves", where)
			}
			return nil, fmt.Errorf("%s: action %s is not one of All, Pub, Sub, Create, Update, Delete, Get, List", where, quoteInput(s))
		}
		dup := false
		for _, have := range out {
			dup = dup || have == a
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out, nil
}

// parseSourceIPs reads an entry's source IPs: addresses or CIDR ranges
// (host bits are cleared, as RocketMQ's range check ignores them).
func parseSourceIPs(where string, in []string) ([]netip.Prefix, error) {
	if len(in) > maxPolicySourceIPs {
		return nil, fmt.Errorf("%s has %d source IPs, more than the limit of %d", where, len(in), maxPolicySourceIPs)
	}
	var out []netip.Prefix
	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%s: source IP %s is neither an IP address nor a CIDR range such as 10.0.0.0/8", where, quoteInput(s))
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// sourceIPString writes a prefix, a single address without its length.
func sourceIPString(p netip.Prefix) string {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().String()
	}
	return p.String()
}

// parseDecision reads Allow or Deny (required, as in RocketMQ).
func parseDecision(where, s string) (auth.Decision, error) {
	switch {
	case strings.EqualFold(s, string(auth.Allow)):
		return auth.Allow, nil
	case strings.EqualFold(s, string(auth.Deny)):
		return auth.Deny, nil
	case s == "":
		return "", fmt.Errorf("%s has no decision; give Allow or Deny", where)
	}
	return "", fmt.Errorf("%s: decision %s is neither Allow nor Deny", where, quoteInput(s))
}

// aclFromInfo converts the body of a create or update ACL request whose
// header names headerSubject; the body's subject, when there is one, must
// be the same. It needs at least one policy, each with at least one entry
// (RocketMQ's checks).
func aclFromInfo(headerSubject string, info rmq.AclInfo) (auth.Acl, error) {
	subject, _, err := parseSubject(headerSubject)
	if err != nil {
		return auth.Acl{}, err
	}
	if info.Subject != "" {
		body, _, err := parseSubject(info.Subject)
		if err != nil {
			return auth.Acl{}, fmt.Errorf("in the body: %w", err)
		}
		if body != subject {
			return auth.Acl{}, fmt.Errorf("the body's subject %s is not the header's %s; send the same subject in both", quoteInput(info.Subject), quoteInput(headerSubject))
		}
	}
	if len(info.Policies) == 0 {
		return auth.Acl{}, errors.New("policies is empty; give at least one policy with entries")
	}
	acl := auth.Acl{Subject: subject}
	n := 0
	for i, pi := range info.Policies {
		pt, err := parsePolicyType(pi.PolicyType)
		if err != nil {
			return auth.Acl{}, fmt.Errorf("policies[%d]: %w", i, err)
		}
		if len(pi.Entries) == 0 {
			return auth.Acl{}, fmt.Errorf("policies[%d] has no entries; give each policy at least one", i)
		}
		if n += len(pi.Entries); n > maxACLEntries {
			return auth.Acl{}, fmt.Errorf("the ACL has more than %d entries; split it over several requests", maxACLEntries)
		}
		p := auth.Policy{Type: pt, Entries: make([]auth.PolicyEntry, 0, len(pi.Entries))}
		for j, ei := range pi.Entries {
			where := fmt.Sprintf("policies[%d].entries[%d]", i, j)
			res, err := parseResource(ei.Resource)
			if err != nil {
				return auth.Acl{}, fmt.Errorf("%s: %w", where, err)
			}
			acts, err := parseActions(where, ei.Actions)
			if err != nil {
				return auth.Acl{}, err
			}
			ips, err := parseSourceIPs(where, ei.SourceIps)
			if err != nil {
				return auth.Acl{}, err
			}
			dec, err := parseDecision(where, ei.Decision)
			if err != nil {
				return auth.Acl{}, err
			}
			p.Entries = append(p.Entries, auth.PolicyEntry{Resource: res, Actions: acts, SourceIPs: ips, Decision: dec})
		}
		acl.Policies = append(acl.Policies, p)
	}
	return acl, nil
}

// aclToInfo is a get or list answer's entry.
func aclToInfo(a auth.Acl) rmq.AclInfo {
	info := rmq.AclInfo{Subject: a.Subject}
	for _, p := range a.Policies {
		pi := rmq.PolicyInfo{PolicyType: string(p.Type)}
		for _, e := range p.Entries {
			ei := rmq.PolicyEntryInfo{Resource: resourceString(e.Resource), Decision: string(e.Decision)}
			for _, act := range e.Actions {
				ei.Actions = append(ei.Actions, string(act))
			}
			for _, ip := range e.SourceIPs {
				ei.SourceIps = append(ei.SourceIps, sourceIPString(ip))
			}
			pi.Entries = append(pi.Entries, ei)
		}
		info.Policies = append(info.Policies, pi)
	}
	return info
}
