package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/cli"
	"github.com/petrelmq/petrel/internal/loadgen"
)

func TestBenchCredentialsAndTLSFlags(t *testing.T) {
	t.Setenv(cli.AccessKeyEnv, "")
	t.Setenv(cli.SecretKeyEnv, "")
	var pc loadgen.ProduceConfig
	var cc loadgen.ConsumeConfig
	var rc loadgen.ReceiveConfig
	res := func() *loadgen.Result {
		return &loadgen.Result{Scenario: "x", BodyBytes: 1, Msgs: 1, Elapsed: time.Second, Latency: loadgen.NewHistogram()}
	}
	r := benchRunners{
		produce: func(_ context.Context, c loadgen.ProduceConfig) (*loadgen.Result, error) { pc = c; return res(), nil },
		consume: func(_ context.Context, c loadgen.ConsumeConfig) (*loadgen.Result, error) { cc = c; return res(), nil },
		receive: func(_ context.Context, c loadgen.ReceiveConfig) (*loadgen.Result, error) { rc = c; return res(), nil },
	}
	run := func(args ...string) error {
		var out bytes.Buffer
		return execBench(r, &out, &out, args...)
	}
	if err := run("produce", "--access-key", "ak", "--secret-key", "sk"); err != nil {
		t.Fatal(err)
	}
	if pc.AccessKey != "ak" || pc.SecretKey != "sk" || pc.TLS != nil {
		t.Fatalf("produce security %+v", pc.Security)
	}
	t.Setenv(cli.AccessKeyEnv, "env-ak")
	t.Setenv(cli.SecretKeyEnv, "env-sk")
	if err := run("consume"); err != nil {
		t.Fatal(err)
	}
	if cc.AccessKey != "env-ak" || cc.SecretKey != "env-sk" {
		t.Fatalf("consume did not fall back to the environment: %+v", cc.Security)
	}
	t.Setenv(cli.SecretKeyEnv, "")
	if err := run("receive", "--grpc", "127.0.0.1:8081", "--group", "G"); !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--secret-key") {
		t.Fatalf("a key without a secret: %v", err)
	}
	if rc.GRPC != "" {
		t.Fatal("receive ran despite the usage error")
	}
	t.Setenv(cli.AccessKeyEnv, "")
	if err := run("produce", "--grpc", "127.0.0.1:8081", "--grpc-plaintext", "--tls-ca", "ca.pem"); !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--grpc-plaintext") {
		t.Fatalf("--grpc-plaintext with --tls-ca: %v", err)
	}
}

func TestBenchRefusalsOfAnUnsignedRunSayToPassCredentials(t *testing.T) {
	t.Setenv(cli.AccessKeyEnv, "")
	t.Setenv(cli.SecretKeyEnv, "")
	refused := "send to T queue 0: code 16: authentication failed: the request is not signed"
	r := benchRunners{produce: func(context.Context, loadgen.ProduceConfig) (*loadgen.Result, error) {
		return &loadgen.Result{Scenario: "produce", BodyBytes: 1, Errors: 3, FirstError: refused, Latency: loadgen.NewHistogram()},
			errors.New("stopped after 3 errors; first: " + refused)
	}}
	var out, errOut bytes.Buffer
	err := execBench(r, &out, &errOut, "produce")
	if err == nil || !strings.Contains(err.Error(), "pass --access-key and --secret-key") {
		t.Fatalf("unsigned refused run: %v", err)
	}
	errOut.Reset()
	err = execBench(r, &out, &errOut, "produce", "--access-key", "a", "--secret-key", "b", "-o", "json")
	if err == nil || strings.Contains(err.Error(), "--access-key") {
		t.Fatalf("a signed run was told to pass credentials: %v", err)
	}
}
