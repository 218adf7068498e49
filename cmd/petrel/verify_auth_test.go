package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/verify"
)

// TestVerifyAuthTLSFlags: --auth and --tls reach the run's Config, off
// by default, and exclude --namesrv.
func TestVerifyAuthTLSFlags(t *testing.T) {
	parse := func(args ...string) (verify.Config, error) {
		o := &verifyOptions{}
		cmd := newVerifyCmdOf(o)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return o.config(cmd)
	}
	cfg, err := parse()
	if err != nil || cfg.Auth || cfg.TLS {
		t.Fatalf("default: auth %v tls %v err %v; want both off", cfg.Auth, cfg.TLS, err)
	}
	cfg, err = parse("--auth", "--tls")
	if err != nil || !cfg.Auth || !cfg.TLS {
		t.Fatalf("--auth --tls: auth %v tls %v err %v", cfg.Auth, cfg.TLS, err)
	}
	for _, args := range [][]string{{"--auth", "--namesrv", "127.0.0.1:9876"}, {"--tls", "--namesrv", "127.0.0.1:9876"}} {
		if _, err := parse(args...); err == nil || !strings.Contains(err.Error(), "--namesrv") {
			t.Fatalf("%q: %v, want a refusal naming --namesrv", args, err)
		}
	}
}

// TestVerifyWithAuthAndTLS is `petrel verify --auth --tls` on a
// replicated group (name server, master, slave: every listener and link
// in TLS through the fault proxies, every request signed by the normal
// user and authorized) with kills and partitions of the processes and of
// the replication link, under the remoting and gRPC workloads. Nothing
// acknowledged may be lost; the report says auth and TLS were on; no log
// holds the admin's secret.
func TestVerifyWithAuthAndTLS(t *testing.T) {
	code, res, dir := runVerifyProcess(t, nil, "--auth", "--tls", "--topology", "groups=1,replicas=2", "--seed", "18",
		"--faults", "kill,partition,partition-slave", "--fault-interval", "2s", "--duration", "12s", "--workload", "queue,grpc")
	if code != exitValid || res.Verdict != "valid" {
		t.Fatalf("exit %d, verdict %q, %d lost; want exit 0 and valid", code, res.Verdict, res.Lost)
	}
	if res.Acked == 0 || res.Lost != 0 {
		t.Fatalf("acked %d, lost %d; want messages acked and none lost", res.Acked, res.Lost)
	}
	if !res.Auth || !res.TLS || !strings.Contains(res.Security, "verify-client") {
		t.Fatalf("report auth %v tls %v security %q; want both on, naming the workloads' user", res.Auth, res.TLS, res.Security)
	}
	kinds := map[string]int{}
	for _, f := range res.Faults {
		kinds[f.Kind]++
	}
	for _, k := range []string{"kill", "partition", "partition-slave"} {
		if kinds[k] == 0 {
			t.Errorf("no %s fault was injected (faults: %v)", k, kinds)
		}
	}
	line, err := os.ReadFile(filepath.Join(dir, "auth-init-user"))
	if err != nil {
		t.Fatal(err)
	}
	_, secret, ok := strings.Cut(strings.TrimSpace(string(line)), ":")
	if !ok || secret == "" {
		t.Fatalf("init user file %q", line)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) != 3 {
		t.Fatalf("logs %v, want the name server's, the master's and the slave's", logs)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the admin's secret", l)
		}
		if !strings.Contains(s, `"--auth"`) || !strings.Contains(s, `"--tls-mode" "enforcing"`) {
			t.Errorf("%s: the process did not start with --auth and --tls-mode enforcing", l)
		}
	}
}
