//go:build !race

// The race detector's sync.Pool drops entries at random, so allocation
// counts are measured only without it.

package auth

import (
	"bytes"
	"testing"
)

func TestAuthenticateRemotingAllocatesNothing(t *testing.T) {
	dir := &fakeDir{users: map[string]User{"alice": {Name: "alice", Secret: "s3cret", Type: Super, Status: Enabled}}}
	c := NewChecker(dir, CheckerOptions{})
	body := bytes.Repeat([]byte("x"), 1024)
	f := fields{{"AccessKey", "alice"}, {"a", "pg"}, {"b", "TopicA"}, {"c", "TBW102"}, {"d", "4"}, {"e", "0"}, {"f", "0"}, {"g", "1700000000000"}}
	f = f.with("Signature", SignRemoting("s3cret", f, body))
	var ef Fields = f
	allocs := testing.AllocsPerRun(200, func() {
		if _, r := c.AuthenticateRemoting(ef, body); r != nil {
			t.Fatal(r)
		}
	})
	if allocs > 0 {
		t.Errorf("AuthenticateRemoting allocates %.1f times per request", allocs)
	}
}
