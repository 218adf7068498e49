package broker

// The access control's state: the directory the checkers read, the
// conversions between auth's types and the meta store's, and the state
// stream kinds that carry users and ACLs to slaves.
//
// Reads are per request, writes are rare: the directory is an immutable
// snapshot (two maps) behind an atomic pointer, rebuilt from the meta
// tables after every change (on a master by the management calls, on a
// slave by the applier). A reader never takes a lock.

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// authState is the broker's part of the access control.
type authState struct {
	// mu serialises the management writes: a write's check, its meta
	// change and the queueing of its state record are one step, so the
	// records reach the slaves in the order the changes were made.
	mu  sync.Mutex
	dir atomic.Pointer[authSnapshot]

	// slave applier: what the snapshot being applied named
	userSeen map[string]bool
	aclSeen  map[string]bool
}

// authSnapshot is one immutable state of the users and ACLs.
type authSnapshot struct {
	users map[string]auth.User
	acls  map[string]auth.Acl
}

// liveDirectory is the auth.Directory of a broker: every call reads the
// current snapshot.
type liveDirectory struct{ b *Broker }

func (d liveDirectory) User(name string) (auth.User, bool) {
	u, ok := d.b.auth.dir.Load().users[name]
	return u, ok
}

// Acl returns the subject's ACL; its slices are shared and must not be
// modified.
func (d liveDirectory) Acl(subject string) (auth.Acl, bool) {
	a, ok := d.b.auth.dir.Load().acls[subject]
	return a, ok
}

// AuthDirectory returns the users and ACLs as a checker reads them: safe
// for concurrent use, lock-free, always the current state (on a slave,
// what it has applied of the master's). Values returned by its Acl share
// slices with the broker: do not modify them.
func (b *Broker) AuthDirectory() auth.Directory { return liveDirectory{b} }

// rebuildAuthDir makes a new snapshot from the meta tables. A stored entry
// that does not convert (the broker wrote it, so never) is left out and
// logged: a policy that cannot be read must not allow anything.
func (b *Broker) rebuildAuthDir() {
	snap := &authSnapshot{users: make(map[string]auth.User), acls: make(map[string]auth.Acl)}
	for _, u := range b.meta.Users() {
		snap.users[u.Name] = userFromMeta(u)
	}
	for _, a := range b.meta.Acls() {
		acl, err := aclFromMeta(a)
		if err != nil {
			b.log.Error("a stored ACL does not parse; its subject has no policy", "subject", a.Subject, "err", err)
			continue
		}
		snap.acls[a.Subject] = acl
	}
	b.auth.dir.Store(snap)
}

// refuseStateRecord keeps the state topic's records inside the broker:
// they carry the users' secrets, so no read by commit-log offset (a
// message id lookup, a consumer's send-back) may hand one out or copy it
// into a topic clients read. The refusal says "no message", as for an
// offset that holds none.
func refuseStateRecord(rec message.Record, off int64) error {
	if string(rec.Topic()) != StateTopic {
		return nil
	}
	return errorf(KindSystemError, nil, "no message at commit-log offset %d", off)
}

// --- conversions --------------------------------------------------------

func userToMeta(u auth.User) meta.User {
	return meta.User{Name: u.Name, Secret: u.Secret, Type: string(u.Type), Status: string(u.Status)}
}

func userFromMeta(u meta.User) auth.User {
	return auth.User{Name: u.Name, Secret: u.Secret, Type: auth.UserType(u.Type), Status: auth.UserStatus(u.Status)}
}

// resourceString is RocketMQ's resource key: "*", "Cluster", "Cluster:x",
// "Topic:x", "Topic:x*", "Topic:*".
func resourceString(r auth.Resource) string {
	switch {
	case r.Type == auth.ResourceAny:
		return "*"
	case r.Pattern == auth.AnyName:
		return string(r.Type) + ":*"
	case r.Pattern == auth.Prefixed:
		return string(r.Type) + ":" + r.Name + "*"
	case r.Type == auth.ResourceCluster && r.Name == "":
		return string(auth.ResourceCluster)
	}
	return string(r.Type) + ":" + r.Name
}

// parseResource is resourceString's inverse; it refuses what RocketMQ
// cannot name: an unknown type, an empty topic or group name.
func parseResource(s string) (auth.Resource, error) {
	if s == "*" {
		return auth.Resource{Type: auth.ResourceAny, Pattern: auth.AnyName}, nil
	}
	typ, name, _ := strings.Cut(s, ":")
	rt := auth.ResourceType(typ)
	switch rt {
	case auth.ResourceCluster, auth.ResourceTopic, auth.ResourceGroup:
	default:
		return auth.Resource{}, fmt.Errorf("resource %q: the type must be Cluster, Topic or Group (or the resource *)", s)
	}
	switch {
	case name == "*":
		return auth.Resource{Type: rt, Pattern: auth.AnyName}, nil
	case strings.HasSuffix(name, "*"):
		return auth.Resource{Type: rt, Name: strings.TrimSuffix(name, "*"), Pattern: auth.Prefixed}, nil
	case name == "" && rt != auth.ResourceCluster:
		return auth.Resource{}, fmt.Errorf("resource %q names no %s; write %s:NAME, %s:PREFIX* or %s:*", s, typ, typ, typ, typ)
	}
	return auth.Resource{Type: rt, Name: name, Pattern: auth.Literal}, nil
}

// ipString keeps an address as an address (RocketMQ's form) and a range
// as a CIDR.
func ipString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

func parseIP(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func aclToMeta(a auth.Acl) meta.Acl {
	out := meta.Acl{Subject: a.Subject, Policies: make([]meta.AclPolicy, 0, len(a.Policies))}
	for _, p := range a.Policies {
		mp := meta.AclPolicy{Type: string(p.Type), Entries: make([]meta.AclEntry, 0, len(p.Entries))}
		for _, e := range p.Entries {
			me := meta.AclEntry{Resource: resourceString(e.Resource), Decision: string(e.Decision)}
			for _, act := range e.Actions {
				me.Actions = append(me.Actions, string(act))
			}
			for _, ip := range e.SourceIPs {
				me.SourceIPs = append(me.SourceIPs, ipString(ip))
			}
			mp.Entries = append(mp.Entries, me)
		}
		out.Policies = append(out.Policies, mp)
	}
	return out
}

func aclFromMeta(a meta.Acl) (auth.Acl, error) {
	out := auth.Acl{Subject: a.Subject, Policies: make([]auth.Policy, 0, len(a.Policies))}
	for _, p := range a.Policies {
		ap := auth.Policy{Type: auth.PolicyType(p.Type), Entries: make([]auth.PolicyEntry, 0, len(p.Entries))}
		for _, e := range p.Entries {
			r, err := parseResource(e.Resource)
			if err != nil {
				return auth.Acl{}, err
			}
			ae := auth.PolicyEntry{Resource: r, Decision: auth.Decision(e.Decision)}
			for _, act := range e.Actions {
				ae.Actions = append(ae.Actions, auth.Action(act))
			}
			for _, s := range e.SourceIPs {
				ip, err := parseIP(s)
				if err != nil {
					return auth.Acl{}, fmt.Errorf("source address %q: %w", s, err)
				}
				ae.SourceIPs = append(ae.SourceIPs, ip)
			}
			ap.Entries = append(ap.Entries, ae)
		}
		out.Policies = append(out.Policies, ap)
	}
	return out, nil
}

// cloneAcl returns a deep copy (what management reads hand out).
func cloneAcl(a auth.Acl) auth.Acl {
	out := auth.Acl{Subject: a.Subject, Policies: make([]auth.Policy, len(a.Policies))}
	for i, p := range a.Policies {
		out.Policies[i] = auth.Policy{Type: p.Type, Entries: make([]auth.PolicyEntry, len(p.Entries))}
		for j, e := range p.Entries {
			e.Actions = append([]auth.Action(nil), e.Actions...)
			e.SourceIPs = append([]netip.Prefix(nil), e.SourceIPs...)
			out.Policies[i].Entries[j] = e
		}
	}
	return out
}

// --- the state stream kinds --------------------------------------------

func userPayload(u meta.User) []byte {
	p, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("broker: encoding user %q: %v", u.Name, err)) // plain struct: cannot fail
	}
	return p
}

func aclPayload(a meta.Acl) []byte {
	p, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("broker: encoding the ACL of %q: %v", a.Subject, err))
	}
	return p
}

// decodeUserPayload decodes and checks a KindUserPut payload.
func decodeUserPayload(p []byte) (meta.User, error) {
	if err := staterec.CheckAuthPayload(staterec.KindUserPut, p); err != nil {
		return meta.User{}, err
	}
	var u meta.User
	if err := json.Unmarshal(p, &u); err != nil {
		return meta.User{}, fmt.Errorf("user: %w", err)
	}
	if err := checkUser(userFromMeta(u)); err != nil {
		return meta.User{}, err
	}
	return u, nil
}

// decodeAclPayload decodes and checks a KindAclPut payload.
func decodeAclPayload(p []byte) (meta.Acl, error) {
	if err := staterec.CheckAuthPayload(staterec.KindAclPut, p); err != nil {
		return meta.Acl{}, err
	}
	var a meta.Acl
	if err := json.Unmarshal(p, &a); err != nil {
		return meta.Acl{}, fmt.Errorf("ACL: %w", err)
	}
	acl, err := aclFromMeta(a)
	if err != nil {
		return meta.Acl{}, err
	}
	if _, err := subjectUser(acl.Subject); err != nil {
		return meta.Acl{}, err
	}
	if err := checkPolicies(acl.Policies); err != nil {
		return meta.Acl{}, err
	}
	return a, nil
}

// registerAuthKinds registers the users' and ACLs' kinds (initState) and
// builds the first directory from the tables.
func (b *Broker) registerAuthKinds() {
	s, a := &b.state, &b.auth
	b.rebuildAuthDir()
	changed := func() {
		if !s.inSnap { // a snapshot's records are many: rebuilt once at its end
			b.rebuildAuthDir()
		}
	}
	b.registerStateKind(staterec.KindUserPut, stateKind{
		apply: func(p []byte) error {
			u, err := decodeUserPayload(p)
			if err != nil {
				return err
			}
			if s.inSnap {
				a.userSeen[u.Name] = true
			}
			if cur, ok := b.meta.User(u.Name); ok && cur == u {
				return nil
			}
			if err := b.meta.PutUser(u); err != nil {
				return err
			}
			changed()
			return nil
		},
		snapshot: func(emit func([]byte)) {
			for _, u := range b.meta.Users() {
				emit(userPayload(u))
			}
		},
		reset: func() error { a.userSeen = make(map[string]bool); return nil },
		end: func() error {
			for _, u := range b.meta.Users() {
				if !a.userSeen[u.Name] {
					if _, err := b.meta.RemoveUser(u.Name); err != nil {
						return err
					}
				}
			}
			b.rebuildAuthDir()
			return nil
		},
	})
	b.registerStateKind(staterec.KindUserDelete, stateKind{apply: func(p []byte) error {
		name, err := staterec.DecodeName(p)
		if err != nil {
			return err
		}
		existed, err := b.meta.RemoveUser(name)
		if err == nil && existed {
			changed()
		}
		return err
	}})
	b.registerStateKind(staterec.KindAclPut, stateKind{
		apply: func(p []byte) error {
			acl, err := decodeAclPayload(p)
			if err != nil {
				return err
			}
			if s.inSnap {
				a.aclSeen[acl.Subject] = true
			}
			if cur, ok := b.meta.Acl(acl.Subject); ok && sameJSON(cur, acl) {
				return nil
			}
			if err := b.meta.PutAcl(acl); err != nil {
				return err
			}
			changed()
			return nil
		},
		snapshot: func(emit func([]byte)) {
			for _, acl := range b.meta.Acls() {
				emit(aclPayload(acl))
			}
		},
		reset: func() error { a.aclSeen = make(map[string]bool); return nil },
		end: func() error {
			for _, acl := range b.meta.Acls() {
				if !a.aclSeen[acl.Subject] {
					if _, err := b.meta.RemoveAcl(acl.Subject); err != nil {
						return err
					}
				}
			}
			b.rebuildAuthDir()
			return nil
		},
	})
	b.registerStateKind(staterec.KindAclDelete, stateKind{apply: func(p []byte) error {
		subject, err := staterec.DecodeName(p)
		if err != nil {
			return err
		}
		existed, err := b.meta.RemoveAcl(subject)
		if err == nil && existed {
			changed()
		}
		return err
	}})
}
