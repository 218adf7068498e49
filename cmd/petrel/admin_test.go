package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
)

// execute runs the petrel command line args with stdin and returns stdout
// and the error.
func execute(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestOperatorHelpReadsAsAManual(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" || c.Name() == "completion" {
				continue
			}
			walk(sub)
		}
		if !isAdmin(c) {
			return
		}
		seen++
		if c.Short == "" || strings.Contains(c.Short, "\n") {
			t.Errorf("%s: no one-line purpose", c.CommandPath())
		}
		if c.Example == "" {
			t.Errorf("%s: no example", c.CommandPath())
		}
		out, err := execute(t, "", append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "petrel")), "--help")...)
		if err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		for _, want := range []string{"Usage:", "Examples:", "--namesrv string", `(default "127.0.0.1:9876")`, `-o, --output string`, "(default 5s)",
			"--access-key string", "--secret-key string", "--tls ", "--tls-ca string", "--tls-insecure", "PETREL_ACCESS_KEY", "visible in ps"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q:\n%s", c.CommandPath(), want, out)
			}
		}
	}
	walk(newRoot())
	if seen < 20 {
		t.Fatalf("checked %d operator commands, want the 20 or more there are", seen)
	}
	out, _ := execute(t, "", "--help")
	for _, cmd := range []string{"cluster", "topic", "group", "send", "consume", "message", "dlq", "user", "acl", "completion"} {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("petrel --help does not list %s:\n%s", cmd, out)
		}
	}
}

// isAdmin reports whether c is an operator command: its top-level
// ancestor (the child of the root) is one of them.
func isAdmin(c *cobra.Command) bool {
	if !c.HasParent() {
		return false
	}
	top := c
	for top.Parent().HasParent() {
		top = top.Parent()
	}
	switch top.Name() {
	case "cluster", "topic", "group", "send", "consume", "message", "dlq", "user", "acl":
		return true
	case "broker": // its subcommands; itself runs a broker
		return c != top
	}
	return false
}

// TestSendDeliverAtRefusesADuration: --deliver-at takes a time; a
// duration would be read as that long ago and deliver at once, so it is
// refused with a pointer to --delay (before any server is asked).
func TestSendDeliverAtRefusesADuration(t *testing.T) {
	_, err := execute(t, "", "send", "--topic", "T", "--deliver-at", "10m", "--namesrv", "127.0.0.1:1", "body")
	if err == nil || !strings.Contains(err.Error(), "--delay 10m0s") {
		t.Fatalf("send --deliver-at 10m: %v, want a usage error pointing at --delay", err)
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, err := execute(t, "", "completion", sh)
		if err != nil || !strings.Contains(out, "petrel") || len(out) < 500 {
			t.Fatalf("completion %s: %v (%d bytes)", sh, err, len(out))
		}
	}
}

func TestOperatorCommandsEndToEnd(t *testing.T) {
	d := daemontest.Start(t)
	b := d.Broker
	t.Setenv(namesrvEnv, d.NameServerAddr()) // the default of --namesrv

	if out, err := execute(t, "", "topic", "create", "Orders", "--queues", "2", "--attr", "team=shop"); err != nil || !strings.Contains(out, "topic Orders created on broker-a") {
		t.Fatalf("topic create: %v\n%s", err, out)
	}
	out, err := execute(t, "one\ntwo\nthree\n", "send", "--topic", "Orders", "--tag", "t1")
	if err != nil || strings.Count(out, "SEND_OK") != 3 {
		t.Fatalf("send from stdin: %v\n%s", err, out)
	}
	// consume -e reads up to the max offsets, which count a message once
	// it is dispatched, a moment after its send was answered.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Store().WaitDispatched(ctx); err != nil {
		t.Fatalf("waiting for dispatch: %v", err)
	}
	out, err = execute(t, "", "consume", "--topic", "Orders", "-e", "--format", "{{.Tags}}:{{.Body}}")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, "t1:two\n") {
		t.Fatalf("consume: %v\n%s", err, out)
	}
	out, err = execute(t, "", "topic", "describe", "Orders", "-o", "json")
	if err != nil || !strings.Contains(out, `"team": "shop"`) || !strings.Contains(out, `"maxOffset"`) {
		t.Fatalf("topic describe -o json: %v\n%s", err, out)
	}
	if _, err := execute(t, "", "group", "reset-offset", "g", "--topic", "Orders"); err == nil || !strings.Contains(err.Error(), "to-time") {
		t.Fatalf("reset-offset without a target: %v", err)
	}
	if _, err := execute(t, "", "topic", "describe", "Missing"); err == nil || !strings.Contains(err.Error(), `topic "Missing" does not exist`) {
		t.Fatalf("describe of a missing topic: %v", err)
	}
	if _, err := execute(t, "", "cluster", "list", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Fatalf("-o yaml: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	_, err = execute(t, "", "cluster", "list", "--namesrv", dead)
	if err == nil || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "petrel server") {
		t.Fatalf("unreachable name server: %v", err)
	}
}
