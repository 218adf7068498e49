package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/remoting"
)

// voter is one controller service over a FakeLog, served by a real
// remoting server on 127.0.0.1.
type voter struct {
	addr string
	log  *controller.FakeLog
	srv  *remoting.Server
}

func startVoter(t *testing.T, id int, leading bool) *voter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v := &voter{addr: ln.Addr().String()}
	v.log = controller.NewFakeLog(controller.Voter{ID: id, Addr: v.addr})
	v.log.SetLeader(leading)
	clk := clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	cfg := controller.DefaultServiceConfig()
	cfg.Clock = clk
	svc := controller.NewService(cfg, v.log)
	v.srv = remoting.NewServer(remoting.ServerOptions{})
	svc.Register(v.srv)
	go v.srv.Serve(ln)
	svc.Start()
	clk.Advance(0)
	t.Cleanup(func() {
		v.srv.Close()
		svc.Close()
	})
	return v
}

// deadAddr is a 127.0.0.1 port nobody listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func newClient(t *testing.T, addrs ...string) *client.Client {
	c := client.New(addrs, client.Options{Timeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func register(t *testing.T, c *client.Client) *api.RegisterResponse {
	t.Helper()
	resp, err := c.Register(context.Background(), &api.RegisterRequest{Cluster: "c", Group: "g", Addr: "127.0.0.1:10911", HAAddr: "127.0.0.1:10912"})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	return resp
}

// TestFollowsLeaderHint: a follower's CodeNotLeader names the leader; the
// client goes there in the same call and remembers it.
func TestFollowsLeaderHint(t *testing.T) {
	a := startVoter(t, 1, false)
	b := startVoter(t, 2, true)
	a.log.SetLeaderAddr(b.addr)
	c := newClient(t, a.addr) // b only through the hint
	reg := register(t, c)
	if reg.ReplicaID != 1 || reg.Group.Master != 1 {
		t.Fatalf("register: %+v", reg)
	}
	if c.Leader() != b.addr {
		t.Fatalf("leader %q, want %q", c.Leader(), b.addr)
	}
	hb, err := c.Heartbeat(context.Background(), &api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: reg.Incarnation, Master: true, Epoch: 1})
	if err != nil || !hb.Lease {
		t.Fatalf("heartbeat: %+v, %v", hb, err)
	}
	// The follower is gone: the remembered leader still answers.
	a.srv.Close()
	if _, err := c.Groups(context.Background(), nil); err != nil {
		t.Fatalf("groups after the follower closed: %v", err)
	}
}

// TestNextAddressOnConnError: an unreachable address is skipped.
func TestNextAddressOnConnError(t *testing.T) {
	b := startVoter(t, 2, true)
	c := newClient(t, deadAddr(t), b.addr)
	register(t, c)
	if c.Leader() != b.addr {
		t.Fatalf("leader %q, want %q", c.Leader(), b.addr)
	}
}

// TestLeaderChange: the known leader steps down and names its successor.
func TestLeaderChange(t *testing.T) {
	a := startVoter(t, 1, false)
	b := startVoter(t, 2, true)
	c := newClient(t, a.addr, b.addr)
	register(t, c)
	if c.Leader() != b.addr {
		t.Fatalf("leader %q", c.Leader())
	}
	b.log.SetLeader(false)
	b.log.SetLeaderAddr(a.addr)
	a.log.SetLeader(true)
	if _, err := c.Groups(context.Background(), &api.GroupsRequest{}); err != nil {
		t.Fatalf("groups: %v", err)
	}
	if c.Leader() != a.addr {
		t.Fatalf("leader %q after the change, want %q", c.Leader(), a.addr)
	}
}

// TestNoLeader: followers that know no leader, or point at each other,
// end the call after one pass with ErrNoLeader.
func TestNoLeader(t *testing.T) {
	a := startVoter(t, 1, false)
	b := startVoter(t, 2, false)
	c := newClient(t, a.addr, b.addr, deadAddr(t))
	if _, err := c.Groups(context.Background(), nil); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("no leader known: %v", err)
	}
	a.log.SetLeaderAddr(b.addr)
	b.log.SetLeaderAddr(a.addr)
	if _, err := c.Groups(context.Background(), nil); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("hints in a circle: %v", err)
	}
	if c.Leader() != "" {
		t.Fatalf("leader %q remembered", c.Leader())
	}
	// A server that is no controller (no handlers) is skipped too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := remoting.NewServer(remoting.ServerOptions{})
	go plain.Serve(ln)
	t.Cleanup(func() { plain.Close() })
	leader := startVoter(t, 3, true)
	c2 := newClient(t, ln.Addr().String(), leader.addr)
	register(t, c2)
}

// TestErrors: CodeStale carries the group, CodeRefused the remark.
func TestErrors(t *testing.T) {
	b := startVoter(t, 1, true)
	c := newClient(t, b.addr)
	reg := register(t, c)
	req := &api.AlterISRRequest{Group: "g", Master: 1, Epoch: 1, ISRVersion: reg.Group.ISRVersion + 5, ISR: []int64{1}}
	_, err := c.AlterISR(context.Background(), req)
	var se *client.StaleError
	if !errors.Is(err, client.ErrStale) || !errors.As(err, &se) {
		t.Fatalf("stale alter: %v", err)
	}
	if se.Group.Group != "g" || se.Group.ISRVersion != reg.Group.ISRVersion || se.Group.Master != 1 {
		t.Fatalf("stale error's group: %+v", se.Group)
	}
	_, err = c.Elect(context.Background(), &api.ElectRequest{Group: "g", Unclean: true})
	if !errors.Is(err, client.ErrRefused) || errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("unclean elect: %v", err)
	}
	if _, err := c.Transfer(context.Background(), &api.TransferRequest{Group: "nope"}); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("transfer of an unknown group: %v", err)
	}
	if _, err := c.Resign(context.Background(), &api.ResignRequest{Group: "g", ReplicaID: 1, Incarnation: reg.Incarnation, Epoch: 1, Target: 2}); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("resign without a transfer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Groups(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
}

// TestConfiguredOnlyIgnoresHintsOutsideTheList: a broker's client follows
// a leader hint only to an address it was given (its links are the
// operator's list); a leader outside the list is not dialled, and the call
// says no leader was reachable.
func TestConfiguredOnlyIgnoresHintsOutsideTheList(t *testing.T) {
	a := startVoter(t, 1, false)
	b := startVoter(t, 2, true)
	a.log.SetLeaderAddr(b.addr)
	c := client.New([]string{a.addr}, client.Options{Timeout: 5 * time.Second, ConfiguredOnly: true})
	t.Cleanup(func() { c.Close() })
	if _, err := c.Groups(context.Background(), nil); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("groups with the leader outside the list: %v; want ErrNoLeader", err)
	}
	if c.Leader() != "" {
		t.Fatalf("leader %q: dialled a hint outside the list", c.Leader())
	}
	both := client.New([]string{a.addr, b.addr}, client.Options{Timeout: 5 * time.Second, ConfiguredOnly: true})
	t.Cleanup(func() { both.Close() })
	if _, err := both.Groups(context.Background(), nil); err != nil || both.Leader() != b.addr {
		t.Fatalf("groups with the leader in the list: leader %q, %v", both.Leader(), err)
	}
}
