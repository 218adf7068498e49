package fsm

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// applyCase is one row of a per-kind table: the command built from the
// starting state, the refusal expected (nil: accepted) and, when accepted,
// what must hold afterwards.
type applyCase struct {
	name  string
	state func(testing.TB) *State // nil: fixture
	cmd   func(s *State) Command
	err   error
	check func(t *testing.T, s *State, res Result)
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := tc.state
			if mk == nil {
				mk = fixture
			}
			s := mk(t)
			c := tc.cmd(s)
			prev := s.Clone()
			res, err := s.Apply(c)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Apply: %v, want %v", err, tc.err)
				}
				if !reflect.DeepEqual(prev, s) {
					t.Fatalf("a refused command changed the state:\n%+v\nto\n%+v", prev, s)
				}
				if g := prev.Groups[c.Group]; g != nil && !equalGroup(g, &res.Group) {
					t.Fatalf("refusal Result.Group %+v, want the current group %+v", res.Group, *g)
				}
				if res.ReplicaID != 0 || res.Incarnation != 0 {
					t.Fatalf("refusal Result %+v carries an identity", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := CheckStep(prev, s, c); err != nil {
				t.Fatalf("CheckStep: %v", err)
			}
			if g := s.Groups[c.Group]; !equalGroup(g, &res.Group) {
				t.Fatalf("Result.Group %+v, want the group after the command %+v", res.Group, *g)
			}
			if tc.check != nil {
				tc.check(t, s, res)
			}
		})
	}
}

func wantGroup(t *testing.T, g *Group, master int64, epoch uint32, isr []int64, version uint64) {
	t.Helper()
	if g.Master != master || g.Epoch != epoch || !slices.Equal(g.ISR, isr) || g.ISRVersion != version {
		t.Fatalf("group: master %d epoch %d ISR %v version %d; want master %d epoch %d ISR %v version %d",
			g.Master, g.Epoch, g.ISR, g.ISRVersion, master, epoch, isr, version)
	}
}

func withTransfer(to int64) func(testing.TB) *State {
	return func(t testing.TB) *State {
		s := fixture(t)
		mustApply(t, s, Command{Kind: KindTransfer, Group: "g", NewMaster: to})
		return s
	}
}

func register(id int64) func(*State) Command {
	return func(*State) Command {
		return Command{Kind: KindRegister, Cluster: "c", Group: "g", Replica: Replica{ID: id, Addr: "new:1", HAAddr: "new:2", GRPCAddr: "new:3"}}
	}
}

func TestApplyRegister(t *testing.T) {
	long := strings.Repeat("x", MaxStringBytes+1)
	runApplyCases(t, []applyCase{
		{name: "first replica of a fresh group becomes master at LastEpoch+1",
			state: func(testing.TB) *State { return NewState() },
			cmd: func(*State) Command {
				return Command{Kind: KindRegister, Cluster: "c", Group: "g", Replica: Replica{Addr: "a:1"}, LastEpoch: 7}
			},
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 1, 8, []int64{1}, 1)
				if res.ReplicaID != 1 || res.Incarnation != 1 || g.NextID != 2 || s.NextIncarnation != 2 || g.Cluster != "c" {
					t.Fatalf("result %+v, group %+v, next incarnation %d", res, g, s.NextIncarnation)
				}
			}},
		{name: "a fresh group's first replica with a kept id",
			state: func(testing.TB) *State { return NewState() },
			cmd: func(*State) Command {
				return Command{Kind: KindRegister, Group: "g", Replica: Replica{ID: 5}}
			},
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 5, 1, []int64{5}, 1)
				if res.ReplicaID != 5 || g.NextID != 6 {
					t.Fatalf("result %+v, next id %d", res, g.NextID)
				}
			}},
		{name: "id 0 is assigned NextID, outside the ISR", cmd: register(0),
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 1, 1, []int64{1, 2, 3}, 2)
				r, ok := g.Replica(5)
				if res.ReplicaID != 5 || res.Incarnation != 5 || !ok || r.Incarnation != 5 || r.Addr != "new:1" || g.NextID != 6 {
					t.Fatalf("result %+v, replica %+v %v, next id %d", res, r, ok, g.NextID)
				}
			}},
		{name: "an unknown kept id is added and NextID moves past it", cmd: register(10),
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				if _, ok := g.Replica(10); !ok || res.ReplicaID != 10 || g.NextID != 11 || g.InISR(10) {
					t.Fatalf("result %+v, group %+v", res, g)
				}
			}},
		{name: "a restarted ISR member leaves the ISR with a new incarnation and addresses", cmd: register(2),
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 1, 1, []int64{1, 3}, 3)
				r, _ := g.Replica(2)
				if res.Incarnation != 5 || r.Incarnation != 5 || r.HAAddr != "new:2" || r.GRPCAddr != "new:3" || g.NextID != 5 {
					t.Fatalf("result %+v, replica %+v, next id %d", res, r, g.NextID)
				}
			}},
		{name: "the restarted master stays master at its epoch", cmd: register(1),
			check: func(t *testing.T, s *State, res Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 1, 1, []int64{1, 2, 3}, 2)
				if r, _ := g.Replica(1); r.Incarnation != 5 || res.Incarnation != 5 {
					t.Fatalf("master's incarnation %d, result %+v", r.Incarnation, res)
				}
			}},
		{name: "a restarted non-ISR replica changes no set", cmd: register(4),
			check: func(t *testing.T, s *State, res Result) {
				wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2, 3}, 2)
			}},
		{name: "a restarted transfer target cancels the transfer", state: withTransfer(2), cmd: register(2),
			check: func(t *testing.T, s *State, res Result) {
				if g := s.Groups["g"]; g.TransferTo != 0 || g.InISR(2) {
					t.Fatalf("group %+v", g)
				}
			}},
		{name: "an ISR member of an offline group stays electable", state: offline, cmd: register(2),
			check: func(t *testing.T, s *State, res Result) {
				wantGroup(t, s.Groups["g"], 0, 3, []int64{2, 3}, 5)
			}},
		{name: "a second group", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Cluster: "c", Group: "h"}
		},
			check: func(t *testing.T, s *State, res Result) {
				wantGroup(t, s.Groups["h"], 1, 1, []int64{1}, 1)
				if res.Incarnation != 5 || len(s.Groups) != 2 {
					t.Fatalf("result %+v, %d groups", res, len(s.Groups))
				}
			}},
		{name: "an empty cluster name matches any", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: "g"}
		}},
		{name: "zero state", state: func(testing.TB) *State { return &State{} },
			cmd: func(*State) Command { return Command{Kind: KindRegister, Group: "g"} },
			check: func(t *testing.T, s *State, res Result) {
				if res.Incarnation != 1 || s.NextIncarnation != 2 {
					t.Fatalf("result %+v, next incarnation %d", res, s.NextIncarnation)
				}
			}},

		{name: "refused: no group", cmd: func(*State) Command { return Command{Kind: KindRegister} }, err: ErrInvalid},
		{name: "refused: negative id", cmd: register(-1), err: ErrInvalid},
		{name: "refused: id without a next", cmd: register(math.MaxInt64), err: ErrInvalid},
		{name: "refused: a long address", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: "g", Replica: Replica{HAAddr: long}}
		}, err: ErrInvalid},
		{name: "refused: a long group name", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: long}
		}, err: ErrInvalid},
		{name: "refused: a long cluster name", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: "g", Cluster: long}
		}, err: ErrInvalid},
		{name: "refused: another cluster's group", cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: "g", Cluster: "other"}
		}, err: ErrInvalid},
		{name: "refused: a full group", state: func(t testing.TB) *State {
			s := fixture(t)
			for len(s.Groups["g"].Replicas) < MaxReplicas {
				mustApply(t, s, Command{Kind: KindRegister, Group: "g"})
			}
			return s
		}, cmd: register(0), err: ErrInvalid},
		{name: "a full group still re-registers a member", state: func(t testing.TB) *State {
			s := fixture(t)
			for len(s.Groups["g"].Replicas) < MaxReplicas {
				mustApply(t, s, Command{Kind: KindRegister, Group: "g"})
			}
			return s
		}, cmd: register(3)},
		{name: "refused: no replica id left", state: func(t testing.TB) *State {
			s := fixture(t)
			s.Groups["g"].NextID = math.MaxInt64
			return s
		}, cmd: register(0), err: ErrInvalid},
		{name: "refused: no incarnation left", state: func(t testing.TB) *State {
			s := fixture(t)
			s.NextIncarnation = math.MaxUint64
			return s
		}, cmd: register(2), err: ErrInvalid},
		{name: "refused: no epoch after LastEpoch", state: func(testing.TB) *State { return NewState() },
			cmd: func(*State) Command {
				return Command{Kind: KindRegister, Group: "g", LastEpoch: math.MaxUint32}
			}, err: ErrInvalid},
		{name: "refused: MaxGroups groups", state: func(t testing.TB) *State {
			s := NewState()
			for i := range MaxGroups {
				s.Groups[string(rune(0x4e00+i))] = &Group{Name: string(rune(0x4e00 + i)), NextID: 1}
			}
			return s
		}, cmd: register(0), err: ErrInvalid},
		{name: "refused: a snapshot that could exceed MaxSnapshotBytes", state: func(t testing.TB) *State {
			return wideState(safeGroupCount+50, MaxReplicas-1)
		}, cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: groupName(0)}
		}, err: ErrInvalid},
		{name: "many small groups still register", state: func(t testing.TB) *State {
			return wideState(safeGroupCount+10, 1)
		}, cmd: func(*State) Command {
			return Command{Kind: KindRegister, Group: groupName(0)}
		}},
	})
}

func groupName(i int) string {
	return "group-" + strings.Repeat("0", 4) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
}

// wideState has n groups of r replicas with addresses of MaxStringBytes
// (one shared string), valid under Check.
func wideState(n, r int) *State {
	long := strings.Repeat("a", MaxStringBytes)
	s := NewState()
	inc := uint64(1)
	for i := range n {
		g := &Group{Name: groupName(i), Master: 1, Epoch: 1, ISR: []int64{1}, ISRVersion: 1, NextID: int64(r) + 1}
		for id := 1; id <= r; id++ {
			g.Replicas = append(g.Replicas, Replica{ID: int64(id), Addr: long, HAAddr: long, GRPCAddr: long, Incarnation: inc})
			inc++
		}
		s.Groups[g.Name] = g
	}
	s.NextIncarnation = inc
	return s
}

func alter(master int64, epoch uint32, version uint64, isr []int64, incs map[int64]uint64) func(*State) Command {
	return func(*State) Command {
		return Command{Kind: KindAlterISR, Group: "g", Master: master, Epoch: epoch, ISRVersion: version, ISR: isr, Incarnations: incs}
	}
}

func TestApplyAlterISR(t *testing.T) {
	all := map[int64]uint64{1: 1, 2: 2, 3: 3, 4: 4}
	runApplyCases(t, []applyCase{
		{name: "shrink", cmd: alter(1, 1, 2, []int64{1, 2}, all),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2}, 3) }},
		{name: "grow with the new member's incarnation", cmd: alter(1, 1, 2, []int64{1, 2, 3, 4}, map[int64]uint64{2: 2, 3: 3, 4: 4}),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2, 3, 4}, 3) }},
		{name: "to the master alone", cmd: alter(1, 1, 2, []int64{1}, nil),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1}, 3) }},
		{name: "unsorted with duplicates is normalised", cmd: alter(1, 1, 2, []int64{3, 1, 3, 1}, all),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 3}, 3) }},
		{name: "the same set keeps its version", cmd: alter(1, 1, 2, []int64{1, 2, 3}, all),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2, 3}, 2) }},
		{name: "dropping the transfer target cancels it", state: withTransfer(2), cmd: alter(1, 1, 2, []int64{1, 3}, all),
			check: func(t *testing.T, s *State, _ Result) {
				if g := s.Groups["g"]; g.TransferTo != 0 {
					t.Fatalf("transfer target %d kept", g.TransferTo)
				}
			}},

		{name: "refused: stale master", cmd: alter(2, 1, 2, []int64{1, 2}, all), err: ErrStale},
		{name: "refused: stale epoch", cmd: alter(1, 0, 2, []int64{1, 2}, all), err: ErrStale},
		{name: "refused: stale version", cmd: alter(1, 1, 1, []int64{1, 2}, all), err: ErrStale},
		{name: "refused: a member without its incarnation", cmd: alter(1, 1, 2, []int64{1, 2, 4}, map[int64]uint64{2: 2}), err: ErrStale},
		{name: "refused: a member's old incarnation (KIP-903)", cmd: alter(1, 1, 2, []int64{1, 2, 4}, map[int64]uint64{2: 2, 4: 3}), err: ErrStale},
		{name: "refused: the master's old incarnation", cmd: alter(1, 1, 2, []int64{1, 2}, map[int64]uint64{1: 9, 2: 2}), err: ErrStale},
		{name: "refused: without the master", cmd: alter(1, 1, 2, []int64{2, 3}, all), err: ErrInvalid},
		{name: "refused: master 0", cmd: alter(0, 1, 2, []int64{0}, all), err: ErrInvalid},
		{name: "refused: an unknown member", cmd: alter(1, 1, 2, []int64{1, 9}, map[int64]uint64{9: 1}), err: ErrUnknown},
		{name: "refused: too many members", cmd: func(*State) Command {
			isr := make([]int64, MaxReplicas+1)
			for i := range isr {
				isr[i] = 1
			}
			return Command{Kind: KindAlterISR, Group: "g", Master: 1, Epoch: 1, ISRVersion: 2, ISR: isr}
		}, err: ErrInvalid},
		{name: "refused: an unknown group", cmd: func(s *State) Command {
			c := alter(1, 1, 2, []int64{1}, nil)(s)
			c.Group = "h"
			return c
		}, err: ErrUnknown},
		{name: "refused: another cluster", cmd: func(s *State) Command {
			c := alter(1, 1, 2, []int64{1}, nil)(s)
			c.Cluster = "other"
			return c
		}, err: ErrUnknown},
		{name: "refused: an offline group", state: offline, cmd: alter(2, 3, 5, []int64{2}, nil), err: ErrStale},
	})
}

func elect(newMaster int64, epoch uint32, reason string, unclean bool) func(*State) Command {
	return func(*State) Command {
		return Command{Kind: KindElect, Group: "g", NewMaster: newMaster, Epoch: epoch, Reason: reason, Unclean: unclean}
	}
}

func TestApplyElect(t *testing.T) {
	withCAS := func(f func(*State) Command, mod func(*Command)) func(*State) Command {
		return func(s *State) Command {
			c := f(s)
			mod(&c)
			return c
		}
	}
	noAudit := func(t *testing.T, s *State) {
		t.Helper()
		if len(s.Audit) != 0 {
			t.Fatalf("audit %+v, want none", s.Audit)
		}
	}
	runApplyCases(t, []applyCase{
		{name: "master lost: epoch+1, ISR inherited minus the old master", cmd: elect(2, 1, ReasonMasterLost, false),
			check: func(t *testing.T, s *State, _ Result) {
				wantGroup(t, s.Groups["g"], 2, 2, []int64{2, 3}, 3)
				noAudit(t, s)
			}},
		{name: "with the version, master and incarnation expectations met",
			cmd:   withCAS(elect(3, 1, ReasonMasterLost, false), func(c *Command) { c.ISRVersion, c.Master, c.Incarnation = 2, 1, 3 }),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 3, 2, []int64{2, 3}, 3) }},
		{name: "elect-master is audited", cmd: elect(3, 1, ReasonOperator, false),
			check: func(t *testing.T, s *State, _ Result) {
				wantGroup(t, s.Groups["g"], 3, 2, []int64{2, 3}, 3)
				if want := []Audit{{Group: "g", Epoch: 2, Master: 3, Reason: ReasonOperator}}; !slices.Equal(s.Audit, want) {
					t.Fatalf("audit %+v, want %+v", s.Audit, want)
				}
			}},
		{name: "transfer keeps the old master in the ISR and clears TransferTo", state: withTransfer(2),
			cmd: elect(2, 1, ReasonTransfer, false),
			check: func(t *testing.T, s *State, _ Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 2, 2, []int64{1, 2, 3}, 2)
				if g.TransferTo != 0 {
					t.Fatalf("transfer target %d kept", g.TransferTo)
				}
				noAudit(t, s)
			}},
		{name: "another election clears TransferTo", state: withTransfer(2), cmd: elect(3, 1, ReasonMasterLost, false),
			check: func(t *testing.T, s *State, _ Result) {
				if g := s.Groups["g"]; g.TransferTo != 0 {
					t.Fatalf("transfer target %d kept", g.TransferTo)
				}
			}},
		{name: "unclean: outside the ISR, audited, the ISR is the new master alone", cmd: elect(4, 1, ReasonMasterLost, true),
			check: func(t *testing.T, s *State, _ Result) {
				wantGroup(t, s.Groups["g"], 4, 2, []int64{4}, 3)
				if want := []Audit{{Group: "g", Epoch: 2, Master: 4, Reason: ReasonMasterLost, Unclean: true}}; !slices.Equal(s.Audit, want) {
					t.Fatalf("audit %+v, want %+v", s.Audit, want)
				}
			}},
		{name: "unclean allowed but the target in the ISR: a clean election", cmd: elect(2, 1, ReasonMasterLost, true),
			check: func(t *testing.T, s *State, _ Result) {
				wantGroup(t, s.Groups["g"], 2, 2, []int64{2, 3}, 3)
				noAudit(t, s)
			}},
		{name: "offline group: an ISR member comes back", state: offline, cmd: elect(3, 3, ReasonOffline, false),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 3, 4, []int64{2, 3}, 5) }},
		{name: "operator election of an offline group", state: offline, cmd: elect(2, 3, ReasonOperator, false),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 2, 4, []int64{2, 3}, 5) }},
		{name: "the audit trail keeps the last MaxAudit", state: func(t testing.TB) *State {
			s := fixture(t)
			for i := range MaxAudit + 5 {
				g := s.Groups["g"]
				mustApply(t, s, Command{Kind: KindElect, Group: "g", NewMaster: 2 + int64(i%2), Epoch: g.Epoch, Reason: ReasonOperator})
				mustApply(t, s, Command{Kind: KindAlterISR, Group: "g", Master: 2 + int64(i%2), Epoch: g.Epoch + 1, ISRVersion: s.Groups["g"].ISRVersion,
					ISR: []int64{1, 2, 3}, Incarnations: map[int64]uint64{1: 1, 2: 2, 3: 3}})
			}
			return s
		}, cmd: func(s *State) Command {
			return Command{Kind: KindElect, Group: "g", NewMaster: 1, Epoch: s.Groups["g"].Epoch, Reason: ReasonOperator}
		}, check: func(t *testing.T, s *State, _ Result) {
			g := s.Groups["g"]
			if len(s.Audit) != MaxAudit || s.Audit[MaxAudit-1] != (Audit{Group: "g", Epoch: g.Epoch, Master: 1, Reason: ReasonOperator}) ||
				s.Audit[0].Epoch != g.Epoch-MaxAudit+1 {
				t.Fatalf("audit of %d entries, first %+v, last %+v; epoch %d", len(s.Audit), s.Audit[0], s.Audit[len(s.Audit)-1], g.Epoch)
			}
		}},

		{name: "refused: new master 0", cmd: elect(0, 1, ReasonMasterLost, false), err: ErrInvalid},
		{name: "refused: negative new master", cmd: elect(-2, 1, ReasonMasterLost, false), err: ErrInvalid},
		{name: "refused: the master itself", cmd: elect(1, 1, ReasonOperator, false), err: ErrInvalid},
		{name: "refused: no reason", cmd: elect(2, 1, "", false), err: ErrInvalid},
		{name: "refused: an unknown reason", cmd: elect(2, 1, "whim", false), err: ErrInvalid},
		{name: "refused: an unclean transfer", state: withTransfer(2), cmd: elect(2, 1, ReasonTransfer, true), err: ErrInvalid},
		{name: "refused: stale epoch", cmd: elect(2, 0, ReasonMasterLost, false), err: ErrStale},
		{name: "refused: a later epoch", cmd: elect(2, 2, ReasonMasterLost, false), err: ErrStale},
		{name: "refused: stale version", cmd: withCAS(elect(2, 1, ReasonMasterLost, false), func(c *Command) { c.ISRVersion = 1 }), err: ErrStale},
		{name: "refused: stale master", cmd: withCAS(elect(2, 1, ReasonMasterLost, false), func(c *Command) { c.Master = 3 }), err: ErrStale},
		{name: "refused: stale incarnation", cmd: withCAS(elect(2, 1, ReasonMasterLost, false), func(c *Command) { c.Incarnation = 1 }), err: ErrStale},
		{name: "refused: master lost in an offline group", state: offline, cmd: elect(2, 3, ReasonMasterLost, false), err: ErrStale},
		{name: "refused: offline while a master is there", cmd: elect(2, 1, ReasonOffline, false), err: ErrStale},
		{name: "refused: transfer without a transfer asked", cmd: elect(2, 1, ReasonTransfer, false), err: ErrStale},
		{name: "refused: transfer to another target", state: withTransfer(3), cmd: elect(2, 1, ReasonTransfer, false), err: ErrStale},
		{name: "refused: an unknown replica", cmd: elect(9, 1, ReasonMasterLost, true), err: ErrUnknown},
		{name: "refused: outside the ISR", cmd: elect(4, 1, ReasonMasterLost, false), err: ErrNotInISR},
		{name: "refused: an operator election outside the ISR", cmd: elect(4, 1, ReasonOperator, false), err: ErrNotInISR},
		{name: "refused: no epoch left", state: func(t testing.TB) *State {
			s := fixture(t)
			s.Groups["g"].Epoch = math.MaxUint32
			return s
		}, cmd: elect(2, math.MaxUint32, ReasonMasterLost, false), err: ErrInvalid},
		{name: "refused: an unknown group", cmd: withCAS(elect(2, 1, ReasonMasterLost, false), func(c *Command) { c.Group = "h" }), err: ErrUnknown},
	})
}

func TestApplyUnregister(t *testing.T) {
	unreg := func(id int64, inc uint64) func(*State) Command {
		return func(*State) Command { return Command{Kind: KindUnregister, Group: "g", ID: id, Incarnation: inc} }
	}
	runApplyCases(t, []applyCase{
		{name: "an ISR member leaves the ISR and stays registered", cmd: unreg(3, 3),
			check: func(t *testing.T, s *State, _ Result) {
				g := s.Groups["g"]
				wantGroup(t, g, 1, 1, []int64{1, 2}, 3)
				if r, ok := g.Replica(3); !ok || r.Incarnation != 3 {
					t.Fatalf("replica 3: %+v %v", r, ok)
				}
			}},
		{name: "a replica outside the ISR changes nothing", cmd: unreg(4, 4),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2, 3}, 2) }},
		{name: "the transfer target cancels the transfer", state: withTransfer(2), cmd: unreg(2, 2),
			check: func(t *testing.T, s *State, _ Result) {
				if g := s.Groups["g"]; g.TransferTo != 0 || g.InISR(2) {
					t.Fatalf("group %+v", g)
				}
			}},
		{name: "in an offline group", state: offline, cmd: unreg(2, 2),
			check: func(t *testing.T, s *State, _ Result) { wantGroup(t, s.Groups["g"], 0, 3, []int64{3}, 6) }},

		{name: "refused: the master", cmd: unreg(1, 1), err: ErrInvalid},
		{name: "refused: id 0", cmd: unreg(0, 0), err: ErrInvalid},
		{name: "refused: an old incarnation", cmd: unreg(3, 2), err: ErrStale},
		{name: "refused: an unknown replica", cmd: unreg(9, 9), err: ErrUnknown},
		{name: "refused: an unknown group", cmd: func(*State) Command { return Command{Kind: KindUnregister, Group: "h", ID: 2, Incarnation: 2} }, err: ErrUnknown},
	})
}

func TestApplyTransfer(t *testing.T) {
	transfer := func(to int64, epoch uint32) func(*State) Command {
		return func(*State) Command { return Command{Kind: KindTransfer, Group: "g", NewMaster: to, Epoch: epoch} }
	}
	target := func(want int64) func(t *testing.T, s *State, _ Result) {
		return func(t *testing.T, s *State, res Result) {
			if g := s.Groups["g"]; g.TransferTo != want || res.Group.TransferTo != want {
				t.Fatalf("transfer target %d (result %d), want %d", g.TransferTo, res.Group.TransferTo, want)
			}
			wantGroup(t, s.Groups["g"], 1, 1, []int64{1, 2, 3}, 2)
		}
	}
	runApplyCases(t, []applyCase{
		{name: "to an ISR member", cmd: transfer(3, 0), check: target(3)},
		{name: "with the epoch expected", cmd: transfer(2, 1), check: target(2)},
		{name: "another target replaces the first", state: withTransfer(2), cmd: transfer(3, 0), check: target(3)},
		{name: "cancel", state: withTransfer(2), cmd: transfer(0, 0), check: target(0)},
		{name: "cancel without a transfer", cmd: transfer(0, 0), check: target(0)},

		{name: "refused: the master", cmd: transfer(1, 0), err: ErrInvalid},
		{name: "refused: negative", cmd: transfer(-1, 0), err: ErrInvalid},
		{name: "refused: outside the ISR", cmd: transfer(4, 0), err: ErrNotInISR},
		{name: "refused: an unknown replica", cmd: transfer(9, 0), err: ErrUnknown},
		{name: "refused: stale epoch", cmd: transfer(2, 2), err: ErrStale},
		{name: "refused: an offline group", state: offline, cmd: transfer(2, 0), err: ErrInvalid},
		{name: "refused: an unknown group", cmd: func(*State) Command { return Command{Kind: KindTransfer, Group: "h", NewMaster: 2} }, err: ErrUnknown},
	})
}

func TestApplyUnknownKind(t *testing.T) {
	for _, k := range []Kind{0, KindTransfer + 1, 255} {
		s := fixture(t)
		prev := s.Clone()
		if _, err := s.Apply(Command{Kind: k, Group: "g"}); !errors.Is(err, ErrInvalid) || !reflect.DeepEqual(prev, s) {
			t.Fatalf("kind %d: %v (state changed: %v), want ErrInvalid", k, err, !reflect.DeepEqual(prev, s))
		}
	}
	var nilState *State
	if _, err := nilState.Apply(Command{Kind: KindRegister, Group: "g"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply on nil: %v", err)
	}
}

// The Result and a Clone share nothing with the state.
func TestResultAndCloneDoNotAlias(t *testing.T) {
	s := fixture(t)
	res := mustApply(t, s, Command{Kind: KindAlterISR, Group: "g", Master: 1, Epoch: 1, ISRVersion: 2, ISR: []int64{1, 2}, Incarnations: map[int64]uint64{2: 2}})
	res.Group.ISR[0] = 99
	res.Group.Replicas[0].Addr = "changed"
	c := s.Clone()
	c.Groups["g"].ISR[1] = 98
	c.Groups["g"].Replicas[1].Incarnation = 77
	c.Audit = append(c.Audit, Audit{Group: "x"})
	c.Groups["h"] = &Group{}
	g := s.Groups["g"]
	if !slices.Equal(g.ISR, []int64{1, 2}) || g.Replicas[0].Addr != addr(1) || g.Replicas[1].Incarnation != 2 || len(s.Audit) != 0 || len(s.Groups) != 1 {
		t.Fatalf("state changed through a Result or a Clone: %+v, audit %+v", g, s.Audit)
	}
	if (*State)(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
}

func TestGroupAccessors(t *testing.T) {
	g := fixture(t).Groups["g"]
	if r, ok := g.Replica(3); !ok || r.ID != 3 || r.Incarnation != 3 || r.Addr != addr(3) {
		t.Fatalf("Replica(3) = %+v, %v", r, ok)
	}
	if _, ok := g.Replica(5); ok {
		t.Fatal("Replica(5) found")
	}
	if !g.InISR(2) || g.InISR(4) || g.InISR(0) {
		t.Fatal("InISR wrong")
	}
	var nilGroup *Group
	if _, ok := nilGroup.Replica(1); ok || nilGroup.InISR(1) {
		t.Fatal("nil group has members")
	}
}
