package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/logtest"
)

// freeAddr is a 127.0.0.1 address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runCommand runs the petrel command line args in-process until the test
// ends (then it must stop without error), returning its output once it
// printed want.
func runCommand(t *testing.T, want string, args ...string) *logtest.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &logtest.Buffer{}
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(out)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("petrel %s stopped: %v\n%s", strings.Join(args, " "), err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("petrel %s did not print %q:\n%s", strings.Join(args, " "), want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("petrel %s stopped with %v", strings.Join(args, " "), err)
		}
	})
	return out
}

func groupsOf(t *testing.T, addr string) *api.GroupsResponse {
	t.Helper()
	cl := client.New([]string{addr}, client.Options{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		g, err := cl.Groups(ctx, &api.GroupsRequest{})
		if err == nil {
			return g
		}
		if ctx.Err() != nil {
			t.Fatalf("groups from %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // a single voter elects itself within its election timeout
	}
}

func TestControllerCommandRunsAVoterAndPrintsIt(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	out := runCommand(t, "controller data in", "controller", "--controller-id", "1", "--controller-peers", "1@"+addr,
		"--controller-listen", addr, "--data-dir", dir, "--log-level", "error")
	for _, want := range []string{"controller voter 1 listening on " + addr, "advertised " + addr, "peers 1@" + addr, dir + "/controller"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("startup output lacks %q:\n%s", want, out.String())
		}
	}
	g := groupsOf(t, addr)
	if g.Leader.ID != 1 || g.Leader.Addr != addr || len(g.Controllers) != 1 {
		t.Fatalf("groups: %+v", g)
	}
}

func TestNamesrvEmbedsAControllerVoterWhenAsked(t *testing.T) {
	addr := freeAddr(t)
	out := runCommand(t, "controller data in", "namesrv", "--namesrv-listen", "127.0.0.1:0", "--controller-id", "1",
		"--controller-peers", "1@"+addr, "--controller-listen", addr, "--data-dir", t.TempDir(), "--log-level", "error")
	if !strings.Contains(out.String(), "name server listening on 127.0.0.1:") {
		t.Fatalf("no name server line:\n%s", out.String())
	}
	if g := groupsOf(t, addr); g.Leader.ID != 1 {
		t.Fatalf("groups: %+v", g)
	}
	// Without the flags a name server runs no voter.
	plain := runCommand(t, "name server listening", "namesrv", "--namesrv-listen", "127.0.0.1:0", "--log-level", "error")
	if strings.Contains(plain.String(), "controller") {
		t.Fatalf("a plain name server started a controller:\n%s", plain.String())
	}
}

func TestControllerFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--controller-peers", "1@127.0.0.1:9878"}, "--controller-id 0"},
		{[]string{"--controller-id", "1"}, "--controller-peers is empty"},
		{[]string{"--controller-id", "4", "--controller-peers", "1@127.0.0.1:9878,2@127.0.0.1:9879"}, "--controller-id 4 is not in --controller-peers"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1"}, "--controller-peers"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1:1,1@127.0.0.1:2"}, "listed twice"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@0.0.0.0:9878"}, "not an address other voters can dial"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1:9878", "--controller-session-timeout", "3s"}, "--controller-session-timeout 3s"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1:9878", "--controller-raft-election-timeout", "500ms"}, "--controller-raft-election-timeout 500ms is below"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1:9878", "--controller-tls-cert", "x.pem"}, "give both --controller-tls-cert and --controller-tls-key"},
		{[]string{"--controller-id", "1", "--controller-peers", "1@127.0.0.1:9878", "--controller-tls-cert", "/nonexistent.pem", "--controller-tls-key", "/nonexistent.key"}, "--controller-tls-cert /nonexistent.pem"},
	} {
		root := newRoot()
		root.SetArgs(append([]string{"controller", "--data-dir", t.TempDir(), "--log-level", "error"}, tc.args...))
		root.SetOut(&logtest.Buffer{})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("petrel controller %s: %v, want an error naming %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
