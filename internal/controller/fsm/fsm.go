package fsm

import (
	"fmt"
	"math"
	"slices"
)

// MaxStringBytes bounds every string of the state and of a command (cluster
// and group names, addresses, reasons): Apply refuses longer ones with
// ErrInvalid, so that every state Apply builds can be snapshotted.
const MaxStringBytes = 512

// NewState returns the empty state: no groups, the first incarnation 1.
func NewState() *State {
	return &State{Groups: map[string]*Group{}, NextIncarnation: 1}
}

// Apply applies c deterministically: the result depends only on s and c.
// A refused command changes nothing and returns ErrInvalid, ErrUnknown,
// ErrStale or ErrNotInISR wrapped with a message that says why; its Result
// carries the group as it is when the group exists (so that a caller can
// answer a stale compare-and-set with the current group). Apply never
// panics; it is not safe for concurrent use (the raft FSM serialises it).
// The returned Result owns its slices.
func (s *State) Apply(c Command) (Result, error) {
	if s == nil {
		return Result{}, fmt.Errorf("%w: Apply on a nil state", ErrInvalid)
	}
	old := s.group(c.Group)
	res, err := s.apply(c, old)
	if err != nil {
		res = Result{}
		if old != nil {
			res.Group = *old.clone()
		}
		return res, err
	}
	return res, nil
}

func (s *State) apply(c Command, old *Group) (Result, error) {
	if c.Kind < KindRegister || c.Kind > KindTransfer {
		return Result{}, fmt.Errorf("%w: unknown command kind %d", ErrInvalid, c.Kind)
	}
	if c.Group == "" {
		return Result{}, fmt.Errorf("%w: a command without a group", ErrInvalid)
	}
	if len(c.Group) > MaxStringBytes || len(c.Cluster) > MaxStringBytes {
		return Result{}, fmt.Errorf("%w: group or cluster name longer than %d bytes", ErrInvalid, MaxStringBytes)
	}
	if c.Kind == KindRegister {
		return s.applyRegister(c, old)
	}
	if old == nil {
		return Result{}, fmt.Errorf("%w: no group %q", ErrUnknown, c.Group)
	}
	if c.Cluster != "" && c.Cluster != old.Cluster {
		return Result{}, fmt.Errorf("%w: group %q belongs to cluster %q, not %q", ErrUnknown, c.Group, old.Cluster, c.Cluster)
	}
	var (
		g   *Group
		err error
	)
	switch c.Kind {
	case KindAlterISR:
		g, err = applyAlterISR(c, old)
	case KindElect:
		var a *Audit
		g, a, err = applyElect(c, old)
		if err == nil && a != nil {
			s.Audit = appendAudit(s.Audit, *a)
		}
	case KindUnregister:
		g, err = applyUnregister(c, old)
	case KindTransfer:
		g, err = applyTransfer(c, old)
	}
	if err != nil {
		return Result{}, err
	}
	s.Groups[c.Group] = g
	return Result{Group: *g.clone()}, nil
}

func (s *State) group(name string) *Group {
	if s == nil {
		return nil
	}
	return s.Groups[name]
}

// appendAudit appends a and keeps the last MaxAudit entries in a new slice
// (the old one may be shared with a Clone).
func appendAudit(audit []Audit, a Audit) []Audit {
	out := make([]Audit, 0, min(len(audit)+1, MaxAudit))
	if drop := len(audit) + 1 - MaxAudit; drop > 0 {
		audit = audit[drop:]
	}
	out = append(out, audit...)
	return append(out, a)
}

func checkRegister(c Command) error {
	r := c.Replica
	if r.ID < 0 || r.ID == math.MaxInt64 {
		return fmt.Errorf("%w: replica id %d out of range", ErrInvalid, r.ID)
	}
	if len(r.Addr) > MaxStringBytes || len(r.HAAddr) > MaxStringBytes || len(r.GRPCAddr) > MaxStringBytes {
		return fmt.Errorf("%w: a replica address longer than %d bytes", ErrInvalid, MaxStringBytes)
	}
	return nil
}

func (s *State) applyRegister(c Command, old *Group) (Result, error) {
	if err := checkRegister(c); err != nil {
		return Result{}, err
	}
	inc := max(s.NextIncarnation, 1)
	if inc == math.MaxUint64 {
		return Result{}, fmt.Errorf("%w: incarnations exhausted", ErrInvalid)
	}
	var g *Group
	if old == nil {
		if len(s.Groups) >= MaxGroups {
			return Result{}, fmt.Errorf("%w: already %d groups, the most the controller keeps", ErrInvalid, MaxGroups)
		}
		g = &Group{Cluster: c.Cluster, Name: c.Group, NextID: 1}
	} else {
		if c.Cluster != "" && c.Cluster != old.Cluster {
			return Result{}, fmt.Errorf("%w: group %q belongs to cluster %q, not %q", ErrInvalid, c.Group, old.Cluster, c.Cluster)
		}
		g = old.clone()
	}
	id := c.Replica.ID
	if id == 0 {
		if g.NextID >= math.MaxInt64 || g.NextID < 1 {
			return Result{}, fmt.Errorf("%w: group %q has no replica id left", ErrInvalid, c.Group)
		}
		id = g.NextID
	}
	rep := Replica{ID: id, Addr: c.Replica.Addr, HAAddr: c.Replica.HAAddr, GRPCAddr: c.Replica.GRPCAddr, Incarnation: inc}
	i, found := slices.BinarySearchFunc(g.Replicas, id, func(r Replica, id int64) int { return cmpInt64(r.ID, id) })
	if found {
		g.Replicas[i] = rep
	} else {
		if len(g.Replicas) >= MaxReplicas {
			return Result{}, fmt.Errorf("%w: group %q already has %d replicas, the most it may have", ErrInvalid, c.Group, MaxReplicas)
		}
		g.Replicas = slices.Insert(g.Replicas, i, rep)
	}
	if id >= g.NextID {
		g.NextID = id + 1
	}
	switch {
	case g.Epoch == 0 && g.Master == 0:
		// The first replica of a fresh group: its master.
		if c.LastEpoch == math.MaxUint32 {
			return Result{}, fmt.Errorf("%w: last epoch %d leaves no next epoch", ErrInvalid, c.LastEpoch)
		}
		g.Master, g.Epoch = id, c.LastEpoch+1
		if err := setISR(g, []int64{id}); err != nil {
			return Result{}, err
		}
	case id == g.Master:
		// The master restarted: it stays the master of its epoch.
	case g.Master != 0 && g.InISR(id):
		// A restarted member may have lost its unsynced tail: it rejoins
		// through the master's AlterISR once caught up. (With no master the
		// ISR is what may still be elected, so it stays.)
		if err := setISR(g, without(g.ISR, id)); err != nil {
			return Result{}, err
		}
	}
	if err := s.checkSize(g); err != nil {
		return Result{}, err
	}
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	s.Groups[c.Group] = g
	s.NextIncarnation = inc + 1
	return Result{Group: *g.clone(), ReplicaID: id, Incarnation: inc}, nil
}

func applyAlterISR(c Command, old *Group) (*Group, error) {
	if len(c.ISR) > MaxReplicas {
		return nil, fmt.Errorf("%w: an in-sync set of %d members, more than %d", ErrInvalid, len(c.ISR), MaxReplicas)
	}
	isr := slices.Clone(c.ISR)
	slices.Sort(isr)
	isr = slices.Compact(isr)
	if c.Master == 0 || !slices.Contains(isr, c.Master) {
		return nil, fmt.Errorf("%w: the new in-sync set %v lacks the master %d", ErrInvalid, isr, c.Master)
	}
	if c.Master != old.Master || c.Epoch != old.Epoch || c.ISRVersion != old.ISRVersion {
		return nil, fmt.Errorf("%w: group %q has master %d of epoch %d at in-sync set version %d; the command expects master %d, epoch %d, version %d",
			ErrStale, old.Name, old.Master, old.Epoch, old.ISRVersion, c.Master, c.Epoch, c.ISRVersion)
	}
	for _, id := range isr {
		rep, ok := old.Replica(id)
		if !ok {
			return nil, fmt.Errorf("%w: group %q has no replica %d", ErrUnknown, old.Name, id)
		}
		inc, given := c.Incarnations[id]
		if id == c.Master && !given {
			continue
		}
		if inc != rep.Incarnation {
			return nil, fmt.Errorf("%w: replica %d of group %q is at incarnation %d, the command names %d", ErrStale, id, old.Name, rep.Incarnation, inc)
		}
	}
	g := old.clone()
	if err := setISR(g, isr); err != nil {
		return nil, err
	}
	return g, nil
}

func validReason(r string) bool {
	switch r {
	case ReasonMasterLost, ReasonTransfer, ReasonOperator, ReasonOffline:
		return true
	}
	return false
}

func applyElect(c Command, old *Group) (*Group, *Audit, error) {
	if c.NewMaster <= 0 {
		return nil, nil, fmt.Errorf("%w: election of replica %d", ErrInvalid, c.NewMaster)
	}
	if !validReason(c.Reason) {
		return nil, nil, fmt.Errorf("%w: unknown election reason %q", ErrInvalid, c.Reason)
	}
	if c.Reason == ReasonTransfer && c.Unclean {
		return nil, nil, fmt.Errorf("%w: a transfer cannot be unclean", ErrInvalid)
	}
	if c.Epoch != old.Epoch || c.ISRVersion != 0 && c.ISRVersion != old.ISRVersion || c.Master != 0 && c.Master != old.Master {
		return nil, nil, fmt.Errorf("%w: group %q has master %d of epoch %d at in-sync set version %d; the election expects epoch %d, master %d and version %d (master and version 0: any)",
			ErrStale, old.Name, old.Master, old.Epoch, old.ISRVersion, c.Epoch, c.Master, c.ISRVersion)
	}
	if c.NewMaster == old.Master {
		return nil, nil, fmt.Errorf("%w: replica %d is already the master of group %q", ErrInvalid, c.NewMaster, old.Name)
	}
	switch c.Reason {
	case ReasonMasterLost, ReasonTransfer:
		if old.Master == 0 {
			return nil, nil, fmt.Errorf("%w: group %q has no master to replace (%s)", ErrStale, old.Name, c.Reason)
		}
	case ReasonOffline:
		if old.Master != 0 {
			return nil, nil, fmt.Errorf("%w: group %q is not offline: its master is %d", ErrStale, old.Name, old.Master)
		}
	}
	if c.Reason == ReasonTransfer && old.TransferTo != c.NewMaster {
		return nil, nil, fmt.Errorf("%w: group %q transfers to %d, not %d", ErrStale, old.Name, old.TransferTo, c.NewMaster)
	}
	rep, ok := old.Replica(c.NewMaster)
	if !ok {
		return nil, nil, fmt.Errorf("%w: group %q has no replica %d", ErrUnknown, old.Name, c.NewMaster)
	}
	if c.Incarnation != 0 && c.Incarnation != rep.Incarnation {
		return nil, nil, fmt.Errorf("%w: replica %d of group %q is at incarnation %d, the election names %d", ErrStale, c.NewMaster, old.Name, rep.Incarnation, c.Incarnation)
	}
	clean := old.InISR(c.NewMaster)
	if !clean && !c.Unclean {
		return nil, nil, fmt.Errorf("%w: replica %d is not in group %q's in-sync set %v", ErrNotInISR, c.NewMaster, old.Name, old.ISR)
	}
	if old.Epoch == math.MaxUint32 {
		return nil, nil, fmt.Errorf("%w: group %q has no epoch left", ErrInvalid, old.Name)
	}
	g := old.clone()
	var isr []int64
	switch {
	case !clean:
		// The others' logs are no longer known to be prefixes of the new
		// master's: they rejoin through AlterISR (Kafka's unclean election).
		isr = []int64{c.NewMaster}
	case c.Reason == ReasonTransfer:
		isr = g.ISR
	default:
		isr = without(g.ISR, old.Master)
	}
	if err := setISR(g, isr); err != nil {
		return nil, nil, err
	}
	g.Master, g.Epoch, g.TransferTo = c.NewMaster, old.Epoch+1, 0
	var a *Audit
	if !clean || c.Reason == ReasonOperator {
		a = &Audit{Group: g.Name, Epoch: g.Epoch, Master: g.Master, Reason: c.Reason, Unclean: !clean}
	}
	return g, a, nil
}

func applyUnregister(c Command, old *Group) (*Group, error) {
	if c.ID <= 0 {
		return nil, fmt.Errorf("%w: unregister of replica %d", ErrInvalid, c.ID)
	}
	rep, ok := old.Replica(c.ID)
	if !ok {
		return nil, fmt.Errorf("%w: group %q has no replica %d", ErrUnknown, old.Name, c.ID)
	}
	if c.Incarnation != rep.Incarnation {
		return nil, fmt.Errorf("%w: replica %d of group %q is at incarnation %d, the command names %d", ErrStale, c.ID, old.Name, rep.Incarnation, c.Incarnation)
	}
	if c.ID == old.Master {
		return nil, fmt.Errorf("%w: replica %d is the master of group %q: transfer first", ErrInvalid, c.ID, old.Name)
	}
	g := old.clone()
	if err := setISR(g, without(g.ISR, c.ID)); err != nil {
		return nil, err
	}
	return g, nil
}

func applyTransfer(c Command, old *Group) (*Group, error) {
	if c.NewMaster < 0 {
		return nil, fmt.Errorf("%w: transfer to replica %d", ErrInvalid, c.NewMaster)
	}
	if old.Master == 0 {
		return nil, fmt.Errorf("%w: group %q has no master to transfer from", ErrInvalid, old.Name)
	}
	if c.Epoch != 0 && c.Epoch != old.Epoch {
		return nil, fmt.Errorf("%w: group %q is at epoch %d, the transfer expects %d", ErrStale, old.Name, old.Epoch, c.Epoch)
	}
	g := old.clone()
	if c.NewMaster == 0 {
		g.TransferTo = 0
		return g, nil
	}
	if c.NewMaster == old.Master {
		return nil, fmt.Errorf("%w: replica %d is already the master of group %q", ErrInvalid, c.NewMaster, old.Name)
	}
	if _, ok := old.Replica(c.NewMaster); !ok {
		return nil, fmt.Errorf("%w: group %q has no replica %d", ErrUnknown, old.Name, c.NewMaster)
	}
	if !old.InISR(c.NewMaster) {
		return nil, fmt.Errorf("%w: replica %d is not in group %q's in-sync set %v", ErrNotInISR, c.NewMaster, old.Name, old.ISR)
	}
	g.TransferTo = c.NewMaster
	return g, nil
}

// setISR replaces g's in-sync set by isr (sorted, unique), counts the
// change in ISRVersion and cancels a transfer to a replica that left it.
func setISR(g *Group, isr []int64) error {
	if slices.Equal(isr, g.ISR) {
		return nil
	}
	if g.ISRVersion == math.MaxUint64 {
		return fmt.Errorf("%w: group %q has no in-sync set version left", ErrInvalid, g.Name)
	}
	g.ISR = nil // an empty set is nil, as Restore decodes it
	if len(isr) > 0 {
		g.ISR = slices.Clone(isr)
	}
	g.ISRVersion++
	if g.TransferTo != 0 && !g.InISR(g.TransferTo) {
		g.TransferTo = 0
	}
	return nil
}

// without returns a new slice of ids without id.
func without(ids []int64, id int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Clone returns a deep copy of s: nothing is shared with s.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	out := &State{NextIncarnation: s.NextIncarnation, Audit: slices.Clone(s.Audit)}
	if s.Groups != nil {
		out.Groups = make(map[string]*Group, len(s.Groups))
		for name, g := range s.Groups {
			out.Groups[name] = g.clone()
		}
	}
	return out
}

// clone deep-copies g (nil stays nil).
func (g *Group) clone() *Group {
	if g == nil {
		return nil
	}
	c := *g
	c.ISR = slices.Clone(g.ISR)
	c.Replicas = slices.Clone(g.Replicas)
	return &c
}

// Replica returns the registered replica id of g.
func (g *Group) Replica(id int64) (Replica, bool) {
	if g == nil {
		return Replica{}, false
	}
	for _, r := range g.Replicas {
		if r.ID == id {
			return r, true
		}
	}
	return Replica{}, false
}

// InISR reports whether id is in g's in-sync set.
func (g *Group) InISR(id int64) bool {
	return g != nil && slices.Contains(g.ISR, id)
}
