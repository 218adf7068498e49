package auth

import "net/netip"

// Verdict is the outcome of Decide for one Request.
type Verdict int

const (
	// NoPolicy: no entry allows the request (the default for normal users).
	NoPolicy Verdict = iota
	// Allowed: the user is a super user, or an Allow entry matches and no
	// Deny entry does.
	Allowed
	// Denied: a Deny entry matches (it wins over any Allow).
	Denied
)

// Decide is the pure decision for one request of user u, whose ACL is acl
// (nil when the user has none), made from source (the zero Addr when not
// known: entries restricted to source IPs then do not match). Super users
// are Allowed. For a normal user an entry matches when its resource covers
// req.Resource, it has one of req.Actions (an entry with All has every
// action; a request for Any is satisfied by any action) and its source
// IPs, if any, contain source. Every entry of every policy counts; a
// matching Deny wins.
func Decide(u User, acl *Acl, req Request, source netip.Addr) Verdict {
	if u.Type == Super {
		return Allowed
	}
	if acl == nil {
		return NoPolicy
	}
	source = source.Unmap()
	v := NoPolicy
	for i := range acl.Policies {
		for j := range acl.Policies[i].Entries {
			e := &acl.Policies[i].Entries[j]
			if !e.Resource.Matches(req.Resource) || !actionsMatch(e.Actions, req.Actions) || !sourceMatches(e.SourceIPs, source) {
				continue
			}
			switch e.Decision {
			case Deny:
				return Denied
			case Allow:
				v = Allowed
			}
		}
	}
	return v
}

// actionsMatch: the entry has one of want.
func actionsMatch(have, want []Action) bool {
	if len(have) == 0 {
		return false
	}
	for _, w := range want {
		if w == ActionAny {
			return true
		}
	}
	for _, h := range have {
		if h == ActionAll {
			return len(want) > 0
		}
	}
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}

func sourceMatches(ps []netip.Prefix, source netip.Addr) bool {
	if len(ps) == 0 {
		return true
	}
	if !source.IsValid() {
		return false
	}
	for _, p := range ps {
		if p.Contains(source) {
			return true
		}
	}
	return false
}

// Static is a Directory of fixed users and no ACLs (a standalone name
// server's, which knows only the init user). Later users of the same name
// replace earlier ones.
func Static(users ...User) Directory {
	m := make(staticDir, len(users))
	for _, u := range users {
		m[u.Name] = u
	}
	return m
}

type staticDir map[string]User

func (d staticDir) User(name string) (User, bool) {
	u, ok := d[name]
	return u, ok
}

func (staticDir) Acl(string) (Acl, bool) { return Acl{}, false }
