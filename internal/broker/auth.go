package broker

// User and ACL management (RocketMQ ACL 2.0's AuthenticationMetadataManager
// and AuthorizationMetadataManager, requests 3001-3010 in the fronts).
//
// Semantics follow RocketMQ: a user is created Normal and enabled unless
// said otherwise and needs a name and a secret; an update changes only the
// fields given; deleting a user deletes its ACL. Creating and updating an
// ACL do the same thing: the subject's user must exist; each policy given
// merges into the subject's policy of its type, each entry replacing the
// entry of the same resource or being added. Deleting names a policy type
// (default Custom) and a resource, or no resource for the whole ACL; a
// policy left empty goes, and an ACL left without policies goes.
//
// Durability: a write returns once the meta store's file holding it is
// synced. In a replicated group (Config.StateReplication) the change also
// goes out on the state stream, in the order of the writes, and the write
// waits until its record is stored in the master's log and, under sync
// replication, covered by the commit point (so a failover cannot lose an
// acknowledged change). If the slaves do not confirm within
// ReplicationTimeout, the write answers an error saying the change is
// durable on the master but not yet on its slaves. A slave refuses every
// write with the slave refusal of admin writes (KindSystemError, cause
// ErrNotMaster).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Limits of users and ACLs (the state stream's payloads stay within
// staterec's bounds).
const (
	maxUserName      = auth.MaxUserNameBytes
	maxUserSecret    = auth.MaxSecretBytes
	maxAclEntries    = auth.MaxPolicyEntries // entries of one subject's ACL, all policies
	maxEntryActions  = auth.MaxPolicyActions
	maxEntrySources  = auth.MaxSourceIPs
	maxResourceBytes = staterec.MaxName
)

// subjectPrefix is the subject type of users, the only one RocketMQ has.
const subjectPrefix = "User:"

func invalid(format string, args ...any) *Error {
	return errorf(KindMessageIllegal, auth.ErrInvalid, format, args...)
}

// checkUser checks a user as stored: a name, a secret, a known type and
// status.
func checkUser(u auth.User) error {
	switch {
	case u.Name == "":
		return invalid("the user name is empty; name the user")
	case len(u.Name) > maxUserName:
		return invalid("the user name is %d bytes, longer than the limit of %d", len(u.Name), maxUserName)
	case strings.ContainsAny(u.Name, ":\n\r\t "):
		return invalid("user name %q contains a colon or white space; use letters, digits, '-', '_' or '.'", u.Name)
	case u.Secret == "":
		return invalid("user %q has an empty secret; give it a secret key", u.Name)
	case len(u.Secret) > maxUserSecret:
		return invalid("the secret of user %q is %d bytes, longer than the limit of %d", u.Name, len(u.Secret), maxUserSecret)
	case u.Type != auth.Super && u.Type != auth.Normal:
		return invalid("user %q: type %q must be Super or Normal", u.Name, u.Type)
	case u.Status != auth.Enabled && u.Status != auth.Disabled:
		return invalid("user %q: status %q must be enable or disable", u.Name, u.Status)
	}
	return nil
}

// subjectUser returns the user name of subject "User:NAME".
func subjectUser(subject string) (string, error) {
	name, ok := strings.CutPrefix(subject, subjectPrefix)
	if !ok || name == "" {
		return "", invalid("subject %q is not User:NAME; name the user the ACL is for", subject)
	}
	return name, nil
}

func knownAction(a auth.Action) bool {
	switch a {
	case auth.ActionAll, auth.ActionPub, auth.ActionSub, auth.ActionCreate, auth.ActionUpdate,
		auth.ActionDelete, auth.ActionGet, auth.ActionList:
		return true
	}
	return false
}

// checkEntry is RocketMQ's validation of a policy entry.
func checkEntry(e auth.PolicyEntry) error {
	rs := resourceString(e.Resource)
	if len(rs) > maxResourceBytes {
		return invalid("resource %.40q... is %d bytes, longer than the limit of %d", rs, len(rs), maxResourceBytes)
	}
	if _, err := parseResource(rs); err != nil || !validPattern(e.Resource) {
		return invalid("resource %q is not valid: write *, Cluster, Topic:NAME, Topic:PREFIX*, Topic:* (or the same for Group)", rs)
	}
	if len(e.Actions) == 0 {
		return invalid("the entry for %s has no action; give one or more of Pub, Sub, Create, Update, Delete, Get, List, All", rs)
	}
	if len(e.Actions) > maxEntryActions {
		return invalid("the entry for %s has %d actions, more than the limit of %d", rs, len(e.Actions), maxEntryActions)
	}
	for _, a := range e.Actions {
		if a == auth.ActionAny {
			return invalid("the entry for %s: the action Any is only for requests; use All", rs)
		}
		if !knownAction(a) {
			return invalid("the entry for %s: unknown action %q; use Pub, Sub, Create, Update, Delete, Get, List or All", rs, a)
		}
	}
	if len(e.SourceIPs) > maxEntrySources {
		return invalid("the entry for %s has %d source addresses, more than the limit of %d", rs, len(e.SourceIPs), maxEntrySources)
	}
	for _, p := range e.SourceIPs {
		if !p.IsValid() {
			return invalid("the entry for %s has an invalid source address; give an IP address or a CIDR", rs)
		}
	}
	if e.Decision != auth.Allow && e.Decision != auth.Deny {
		return invalid("the entry for %s: decision %q must be Allow or Deny", rs, e.Decision)
	}
	return nil
}

// validPattern: a resource's pattern agrees with its name (what
// parseResource of its string gives back).
func validPattern(r auth.Resource) bool {
	switch r.Type {
	case auth.ResourceAny:
		return r.Name == ""
	case auth.ResourceCluster, auth.ResourceTopic, auth.ResourceGroup:
	default:
		return false
	}
	switch r.Pattern {
	case auth.AnyName:
		return r.Name == ""
	case auth.Prefixed:
		return !strings.HasSuffix(r.Name, "*")
	case auth.Literal:
		return (r.Name != "" || r.Type == auth.ResourceCluster) && !strings.HasSuffix(r.Name, "*")
	}
	return false
}

// checkPolicies checks a stored ACL's policies: known types, valid
// entries, within the limits.
func checkPolicies(ps []auth.Policy) error {
	n := 0
	for _, p := range ps {
		if p.Type != auth.Custom && p.Type != auth.Default {
			return invalid("policy type %q must be Custom or Default", p.Type)
		}
		if len(p.Entries) == 0 {
			return invalid("a %s policy has no entries; give at least one", p.Type)
		}
		for _, e := range p.Entries {
			if err := checkEntry(e); err != nil {
				return err
			}
		}
		n += len(p.Entries)
	}
	if n > maxAclEntries {
		return invalid("the ACL would hold %d entries, more than the limit of %d", n, maxAclEntries)
	}
	return nil
}

// --- the write path -----------------------------------------------------

// authChange is what a management write stored: the records that carry it
// to the slaves, in order.
type authChange []staterec.Record

func (c *authChange) userPut(u meta.User) {
	*c = append(*c, staterec.Record{Kind: staterec.KindUserPut, Payload: userPayload(u)})
}

func (c *authChange) userDelete(name string) {
	*c = append(*c, staterec.Record{Kind: staterec.KindUserDelete, Payload: staterec.AppendName(nil, name)})
}

func (c *authChange) aclPut(a meta.Acl) {
	*c = append(*c, staterec.Record{Kind: staterec.KindAclPut, Payload: aclPayload(a)})
}

func (c *authChange) aclDelete(subject string) {
	*c = append(*c, staterec.Record{Kind: staterec.KindAclDelete, Payload: staterec.AppendName(nil, subject)})
}

// authWrite runs fn, which checks and stores a change durably in the meta
// tables, as one step of the management writes; then it waits for the
// change to be replicated (see the file comment).
func (b *Broker) authWrite(ctx context.Context, fn func(c *authChange) error) error {
	a := &b.auth
	a.mu.Lock()
	if err := b.refuseOnSlave(KindSystemError, "user and ACL changes"); err != nil {
		a.mu.Unlock()
		return err
	}
	if b.closed.Load() {
		a.mu.Unlock()
		return b.errClosed()
	}
	var c authChange
	err := fn(&c)
	if err != nil || len(c) > 0 {
		// Also after a failed write: the meta store keeps a change whose
		// write failed in memory (and persists it with the next write), and
		// the directory must answer what the tables hold.
		b.rebuildAuthDir()
	}
	var items []stateItem
	if len(c) > 0 && b.stateOn() && b.Role() == RoleMaster {
		for _, rec := range c {
			it := stateItem{rec: rec, done: make(chan error, 1)}
			if b.stateTooLarge(rec.Kind, rec.Payload) || !b.enqueueState(it) {
				items = nil
				err = errors.Join(err, errorf(KindSystemError, nil, "the change is stored on broker %s but could not be queued for its slaves; retry it", b.cfg.BrokerName))
				break
			}
			items = append(items, it)
		}
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	return b.awaitAuthReplicated(ctx, items)
}

// awaitAuthReplicated waits until the items are stored in the state topic
// and, under sync replication, covered by the commit point.
func (b *Broker) awaitAuthReplicated(ctx context.Context, items []stateItem) error {
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		select {
		case err := <-it.done:
			if err != nil {
				return errorf(KindSystemError, err, "the change is durable on broker %s but was not written to the stream its slaves replicate; retry it", b.cfg.BrokerName)
			}
		case <-ctx.Done():
			return errorf(KindSystemError, ctx.Err(), "the change is durable on broker %s but the request ended before its slaves were sent it; check it with a get and retry if needed", b.cfg.BrokerName)
		}
	}
	if !b.syncReplication() {
		return nil
	}
	// The writer stored the items' messages; written is at or past their end.
	end := b.state.written.Load()
	ch := make(chan error, 1)
	b.repl.wait(end, func(err error) { ch <- err })
	var err error
	select {
	case err = <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	return errorf(KindSystemError, err, "the change is durable on broker %s but not yet on its slaves (they did not confirm it within %v); it reaches them when they catch up; retry if it must survive a failover now",
		b.cfg.BrokerName, b.cfg.ReplicationTimeout)
}

func storeFailed(err error, what string) *Error {
	return errorf(KindSystemError, err, "storing %s failed; retry", what)
}

// --- users --------------------------------------------------------------

// CreateUser creates a user; an empty Type is Normal, an empty Status
// enable. Errors (wrapped in *Error): auth.ErrUserExists, auth.ErrInvalid
// (empty name or secret, unknown type or status, over a limit), the slave
// refusal, or a storage or replication failure (see the file comment).
func (b *Broker) CreateUser(ctx context.Context, u auth.User) error {
	if u.Type == "" {
		u.Type = auth.Normal
	}
	if u.Status == "" {
		u.Status = auth.Enabled
	}
	if err := checkUser(u); err != nil {
		return err
	}
	return b.authWrite(ctx, func(c *authChange) error {
		if _, ok := b.meta.User(u.Name); ok {
			return errorf(KindSystemError, auth.ErrUserExists, "user %q exists already; update it instead", u.Name)
		}
		mu := userToMeta(u)
		if err := b.meta.PutUser(mu); err != nil {
			return storeFailed(err, fmt.Sprintf("user %q", u.Name))
		}
		c.userPut(mu)
		b.log.Info("user created", "user", u.Name, "type", string(u.Type), "status", string(u.Status))
		return nil
	})
}

// UpdateUser changes a user's secret, type or status: the fields of u left
// empty keep their values. Errors as CreateUser, auth.ErrUserNotFound when
// there is no such user.
func (b *Broker) UpdateUser(ctx context.Context, u auth.User) error {
	if u.Name == "" {
		return invalid("the user name is empty; name the user")
	}
	return b.authWrite(ctx, func(c *authChange) error {
		old, ok := b.meta.User(u.Name)
		if !ok {
			return errorf(KindSystemError, auth.ErrUserNotFound, "user %q does not exist; create it first", u.Name)
		}
		cur := userFromMeta(old)
		if u.Secret != "" {
			cur.Secret = u.Secret
		}
		if u.Type != "" {
			cur.Type = u.Type
		}
		if u.Status != "" {
			cur.Status = u.Status
		}
		if err := checkUser(cur); err != nil {
			return err
		}
		mu := userToMeta(cur)
		if mu == old {
			return nil
		}
		if err := b.meta.PutUser(mu); err != nil {
			return storeFailed(err, fmt.Sprintf("user %q", u.Name))
		}
		c.userPut(mu)
		b.log.Info("user updated", "user", u.Name, "type", string(cur.Type), "status", string(cur.Status))
		return nil
	})
}

// DeleteUser deletes a user and its ACL (the ACL first: a crash in between
// leaves a user without policies, never policies waiting for a new user of
// the name). Errors: auth.ErrUserNotFound, the slave refusal, storage or
// replication failures.
func (b *Broker) DeleteUser(ctx context.Context, name string) error {
	if name == "" {
		return invalid("the user name is empty; name the user")
	}
	return b.authWrite(ctx, func(c *authChange) error {
		if _, ok := b.meta.User(name); !ok {
			return errorf(KindSystemError, auth.ErrUserNotFound, "user %q does not exist", name)
		}
		subject := subjectPrefix + name
		existed, err := b.meta.RemoveAcl(subject)
		if err != nil {
			return storeFailed(err, fmt.Sprintf("the deletion of the ACL of user %q", name))
		}
		if existed {
			c.aclDelete(subject)
		}
		if _, err := b.meta.RemoveUser(name); err != nil {
			return storeFailed(err, fmt.Sprintf("the deletion of user %q", name))
		}
		c.userDelete(name)
		b.log.Info("user deleted", "user", name, "acl_deleted", existed)
		return nil
	})
}

// GetUser returns a user (with its secret: the fronts decide who sees it).
func (b *Broker) GetUser(name string) (auth.User, bool) {
	u, ok := b.auth.dir.Load().users[name]
	return u, ok
}

// ListUsers returns the users whose name contains filter ("" all), sorted
// by name.
func (b *Broker) ListUsers(filter string) []auth.User {
	var out []auth.User
	for _, u := range b.auth.dir.Load().users {
		if strings.Contains(u.Name, filter) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(x, y auth.User) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// EnsureInitUser creates the user name as Super, enabled, on a master that
// has no user at all, and reports whether it did. It is idempotent: with
// any user present (the init user from an earlier start, or users an
// operator made) it does nothing. On a slave it does nothing and returns
// false, nil (the master's users arrive by replication). Errors as
// CreateUser.
func (b *Broker) EnsureInitUser(ctx context.Context, name, secret string) (bool, error) {
	if b.Role() == RoleSlave {
		return false, nil
	}
	u := auth.User{Name: name, Secret: secret, Type: auth.Super, Status: auth.Enabled}
	if err := checkUser(u); err != nil {
		return false, err
	}
	created := false
	err := b.authWrite(ctx, func(c *authChange) error {
		if len(b.meta.Users()) > 0 {
			return nil
		}
		mu := userToMeta(u)
		if err := b.meta.PutUser(mu); err != nil {
			return storeFailed(err, fmt.Sprintf("the initial user %q", name))
		}
		c.userPut(mu)
		created = true
		b.log.Info("initial super user created", "user", name)
		return nil
	})
	if errors.Is(err, ErrNotMaster) {
		return false, nil // demoted meanwhile
	}
	return created, err
}

// --- ACLs ---------------------------------------------------------------

// normalizePolicies defaults the policy type to Custom and merges policies
// of one type and entries of one resource given twice (the later wins),
// as RocketMQ's merge would.
func normalizePolicies(ps []auth.Policy) []auth.Policy {
	var out []auth.Policy
	for _, p := range ps {
		if p.Type == "" {
			p.Type = auth.Custom
		}
		out = mergePolicy(out, p)
	}
	return out
}

// mergePolicy merges p into ps (RocketMQ's Acl.updatePolicy): into the
// policy of its type, each entry replacing the one of its resource or
// appended; a policy of a new type is appended.
func mergePolicy(ps []auth.Policy, p auth.Policy) []auth.Policy {
	i := slices.IndexFunc(ps, func(q auth.Policy) bool { return q.Type == p.Type })
	if i < 0 {
		ps = append(ps, auth.Policy{Type: p.Type})
		i = len(ps) - 1
	}
	for _, e := range p.Entries {
		j := slices.IndexFunc(ps[i].Entries, func(f auth.PolicyEntry) bool { return f.Resource == e.Resource })
		if j < 0 {
			ps[i].Entries = append(ps[i].Entries, e)
		} else {
			ps[i].Entries[j] = e
		}
	}
	return ps
}

// CreateAcl adds a's policies to the subject's ACL, creating it if it has
// none: RocketMQ's createAcl, which merges into an existing ACL (so it never
// answers auth.ErrAclExists). The subject is "User:NAME" of an existing
// user. Errors (wrapped in *Error): auth.ErrInvalid (bad subject, no
// policies, an entry without actions or with Any, an unknown resource,
// action, decision or policy type, over a limit), auth.ErrUserNotFound, the
// slave refusal, storage or replication failures.
func (b *Broker) CreateAcl(ctx context.Context, a auth.Acl) error { return b.putAcl(ctx, a, "created") }

// UpdateAcl is CreateAcl (as in RocketMQ, both merge): the entries given
// replace those of the same policy type and resource, the others are
// added, and an absent ACL is created.
func (b *Broker) UpdateAcl(ctx context.Context, a auth.Acl) error { return b.putAcl(ctx, a, "updated") }

func (b *Broker) putAcl(ctx context.Context, a auth.Acl, verb string) error {
	name, err := subjectUser(a.Subject)
	if err != nil {
		return err
	}
	if len(a.Policies) == 0 {
		return invalid("the ACL for %s has no policies; give at least one", a.Subject)
	}
	for _, p := range a.Policies {
		if len(p.Entries) == 0 {
			return invalid("a policy of the ACL for %s has no entries; give at least one", a.Subject)
		}
	}
	add := normalizePolicies(cloneAcl(a).Policies)
	if err := checkPolicies(add); err != nil {
		return err
	}
	return b.authWrite(ctx, func(c *authChange) error {
		if _, ok := b.meta.User(name); !ok {
			return errorf(KindSystemError, auth.ErrUserNotFound, "user %q does not exist; create the user before its ACL", name)
		}
		var cur []auth.Policy
		if old, ok := b.auth.dir.Load().acls[a.Subject]; ok {
			cur = cloneAcl(old).Policies
		}
		for _, p := range add {
			cur = mergePolicy(cur, p)
		}
		if err := checkPolicies(cur); err != nil {
			return err
		}
		next := aclToMeta(auth.Acl{Subject: a.Subject, Policies: cur})
		if old, ok := b.meta.Acl(a.Subject); ok && sameJSON(old, next) {
			return nil
		}
		if p := aclPayload(next); len(p) > staterec.MaxAclPayload {
			return invalid("the ACL of %s would take %d bytes, more than the limit of %d; split it over fewer, broader entries", a.Subject, len(p), staterec.MaxAclPayload)
		}
		if err := b.meta.PutAcl(next); err != nil {
			return storeFailed(err, fmt.Sprintf("the ACL of %s", a.Subject))
		}
		c.aclPut(next)
		b.log.Info("ACL "+verb, "subject", a.Subject, "entries", entryCount(cur))
		return nil
	})
}

func entryCount(ps []auth.Policy) int {
	n := 0
	for _, p := range ps {
		n += len(p.Entries)
	}
	return n
}

// DeleteAcl deletes, from the subject's policy of type pt ("" is Custom),
// the entry of resource; resource "" deletes the whole ACL. A policy left
// without entries is removed, and an ACL left without policies. Deleting an
// entry the policy does not have changes nothing. Errors:
// auth.ErrAclNotFound when the subject has no ACL, auth.ErrInvalid for a
// bad subject, policy type or resource, the slave refusal, storage or
// replication failures.
func (b *Broker) DeleteAcl(ctx context.Context, subject string, pt auth.PolicyType, resource string) error {
	if _, err := subjectUser(subject); err != nil {
		return err
	}
	if pt == "" {
		pt = auth.Custom
	}
	if pt != auth.Custom && pt != auth.Default {
		return invalid("policy type %q must be Custom or Default", pt)
	}
	var res auth.Resource
	if resource != "" {
		r, err := parseResource(resource)
		if err != nil {
			return invalid("%v", err)
		}
		res = r
	}
	return b.authWrite(ctx, func(c *authChange) error {
		old, ok := b.auth.dir.Load().acls[subject]
		if !ok {
			return errorf(KindSystemError, auth.ErrAclNotFound, "%s has no ACL", subject)
		}
		var cur []auth.Policy
		if resource != "" {
			for _, p := range cloneAcl(old).Policies {
				if p.Type == pt {
					p.Entries = slices.DeleteFunc(p.Entries, func(e auth.PolicyEntry) bool { return e.Resource == res })
					if len(p.Entries) == 0 {
						continue
					}
				}
				cur = append(cur, p)
			}
		}
		if len(cur) == 0 {
			if _, err := b.meta.RemoveAcl(subject); err != nil {
				return storeFailed(err, fmt.Sprintf("the deletion of the ACL of %s", subject))
			}
			c.aclDelete(subject)
			b.log.Info("ACL deleted", "subject", subject)
			return nil
		}
		next := aclToMeta(auth.Acl{Subject: subject, Policies: cur})
		if prev, ok := b.meta.Acl(subject); ok && sameJSON(prev, next) {
			return nil
		}
		if err := b.meta.PutAcl(next); err != nil {
			return storeFailed(err, fmt.Sprintf("the ACL of %s", subject))
		}
		c.aclPut(next)
		b.log.Info("ACL entry deleted", "subject", subject, "policy_type", string(pt), "resource", resource)
		return nil
	})
}

// GetAcl returns a copy of a subject's ACL.
func (b *Broker) GetAcl(subject string) (auth.Acl, bool) {
	a, ok := b.auth.dir.Load().acls[subject]
	if !ok {
		return auth.Acl{}, false
	}
	return cloneAcl(a), true
}

// ListAcls returns copies of the ACLs whose subject contains subjectFilter
// ("" all), sorted by subject, each keeping only the entries whose
// resource (as "Topic:orders", "Group:g-*", "*") contains resourceFilter
// ("" all); policies and ACLs left without entries are not listed.
func (b *Broker) ListAcls(subjectFilter, resourceFilter string) []auth.Acl {
	var out []auth.Acl
	for subject, a := range b.auth.dir.Load().acls {
		if !strings.Contains(subject, subjectFilter) {
			continue
		}
		acl := auth.Acl{Subject: subject}
		for _, p := range cloneAcl(a).Policies {
			p.Entries = slices.DeleteFunc(p.Entries, func(e auth.PolicyEntry) bool {
				return !strings.Contains(resourceString(e.Resource), resourceFilter)
			})
			if len(p.Entries) > 0 {
				acl.Policies = append(acl.Policies, p)
			}
		}
		if len(acl.Policies) > 0 {
			out = append(out, acl)
		}
	}
	slices.SortFunc(out, func(x, y auth.Acl) int { return strings.Compare(x.Subject, y.Subject) })
	return out
}
