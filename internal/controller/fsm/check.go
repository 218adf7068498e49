package fsm

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvariant is what Check and CheckStep report (wrapped with the
// invariant broken and where).
var ErrInvariant = errors.New("fsm: invariant broken")

func broken(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, args...))
}

// Check verifies the invariants of s (the package doc lists them): per
// group, Master == 0 or Master ∈ ISR, Master != 0 only with Epoch ≥ 1;
// ISR sorted, unique and ⊆ the replica ids; replicas sorted by id, ids ≥ 1,
// incarnations in [1, NextIncarnation) and unique in the state;
// NextID > every replica id (and ≥ 1); TransferTo 0 or an ISR member other
// than the master; the map key is the group's name; every string within
// MaxStringBytes; at most MaxGroups groups, MaxReplicas replicas per group
// and MaxAudit audit entries. Groups are checked in name order, so the
// first broken invariant reported is deterministic.
func (s *State) Check() error {
	if s == nil {
		return broken("nil state")
	}
	if len(s.Groups) > MaxGroups {
		return broken("%d groups, more than %d", len(s.Groups), MaxGroups)
	}
	if len(s.Audit) > MaxAudit {
		return broken("%d audit entries, more than %d", len(s.Audit), MaxAudit)
	}
	if s.NextIncarnation < 1 {
		return broken("next incarnation %d", s.NextIncarnation)
	}
	incs := make(map[uint64]struct{})
	for _, name := range sortedNames(s.Groups) {
		if err := s.checkGroup(name, s.Groups[name], incs); err != nil {
			return err
		}
	}
	for i, a := range s.Audit {
		if len(a.Group) > MaxStringBytes || len(a.Reason) > MaxStringBytes {
			return broken("audit entry %d has a string longer than %d bytes", i, MaxStringBytes)
		}
	}
	return nil
}

func (s *State) checkGroup(name string, g *Group, incs map[uint64]struct{}) error {
	if g == nil {
		return broken("group %q is nil", name)
	}
	if name == "" {
		return broken("a group with an empty name")
	}
	if g.Name != name {
		return broken("group %q is stored under %q", g.Name, name)
	}
	if len(g.Name) > MaxStringBytes || len(g.Cluster) > MaxStringBytes {
		return broken("group %q: a name longer than %d bytes", name, MaxStringBytes)
	}
	if len(g.Replicas) > MaxReplicas {
		return broken("group %q: %d replicas, more than %d", name, len(g.Replicas), MaxReplicas)
	}
	if g.NextID < 1 {
		return broken("group %q: next id %d", name, g.NextID)
	}
	for i, r := range g.Replicas {
		if r.ID < 1 || i > 0 && r.ID <= g.Replicas[i-1].ID {
			return broken("group %q: replica ids not ≥ 1, sorted and unique at %d", name, r.ID)
		}
		if r.ID >= g.NextID {
			return broken("group %q: replica %d not below next id %d", name, r.ID, g.NextID)
		}
		if r.Incarnation < 1 || r.Incarnation >= s.NextIncarnation {
			return broken("group %q: replica %d's incarnation %d outside [1, %d)", name, r.ID, r.Incarnation, s.NextIncarnation)
		}
		if _, dup := incs[r.Incarnation]; dup {
			return broken("group %q: replica %d's incarnation %d is not unique", name, r.ID, r.Incarnation)
		}
		incs[r.Incarnation] = struct{}{}
		if len(r.Addr) > MaxStringBytes || len(r.HAAddr) > MaxStringBytes || len(r.GRPCAddr) > MaxStringBytes {
			return broken("group %q: replica %d has an address longer than %d bytes", name, r.ID, MaxStringBytes)
		}
	}
	for i, id := range g.ISR {
		if i > 0 && id <= g.ISR[i-1] {
			return broken("group %q: in-sync set %v not sorted and unique", name, g.ISR)
		}
		if _, ok := g.Replica(id); !ok {
			return broken("group %q: in-sync member %d is not a replica", name, id)
		}
	}
	if g.Master != 0 && !g.InISR(g.Master) {
		return broken("group %q: master %d not in the in-sync set %v", name, g.Master, g.ISR)
	}
	if g.Master != 0 && g.Epoch == 0 {
		return broken("group %q: master %d at epoch 0", name, g.Master)
	}
	if g.TransferTo != 0 && (g.TransferTo == g.Master || !g.InISR(g.TransferTo)) {
		return broken("group %q: transfer target %d is the master or outside the in-sync set %v", name, g.TransferTo, g.ISR)
	}
	return nil
}

// CheckStep verifies the invariants of one step prev → next made by
// applying c (accepted or refused: a refused command leaves next equal to
// prev, which passes). Per group: epochs never decrease, and change only
// by one through an Elect of that group or from 0 through the Register
// that creates it (its first master); the master changes only with the
// epoch; the new master of an Elect was in prev's ISR unless the command
// asked for an unclean election and next's audit trail ends with it (and
// then the ISR is the new master alone); the old master leaves the ISR
// through an election that is not a transfer; ISRVersion never decreases and grows by exactly one when the ISR
// changes, else stays; a replica joins the ISR only through AlterISR (naming
// its current incarnation) or as the newly elected master; an AlterISR or
// Elect changes its group only when its compare-and-set held; an ISR member that stays in the ISR of a group
// with a master keeps its incarnation; NextID never decreases and replicas
// are never removed. Across the state: groups other than c.Group are
// unchanged, groups are never removed, NextIncarnation never decreases,
// and the audit trail changes only by an Elect appending one entry.
func CheckStep(prev, next *State, c Command) error {
	if prev == nil || next == nil {
		return broken("nil state")
	}
	if next.NextIncarnation < prev.NextIncarnation {
		return broken("next incarnation went back from %d to %d", prev.NextIncarnation, next.NextIncarnation)
	}
	for _, name := range sortedNames(prev.Groups) {
		if next.Groups[name] == nil {
			return broken("group %q removed", name)
		}
	}
	for _, name := range sortedNames(next.Groups) {
		p, n := prev.Groups[name], next.Groups[name]
		switch {
		case name != c.Group:
			if !equalGroup(p, n) {
				return broken("group %q changed by a command for group %q", name, c.Group)
			}
		case p == nil:
			if err := checkNewGroup(n, c); err != nil {
				return err
			}
		default:
			if err := checkGroupStep(p, n, c, next); err != nil {
				return err
			}
		}
	}
	if !slices.Equal(prev.Audit, next.Audit) {
		if c.Kind != KindElect || len(next.Audit) == 0 {
			return broken("the audit trail changed by a command of kind %d", c.Kind)
		}
		want := appendAudit(prev.Audit, next.Audit[len(next.Audit)-1])
		if !slices.Equal(want, next.Audit) {
			return broken("the audit trail changed other than by one appended entry")
		}
	}
	return nil
}

func checkNewGroup(n *Group, c Command) error {
	if c.Kind != KindRegister {
		return broken("group %q created by a command of kind %d", n.Name, c.Kind)
	}
	if len(n.Replicas) != 1 || n.Master != n.Replicas[0].ID || !slices.Equal(n.ISR, []int64{n.Master}) || n.Epoch < 1 {
		return broken("new group %q: its first replica is not its master, alone in the in-sync set, at an epoch ≥ 1", n.Name)
	}
	return nil
}

func checkGroupStep(p, n *Group, c Command, next *State) error {
	name := n.Name
	if n.Epoch < p.Epoch {
		return broken("group %q: epoch went back from %d to %d", name, p.Epoch, n.Epoch)
	}
	if n.Master != p.Master && n.Epoch == p.Epoch {
		return broken("group %q: master changed from %d to %d within epoch %d", name, p.Master, n.Master, n.Epoch)
	}
	if n.Epoch != p.Epoch {
		first := c.Kind == KindRegister && p.Epoch == 0 && p.Master == 0
		if !first && (c.Kind != KindElect || n.Epoch != p.Epoch+1) {
			return broken("group %q: epoch %d → %d by a command of kind %d", name, p.Epoch, n.Epoch, c.Kind)
		}
		if c.Kind == KindElect && p.Master != 0 && c.Reason != ReasonTransfer && n.InISR(p.Master) {
			return broken("group %q: the old master %d stayed in the in-sync set through a %s election", name, p.Master, c.Reason)
		}
		if c.Kind == KindElect && !p.InISR(n.Master) {
			if !c.Unclean {
				return broken("group %q: master %d of epoch %d was not in the in-sync set %v and the election was not unclean", name, n.Master, n.Epoch, p.ISR)
			}
			last := len(next.Audit) - 1
			want := Audit{Group: name, Epoch: n.Epoch, Master: n.Master, Reason: c.Reason, Unclean: true}
			if last < 0 || next.Audit[last] != want {
				return broken("group %q: master %d of epoch %d was not in the in-sync set %v and the election is not audited as unclean", name, n.Master, n.Epoch, p.ISR)
			}
			if !slices.Equal(n.ISR, []int64{n.Master}) {
				return broken("group %q: after an unclean election the in-sync set is %v, not the new master alone", name, n.ISR)
			}
		}
	}
	switch {
	case n.ISRVersion < p.ISRVersion:
		return broken("group %q: in-sync set version went back from %d to %d", name, p.ISRVersion, n.ISRVersion)
	case !slices.Equal(n.ISR, p.ISR) && n.ISRVersion != p.ISRVersion+1:
		return broken("group %q: in-sync set %v → %v with version %d → %d", name, p.ISR, n.ISR, p.ISRVersion, n.ISRVersion)
	case slices.Equal(n.ISR, p.ISR) && n.ISRVersion != p.ISRVersion:
		return broken("group %q: version %d → %d with the in-sync set unchanged", name, p.ISRVersion, n.ISRVersion)
	}
	for _, id := range n.ISR {
		if p.InISR(id) {
			if pr, _ := p.Replica(id); p.Master != 0 && id != n.Master {
				if nr, _ := n.Replica(id); nr.Incarnation != pr.Incarnation {
					return broken("group %q: in-sync member %d stayed in the set across a new incarnation", name, id)
				}
			}
			continue
		}
		elected := id == n.Master && n.Epoch != p.Epoch
		if c.Kind != KindAlterISR && !elected {
			return broken("group %q: replica %d joined the in-sync set by a command of kind %d", name, id, c.Kind)
		}
		if r, _ := n.Replica(id); c.Kind == KindAlterISR && id != n.Master && c.Incarnations[id] != r.Incarnation {
			return broken("group %q: replica %d joined the in-sync set at incarnation %d, the command named %d", name, id, r.Incarnation, c.Incarnations[id])
		}
	}
	if !equalGroup(p, n) {
		// The compare-and-set of an accepted command held.
		switch {
		case c.Kind == KindAlterISR && (c.Master != p.Master || c.Epoch != p.Epoch || c.ISRVersion != p.ISRVersion):
			return broken("group %q: an AlterISR for master %d, epoch %d, version %d changed it at master %d, epoch %d, version %d",
				name, c.Master, c.Epoch, c.ISRVersion, p.Master, p.Epoch, p.ISRVersion)
		case c.Kind == KindElect && (c.Epoch != p.Epoch || c.ISRVersion != 0 && c.ISRVersion != p.ISRVersion):
			return broken("group %q: an Elect for epoch %d, version %d changed it at epoch %d, version %d",
				name, c.Epoch, c.ISRVersion, p.Epoch, p.ISRVersion)
		}
	}
	if n.NextID < p.NextID {
		return broken("group %q: next id went back from %d to %d", name, p.NextID, n.NextID)
	}
	for _, r := range p.Replicas {
		if _, ok := n.Replica(r.ID); !ok {
			return broken("group %q: replica %d removed", name, r.ID)
		}
	}
	return nil
}

func equalGroup(a, b *Group) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cluster == b.Cluster && a.Name == b.Name && a.Master == b.Master && a.Epoch == b.Epoch &&
		slices.Equal(a.ISR, b.ISR) && a.ISRVersion == b.ISRVersion && slices.Equal(a.Replicas, b.Replicas) &&
		a.NextID == b.NextID && a.TransferTo == b.TransferTo
}
