package ha

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/petrelmq/petrel/internal/ha/wire"
)

// fakeUsers is the master's Authenticate over a table of users: the
// signature must be the user's HMAC-SHA1 of the content, and the user a
// super user (what the daemon's checker requires).
type fakeUsers struct {
	mu    sync.Mutex
	users map[string]struct {
		secret string
		super  bool
	}
	calls []string // the access keys Authenticate was called with
}

func newFakeUsers() *fakeUsers {
	f := &fakeUsers{users: map[string]struct {
		secret string
		super  bool
	}{}}
	f.users["admin"] = struct {
		secret string
		super  bool
	}{"admin-secret", true}
	f.users["bob"] = struct {
		secret string
		super  bool
	}{"bob-secret", false}
	return f
}

func (f *fakeUsers) authenticate(ak string, content, sig []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, ak)
	u, ok := f.users[ak]
	if ak == "" {
		return fmt.Errorf("authentication failed: no credentials were sent")
	}
	if !ok {
		return fmt.Errorf("authentication failed: user %q is unknown", ak)
	}
	m := hmac.New(sha1.New, []byte(u.secret))
	m.Write(content)
	if !hmac.Equal(m.Sum(nil), sig) {
		return fmt.Errorf("authentication failed: the signature does not match user %q's secret", ak)
	}
	if !u.super {
		return fmt.Errorf("user %q may not replicate this broker's log: only super users may", ak)
	}
	return nil
}

func (f *fakeUsers) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func withAuth(f *fakeUsers) func(*cluster) {
	return func(c *cluster) { c.authn = f.authenticate }
}

// With authentication on, a slave with a super user's credentials
// replicates; its records arrive byte for byte.
func TestAuthenticatedSlaveReplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		users := newFakeUsers()
		c := newCluster(t, syncCfg(1), big, withAuth(users))
		c.creds = Credentials{AccessKey: "admin", SecretKey: "admin-secret"}
		c.addSlave(1, newMemLog(0, true), nil)
		c.await("slave in sync", c.inSync(1))
		for i := range 5 {
			if err := c.syncSend(i, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		c.await("slave caught up", c.caughtUp(1))
		// Two connections: the empty log starts over at the master's log
		// start (OffsetOutOfRange), then copies; each opens with Auth.
		if n := users.callCount(); n != 2 {
			t.Errorf("Authenticate called %d times, want 2 (one per connection)\n%s", n, c.logs.String())
		}
		if !strings.Contains(c.logs.String(), "user=admin") {
			t.Errorf("the master's log does not name the slave's user:\n%s", c.logs.String())
		}
		c.check()
	})
}

// A wrong secret, a normal user and no credentials at all are refused:
// nothing is replicated, the slave says why (naming the user, never the
// secret) and retries with a back-off instead of spinning or stopping.
func TestUnauthenticatedSlaveIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		creds Credentials
		want  string
	}{
		{"wrong_secret", Credentials{AccessKey: "admin", SecretKey: "guess"}, `the signature does not match user "admin"'s secret`},
		{"normal_user", Credentials{AccessKey: "bob", SecretKey: "bob-secret"}, `user "bob" may not replicate this broker's log: only super users may`},
		{"no_credentials", Credentials{}, "this master requires authentication (--auth) and the slave sent no credentials"},
		{"unknown_user", Credentials{AccessKey: "eve", SecretKey: "x"}, `user "eve" is unknown`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				users := newFakeUsers()
				c := newCluster(t, syncCfg(1), big, withAuth(users))
				for i := range 3 {
					c.put(i)
				}
				c.creds = tc.creds
				n := c.addSlave(1, newMemLog(0, true), nil)
				start := time.Now()
				c.await("the slave was refused", func() bool { return strings.Contains(n.s.Status().LastError, tc.want) })
				time.Sleep(10 * time.Second) // fake time: the slave retries meanwhile
				synctest.Wait()
				st := n.s.Status()
				if st.Written != 0 || st.Sessions != 0 || st.Connected || st.Stopped || n.s.Err() != nil {
					t.Fatalf("refused slave: %+v, err %v; want nothing replicated, retrying", st, n.s.Err())
				}
				if !strings.Contains(st.LastError, "ha: the master refused replication: ") ||
					!strings.Contains(st.LastError, "give this broker the cluster's --auth-init-user") {
					t.Errorf("slave's error %q does not say what to do", st.LastError)
				}
				if len(c.tr.InSync()) != 0 {
					t.Errorf("a refused slave is counted in sync: %v", c.tr.InSync())
				}
				// Back-off 100 ms doubling to 1 s: about 14 attempts in
				// 10 s; a spinning slave would make thousands.
				calls := users.callCount()
				elapsed := time.Since(start)
				if calls < 3 || calls > int(elapsed/(500*time.Millisecond))+6 {
					t.Errorf("%d attempts in %v: want a few, backing off", calls, elapsed)
				}
				logs := c.logs.String()
				if strings.Contains(logs, tc.creds.SecretKey) && tc.creds.SecretKey != "" {
					t.Errorf("a secret reached the log:\n%s", logs)
				}
				if !strings.Contains(logs, "slave connection refused: authentication") || !strings.Contains(logs, "level=ERROR msg=\"ha: the master refused replication") {
					t.Errorf("master's warning or slave's error missing:\n%s", logs)
				}
				// Rate-limited: fewer master warnings than refusals.
				if w := strings.Count(logs, "slave connection refused: authentication"); w >= calls && calls > 3 {
					t.Errorf("%d warnings for %d refusals: not rate-limited", w, calls)
				}
			})
		})
	}
}

// A master without authentication accepts a slave that sends
// credentials (mixed configurations interoperate).
func TestAuthOffAcceptsASlaveWithCredentials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big)
		c.creds = Credentials{AccessKey: "admin", SecretKey: "anything"}
		c.addSlave(1, newMemLog(0, true), nil)
		c.await("slave in sync", c.inSync(1))
		for i := range 3 {
			if err := c.syncSend(i, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		c.await("slave caught up", c.caughtUp(1))
		c.check()
	})
}

// Hand-made Auth frames: one dated too far from the master's clock, a
// second Auth, an Auth after the handshake and one of another group are
// refused; a good one is followed by a normal session.
func TestAuthFrameChecks(t *testing.T) {
	good := func() wire.Auth {
		return wire.SignAuth("g", "admin", "admin-secret", time.Now().UnixMilli(), [wire.NonceLen]byte{1})
	}
	fetch := wire.Fetch{Group: "g", ReplicaID: 7, Offset: big, Durable: big, MaxBytes: 30}
	for _, tc := range []struct {
		name string
		act  func(h *hostile)
		want wire.Code
		msg  string
	}{
		{"stale", func(h *hostile) {
			h.auth(wire.SignAuth("g", "admin", "admin-secret", time.Now().Add(-6*time.Minute).UnixMilli(), [wire.NonceLen]byte{1}))
		}, wire.Unauthorized, "6m0s off this master's clock"},
		{"future", func(h *hostile) {
			h.auth(wire.SignAuth("g", "admin", "admin-secret", time.Now().Add(time.Hour).UnixMilli(), [wire.NonceLen]byte{1}))
		}, wire.Unauthorized, "synchronise the brokers' clocks"},
		{"twice", func(h *hostile) { h.auth(good()); h.auth(good()) }, wire.InvalidRequest, "may only open a connection"},
		{"after_fetch", func(h *hostile) {
			h.auth(good())
			h.fetch(fetch)
			if r, ok := h.next(); !ok || r.Err != wire.OK {
				h.t.Fatalf("handshake after a good Auth: %v %q", r.Err, r.Message)
			}
			h.auth(good())
		}, wire.InvalidRequest, "may only open a connection"},
		{"other_group", func(h *hostile) {
			h.auth(wire.SignAuth("h", "admin", "admin-secret", time.Now().UnixMilli(), [wire.NonceLen]byte{1}))
		}, wire.WrongGroup, `not "h"`},
		{"ack_first", func(h *hostile) { h.ack(wire.Ack{Offset: big, Durable: big}) }, wire.Unauthorized, "sent no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, syncCfg(1), big, withAuth(newFakeUsers()))
				c.put(0)
				h := c.dialHostile("peer")
				defer h.nc.Close()
				tc.act(h)
				r, ok := h.next()
				if !ok || r.Err != tc.want || !strings.Contains(r.Message, tc.msg) {
					t.Fatalf("answer %v %q ok=%v, want %v containing %q", r.Err, r.Message, ok, tc.want, tc.msg)
				}
				if len(r.Data) != 0 {
					t.Fatalf("a refusal carried %d bytes of the log", len(r.Data))
				}
				if _, ok := h.next(); ok {
					t.Fatal("the master kept the refused connection open")
				}
			})
		})
	}
}

func (h *hostile) auth(a wire.Auth) {
	if err := wire.WriteFrame(h.nc, wire.AppendAuth(nil, a)); err != nil {
		h.t.Fatal(err)
	}
}
