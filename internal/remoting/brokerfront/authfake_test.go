package brokerfront

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/broker"
)

// fakeAuth is an in-memory authAdmin with the contract's semantics
// (AUTH-API.md "Broker API"): wrapped auth errors, update keeps empty
// fields, delete user drops its ACL, create/update ACL merge entries by
// (policy type, resource). slave makes every write the broker's
// not-master refusal; fail makes every write fail with that error.
type fakeAuth struct {
	mu     sync.Mutex
	users  map[string]auth.User
	acls   map[string]auth.Acl
	slave  bool
	fail   error
	writes int // writes that reached the store
}

func newFakeAuth(users ...auth.User) *fakeAuth {
	s := &fakeAuth{users: map[string]auth.User{}, acls: map[string]auth.Acl{}}
	for _, u := range users {
		s.users[u.Name] = u
	}
	return s
}

// write counts a write and returns the refusal every write gets, if any.
func (s *fakeAuth) write() error {
	s.writes++
	if s.slave {
		return &broker.Error{Kind: broker.KindSystemError, Err: broker.ErrNotMaster,
			Msg: "broker b is a slave (broker id 1) and does not take user and ACL changes; send it to the master of b"}
	}
	return s.fail
}

func (s *fakeAuth) CreateUser(_ context.Context, u auth.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return err
	}
	if _, ok := s.users[u.Name]; ok {
		return fmt.Errorf("create user %q: %w", u.Name, auth.ErrUserExists)
	}
	s.users[u.Name] = u
	return nil
}

func (s *fakeAuth) UpdateUser(_ context.Context, u auth.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return err
	}
	old, ok := s.users[u.Name]
	if !ok {
		return fmt.Errorf("update user %q: %w", u.Name, auth.ErrUserNotFound)
	}
	old.Secret = cmp.Or(u.Secret, old.Secret)
	old.Type = cmp.Or(u.Type, old.Type)
	old.Status = cmp.Or(u.Status, old.Status)
	s.users[u.Name] = old
	return nil
}

func (s *fakeAuth) DeleteUser(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return err
	}
	if _, ok := s.users[name]; !ok {
		return fmt.Errorf("delete user %q: %w", name, auth.ErrUserNotFound)
	}
	delete(s.users, name)
	delete(s.acls, "User:"+name)
	return nil
}

func (s *fakeAuth) GetUser(name string) (auth.User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[name]
	return u, ok
}

func (s *fakeAuth) ListUsers(filter string) []auth.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.User
	for _, u := range s.users {
		if strings.Contains(u.Name, filter) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b auth.User) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *fakeAuth) CreateAcl(_ context.Context, a auth.Acl) error { return s.mergeACL(a) }
func (s *fakeAuth) UpdateAcl(_ context.Context, a auth.Acl) error { return s.mergeACL(a) }

func (s *fakeAuth) mergeACL(a auth.Acl) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return err
	}
	if _, ok := s.users[strings.TrimPrefix(a.Subject, "User:")]; !ok {
		return fmt.Errorf("acl of %s: %w", a.Subject, auth.ErrUserNotFound)
	}
	old := cloneACL(s.acls[a.Subject])
	old.Subject = a.Subject
	for _, p := range a.Policies {
		i := slices.IndexFunc(old.Policies, func(o auth.Policy) bool { return o.Type == p.Type })
		if i < 0 {
			old.Policies = append(old.Policies, auth.Policy{Type: p.Type})
			i = len(old.Policies) - 1
		}
		for _, e := range p.Entries {
			entries := old.Policies[i].Entries
			j := slices.IndexFunc(entries, func(o auth.PolicyEntry) bool { return o.Resource == e.Resource })
			if j < 0 {
				old.Policies[i].Entries = append(entries, e)
			} else {
				entries[j] = e
			}
		}
	}
	s.acls[a.Subject] = old
	return nil
}

func (s *fakeAuth) DeleteAcl(_ context.Context, subject string, pt auth.PolicyType, resource string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(); err != nil {
		return err
	}
	old, ok := s.acls[subject]
	if !ok {
		return fmt.Errorf("delete acl of %s: %w", subject, auth.ErrAclNotFound)
	}
	old = cloneACL(old)
	if resource == "" {
		delete(s.acls, subject)
		return nil
	}
	found := false
	for i, p := range old.Policies {
		if p.Type != pt {
			continue
		}
		old.Policies[i].Entries = slices.DeleteFunc(p.Entries, func(e auth.PolicyEntry) bool {
			match := e.Resource.String() == resource
			found = found || match
			return match
		})
	}
	if !found {
		return fmt.Errorf("delete %s from the acl of %s: %w", resource, subject, auth.ErrAclNotFound)
	}
	s.acls[subject] = old
	return nil
}

func (s *fakeAuth) GetAcl(subject string) (auth.Acl, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.acls[subject]
	return cloneACL(a), ok
}

func (s *fakeAuth) ListAcls(subjectFilter, resourceFilter string) []auth.Acl {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.Acl
	for _, a := range s.acls {
		if !strings.Contains(a.Subject, subjectFilter) {
			continue
		}
		hit := resourceFilter == ""
		for _, p := range a.Policies {
			for _, e := range p.Entries {
				hit = hit || strings.Contains(e.Resource.String(), resourceFilter)
			}
		}
		if hit {
			out = append(out, cloneACL(a))
		}
	}
	slices.SortFunc(out, func(a, b auth.Acl) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}

// setFail makes every later write fail with err.
func (s *fakeAuth) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *fakeAuth) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// cloneACL copies a's slices: what the store hands out or keeps shares
// nothing with its callers.
func cloneACL(a auth.Acl) auth.Acl {
	a.Policies = slices.Clone(a.Policies)
	for i := range a.Policies {
		p := &a.Policies[i]
		p.Entries = slices.Clone(p.Entries)
		for j := range p.Entries {
			p.Entries[j].Actions = slices.Clone(p.Entries[j].Actions)
			p.Entries[j].SourceIPs = slices.Clone(p.Entries[j].SourceIPs)
		}
	}
	return a
}
