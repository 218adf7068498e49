package controller

import (
	"context"
	"net"
	"testing"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/netx"
)

// preListened is TCP whose Listen hands out listeners opened beforehand
// (so that every voter's port is known before the first one starts).
type preListened struct {
	lns map[string]net.Listener
}

func (p preListened) Listen(addr string) (net.Listener, error) {
	if ln, ok := p.lns[addr]; ok {
		return ln, nil
	}
	return netx.TCP.Listen(addr)
}

func (p preListened) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return netx.TCP.Dial(ctx, addr)
}

func nodeConfig(t *testing.T, id int, listen string, peers []Voter, dir string) NodeConfig {
	return NodeConfig{
		ID: id, Listen: listen, Peers: peers, DataDir: dir, Service: DefaultServiceConfig(), Logger: testLogger(t),
		HeartbeatTimeout: testHeartbeat, ElectionTimeout: testHeartbeat, LeaderLeaseTimeout: testLease,
	}
}

func registerReq(group string) *api.RegisterRequest {
	return &api.RegisterRequest{Cluster: "c", Group: group, Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912"}
}

func TestNodesServeTheControllerCodesAndRaftOnOnePort(t *testing.T) {
	nw := preListened{lns: map[string]net.Listener{}}
	var peers []Voter
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nw.lns[ln.Addr().String()] = ln
		peers = append(peers, Voter{ID: i + 1, Addr: ln.Addr().String()})
	}
	nodes := make([]*Node, 3)
	for i, p := range peers {
		cfg := nodeConfig(t, p.ID, p.Addr, peers, t.TempDir())
		cfg.Network = nw
		n, err := StartNode(cfg)
		if err != nil {
			t.Fatalf("start voter %d: %v", p.ID, err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
		if n.Addr() != p.Addr {
			t.Fatalf("voter %d Addr %s, want %s", p.ID, n.Addr(), p.Addr)
		}
	}
	leader := -1
	await(t, "a leader", func() bool {
		for i, n := range nodes {
			if n.Log().IsLeader() {
				leader = i
				return true
			}
		}
		return false
	})
	// A client that knows only a follower is led to the leader by the
	// follower's CodeNotLeader answer (raft and remoting share the port).
	follower := nodes[(leader+1)%3]
	await(t, "the follower knows the leader", func() bool { _, a := follower.Log().Leader(); return a != "" })
	cl := client.New([]string{follower.Addr()}, client.Options{})
	defer cl.Close()
	resp, err := cl.Register(ctxT(t), registerReq("g1"))
	if err != nil {
		t.Fatalf("register through a follower: %v", err)
	}
	if resp.ReplicaID != 1 || resp.Group.Master != 1 || resp.Group.Epoch != 1 {
		t.Fatalf("register: %+v", resp)
	}
	if cl.Leader() != nodes[leader].Addr() {
		t.Fatalf("the client follows %q, want the leader %s", cl.Leader(), nodes[leader].Addr())
	}
	groups, err := cl.Groups(ctxT(t), &api.GroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if groups.Leader.ID != leader+1 || len(groups.Controllers) != 3 || len(groups.Groups) != 1 {
		t.Fatalf("groups: %+v", groups)
	}
}

func TestSingleVoterNodeOverTLSRestartsOnANewPortWithItsState(t *testing.T) {
	cfg := selfSignedTLS(t)
	dir := t.TempDir()
	start := func() *Node {
		nc := nodeConfig(t, 1, "127.0.0.1:0", nil, dir)
		nc.TLS = cfg
		n, err := StartNode(nc)
		if err != nil {
			t.Fatal(err)
		}
		await(t, "the single voter leads", n.Log().IsLeader)
		// What it applied before the restart is applied again once its
		// first entry as leader commits.
		if err := n.Log().Barrier(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return n
	}
	call := func(n *Node, f func(*client.Client) error) error {
		cl := client.New([]string{n.Addr()}, client.Options{Network: TLSNetwork(nil, cfg)})
		defer cl.Close()
		return f(cl)
	}
	n := start()
	if err := call(n, func(cl *client.Client) error { _, err := cl.Register(ctxT(t), registerReq("g1")); return err }); err != nil {
		t.Fatalf("register over TLS: %v", err)
	}
	// Plaintext gets no answer from a TLS controller.
	plain := client.New([]string{n.Addr()}, client.Options{})
	if _, err := plain.Groups(ctxT(t), &api.GroupsRequest{}); err == nil {
		t.Fatal("a plaintext client was answered by a TLS controller")
	}
	plain.Close()
	first := n.Addr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	n = start()
	defer n.Close()
	t.Logf("restarted on %s (was %s)", n.Addr(), first)
	// The stored membership follows the single voter to its new port.
	await(t, "raft stores the new address", func() bool {
		f := n.Raft().r.GetConfiguration()
		return f.Error() == nil && len(f.Configuration().Servers) == 1 && string(f.Configuration().Servers[0].Address) == n.Addr()
	})
	var groups *api.GroupsResponse
	if err := call(n, func(cl *client.Client) (err error) {
		groups, err = cl.Groups(ctxT(t), &api.GroupsRequest{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(groups.Groups) != 1 || groups.Groups[0].Group != "g1" || groups.Leader.Addr != n.Addr() ||
		len(groups.Controllers) != 1 || groups.Controllers[0].Addr != n.Addr() {
		t.Fatalf("after the restart: %+v", groups)
	}
}

func TestStartNodeRefusesBadConfigs(t *testing.T) {
	peers := []Voter{{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}}
	for _, tc := range []struct {
		name string
		mod  func(*NodeConfig)
	}{
		{"id 0", func(c *NodeConfig) { c.ID = 0 }},
		{"not a peer", func(c *NodeConfig) { c.ID = 3 }},
		{"advertise differs", func(c *NodeConfig) { c.Advertise = "127.0.0.1:9" }},
		{"no data dir", func(c *NodeConfig) { c.DataDir = "" }},
		{"bad service timing", func(c *NodeConfig) { c.Service.SessionTimeout = c.Service.Lease }},
	} {
		cfg := nodeConfig(t, 1, "127.0.0.1:0", peers, t.TempDir())
		tc.mod(&cfg)
		if n, err := StartNode(cfg); err == nil {
			n.Close()
			t.Errorf("%s: StartNode accepted it", tc.name)
		}
	}
}
