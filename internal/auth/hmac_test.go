package auth

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

func TestAuthenticateHMAC(t *testing.T) {
	dir := &fakeDir{users: map[string]User{
		"root": {Name: "root", Secret: "pw", Type: Super, Status: Enabled},
		"off":  {Name: "off", Secret: "pw", Type: Super, Status: Disabled},
	}}
	var reasons []string
	c := newTestChecker(t, dir, CheckerOptions{Refused: func(p, r string) { reasons = append(reasons, p+"/"+r) }})
	content := []byte("petrel-ha content")
	// python3: hmac.new(b'pw', b'petrel-ha content', hashlib.sha1).hexdigest()
	good, _ := hex.DecodeString("089b8370abcea0a91c8cb128f191164f12125a3b")
	if u, r := c.AuthenticateHMAC("ha", "root", content, good); r != nil || u.Name != "root" || u.Type != Super {
		t.Fatalf("root with the right signature: %+v, %v", u, r)
	}
	bad := slices.Clone(good)
	bad[19] ^= 1
	for _, tc := range []struct {
		u    string
		c    []byte
		sig  []byte
		want string
	}{
		{"root", content, bad, `the signature does not match user "root"'s secret`},
		{"root", []byte("other content"), good, `the signature does not match user "root"'s secret`},
		{"root", content, good[:19], "does not match"},
		{"root", content, nil, `user "root" carries no signature`},
		{"nobody", content, good, `user "nobody" is unknown`},
		{"off", content, good, `user "off" is disabled`},
		{"", content, good, "no credentials were sent"},
	} {
		_, r := c.AuthenticateHMAC("ha", tc.u, tc.c, tc.sig)
		if r == nil || r.Kind != Unauthenticated || !strings.Contains(r.Msg, tc.want) || strings.Contains(r.Msg, "pw") {
			t.Errorf("%q %q %x: %+v, want a refusal containing %q", tc.u, tc.c, tc.sig, r, tc.want)
		}
	}
	want := []string{"ha/bad-signature", "ha/bad-signature", "ha/bad-signature", "ha/unsigned", "ha/unknown-user", "ha/disabled", "ha/unsigned"}
	if !slices.Equal(reasons, want) {
		t.Errorf("reasons %v, want %v", reasons, want)
	}
}
