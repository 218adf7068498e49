package meta

// The tables of the broker's access control (RocketMQ ACL 2.0): users and
// their ACLs. They are metadata like topics and groups and are kept the
// same way (a JSON table file plus a change log, see the package doc):
//
//	users.json  {"dataVersion":{...},"userTable":{"<name>":{"username":"<name>","password":"<secret>",
//	             "userType":"Super","userStatus":"enable"},...}}
//	acls.json   {"dataVersion":{...},"aclTable":{"User:<name>":{"subject":"User:<name>","policies":[
//	             {"policyType":"Custom","entries":[{"resource":"Topic:orders","actions":["Pub"],
//	             "sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]},...}}
//
// Secrets are stored as given (the HMAC signatures need them), so both
// files and their change logs are created with mode 0600 on the operating
// system's file system, and opening the store narrows the mode of existing
// ones. The store keeps the values as strings: what they mean (resource
// syntax, actions, CIDRs) is the broker's business, which checks them
// before storing.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"

	"github.com/petrelmq/petrel/internal/vfs"
)

// File names of the access-control tables.
const (
	usersFileName = "users.json"
	aclsFileName  = "acls.json"
)

// privateMode is the mode of the files that hold secrets.
const privateMode fs.FileMode = 0o600

// User is an account, as RocketMQ's User: Type "Super" or "Normal",
// Status "enable" or "disable".
type User struct {
	Name   string `json:"username"`
	Secret string `json:"password"`
	Type   string `json:"userType"`
	Status string `json:"userStatus"`
}

// Acl is a subject's ("User:<name>") policies, as RocketMQ's Acl.
type Acl struct {
	Subject  string      `json:"subject"`
	Policies []AclPolicy `json:"policies"`
}

// AclPolicy is a list of entries of one type ("Custom" or "Default").
type AclPolicy struct {
	Type    string     `json:"policyType"`
	Entries []AclEntry `json:"entries"`
}

// AclEntry allows or denies Actions on Resource ("Topic:orders",
// "Group:g-*", "*", ...) from SourceIPs (addresses or CIDRs; none: from
// anywhere). Decision is "Allow" or "Deny".
type AclEntry struct {
	Resource  string   `json:"resource"`
	Actions   []string `json:"actions"`
	SourceIPs []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision"`
}

func (u User) key() string      { return u.Name }
func (u User) own() User        { return u }
func (u User) same(v User) bool { return u == v }

func (a Acl) key() string { return a.Subject }

// own returns a deep copy; empty lists become nil so a value compares
// equal after a reload.
func (a Acl) own() Acl {
	if len(a.Policies) == 0 {
		a.Policies = nil
		return a
	}
	ps := make([]AclPolicy, len(a.Policies))
	for i, p := range a.Policies {
		ps[i] = AclPolicy{Type: p.Type}
		if len(p.Entries) > 0 {
			ps[i].Entries = make([]AclEntry, len(p.Entries))
			for j, e := range p.Entries {
				e.Actions = cloneStrs(e.Actions)
				e.SourceIPs = cloneStrs(e.SourceIPs)
				ps[i].Entries[j] = e
			}
		}
	}
	a.Policies = ps
	return a
}

func cloneStrs(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (a Acl) same(b Acl) bool {
	return a.Subject == b.Subject && slices.EqualFunc(a.Policies, b.Policies, func(p, q AclPolicy) bool {
		return p.Type == q.Type && slices.EqualFunc(p.Entries, q.Entries, func(e, f AclEntry) bool {
			return e.Resource == f.Resource && e.Decision == f.Decision &&
				slices.Equal(e.Actions, f.Actions) && slices.Equal(e.SourceIPs, f.SourceIPs)
		})
	})
}

// restrictMode gives p mode 0600 on the operating system's file system
// (a MemFS has no modes). It runs right after a private file is created,
// before anything is written to it.
func restrictMode(fsys vfs.FS, p string) error {
	if !vfs.IsOS(fsys) {
		return nil
	}
	if err := os.Chmod(p, privateMode); err != nil {
		return fmt.Errorf("meta: restrict the mode of %s: %w", p, err)
	}
	return nil
}

// restrictExisting narrows the mode of a private table's files that exist
// (written by an older version, or restored from a backup).
func restrictExisting(fsys vfs.FS, dir, name string) error {
	for _, n := range []string{name, name + logSuffix} {
		p := path.Join(dir, n)
		if _, err := fsys.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := restrictMode(fsys, p); err != nil {
			return err
		}
	}
	return nil
}

// writePrivateAtomic is vfs.WriteFileAtomic for a file that holds secrets:
// the temporary file gets mode 0600 before the data goes in, and the
// rename keeps it.
func writePrivateAtomic(fsys vfs.FS, dir, name string, data []byte) error {
	return vfs.WriteFileAtomicPrepared(fsys, dir, name, data, func(tmp string) error { return restrictMode(fsys, tmp) })
}

// User returns a user; false when there is none. Safe for concurrent use;
// never waits for I/O.
func (s *Store) User(name string) (User, bool) { return s.users.get(name) }

// Users returns every user sorted by name, in a new slice.
func (s *Store) Users() []User {
	us, _ := s.users.all()
	return us
}

// PutUser adds or replaces the user u.Name and returns once the change is
// durable (users.json or its log, mode 0600). Storing the stored value is
// no change. Errors: ErrInvalidName for an empty name, ErrClosed after
// Close, or the write's error (the change stays in memory, see PutTopic).
func (s *Store) PutUser(u User) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if u.Name == "" {
		return fmt.Errorf("%w: empty user name", ErrInvalidName)
	}
	seq, _ := s.users.put(s.clock.Now(), []User{u})
	return s.users.w.sync(context.Background(), seq)
}

// RemoveUser removes a user durably and reports whether it was there. It
// does not touch the user's ACL. Errors as PutUser.
func (s *Store) RemoveUser(name string) (existed bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	seq, existed := s.users.del(s.clock.Now(), name)
	return existed, s.users.w.sync(context.Background(), seq)
}

// Acl returns a subject's ACL; false when there is none. Its slices are
// the store's: do not modify them.
func (s *Store) Acl(subject string) (Acl, bool) { return s.acls.get(subject) }

// Acls returns every ACL sorted by subject, in a new slice (whose values'
// slices must not be modified).
func (s *Store) Acls() []Acl {
	as, _ := s.acls.all()
	return as
}

// PutAcl adds or replaces the ACL of a.Subject and returns once the
// change is durable. Errors as PutUser (ErrInvalidName for an empty
// subject).
func (s *Store) PutAcl(a Acl) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if a.Subject == "" {
		return fmt.Errorf("%w: empty ACL subject", ErrInvalidName)
	}
	seq, _ := s.acls.put(s.clock.Now(), []Acl{a})
	return s.acls.w.sync(context.Background(), seq)
}

// RemoveAcl removes a subject's ACL durably and reports whether it was
// there. Errors as PutUser.
func (s *Store) RemoveAcl(subject string) (existed bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	seq, existed := s.acls.del(s.clock.Now(), subject)
	return existed, s.acls.w.sync(context.Background(), seq)
}
