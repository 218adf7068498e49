package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/cli"
)

// TestCredentialFlagsAreCheckedBeforeAnyServer: a key without a secret
// (from a flag or the environment) is a usage error naming what is
// missing; nothing is dialed (the name server address is dead).
func TestCredentialFlagsAreCheckedBeforeAnyServer(t *testing.T) {
	t.Setenv(cli.AccessKeyEnv, "")
	t.Setenv(cli.SecretKeyEnv, "")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"topic", "list", "--access-key", "admin"}, nil, "--secret-key"},
		{[]string{"cluster", "list", "--secret-key", "x"}, nil, "--access-key"},
		{[]string{"user", "list"}, map[string]string{cli.SecretKeyEnv: "x"}, cli.AccessKeyEnv},
		{[]string{"acl", "list", "--tls-ca", "ca.pem", "--tls-insecure"}, nil, "exclude each other"},
		{[]string{"user", "create", "alice"}, nil, "--secret"},
		{[]string{"user", "update", "alice", "--type", "root"}, nil, "normal or super"},
		{[]string{"acl", "create", "--subject", "alice", "--resource", "Queue:q", "--action", "Pub", "--decision", "allow"}, nil, "--resource"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, err := execute(t, "", append(tc.args, "--namesrv", "127.0.0.1:1")...)
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: %v, want a usage error naming %s", tc.args, err, tc.want)
		}
		for k := range tc.env {
			t.Setenv(k, "")
		}
	}
}

func TestUserSecretFlags(t *testing.T) {
	_, err := execute(t, "", "user", "create", "alice", "--secret", "a", "--secret-file", "f", "--namesrv", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("--secret with --secret-file: %v", err)
	}
	p := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(p, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = execute(t, "", "user", "create", "alice", "--secret-file", p, "--namesrv", "127.0.0.1:1")
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty --secret-file: %v", err)
	}
	out, err := execute(t, "", "user", "create", "--help")
	if err != nil || !strings.Contains(out, "visible to other local users in ps") || !strings.Contains(out, `(default "normal")`) {
		t.Fatalf("user create --help: %v\n%s", err, out)
	}
}
