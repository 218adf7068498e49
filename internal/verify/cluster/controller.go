package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
)

// A topology with controllers (Topology.Controllers > 0): the first N name
// servers embed a controller voter, and every broker runs with
// --controller, all started the same way: the controller assigns the
// replica ids, elects the masters and moves the role on a failure. Which
// replica is a group's master now is asked of the controller (Master).

// ControllerClient is what the cluster asks the controller: its groups.
// internal/controller/client's Client satisfies it.
type ControllerClient interface {
	Groups(ctx context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error)
	Close() error
}

// controllerCallTimeout bounds one call of the default controller client.
const controllerCallTimeout = 2 * time.Second

// defaultController makes internal/controller/client's Client, dialing
// and signing as sec says.
func defaultController(sec Security) (func(addrs []string) ControllerClient, error) {
	opts, err := sec.controllerOptions(client.Options{Timeout: controllerCallTimeout})
	if err != nil {
		return nil, err
	}
	return func(addrs []string) ControllerClient { return client.New(addrs, opts) }, nil
}

// layoutControllers lays out the voters (in the first t.Controllers name
// servers, already laid out) and the brokers of a topology with
// controllers.
func (c *Cluster) layoutControllers(t Topology, nameServers []string) error {
	var voters []*proc
	for _, p := range c.procs {
		if p.info.Role == RoleNamesrv && len(voters) < t.Controllers {
			voters = append(voters, p)
		}
	}
	var peers []string
	for i, p := range voters {
		addrs, err := freeAddrs(p.info.Name, 1)
		if err != nil {
			return err
		}
		p.info.Controller, p.info.ControllerID = addrs[0], i+1
		peers = append(peers, fmt.Sprintf("%d@%s", i+1, addrs[0]))
	}
	for _, p := range voters {
		p.args = append(p.args,
			"--controller-id", strconv.Itoa(p.info.ControllerID),
			"--controller-listen", p.info.Controller,
			"--controller-peers", strings.Join(peers, ","),
			"--data-dir", p.info.DataDir,
		)
	}
	for _, g := range t.Groups {
		for i := range g.Replicas {
			p, err := c.replicaProc(g, i, nameServers)
			if err != nil {
				return err
			}
			c.add(p)
		}
	}
	return nil
}

// replicaProc lays out replica i of group g in controller mode: its own
// replication listener (served while it is the master), the controllers
// to register with, no --broker-id (the controller assigns it).
func (c *Cluster) replicaProc(g Group, i int, nameServers []string) (*proc, error) {
	name := fmt.Sprintf("%s-%d", g.Name, i)
	addrs, err := freeAddrs(name, 4)
	if err != nil {
		return nil, err
	}
	info := Process{
		Name:     name,
		Role:     RoleReplica,
		DataDir:  filepath.Join(c.opts.Dir, name),
		Log:      filepath.Join(c.opts.Dir, name+".log"),
		Remoting: addrs[0],
		GRPC:     addrs[1],
		HTTP:     addrs[2],
		HA:       addrs[3],
		Group:    g.Name,
		BrokerID: -1,
	}
	dial, err := c.links(name, nameServers, c.opts.NamesrvLink, "name server")
	if err != nil {
		return nil, err
	}
	info.NameServers = strings.Join(dial, ";")
	ctl, err := c.links(name, c.ControllerAddrs(), c.opts.ControllerLink, "controller")
	if err != nil {
		return nil, err
	}
	info.Controllers = strings.Join(ctl, ",")
	if err := os.MkdirAll(info.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	args := []string{"broker",
		"--namesrv", info.NameServers,
		"--controller", info.Controllers,
		"--broker-name", g.Name,
		"--broker-listen", info.Remoting,
		"--grpc-listen", info.GRPC,
		"--http-listen", info.HTTP,
		"--ha-listen", info.HA,
		"--data-dir", info.DataDir,
		"--flush", c.opts.Flush,
		"--replication", c.opts.Replication,
	}
	args = append(args, c.opts.Security.args(c.opts.Dir)...)
	args = append(args, c.opts.Args...)
	return &proc{info: info, args: args}, nil
}

// links maps each address of to through link (when set) for process from.
func (c *Cluster) links(from string, to []string, link func(from, to string) (string, error), what string) ([]string, error) {
	out := slices.Clone(to)
	if link == nil {
		return out, nil
	}
	for i, a := range to {
		l, err := link(from, a)
		if err != nil {
			return nil, fmt.Errorf("cluster: %s link of %s: %w", what, from, err)
		}
		out[i] = l
	}
	return out, nil
}

// ControllerAddrs returns the --controller-listen address of every voter
// (none without controllers).
func (c *Cluster) ControllerAddrs() []string {
	var out []string
	for _, p := range c.procs {
		if p.info.Controller != "" {
			out = append(out, p.info.Controller)
		}
	}
	return out
}

// errNoControllers: a controller query on a topology without them.
var errNoControllers = errors.New("cluster: the topology has no controllers")

// Groups asks the controller for its groups (bounded by ctx).
func (c *Cluster) Groups(ctx context.Context) (*api.GroupsResponse, error) {
	if c.ctl == nil {
		return nil, errNoControllers
	}
	return c.ctl.Groups(ctx, &api.GroupsRequest{})
}

// group is the controller's view of the named group.
func (c *Cluster) group(ctx context.Context, name string) (api.GroupView, *api.GroupsResponse, error) {
	resp, err := c.Groups(ctx)
	if err != nil {
		return api.GroupView{}, nil, err
	}
	for _, g := range resp.Groups {
		if g.Group == name {
			return g, resp, nil
		}
	}
	return api.GroupView{}, resp, fmt.Errorf("cluster: the controller knows no group %q", name)
}

// Master returns the process name of group's master as the controller
// has it, and its epoch.
func (c *Cluster) Master(ctx context.Context, group string) (string, uint32, error) {
	g, _, err := c.group(ctx, group)
	if err != nil {
		return "", 0, err
	}
	if g.Master == 0 {
		return "", g.Epoch, fmt.Errorf("cluster: group %s has no master (epoch %d)", group, g.Epoch)
	}
	for _, r := range g.Replicas {
		if r.ID == g.Master {
			name, err := c.byAddr(group, r.Addr, func(p *Process) string { return p.Remoting })
			return name, g.Epoch, err
		}
	}
	return "", g.Epoch, fmt.Errorf("cluster: group %s's master %d is not among its replicas", group, g.Master)
}

// Slaves returns the process names of group's replicas other than its
// master, as the controller has them.
func (c *Cluster) Slaves(ctx context.Context, group string) ([]string, error) {
	g, _, err := c.group(ctx, group)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range g.Replicas {
		if r.ID == g.Master {
			continue
		}
		name, err := c.byAddr(group, r.Addr, func(p *Process) string { return p.Remoting })
		if err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

// ControllerLeader returns the process name of the name server whose
// voter leads.
func (c *Cluster) ControllerLeader(ctx context.Context) (string, error) {
	resp, err := c.Groups(ctx)
	if err != nil {
		return "", err
	}
	if resp.Leader.Addr == "" {
		return "", errors.New("cluster: the controller names no leader")
	}
	return c.byAddr("", resp.Leader.Addr, func(p *Process) string { return p.Controller })
}

// byAddr finds the process of group (any group when "") whose address
// (of) is addr: equal, or the same port on a loopback or unspecified host
// (a process may advertise 127.0.0.1 or its listen address as given).
func (c *Cluster) byAddr(group, addr string, of func(*Process) string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("cluster: address %q: %w", addr, err)
	}
	var samePort []string
	for _, p := range c.procs {
		a := of(&p.info)
		if a == "" || (group != "" && p.info.Group != group) {
			continue
		}
		if a == addr {
			return p.info.Name, nil
		}
		if _, pp, err := net.SplitHostPort(a); err == nil && pp == port {
			samePort = append(samePort, p.info.Name)
		}
	}
	if len(samePort) == 1 {
		return samePort[0], nil
	}
	return "", fmt.Errorf("cluster: no process (of group %q) at %s", group, addr)
}

// WaitInSync waits until the controller has a master for group and every
// one of its replicas registered, alive and in the in-sync set (bounded by
// ctx): from then on a sync send is acknowledged only once the slaves the
// master needs hold it, and any of them can take over.
func (c *Cluster) WaitInSync(ctx context.Context, group string) error {
	var want int
	for _, g := range c.topo.Groups {
		if g.Name == group {
			want = g.Replicas
		}
	}
	if want == 0 {
		return fmt.Errorf("cluster: no group %q", group)
	}
	interval := 20 * time.Millisecond
	last := "no answer yet"
	for {
		cctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
		g, _, err := c.group(cctx, group)
		cancel()
		if err == nil {
			if why := inSyncGap(g, want); why == "" {
				return nil
			} else {
				last = why
			}
		} else {
			last = err.Error()
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: group %s not in sync: %w (last: %s)", group, ctx.Err(), last)
		case <-t.C:
		}
		interval = min(2*interval, 250*time.Millisecond)
	}
}

// inSyncGap says what keeps g from being whole with want replicas ("":
// nothing).
func inSyncGap(g api.GroupView, want int) string {
	switch {
	case g.Master == 0:
		return fmt.Sprintf("no master (epoch %d)", g.Epoch)
	case len(g.Replicas) < want:
		return fmt.Sprintf("%d of %d replicas registered", len(g.Replicas), want)
	case len(g.ISR) < want:
		return fmt.Sprintf("in-sync set %v of %d replicas", g.ISR, want)
	}
	for _, r := range g.Replicas {
		if !r.Alive {
			return fmt.Sprintf("replica %d not alive", r.ID)
		}
	}
	return ""
}

// HasControllers reports whether the cluster's topology has controllers.
func (c *Cluster) HasControllers() bool { return c != nil && c.topo.Controllers > 0 }

// Topology is the topology the cluster was started with.
func (c *Cluster) Topology() Topology { return c.topo }
