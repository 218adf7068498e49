package fsm

import (
	"errors"
	"strings"
	"testing"
)

// Every invariant Check states is reported when broken.
func TestCheckReportsEachInvariant(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(s *State)
	}{
		{"master outside the ISR", func(s *State) { s.Groups["g"].Master = 4 }},
		{"master at epoch 0", func(s *State) { s.Groups["g"].Epoch = 0 }},
		{"ISR unsorted", func(s *State) { s.Groups["g"].ISR = []int64{2, 1, 3} }},
		{"ISR duplicate", func(s *State) { s.Groups["g"].ISR = []int64{1, 2, 2} }},
		{"ISR member not a replica", func(s *State) { s.Groups["g"].ISR = []int64{1, 2, 7} }},
		{"NextID not above a replica id", func(s *State) { s.Groups["g"].NextID = 4 }},
		{"NextID 0", func(s *State) {
			g := s.Groups["g"]
			g.NextID, g.Replicas, g.ISR, g.Master = 0, nil, nil, 0
		}},
		{"replicas unsorted", func(s *State) {
			r := s.Groups["g"].Replicas
			r[2], r[3] = r[3], r[2]
		}},
		{"replica id 0", func(s *State) { s.Groups["g"].Replicas[0].ID = 0 }},
		{"incarnation 0", func(s *State) { s.Groups["g"].Replicas[3].Incarnation = 0 }},
		{"incarnation not below NextIncarnation", func(s *State) { s.Groups["g"].Replicas[3].Incarnation = 5 }},
		{"incarnation twice", func(s *State) { s.Groups["g"].Replicas[3].Incarnation = 1 }},
		{"incarnation twice across groups", func(s *State) {
			s.Groups["h"] = &Group{Name: "h", Master: 1, Epoch: 1, ISR: []int64{1}, NextID: 2, Replicas: []Replica{{ID: 1, Incarnation: 2}}}
		}},
		{"NextIncarnation 0", func(s *State) { s.NextIncarnation = 0 }},
		{"transfer to the master", func(s *State) { s.Groups["g"].TransferTo = 1 }},
		{"transfer outside the ISR", func(s *State) { s.Groups["g"].TransferTo = 4 }},
		{"stored under another name", func(s *State) { s.Groups["h"], s.Groups["g"] = s.Groups["g"], nil; delete(s.Groups, "g") }},
		{"empty name", func(s *State) { s.Groups[""] = s.Groups["g"]; s.Groups[""].Name = ""; delete(s.Groups, "g") }},
		{"nil group", func(s *State) { s.Groups["h"] = nil }},
		{"long cluster", func(s *State) { s.Groups["g"].Cluster = strings.Repeat("c", MaxStringBytes+1) }},
		{"long address", func(s *State) { s.Groups["g"].Replicas[1].GRPCAddr = strings.Repeat("a", MaxStringBytes+1) }},
		{"long audit reason", func(s *State) { s.Audit = []Audit{{Group: "g", Reason: strings.Repeat("r", MaxStringBytes+1)}} }},
		{"too many audit entries", func(s *State) { s.Audit = make([]Audit, MaxAudit+1) }},
		{"too many replicas", func(s *State) {
			g := s.Groups["g"]
			for id := int64(5); len(g.Replicas) <= MaxReplicas; id++ {
				g.Replicas = append(g.Replicas, Replica{ID: id, Incarnation: s.NextIncarnation})
				s.NextIncarnation++
				g.NextID = id + 1
			}
		}},
		{"too many groups", func(s *State) {
			for i := range MaxGroups {
				name := groupName(i) + "x"
				s.Groups[name] = &Group{Name: name, NextID: 1}
			}
		}},
	}
	if err := fixture(t).Check(); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	for _, tc := range cases {
		s := fixture(t)
		tc.break_(s)
		err := s.Check()
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !errors.Is(err, ErrInvariant) {
			t.Errorf("%s: Check = %v, want a broken invariant", tc.name, err)
		}
	}
	if err := (*State)(nil).Check(); err == nil {
		t.Error("Check of nil passed")
	}
}

// Every step invariant CheckStep states is reported when broken: next is
// the fixture after an accepted command, then tampered with.
func TestCheckStepReportsEachInvariant(t *testing.T) {
	electC := Command{Kind: KindElect, Group: "g", NewMaster: 2, Epoch: 1, Reason: ReasonMasterLost}
	alterC := Command{Kind: KindAlterISR, Group: "g", Master: 1, Epoch: 1, ISRVersion: 2, ISR: []int64{1, 2}, Incarnations: map[int64]uint64{2: 2}}
	registerC := Command{Kind: KindRegister, Group: "g", Replica: Replica{ID: 3}}
	cases := []struct {
		name   string
		prev   func(testing.TB) *State
		cmd    Command
		tamper func(prev, next *State)
	}{
		{"epoch back", nil, alterC, func(p, n *State) { p.Groups["g"].Epoch = 2 }},
		{"epoch by two", nil, electC, func(p, n *State) { n.Groups["g"].Epoch = 3 }},
		{"epoch change by AlterISR", nil, alterC, func(p, n *State) { n.Groups["g"].Epoch = 2 }},
		{"master change without epoch", nil, alterC, func(p, n *State) { n.Groups["g"].Master = 2 }},
		{"new master outside the ISR, not audited", nil, electC, func(p, n *State) { p.Groups["g"].ISR = []int64{1, 3} }},
		{"unclean election keeping others in the ISR", nil,
			Command{Kind: KindElect, Group: "g", NewMaster: 4, Epoch: 1, Reason: ReasonMasterLost, Unclean: true},
			func(p, n *State) { n.Groups["g"].ISR = []int64{2, 4} }},
		{"old master kept in the ISR", nil, electC, func(p, n *State) {
			n.Groups["g"].ISR, n.Groups["g"].ISRVersion = []int64{1, 2, 3}, 2
		}},
		{"unclean election not asked for", nil,
			Command{Kind: KindElect, Group: "g", NewMaster: 4, Epoch: 1, Reason: ReasonMasterLost, Unclean: true},
			nil},
		{"version back", nil, alterC, func(p, n *State) { n.Groups["g"].ISRVersion = 1 }},
		{"ISR change without version", nil, alterC, func(p, n *State) { n.Groups["g"].ISRVersion = 2 }},
		{"version without ISR change", nil, registerC, func(p, n *State) { n.Groups["g"].ISR = []int64{1, 2, 3} }},
		{"join not by AlterISR", nil, registerC, func(p, n *State) {
			n.Groups["g"].ISR = []int64{1, 2, 4}
		}},
		{"a restarted member stays in the ISR", nil, Command{Kind: KindRegister, Group: "g", Replica: Replica{ID: 3}},
			func(p, n *State) { n.Groups["g"].ISR, n.Groups["g"].ISRVersion = []int64{1, 2, 3}, 2 }},
		{"NextID back", nil, alterC, func(p, n *State) { p.Groups["g"].NextID = 9 }},
		{"replica removed", nil, alterC, func(p, n *State) {
			n.Groups["g"].Replicas = n.Groups["g"].Replicas[:3]
		}},
		{"another group changed", nil, alterC, func(p, n *State) {
			p.Groups["h"] = &Group{Name: "h", NextID: 1}
			n.Groups["h"] = &Group{Name: "h", NextID: 2}
		}},
		{"group removed", nil, alterC, func(p, n *State) { p.Groups["h"] = &Group{Name: "h", NextID: 1} }},
		{"group created by another kind", nil, alterC, func(p, n *State) { delete(p.Groups, "g") }},
		{"new group without its master", nil, Command{Kind: KindRegister, Group: "g"}, func(p, n *State) {
			delete(p.Groups, "g")
			n.Groups["g"].Master = 0
		}},
		{"joined at another incarnation", nil,
			Command{Kind: KindAlterISR, Group: "g", Master: 1, Epoch: 1, ISRVersion: 2, ISR: []int64{1, 2, 3, 4}, Incarnations: map[int64]uint64{2: 2, 3: 3, 4: 4}},
			func(p, n *State) { n.Groups["g"].Replicas[3].Incarnation = 9 }},
		{"AlterISR whose compare-and-set did not hold", nil, alterC, func(p, n *State) {
			p.Groups["g"].ISRVersion, n.Groups["g"].ISRVersion = 1, 2
		}},
		{"Elect whose compare-and-set did not hold", nil,
			Command{Kind: KindElect, Group: "g", NewMaster: 2, Epoch: 1, ISRVersion: 2, Reason: ReasonMasterLost},
			func(p, n *State) { p.Groups["g"].ISRVersion, n.Groups["g"].ISRVersion = 1, 2 }},
		{"NextIncarnation back", nil, alterC, func(p, n *State) { p.NextIncarnation = 99 }},
		{"audit changed by AlterISR", nil, alterC, func(p, n *State) { n.Audit = []Audit{{Group: "g"}} }},
		{"audit rewritten by Elect", nil, Command{Kind: KindElect, Group: "g", NewMaster: 2, Epoch: 1, Reason: ReasonOperator},
			func(p, n *State) {
				p.Audit = []Audit{{Group: "g", Epoch: 1}}
				n.Audit = []Audit{{Group: "x"}, n.Audit[len(n.Audit)-1]}
			}},
	}
	for _, tc := range cases {
		mk := tc.prev
		if mk == nil {
			mk = fixture
		}
		prev := mk(t)
		next := prev.Clone()
		if _, err := next.Apply(tc.cmd); err != nil {
			t.Fatalf("%s: Apply: %v", tc.name, err)
		}
		if err := CheckStep(prev, next, tc.cmd); err != nil {
			t.Fatalf("%s: CheckStep before tampering: %v", tc.name, err)
		}
		c := tc.cmd
		if tc.tamper != nil {
			tc.tamper(prev, next)
		} else {
			c.Unclean = false // the step as if the command had not asked for it
		}
		err := CheckStep(prev, next, c)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !errors.Is(err, ErrInvariant) {
			t.Errorf("%s: CheckStep = %v, want a broken invariant", tc.name, err)
		}
	}
	if err := CheckStep(nil, NewState(), Command{}); err == nil {
		t.Error("CheckStep of nil passed")
	}
	// A refused command: next equals prev, which passes.
	s := fixture(t)
	if err := CheckStep(s, s.Clone(), Command{Kind: KindElect, Group: "g", NewMaster: 4, Epoch: 1, Reason: ReasonMasterLost}); err != nil {
		t.Errorf("CheckStep of an unchanged state: %v", err)
	}
}
