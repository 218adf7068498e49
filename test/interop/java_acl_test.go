package interop

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJavaACLHooks: the official Java clients' credentials against
// `petrel server --auth`: the 4.x client's AclClientRPCHook (rocketmq-acl)
// signs a producer and a push consumer that send and consume, and a wrong
// secret or no signature is refused with NO_PERMISSION (16); the 5.x
// client's StaticSessionCredentialsProvider signs a producer and a simple
// consumer, and a wrong secret is refused as unauthorized.
func TestJavaACLHooks(t *testing.T) {
	t.Parallel()
	s := startAuthPetrel(t)
	s.createTopicsAs(t, "JavaAcl4", "JavaAcl5")
	waitRoute(t, s.nsAddr, "JavaAcl4")
	t.Run("4.x", func(t *testing.T) {
		out := string(runJava(t, "client4", "petrel.interop.Acl", 3*time.Minute,
			s.nsAddr, "JavaAcl4", "JavaAcl4Group", adminUser, adminSecret, "5"))
		m := regexp.MustCompile(`ok sent=5 consumed=5 wrong=(\d+) unsigned=(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the Java 4.x ACL scenario did not succeed:\n%s", out)
		}
		if m[1] != "16" || m[2] != "16" {
			t.Fatalf("refusals with codes %s (wrong secret) and %s (unsigned), want 16 and 16", m[1], m[2])
		}
		t.Log(strings.TrimSpace(m[0]))
	})
	t.Run("5.x", func(t *testing.T) {
		out := string(runJava(t, "client5", "petrel.interop.Acl5", 3*time.Minute,
			s.grpcAddr, "JavaAcl5", "JavaAcl5Group", adminUser, adminSecret, "5"))
		m := regexp.MustCompile(`ok sent=5 received=5 wrong=(\w+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the Java 5.x ACL scenario did not succeed:\n%s", out)
		}
		if m[1] != "UnauthorizedException" {
			t.Fatalf("a wrong secret was refused with %s, want UnauthorizedException", m[1])
		}
		t.Log(strings.TrimSpace(m[0]))
	})
}
