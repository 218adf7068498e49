package auth

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxResourceNameBytes bounds a resource name in a policy (RocketMQ's
// topic and group names are at most 127 and 255 bytes).
const MaxResourceNameBytes = 255

// ParseResource reads a policy's resource string: "*" (every resource),
// "Cluster" (the cluster the request was sent to), "Cluster:NAME",
// "Topic:NAME", "Topic:PREFIX*", "Topic:*", and the same for "Group:".
// The type is read whatever its case; String writes the canonical form.
// The error (wrapping ErrInvalid) says what a valid resource looks like.
func ParseResource(s string) (Resource, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return Resource{Type: ResourceAny, Pattern: AnyName}, nil
	}
	if s == "" {
		return Resource{}, invalidf("the resource is empty: write *, Cluster, Cluster:NAME, Topic:NAME, Topic:PREFIX*, Topic:*, Group:NAME, Group:PREFIX* or Group:*")
	}
	typ, name, hasName := strings.Cut(s, ":")
	var rt ResourceType
	switch {
	case strings.EqualFold(typ, string(ResourceCluster)):
		rt = ResourceCluster
	case strings.EqualFold(typ, string(ResourceTopic)):
		rt = ResourceTopic
	case strings.EqualFold(typ, string(ResourceGroup)):
		rt = ResourceGroup
	default:
		return Resource{}, invalidf("resource %s has no known type: write *, Cluster, Cluster:NAME, Topic:NAME, Topic:PREFIX*, Topic:*, Group:NAME, Group:PREFIX* or Group:*", quoteTrunc(s))
	}
	if !hasName || name == "" {
		if rt == ResourceCluster {
			return Resource{Type: rt, Pattern: Literal}, nil
		}
		return Resource{}, invalidf("resource %s names no %s: write %s:NAME, %s:PREFIX* or %s:*", quoteTrunc(s), strings.ToLower(string(rt)), rt, rt, rt)
	}
	if len(name) > MaxResourceNameBytes {
		return Resource{}, invalidf("resource %s: the name is longer than %d bytes", quoteTrunc(s), MaxResourceNameBytes)
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return Resource{}, invalidf("resource %s: the name has spaces, control characters or invalid UTF-8", quoteTrunc(s))
	}
	if name == "*" {
		return Resource{Type: rt, Pattern: AnyName}, nil
	}
	if i := strings.IndexByte(name, '*'); i >= 0 {
		if i != len(name)-1 {
			return Resource{}, invalidf("resource %s: * may only end a name (a prefix), as in %s:orders-*", quoteTrunc(s), rt)
		}
		return Resource{Type: rt, Name: name[:i], Pattern: Prefixed}, nil
	}
	return Resource{Type: rt, Name: name, Pattern: Literal}, nil
}

// String is the canonical resource string (see ParseResource).
func (r Resource) String() string {
	switch {
	case r.Type == ResourceAny:
		return "*"
	case r.Pattern == AnyName:
		return string(r.Type) + ":*"
	case r.Pattern == Prefixed:
		return string(r.Type) + ":" + r.Name + "*"
	case r.Type == ResourceCluster && r.Name == "":
		return string(ResourceCluster)
	}
	return string(r.Type) + ":" + r.Name
}

// Matches reports whether the policy resource r covers the request's
// resource req (a Literal one): "*" covers everything; otherwise the
// types must agree and the name match r's pattern. A policy "Cluster"
// (no name) covers every Cluster request: a broker serves one cluster.
func (r Resource) Matches(req Resource) bool {
	if r.Type == ResourceAny {
		return true
	}
	if r.Type != req.Type {
		return false
	}
	switch r.Pattern {
	case AnyName:
		return true
	case Prefixed:
		return strings.HasPrefix(req.Name, r.Name)
	case Literal:
		return r.Name == req.Name || (r.Type == ResourceCluster && r.Name == "")
	}
	return false
}

var actions = [...]Action{ActionAll, ActionAny, ActionPub, ActionSub, ActionCreate, ActionUpdate, ActionDelete, ActionGet, ActionList}

// ParseAction reads an action name whatever its case ("pub" is Pub).
func ParseAction(s string) (Action, error) {
	s = strings.TrimSpace(s)
	for _, a := range actions {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", invalidf("action %s is unknown: use All, Pub, Sub, Create, Update, Delete, Get or List", quoteTrunc(s))
}

// MaxPolicyActions bounds the actions of one policy entry as written,
// duplicates included (there are eight distinct ones).
const MaxPolicyActions = 16

// ParsePolicyActions reads a policy entry's actions: at least one and at
// most MaxPolicyActions, none of them Any (a request's wildcard, not a
// permission); duplicates are dropped, the order kept.
func ParsePolicyActions(ss []string) ([]Action, error) {
	if len(ss) == 0 {
		return nil, invalidf("a policy entry names no action: give at least one of All, Pub, Sub, Create, Update, Delete, Get, List")
	}
	if len(ss) > MaxPolicyActions {
		return nil, invalidf("a policy entry lists %d actions, more than the limit of %d: name each action once", len(ss), MaxPolicyActions)
	}
	out := make([]Action, 0, len(ss))
	for _, s := range ss {
		a, err := ParseAction(s)
		if err != nil {
			return nil, err
		}
		if a == ActionAny {
			return nil, invalidf("action Any cannot be granted or denied: use All for every action")
		}
		dup := false
		for _, b := range out {
			dup = dup || a == b
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out, nil
}

// ParseDecision reads "Allow" or "Deny" whatever the case (required).
func ParseDecision(s string) (Decision, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, string(Allow)):
		return Allow, nil
	case strings.EqualFold(s, string(Deny)):
		return Deny, nil
	case s == "":
		return "", invalidf("the decision is missing: give Allow or Deny")
	}
	return "", invalidf("decision %s is unknown: use Allow or Deny", quoteTrunc(s))
}

// ParseUserType reads "Super" or "Normal" whatever the case.
func ParseUserType(s string) (UserType, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, string(Super)):
		return Super, nil
	case strings.EqualFold(s, string(Normal)):
		return Normal, nil
	}
	return "", invalidf("user type %s is unknown: use Super or Normal", quoteTrunc(s))
}

// ParseUserStatus reads "enable" or "disable" whatever the case.
func ParseUserStatus(s string) (UserStatus, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, string(Enabled)):
		return Enabled, nil
	case strings.EqualFold(s, string(Disabled)):
		return Disabled, nil
	}
	return "", invalidf("user status %s is unknown: use enable or disable", quoteTrunc(s))
}

// ParsePolicyType reads "Custom" or "Default" whatever the case; empty
// is Custom (what operators write).
func ParsePolicyType(s string) (PolicyType, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || strings.EqualFold(s, string(Custom)):
		return Custom, nil
	case strings.EqualFold(s, string(Default)):
		return Default, nil
	}
	return "", invalidf("policy type %s is unknown: use Custom or Default", quoteTrunc(s))
}

// ParseSourceIP reads a policy's source: an IPv4 or IPv6 address (a
// single-address prefix) or a CIDR range ("10.0.0.0/8"). IPv4-mapped
// IPv6 forms are read as IPv4, so they match IPv4 peers.
func ParseSourceIP(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	bad := func() (netip.Prefix, error) {
		return netip.Prefix{}, invalidf("source IP %s is neither an address nor a CIDR range (10.1.2.3, 10.0.0.0/8, fd00::/8)", quoteTrunc(s))
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return bad()
		}
		a, bits := p.Addr(), p.Bits()
		if a.Is4In6() {
			if bits < 96 {
				return bad()
			}
			a, bits = a.Unmap(), bits-96
		}
		return netip.PrefixFrom(a, bits).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return bad()
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// FormatSourceIP writes p as ParseSourceIP reads it: a single address
// without its length, a range in CIDR notation.
func FormatSourceIP(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// ParseSubject reads "User:NAME" (the type whatever its case) and
// returns NAME.
func ParseSubject(s string) (string, error) {
	typ, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || !strings.EqualFold(typ, "User") || name == "" {
		return "", invalidf("subject %s is not of the form User:NAME", quoteTrunc(s))
	}
	if err := ValidUserName(name); err != nil {
		return "", err
	}
	return name, nil
}

// Subject is the ACL subject of the user name: "User:NAME".
func Subject(name string) string { return "User:" + name }

// Bounds of users and ACLs, the same wherever they are checked (the
// management requests, the broker's store).
const (
	// MaxSecretBytes bounds a user's secret.
	MaxSecretBytes = 1024
	// MaxPolicyEntries bounds the entries of one ACL, all policies.
	MaxPolicyEntries = 1024
	// MaxSourceIPs bounds the source IPs of one entry.
	MaxSourceIPs = 64
)

// MaxUserNameBytes bounds a user name (the 4.x AccessKey).
const MaxUserNameBytes = 128

// ValidUserName checks a user name: 1 to MaxUserNameBytes bytes of UTF-8
// without spaces or control characters.
func ValidUserName(name string) error {
	switch {
	case name == "":
		return invalidf("the user name is empty")
	case len(name) > MaxUserNameBytes:
		return invalidf("user name %s is longer than %d bytes", quoteTrunc(name), MaxUserNameBytes)
	case !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return invalidf("user name %s has spaces, control characters or invalid UTF-8", quoteTrunc(name))
	}
	return nil
}

// invalidf is an error wrapping ErrInvalid whose text is the message
// alone (it is shown to operators as it is).
func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Is(target error) bool {
	return target == ErrInvalid
}

// quoteTrunc quotes s for a message, cut to 64 bytes.
func quoteTrunc(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// Invalidf returns an error wrapping ErrInvalid whose text is the
// formatted message alone (for operators and clients, without a package
// prefix).
func Invalidf(format string, args ...any) error { return invalidf(format, args...) }
