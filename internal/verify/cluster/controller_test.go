package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
)

// fakeCtl answers Groups with what the test sets.
type fakeCtl struct {
	mu    sync.Mutex
	resp  api.GroupsResponse
	calls int
	// ready, when set, is the response from the given call on (earlier
	// calls get resp).
	ready     *api.GroupsResponse
	readyFrom int
}

func (f *fakeCtl) Groups(context.Context, *api.GroupsRequest) (*api.GroupsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.ready != nil && f.calls >= f.readyFrom {
		r := *f.ready
		return &r, nil
	}
	r := f.resp
	return &r, nil
}

func (f *fakeCtl) Close() error { return nil }

// laidOut lays out top without starting anything.
func laidOut(t *testing.T, top Topology, o Options) *Cluster {
	t.Helper()
	o.Dir, o.Flush, o.Replication = t.TempDir(), "sync", "sync"
	c := &Cluster{opts: o, topo: top, byName: map[string]*proc{}}
	if err := c.layout(top); err != nil {
		t.Fatal(err)
	}
	return c
}

func argValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

func TestLayoutWithControllers(t *testing.T) {
	top, err := ParseTopology("replicas=3+2,namesrv=3,controllers=3")
	if err != nil {
		t.Fatal(err)
	}
	var ctlLinks []string
	c := laidOut(t, top, Options{ControllerLink: func(from, to string) (string, error) {
		ctlLinks = append(ctlLinks, from+">"+to)
		return "127.0.0.1:1" + to[strings.LastIndex(to, ":")+1:], nil
	}})
	var names []string
	for _, p := range c.procs {
		names = append(names, p.info.Name+"/"+p.info.Role)
	}
	want := []string{"namesrv-0/namesrv", "namesrv-1/namesrv", "namesrv-2/namesrv",
		"broker-a-0/replica", "broker-a-1/replica", "broker-a-2/replica", "broker-b-0/replica", "broker-b-1/replica"}
	if !slices.Equal(names, want) {
		t.Fatalf("processes %v, want %v", names, want)
	}
	voters := c.ControllerAddrs()
	if len(voters) != 3 {
		t.Fatalf("voters %v", voters)
	}
	var peers string
	for i, p := range c.procs[:3] {
		if p.info.ControllerID != i+1 || p.info.Controller != voters[i] {
			t.Errorf("%s: voter %d at %s", p.info.Name, p.info.ControllerID, p.info.Controller)
		}
		got, _ := argValue(p.args, "--controller-peers")
		if i == 0 {
			peers = got
		} else if got != peers {
			t.Errorf("%s: peers %q, namesrv-0 has %q (a raft cluster bootstraps from one list)", p.info.Name, got, peers)
		}
		if id, _ := argValue(p.args, "--controller-id"); id != string(rune('1'+i)) {
			t.Errorf("%s: --controller-id %q", p.info.Name, id)
		}
		if l, _ := argValue(p.args, "--controller-listen"); l != voters[i] {
			t.Errorf("%s: --controller-listen %q", p.info.Name, l)
		}
		if _, ok := argValue(p.args, "--data-dir"); !ok {
			t.Errorf("%s: no --data-dir for the raft state", p.info.Name)
		}
	}
	if peers != "1@"+voters[0]+",2@"+voters[1]+",3@"+voters[2] {
		t.Errorf("peers %q", peers)
	}
	for _, p := range c.procs[3:] {
		a := p.args
		if slices.Contains(a, "--broker-id") || slices.Contains(a, "--ha-master") {
			t.Errorf("%s: a replica in controller mode got a broker id or master: %q", p.info.Name, a)
		}
		if ha, _ := argValue(a, "--ha-listen"); ha == "" || ha != p.info.HA {
			t.Errorf("%s: --ha-listen %q (HA %q)", p.info.Name, ha, p.info.HA)
		}
		ctl, _ := argValue(a, "--controller")
		if ctl == "" || ctl != p.info.Controllers || len(strings.Split(ctl, ",")) != 3 || strings.Contains(ctl, voters[0]) {
			t.Errorf("%s: --controller %q, want the 3 proxy links", p.info.Name, ctl)
		}
		if p.info.BrokerID != -1 {
			t.Errorf("%s: broker id %d before the controller assigns one", p.info.Name, p.info.BrokerID)
		}
	}
	if len(ctlLinks) != 5*3 {
		t.Errorf("%d controller links, want 15: %v", len(ctlLinks), ctlLinks)
	}
}

func groupsOf(c *Cluster, master int64, isr []int64, alive bool) api.GroupsResponse {
	var reps []api.ReplicaView
	for _, p := range c.procs {
		if p.info.Group == "broker-a" {
			reps = append(reps, api.ReplicaView{ID: int64(len(reps) + 1), Addr: p.info.Remoting, Alive: alive})
		}
	}
	return api.GroupsResponse{
		Leader: api.ControllerView{ID: 2, Addr: c.procs[1].info.Controller, Leader: true},
		Groups: []api.GroupView{{Group: "broker-a", Master: master, Epoch: 3, ISR: isr, Replicas: reps}},
	}
}

func TestMasterSlavesAndLeaderFromTheController(t *testing.T) {
	top, _ := ParseTopology("replicas=3,namesrv=3,controllers=3")
	c := laidOut(t, top, Options{})
	f := &fakeCtl{}
	c.ctl = f
	f.resp = groupsOf(c, 2, []int64{1, 2, 3}, true)
	ctx := context.Background()
	m, epoch, err := c.Master(ctx, "broker-a")
	if err != nil || m != "broker-a-1" || epoch != 3 {
		t.Errorf("Master = %q, %d, %v; want broker-a-1 at epoch 3", m, epoch, err)
	}
	s, err := c.Slaves(ctx, "broker-a")
	if err != nil || !slices.Equal(s, []string{"broker-a-0", "broker-a-2"}) {
		t.Errorf("Slaves = %v, %v", s, err)
	}
	l, err := c.ControllerLeader(ctx)
	if err != nil || l != "namesrv-1" {
		t.Errorf("ControllerLeader = %q, %v; want namesrv-1", l, err)
	}
	f.resp = groupsOf(c, 0, []int64{1}, true)
	if _, _, err := c.Master(ctx, "broker-a"); err == nil || !strings.Contains(err.Error(), "no master") {
		t.Errorf("offline group: %v", err)
	}
	if _, _, err := c.Master(ctx, "broker-z"); err == nil {
		t.Error("unknown group gave a master")
	}
	f.resp.Leader = api.ControllerView{}
	if _, err := c.ControllerLeader(ctx); err == nil {
		t.Error("no leader gave one")
	}
	plain := laidOut(t, Replicated(1, 2, 1), Options{})
	if _, err := plain.Groups(ctx); err != errNoControllers {
		t.Errorf("Groups without controllers: %v", err)
	}
}

func TestWaitInSyncWaitsForTheWholeSet(t *testing.T) {
	top, _ := ParseTopology("replicas=3,namesrv=3,controllers=3")
	c := laidOut(t, top, Options{})
	whole := groupsOf(c, 1, []int64{1, 2, 3}, true)
	f := &fakeCtl{resp: groupsOf(c, 1, []int64{1, 2}, true), ready: &whole, readyFrom: 3}
	c.ctl = f
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitInSync(ctx, "broker-a"); err != nil {
		t.Fatal(err)
	}
	if f.calls < 3 {
		t.Errorf("returned after %d calls, before the set was whole", f.calls)
	}
	for _, tc := range []struct {
		g    api.GroupsResponse
		part string
	}{
		{groupsOf(c, 0, []int64{1, 2, 3}, true), "no master"},
		{groupsOf(c, 1, []int64{1, 2}, true), "in-sync set [1 2] of 3"},
		{groupsOf(c, 1, []int64{1, 2, 3}, false), "not alive"},
	} {
		c.ctl = &fakeCtl{resp: tc.g}
		sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := c.WaitInSync(sctx, "broker-a")
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.part) {
			t.Errorf("WaitInSync = %v, want %q", err, tc.part)
		}
	}
}
