package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/cli"
	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/remoting"
)

// startTestController serves a controller (the real service over the
// linearizable FakeLog) on a loopback port and registers two replicas of
// broker-a: replica 1 the master, replica 2 a slave outside the in-sync
// set (it has not caught up).
func startTestController(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	svc := controller.NewService(controller.DefaultServiceConfig(), controller.NewFakeLog(controller.Voter{ID: 1, Addr: addr}))
	srv := remoting.NewServer(remoting.ServerOptions{})
	svc.Register(srv)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); svc.Close() })
	cl := client.New([]string{addr}, client.Options{Timeout: 5 * time.Second})
	defer cl.Close()
	for i, a := range []string{"127.0.0.1:10911", "127.0.0.1:10921"} {
		resp, err := cl.Register(context.Background(), &api.RegisterRequest{Cluster: "DefaultCluster", Group: "broker-a", Addr: a, HAAddr: a})
		if err != nil || resp.ReplicaID != int64(i+1) {
			t.Fatalf("register %s: %+v, %v", a, resp, err)
		}
	}
	return addr
}

func TestClusterControllerCommandsEndToEnd(t *testing.T) {
	addr := startTestController(t)
	out, err := execute(t, "", "cluster", "groups", "--controller", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"controller leader: 1 (" + addr + ")", "broker-a", "1 (127.0.0.1:10911)", "{1}"} {
		if !strings.Contains(out, want) {
			t.Errorf("groups lacks %q:\n%s", want, out)
		}
	}
	t.Setenv(controllerEnv, addr)
	out, err = execute(t, "", "cluster", "groups", "--group", "broker-a", "-o", "json")
	if err != nil || !strings.Contains(out, `"group": "broker-a"`) {
		t.Errorf("groups -o json via %s: %v\n%s", controllerEnv, err, out)
	}
	// Replica 2 is not in the in-sync set: the controller refuses, and
	// the command says so.
	_, err = execute(t, "", "cluster", "elect-master", "--group", "broker-a", "--broker", "2")
	if !errors.Is(err, cli.ErrRefused) {
		t.Errorf("elect-master outside the in-sync set: %v, want a refusal", err)
	}
	_, err = execute(t, "", "cluster", "transfer", "--group", "broker-a", "--broker", "2", "--wait", "1s")
	if !errors.Is(err, cli.ErrRefused) {
		t.Errorf("transfer outside the in-sync set: %v, want a refusal", err)
	}
	if _, err := execute(t, "", "cluster", "groups", "--group", "broker-z"); !errors.Is(err, cli.ErrNotFound) {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := execute(t, "", "cluster", "elect-master"); err == nil || !strings.Contains(err.Error(), `"group" not set`) {
		t.Errorf("elect-master without --group: %v", err)
	}
}
