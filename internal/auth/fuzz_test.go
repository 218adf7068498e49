package auth

import (
	"encoding/hex"
	"strings"
	"testing"
)

func FuzzParseAuthorization(f *testing.F) {
	f.Add(GRPCAuthorization("alice", "secret", "20261202T011500Z"))
	f.Add("MQv2-HMAC-SHA1 Credential=a/Rocketmq,SignedHeaders=x-mq-date-time,Signature=" + strings.Repeat("A", 40))
	f.Add("MQv2-HMAC-SHA1 ,,,=,Credential,Signature==")
	f.Add("Basic YWxpY2U6cHc=")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		ak, sig, err := ParseAuthorization(v)
		if err != nil {
			if ak != "" || sig != "" {
				t.Fatalf("error %v with results %q %q", err, ak, sig)
			}
			return
		}
		if len(v) > MaxAuthorizationBytes || ak == "" || strings.Contains(ak, "/") || len(sig) != 40 {
			t.Fatalf("accepted %q: %q %q", v, ak, sig)
		}
		if _, err := hex.DecodeString(sig); err != nil {
			t.Fatalf("signature %q is not hex", sig)
		}
	})
}

// fuzzFields splits raw into ext fields: lines of key=value.
func fuzzFields(raw string) fields {
	var out fields
	for line := range strings.SplitSeq(raw, "\n") {
		k, v, _ := strings.Cut(line, "=")
		if k == "AccessKey" || k == "Signature" {
			continue
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

func FuzzAuthenticateRemoting(f *testing.F) {
	f.Add("b=TopicA\na=pg\nc=TBW102", []byte("hello"), "wrong", "sig")
	f.Add("topic=T\nqueueId=3\nSecurityToken=tok", []byte{}, "", "4T4/Ju79i4fFij971bqgfmZuCpI=")
	f.Add("x=1\nx=2\n_UNIQUE_KEY_QUERY=true\n=", []byte{0, 1, 2}, "s3cret!", "")
	const secret = "s3cret"
	dir := &fakeDir{users: map[string]User{"alice": {Name: "alice", Secret: secret, Type: Normal, Status: Enabled}}}
	c := NewChecker(dir, CheckerOptions{})
	f.Fuzz(func(t *testing.T, raw string, body []byte, otherSecret, sig string) {
		ext := fuzzFields(raw)
		signed := ext.with("AccessKey", "alice")
		// A signature the fuzzer chose is accepted only if it is one of
		// the forms the secret signs.
		if _, r := c.AuthenticateRemoting(signed.with("Signature", sig), body); r == nil && !validForm(secret, sig, signed, body) {
			t.Fatalf("accepted signature %q that the secret does not make", sig)
		}
		// Signed with another secret: refused.
		if otherSecret != secret {
			bad := SignRemoting(otherSecret, signed, body)
			if _, r := c.AuthenticateRemoting(signed.with("Signature", bad), body); r == nil {
				t.Fatalf("accepted a signature made with secret %q", otherSecret)
			}
		}
		// Signed with the secret: accepted, and the body is covered.
		good := SignRemoting(secret, signed, body)
		if _, r := c.AuthenticateRemoting(signed.with("Signature", good), body); r != nil {
			t.Fatalf("refused the right signature: %v", r)
		}
		if _, r := c.AuthenticateRemoting(signed.with("Signature", good), append(append([]byte{}, body...), 'x')); r == nil {
			t.Fatal("accepted a signature over another body")
		}
	})
}

func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"*", "Cluster", "Cluster:c", "Topic:a", "topic:a*", "Group:*", "Topic:a*b", "Topic:", ":", "Group:%RETRY%g"} {
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, s, name string) {
		r, err := ParseResource(s)
		if err != nil {
			return
		}
		again, err := ParseResource(r.String())
		if err != nil || again != r {
			t.Fatalf("%q parsed as %+v, whose string %q parses as %+v, %v", s, r, r.String(), again, err)
		}
		if r.Type != ResourceAny && r.Pattern != AnyName && r.Name != "" && !r.Matches(Resource{Type: r.Type, Name: r.Name, Pattern: Literal}) {
			t.Fatalf("%+v does not match its own name", r)
		}
		req := Resource{Type: ResourceTopic, Name: name, Pattern: Literal}
		if r.Matches(req) && r.Type != ResourceAny && r.Type != ResourceTopic {
			t.Fatalf("%+v matches a topic", r)
		}
	})
}

// validForm: sig signs f and body under secret with or without
// SecurityToken and _UNIQUE_KEY_QUERY.
func validForm(secret, sig string, f fields, body []byte) bool {
	for _, skip := range [][]string{nil, {"SecurityToken"}, {"_UNIQUE_KEY_QUERY"}, {"SecurityToken", "_UNIQUE_KEY_QUERY"}} {
		var g fields
		for _, p := range f {
			if p[0] != skip0(skip) && p[0] != skip1(skip) {
				g = append(g, p)
			}
		}
		if SignRemoting(secret, g, body) == sig {
			return true
		}
	}
	return false
}

func skip0(s []string) string {
	if len(s) > 0 {
		return s[0]
	}
	return "\x00none"
}

func skip1(s []string) string {
	if len(s) > 1 {
		return s[1]
	}
	return "\x00none"
}
