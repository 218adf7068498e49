package meta

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func authAcl(subject string, actions ...string) Acl {
	return Acl{Subject: subject, Policies: []AclPolicy{{Type: "Custom", Entries: []AclEntry{
		{Resource: "Topic:t", Actions: actions, SourceIPs: []string{"127.0.0.1"}, Decision: "Allow"},
	}}}}
}

// TestUsersAndAclsSurviveReopen: both tables are persisted (through the
// change log, then folded at Close) and come back as they were.
func TestUsersAndAclsSurviveReopen(t *testing.T) {
	mem := vfs.NewMem()
	s := openT(t, mem, clock.NewManual(epoch))
	must(t, s.PutUser(User{Name: "root", Secret: "s3cret", Type: "Super", Status: "enable"}))
	must(t, s.PutUser(User{Name: "bob", Secret: "b", Type: "Normal", Status: "enable"}))
	must(t, s.PutAcl(authAcl("User:bob", "Pub")))
	must(t, s.PutAcl(authAcl("User:root", "Sub")))
	if _, err := s.RemoveAcl("User:root"); err != nil {
		t.Fatal(err)
	}
	users, acls := s.Users(), s.Acls()
	// Before Close, the changes are in the logs: a crash keeps them.
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	if !reflect.DeepEqual(c.Users(), users) || !reflect.DeepEqual(c.Acls(), acls) {
		t.Fatalf("after a crash: users %+v acls %+v, want %+v %+v", c.Users(), c.Acls(), users, acls)
	}
	must(t, c.Close())
	must(t, s.Close())
	r := openT(t, mem, clock.NewManual(epoch))
	defer r.Close()
	if !reflect.DeepEqual(r.Users(), users) || !reflect.DeepEqual(r.Acls(), acls) {
		t.Fatalf("after reopen: users %+v acls %+v, want %+v %+v", r.Users(), r.Acls(), users, acls)
	}
	data, ok, err := vfs.ReadFile(mem, path.Join(testDir, usersFileName))
	if err != nil || !ok {
		t.Fatalf("users.json: %v %v", ok, err)
	}
	for _, want := range []string{`"userTable"`, `"username":"root"`, `"password":"s3cret"`, `"userType":"Super"`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("users.json lacks %s: %s", want, data)
		}
	}
	if _, err := r.RemoveUser("bob"); err != nil {
		t.Fatal(err)
	}
	if err := r.PutUser(User{}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("empty name: %v", err)
	}
}

// TestUserFilesArePrivate: on the OS, users.json, acls.json and their logs
// are mode 0600 (they hold secrets), and Open narrows a wider mode.
func TestUserFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(vfs.OS, dir, Options{Clock: clock.NewManual(epoch), Logger: testLogger(t)})
	must(t, err)
	must(t, s.PutUser(User{Name: "root", Secret: "s3cret", Type: "Super", Status: "enable"}))
	must(t, s.PutAcl(authAcl("User:root", "Pub")))
	check := func(when string) {
		t.Helper()
		for _, n := range []string{usersFileName, usersFileName + logSuffix, aclsFileName, aclsFileName + logSuffix} {
			fi, err := os.Stat(filepath.Join(dir, n))
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if m := fi.Mode().Perm(); m != privateMode {
				t.Fatalf("%s: %s has mode %v, want %v", when, n, m, privateMode)
			}
		}
	}
	check("after the first writes")
	must(t, s.Close())
	check("after Close rewrote the tables")
	must(t, os.Chmod(filepath.Join(dir, usersFileName), 0o644))
	s, err = Open(vfs.OS, dir, Options{Clock: clock.NewManual(epoch), Logger: testLogger(t)})
	must(t, err)
	defer s.Close()
	check("after Open of a widened file")
	if u, ok := s.User("root"); !ok || u.Secret != "s3cret" {
		t.Fatalf("root after reopen: %+v %v", u, ok)
	}
}

// TestCorruptUsersFileFailsOpen: a users.json that does not parse stops
// Open (the broker must not start with no users, i.e. open to anyone who
// can create the first).
func TestCorruptUsersFileFailsOpen(t *testing.T) {
	mem := vfs.NewMem()
	must(t, vfs.MkdirAllDurable(mem, testDir))
	must(t, vfs.WriteFileAtomic(mem, testDir, usersFileName, []byte(`{"dataVersion":{"counter":1},"topicConfigTable":{}}`)))
	_, err := Open(mem, testDir, Options{Clock: clock.NewManual(epoch)})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with users.json holding topics: %v, want ErrCorrupt", err)
	}
}

// TestAuthTablesCrashAtEveryOperation crashes a run of user and ACL
// changes at each file operation in turn (and fails each in turn): the
// crashed copy holds the state after a change no earlier than the last
// acknowledged one, never a broken file.
func TestAuthTablesCrashAtEveryOperation(t *testing.T) {
	for _, compactBytes := range []int64{1, DefaultLogCompactBytes} {
		total := authCrashRun(t, compactBytes, 0, 0, nil)
		if total < 30 {
			t.Fatalf("the run made only %d file operations", total)
		}
		for at := 1; at <= total; at++ {
			authCrashRun(t, compactBytes, at, 0, rand.New(rand.NewSource(int64(at))))
			authCrashRun(t, compactBytes, 0, at, rand.New(rand.NewSource(int64(at))))
		}
	}
}

func authCrashRun(t *testing.T, compactBytes int64, crashAt, failAt int, r *rand.Rand) int {
	t.Helper()
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	opts := Options{LogCompactBytes: compactBytes, Logger: slog.New(slog.DiscardHandler)}
	s := openOpts(t, h, opts)
	type state struct {
		Users []User
		Acls  []Acl
	}
	stateOf := func(s *Store) state { return state{s.Users(), s.Acls()} }
	l := newCrashLedger(mem, r, crashAt, failAt, func() state { return stateOf(s) })
	h.setHook(l.op)
	do := l.do
	for i := range 24 {
		name := fmt.Sprintf("u%d", i%4)
		switch i % 4 {
		case 0:
			do(s.PutUser(User{Name: name, Secret: fmt.Sprint("s", i), Type: "Normal", Status: "enable"}))
		case 1:
			do(s.PutAcl(authAcl("User:"+name, "Pub", fmt.Sprint("A", i))))
		case 2:
			_, err := s.RemoveAcl(fmt.Sprintf("User:u%d", (i+1)%4))
			do(err)
		case 3:
			_, err := s.RemoveUser(fmt.Sprintf("u%d", (i+2)%4))
			do(err)
		}
	}
	l.end(t, func() error {
		err := s.Close()
		h.setHook(nil)
		return err
	})
	crashed, allowed := l.crashed, l.allowed
	what := fmt.Sprintf("LogCompactBytes %d, crash at %d, fail at %d", compactBytes, crashAt, failAt)
	c, err := Open(crashed, testDir, opts)
	if err != nil {
		t.Fatalf("%s: crashed copy does not open: %v", what, err)
	}
	defer c.Close()
	got := stateOf(c)
	// The two tables are written independently: each must hold one of the
	// allowed states of its own.
	okUsers := slices.ContainsFunc(allowed, func(a state) bool { return reflect.DeepEqual(a.Users, got.Users) })
	okAcls := slices.ContainsFunc(allowed, func(a state) bool { return reflect.DeepEqual(a.Acls, got.Acls) })
	if !okUsers || !okAcls {
		t.Fatalf("%s: crashed copy holds %+v\nwant one of %+v", what, got, allowed)
	}
	return l.ops
}
