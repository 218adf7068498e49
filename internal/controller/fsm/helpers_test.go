package fsm

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// fixture is group "g" of cluster "c": replicas 1..4 with incarnations
// 1..4, master 1 of epoch 1, ISR {1,2,3} at version 2; replica 4 outside
// the ISR.
func fixture(t testing.TB) *State {
	t.Helper()
	s := NewState()
	for i := range 4 {
		res, err := s.Apply(Command{Kind: KindRegister, Cluster: "c", Group: "g", Replica: Replica{Addr: addr(i + 1)}})
		if err != nil || res.ReplicaID != int64(i+1) || res.Incarnation != uint64(i+1) {
			t.Fatalf("fixture Register %d: %+v, %v", i+1, res, err)
		}
	}
	mustApply(t, s, Command{Kind: KindAlterISR, Group: "g", Master: 1, Epoch: 1, ISRVersion: 1,
		ISR: []int64{1, 2, 3}, Incarnations: map[int64]uint64{2: 2, 3: 3}})
	g := s.Groups["g"]
	if g.Master != 1 || g.Epoch != 1 || !slices.Equal(g.ISR, []int64{1, 2, 3}) || g.ISRVersion != 2 {
		t.Fatalf("fixture group: %+v", g)
	}
	return s
}

// offline is the fixture with group "g" without a master at epoch 3 (a
// state no command sequence of this package builds, but Check accepts).
func offline(t testing.TB) *State {
	s := fixture(t)
	g := s.Groups["g"]
	g.Master, g.Epoch, g.ISR = 0, 3, []int64{2, 3}
	g.ISRVersion = 5
	if err := s.Check(); err != nil {
		t.Fatalf("offline fixture: %v", err)
	}
	return s
}

func addr(i int) string { return "10.0.0." + string(rune('0'+i)) + ":10911" }

func mustApply(t testing.TB, s *State, c Command) Result {
	t.Helper()
	prev := s.Clone()
	res, err := s.Apply(c)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", c, err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check after Apply(%+v): %v", c, err)
	}
	if err := CheckStep(prev, s, c); err != nil {
		t.Fatalf("CheckStep after Apply(%+v): %v", c, err)
	}
	return res
}

var sentinels = []error{ErrStale, ErrNotInISR, ErrUnknown, ErrInvalid}

func isSentinel(err error) bool {
	for _, e := range sentinels {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// equalCommand compares commands with nil and empty slices and maps equal.
func equalCommand(a, b Command) bool {
	ai, bi := a.ISR, b.ISR
	a.ISR, b.ISR = nil, nil
	am, bm := a.Incarnations, b.Incarnations
	a.Incarnations, b.Incarnations = nil, nil
	return reflect.DeepEqual(a, b) && slices.Equal(ai, bi) && maps.Equal(am, bm)
}
