package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
)

// Controller is what the controller commands (petrel cluster groups,
// elect-master, transfer) ask of the controller: the calls of
// internal/controller/client's Client, which satisfies it.
type Controller interface {
	Groups(ctx context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error)
	Elect(ctx context.Context, req *api.ElectRequest) (*api.GroupView, error)
	Transfer(ctx context.Context, req *api.TransferRequest) (*api.GroupView, error)
}

// ParseControllers splits a --controller value: host:port addresses
// separated by commas or semicolons. None, or one that is not host:port,
// is an ErrUsage error.
func ParseControllers(s string) ([]string, error) {
	addrs := ParseNameServers(s)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no controller address; pass --controller host:port,... (the --controller-listen addresses of the controller voters) or set PETREL_CONTROLLER", ErrUsage)
	}
	for _, a := range addrs {
		if _, port, ok := strings.Cut(a, ":"); !ok || port == "" {
			return nil, fmt.Errorf("%w: controller %q is not host:port", ErrUsage, a)
		}
	}
	return addrs, nil
}

// ClusterGroups prints the controller's groups (only group when it is not
// empty): per group its master (replica id and address), epoch, in-sync
// set and its version, every replica (id, alive, log end) and the
// controller leader; -o json prints the controller's answer as it is.
func (c *CLI) ClusterGroups(ctx context.Context, ctl Controller, group string) error {
	resp, err := c.groups(ctx, ctl, group)
	if err != nil {
		return err
	}
	if group != "" && len(resp.Groups) == 0 {
		return fmt.Errorf("%w: the controller knows no group %q; `petrel cluster groups` lists the groups", ErrNotFound, group)
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	if c.json() {
		if resp.Groups == nil {
			resp.Groups = []api.GroupView{}
		}
		return c.writeJSON(resp)
	}
	out := c.cfg.Out
	if _, err := fmt.Fprintf(out, "controller leader: %s; voters: %s\n\n", leaderText(resp.Leader), votersText(resp.Controllers)); err != nil {
		return err
	}
	if len(resp.Groups) == 0 {
		_, err := fmt.Fprintln(out, "no broker group has registered with the controller; start brokers with --controller")
		return err
	}
	t := newTable("GROUP", "MASTER", "EPOCH", "ISR", "ISR VERSION", "TRANSFER TO", "REPLICAS (id alive leo)")
	for _, g := range resp.Groups {
		transfer := ""
		if g.TransferTo != 0 {
			transfer = strconv.FormatInt(g.TransferTo, 10)
		}
		t.add(g.Group, masterText(g), g.Epoch, idsText(g.ISR), g.ISRVersion, transfer, replicasText(g))
	}
	return t.write(out)
}

// groups asks the controller for the groups, with the CLI's timeout.
func (c *CLI) groups(ctx context.Context, ctl Controller, group string) (*api.GroupsResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := ctl.Groups(cctx, &api.GroupsRequest{Group: group})
	if err != nil {
		if group != "" && errors.Is(err, client.ErrRefused) {
			// The one reason to refuse a query of one group.
			return nil, fmt.Errorf("%w: group %q: %w; `petrel cluster groups` lists the groups", ErrNotFound, group, err)
		}
		return nil, controllerErr("groups", err)
	}
	return resp, nil
}

// ElectMaster asks the controller to elect a new master of group now:
// replica id (0: the best live in-sync replica), outside the in-sync set
// only with unclean (and a controller that allows it). It prints the
// group's new master and epoch.
func (c *CLI) ElectMaster(ctx context.Context, ctl Controller, group string, id int64, unclean bool) error {
	if group == "" {
		return fmt.Errorf("%w: --group is required (`petrel cluster groups` lists the groups)", ErrUsage)
	}
	if id < 0 {
		return fmt.Errorf("%w: --broker %d: a replica id is 1 or more (0: the best in-sync replica)", ErrUsage, id)
	}
	before, err := c.oneGroup(ctx, ctl, group)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout+ElectionWait)
	defer cancel()
	g, err := ctl.Elect(cctx, &api.ElectRequest{Group: group, ReplicaID: id, Unclean: unclean})
	if err != nil {
		return controllerErr("elect-master", err)
	}
	return c.printElected(before, *g)
}

// ElectionWait is how much longer than one answer an election may take:
// the controller waits out the old master's lease (3.35 s by default)
// before it elects another.
const ElectionWait = 5 * time.Second

// TransferPoll is how often Transfer asks the controller whether the
// master has handed over.
var TransferPoll = 200 * time.Millisecond

// Transfer asks the master of group to hand over to replica id (0: the
// best live in-sync replica) gracefully: it stops acknowledging, waits for
// the target to hold its whole log and resigns. Transfer waits until the
// group's epoch changes, at most wait, and prints the new master.
func (c *CLI) Transfer(ctx context.Context, ctl Controller, group string, id int64, wait time.Duration) error {
	if group == "" {
		return fmt.Errorf("%w: --group is required (`petrel cluster groups` lists the groups)", ErrUsage)
	}
	if id < 0 {
		return fmt.Errorf("%w: --broker %d: a replica id is 1 or more (0: the best in-sync replica)", ErrUsage, id)
	}
	if wait <= 0 {
		return fmt.Errorf("%w: --wait %v must be positive", ErrUsage, wait)
	}
	before, err := c.oneGroup(ctx, ctl, group)
	if err != nil {
		return err
	}
	if before.Master == 0 {
		return fmt.Errorf("%w: group %s has no master to transfer from; use `petrel cluster elect-master --group %s`", ErrRefused, group, group)
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	asked, err := ctl.Transfer(cctx, &api.TransferRequest{Group: group, ReplicaID: id})
	cancel()
	if err != nil {
		return controllerErr("transfer", err)
	}
	if asked.Epoch > before.Epoch {
		return c.printElected(before, *asked)
	}
	deadline := c.cfg.Now().Add(wait)
	tick := time.NewTicker(TransferPoll)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("transfer of %s: %w", group, ctx.Err())
		case <-tick.C:
		}
		g, err := c.oneGroup(ctx, ctl, group)
		switch {
		case err != nil:
			lastErr = err // a controller election in between: ask again
		case g.Epoch > before.Epoch:
			return c.printElected(before, g)
		}
		if !c.cfg.Now().Before(deadline) {
			why := fmt.Sprintf("the master (replica %d) has not resigned to replica %d", before.Master, asked.TransferTo)
			if lastErr != nil {
				why += fmt.Sprintf(" (last answer: %v)", lastErr)
			}
			return fmt.Errorf("%w: transfer of %s not done within %v: %s; the master hands over once the target holds its whole log (within 5 s), else it keeps the role; check `petrel cluster groups --group %s` and the master's log", ErrRefused, group, wait, why, group)
		}
	}
}

// oneGroup is the controller's view of group.
func (c *CLI) oneGroup(ctx context.Context, ctl Controller, group string) (api.GroupView, error) {
	resp, err := c.groups(ctx, ctl, group)
	if err != nil {
		return api.GroupView{}, err
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g, nil
		}
	}
	return api.GroupView{}, fmt.Errorf("%w: the controller knows no group %q; `petrel cluster groups` lists the groups", ErrNotFound, group)
}

// printElected prints the outcome of an election: the group's new master
// and epoch, and the previous ones.
func (c *CLI) printElected(before, after api.GroupView) error {
	if c.json() {
		return c.writeJSON(struct {
			Before api.GroupView `json:"before"`
			After  api.GroupView `json:"after"`
		}{before, after})
	}
	_, err := fmt.Fprintf(c.cfg.Out, "%s: master %s at epoch %d (was %s at epoch %d); in-sync set %s\n",
		after.Group, masterText(after), after.Epoch, masterText(before), before.Epoch, idsText(after.ISR))
	return err
}

// controllerErr wraps an error of a controller call (internal/controller/
// client's) for the user.
func controllerErr(what string, err error) error {
	switch {
	case errors.Is(err, ErrUsage), errors.Is(err, ErrNotFound), errors.Is(err, ErrRefused), errors.Is(err, ErrUnreachable):
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, client.ErrNoLeader):
		return fmt.Errorf("%w: %s: %w; check that the --controller addresses are the voters' --controller-listen and that a majority of them runs", ErrUnreachable, what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: no controller answered in time; check that the --controller addresses are the voters' --controller-listen and that a majority of them runs (raise --timeout on a slow network): %w", ErrUnreachable, what, err)
	case errors.Is(err, client.ErrRefused), errors.Is(err, client.ErrStale):
		return fmt.Errorf("%w: %s: the controller refused: %w", ErrRefused, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrRefused, what, err)
}

func leaderText(l api.ControllerView) string {
	if l.Addr == "" {
		return "none (no majority of the voters is up, or an election is under way)"
	}
	return fmt.Sprintf("%d (%s)", l.ID, l.Addr)
}

func votersText(vs []api.ControllerView) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%d@%s", v.ID, v.Addr)
	}
	return strings.Join(parts, ",")
}

// masterText is "id (addr)", or "none" for an offline group.
func masterText(g api.GroupView) string {
	if g.Master == 0 {
		return "none"
	}
	for _, r := range g.Replicas {
		if r.ID == g.Master {
			return fmt.Sprintf("%d (%s)", r.ID, r.Addr)
		}
	}
	return strconv.FormatInt(g.Master, 10)
}

func idsText(ids []int64) string {
	if len(ids) == 0 {
		return "{}"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// replicasText is every replica as "id alive|dead leo", comma-separated.
func replicasText(g api.GroupView) string {
	parts := make([]string, len(g.Replicas))
	for i, r := range g.Replicas {
		alive := "dead"
		if r.Alive {
			alive = "alive"
		}
		parts[i] = fmt.Sprintf("%d %s %d", r.ID, alive, r.LEO)
	}
	return strings.Join(parts, ", ")
}
