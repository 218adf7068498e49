package authwire

import (
	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// The bounds of what a management request may carry are auth's
// (auth.MaxSecretBytes, auth.MaxPolicyEntries, auth.MaxSourceIPs), which the broker's
// store applies too.

// UserFromInfo reads a user of a create/update request. Name is required;
// Password, UserType and UserStatus may be empty (a create takes the
// broker's defaults, an update keeps the old values); the type and status
// are read whatever their case. The error wraps auth.ErrInvalid and says
// what is wrong.
func UserFromInfo(in rmq.UserInfo) (auth.User, error) {
	if err := auth.ValidUserName(in.Username); err != nil {
		return auth.User{}, err
	}
	u := auth.User{Name: in.Username, Secret: in.Password}
	if len(in.Password) > auth.MaxSecretBytes {
		return auth.User{}, auth.Invalidf("the password of user %q is longer than %d bytes", in.Username, auth.MaxSecretBytes)
	}
	if in.UserType != "" {
		t, err := auth.ParseUserType(in.UserType)
		if err != nil {
			return auth.User{}, err
		}
		u.Type = t
	}
	if in.UserStatus != "" {
		s, err := auth.ParseUserStatus(in.UserStatus)
		if err != nil {
			return auth.User{}, err
		}
		u.Status = s
	}
	return u, nil
}

// UserToInfo is the JSON form of u, password included (callers leave it
// out where RocketMQ does).
func UserToInfo(u auth.User) rmq.UserInfo {
	return rmq.UserInfo{Username: u.Name, Password: u.Secret, UserType: string(u.Type), UserStatus: string(u.Status)}
}

// AclFromInfo reads an ACL of a create/update request: subject User:NAME,
// at least one policy (type Custom when empty) of at least one entry,
// each with a resource, at least one action (not Any), valid source IPs
// (ranges lose their host bits) and a decision; at most auth.MaxPolicyEntries
// entries, auth.MaxPolicyActions actions and auth.MaxSourceIPs source IPs an
// entry. The error wraps auth.ErrInvalid and names the policy and entry.
func AclFromInfo(in rmq.AclInfo) (auth.Acl, error) {
	name, err := auth.ParseSubject(in.Subject)
	if err != nil {
		return auth.Acl{}, err
	}
	if len(in.Policies) == 0 {
		return auth.Acl{}, auth.Invalidf("the ACL of %s has no policy: give at least one with entries", auth.Subject(name))
	}
	out := auth.Acl{Subject: auth.Subject(name), Policies: make([]auth.Policy, 0, len(in.Policies))}
	total := 0
	for i, p := range in.Policies {
		pt, err := auth.ParsePolicyType(p.PolicyType)
		if err != nil {
			return auth.Acl{}, auth.Invalidf("policy %d: %v", i+1, err)
		}
		if len(p.Entries) == 0 {
			return auth.Acl{}, auth.Invalidf("policy %d has no entry: give at least one (resource, actions, decision)", i+1)
		}
		total += len(p.Entries)
		if total > auth.MaxPolicyEntries {
			return auth.Acl{}, auth.Invalidf("the ACL has more than %d entries: give fewer, broader ones (Topic:PREFIX*, Topic:*)", auth.MaxPolicyEntries)
		}
		pol := auth.Policy{Type: pt, Entries: make([]auth.PolicyEntry, 0, len(p.Entries))}
		for j, e := range p.Entries {
			pe, err := entryFromInfo(e)
			if err != nil {
				return auth.Acl{}, auth.Invalidf("policy %d entry %d: %v", i+1, j+1, err)
			}
			pol.Entries = append(pol.Entries, pe)
		}
		out.Policies = append(out.Policies, pol)
	}
	return out, nil
}

func entryFromInfo(e rmq.PolicyEntryInfo) (auth.PolicyEntry, error) {
	res, err := auth.ParseResource(e.Resource)
	if err != nil {
		return auth.PolicyEntry{}, err
	}
	acts, err := auth.ParsePolicyActions(e.Actions)
	if err != nil {
		return auth.PolicyEntry{}, err
	}
	if len(e.SourceIps) > auth.MaxSourceIPs {
		return auth.PolicyEntry{}, auth.Invalidf("the entry lists %d source IPs, more than the limit of %d: give CIDR ranges instead of single addresses", len(e.SourceIps), auth.MaxSourceIPs)
	}
	pe := auth.PolicyEntry{Resource: res, Actions: acts}
	for _, s := range e.SourceIps {
		p, err := auth.ParseSourceIP(s)
		if err != nil {
			return auth.PolicyEntry{}, err
		}
		pe.SourceIPs = append(pe.SourceIPs, p)
	}
	if pe.Decision, err = auth.ParseDecision(e.Decision); err != nil {
		return auth.PolicyEntry{}, err
	}
	return pe, nil
}

// AclToInfo is the JSON form of a, in canonical strings.
func AclToInfo(a auth.Acl) rmq.AclInfo {
	out := rmq.AclInfo{Subject: a.Subject, Policies: make([]rmq.PolicyInfo, 0, len(a.Policies))}
	for _, p := range a.Policies {
		pi := rmq.PolicyInfo{PolicyType: string(p.Type), Entries: make([]rmq.PolicyEntryInfo, 0, len(p.Entries))}
		for _, e := range p.Entries {
			ei := rmq.PolicyEntryInfo{Resource: e.Resource.String(), Decision: string(e.Decision)}
			for _, act := range e.Actions {
				ei.Actions = append(ei.Actions, string(act))
			}
			for _, ip := range e.SourceIPs {
				ei.SourceIps = append(ei.SourceIps, auth.FormatSourceIP(ip))
			}
			pi.Entries = append(pi.Entries, ei)
		}
		out.Policies = append(out.Policies, pi)
	}
	return out
}
