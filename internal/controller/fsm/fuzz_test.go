package fsm

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeCommand decodes arbitrary bytes (seeds in
// testdata/fuzz/FuzzDecodeCommand). DecodeCommand either refuses them with
// ErrCorrupt, or returns a command whose encoding is exactly the input (the
// format is canonical) and whose strict prefixes are refused; applying it
// to the fixture never panics, refuses with an fsm error and no change, or
// keeps Check and CheckStep.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range seedCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	base := fixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeCommand: %v, want nil or ErrCorrupt", err)
			}
			return
		}
		enc, err := EncodeCommand(c)
		if err != nil || string(enc) != string(data) {
			t.Fatalf("EncodeCommand(DecodeCommand(%x)) = %x, %v", data, enc, err)
		}
		if _, err := DecodeCommand(data[:len(data)-1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a strict prefix decodes: %v", err)
		}
		applyChecked(t, base.Clone(), c)
	})
}

// FuzzRestore restores arbitrary bytes (seeds in testdata/fuzz/FuzzRestore).
// Restore either refuses them with ErrCorrupt, or returns a state that
// passes Check, snapshots to exactly the input and refuses its strict
// prefixes; commands of every kind on its first group keep the invariants.
func FuzzRestore(f *testing.F) {
	for name, s := range seedStates(f) {
		if name == "two-wides" {
			continue
		}
		b, err := s.Snapshot()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Restore(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Restore: %v, want nil or ErrCorrupt", err)
			}
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("Restore returned a state that fails Check: %v", err)
		}
		enc, err := s.Snapshot()
		if err != nil || string(enc) != string(data) {
			t.Fatalf("Snapshot(Restore(%x)) = %x, %v", data, enc, err)
		}
		if _, err := Restore(data[:len(data)-1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a strict prefix restores: %v", err)
		}
		for _, name := range sortedNames(s.Groups) {
			g := s.Groups[name]
			var other int64
			for _, r := range g.Replicas {
				if r.ID != g.Master {
					other = r.ID
				}
			}
			for _, c := range []Command{
				{Kind: KindRegister, Group: name, Replica: Replica{ID: other}},
				{Kind: KindRegister, Group: name},
				{Kind: KindAlterISR, Group: name, Master: g.Master, Epoch: g.Epoch, ISRVersion: g.ISRVersion, ISR: []int64{g.Master}},
				{Kind: KindElect, Group: name, NewMaster: other, Epoch: g.Epoch, Reason: ReasonMasterLost, Unclean: true},
				{Kind: KindElect, Group: name, NewMaster: other, Epoch: g.Epoch, Reason: ReasonOffline},
				{Kind: KindTransfer, Group: name, NewMaster: other},
				{Kind: KindUnregister, Group: name, ID: other, Incarnation: func() uint64 { r, _ := g.Replica(other); return r.Incarnation }()},
			} {
				applyChecked(t, s, c)
			}
			break
		}
	})
}

// applyChecked applies c to s and checks the outcome as the property test
// does.
func applyChecked(t *testing.T, s *State, c Command) {
	t.Helper()
	prev := s.Clone()
	_, err := s.Apply(c)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("Apply(%+v): %v is none of the fsm errors", c, err)
		}
		if !reflect.DeepEqual(prev, s) {
			t.Fatalf("refused Apply(%+v) changed the state", c)
		}
		return
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check after Apply(%+v): %v", c, err)
	}
	if err := CheckStep(prev, s, c); err != nil {
		t.Fatalf("CheckStep after Apply(%+v): %v", c, err)
	}
}
