package auth

import (
	"strings"
	"testing"
)

// TestRotatedSecretStopsAtOnce: the HMAC key states a pooled scratch keeps
// for the last secret must never verify a signature made with an old
// secret once the user's secret has changed, nor refuse the new one, and
// long secrets (hashed into the key) and short ones must not mix.
func TestRotatedSecretStopsAtOnce(t *testing.T) {
	long := strings.Repeat("L", 100)
	dir := &fakeDir{users: map[string]User{"u": {Name: "u", Secret: "old-secret", Type: Super, Status: Enabled}}}
	c := newTestChecker(t, dir, CheckerOptions{})
	body := []byte("payload")
	sign := func(secret string) fields {
		f := fields{{"topic", "T"}, {fieldAccessKey, "u"}}
		return append(f, [2]string{fieldSignature, SignRemoting(secret, f, body)})
	}
	setSecret := func(s string) {
		dir.mu.Lock()
		dir.users["u"] = User{Name: "u", Secret: s, Type: Super, Status: Enabled}
		dir.mu.Unlock()
	}
	oldSig, newSig, longSig := sign("old-secret"), sign("new-secret"), sign(long)
	for round := range 3 {
		setSecret("old-secret")
		if _, r := c.AuthenticateRemoting(oldSig, body); r != nil {
			t.Fatalf("round %d: old secret refused while current: %v", round, r)
		}
		setSecret("new-secret")
		if _, r := c.AuthenticateRemoting(oldSig, body); r == nil {
			t.Fatalf("round %d: old signature accepted after rotation", round)
		}
		if _, r := c.AuthenticateRemoting(newSig, body); r != nil {
			t.Fatalf("round %d: new secret refused: %v", round, r)
		}
		setSecret(long)
		if _, r := c.AuthenticateRemoting(newSig, body); r == nil {
			t.Fatalf("round %d: short-secret signature accepted under a long secret", round)
		}
		if _, r := c.AuthenticateRemoting(longSig, body); r != nil {
			t.Fatalf("round %d: long secret refused: %v", round, r)
		}
	}
}
