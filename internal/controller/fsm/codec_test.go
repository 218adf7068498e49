package fsm

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seed corpus in testdata/fuzz")

// seedCommands are valid commands of every kind, including fields at their
// widest, for the round-trip tests and the fuzz corpus.
func seedCommands() map[string]Command {
	long := strings.Repeat("z", MaxStringBytes)
	incs := map[int64]uint64{}
	wide := make([]int64, MaxReplicas)
	for i := range wide {
		wide[i] = math.MaxInt64 - int64(i)
		incs[math.MinInt64+int64(i)] = math.MaxUint64 - uint64(i)
	}
	return map[string]Command{
		"register":      {Kind: KindRegister, Cluster: "DefaultCluster", Group: "broker-a", Replica: Replica{Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912", GRPCAddr: "10.0.0.1:8081"}, LastEpoch: 3},
		"register-id":   {Kind: KindRegister, Group: "broker-a", Replica: Replica{ID: 7, Incarnation: 9}},
		"alter-isr":     {Kind: KindAlterISR, Group: "broker-a", Master: 1, Epoch: 2, ISRVersion: 5, ISR: []int64{1, 2, 3}, Incarnations: map[int64]uint64{1: 4, 2: 5, 3: 6}},
		"elect":         {Kind: KindElect, Group: "broker-a", NewMaster: 2, Epoch: 2, ISRVersion: 5, Reason: ReasonMasterLost},
		"elect-unclean": {Kind: KindElect, Group: "broker-a", NewMaster: 4, Epoch: 2, Unclean: true, Reason: ReasonOperator, Incarnation: 8, Master: 1},
		"unregister":    {Kind: KindUnregister, Group: "broker-a", ID: 3, Incarnation: 6},
		"transfer":      {Kind: KindTransfer, Group: "broker-a", NewMaster: 2, Epoch: 2},
		"zero":          {},
		"widest": {Kind: 255, Cluster: long, Group: long, Replica: Replica{ID: math.MinInt64, Addr: long, HAAddr: long, GRPCAddr: long, Incarnation: math.MaxUint64},
			LastEpoch: math.MaxUint32, Master: math.MaxInt64, Epoch: math.MaxUint32, ISRVersion: math.MaxUint64, ISR: wide, Incarnations: incs,
			NewMaster: math.MinInt64, Unclean: true, Reason: long, ID: -1, Incarnation: math.MaxUint64},
	}
}

// seedStates are valid states, for the round-trip tests and the corpus.
func seedStates(t testing.TB) map[string]*State {
	withAudit := fixture(t)
	mustApply(t, withAudit, Command{Kind: KindElect, Group: "g", NewMaster: 4, Epoch: 1, Reason: ReasonOperator, Unclean: true})
	mustApply(t, withAudit, Command{Kind: KindTransfer, Group: "g", NewMaster: 0})
	mustApply(t, withAudit, Command{Kind: KindRegister, Cluster: "c2", Group: "h", Replica: Replica{ID: 3, Addr: "h:1"}, LastEpoch: 9})
	transfer := fixture(t)
	mustApply(t, transfer, Command{Kind: KindTransfer, Group: "g", NewMaster: 3})
	return map[string]*State{
		"empty":     NewState(),
		"fixture":   fixture(t),
		"audit":     withAudit,
		"offline":   offline(t),
		"transfer":  transfer,
		"two-wides": wideState(2, MaxReplicas),
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for name, c := range seedCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("%s: EncodeCommand: %v", name, err)
		}
		d, err := DecodeCommand(b)
		if err != nil || !equalCommand(c, d) {
			t.Fatalf("%s: DecodeCommand = %+v, %v; want %+v", name, d, err, c)
		}
		again, _ := EncodeCommand(d)
		if string(again) != string(b) {
			t.Fatalf("%s: the encoding is not canonical", name)
		}
		// Every strict prefix is refused.
		for i := range len(b) {
			if _, err := DecodeCommand(b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: DecodeCommand of the first %d of %d bytes: %v, want ErrCorrupt", name, i, len(b), err)
			}
		}
	}
}

func TestEncodeCommandBounds(t *testing.T) {
	long := strings.Repeat("x", MaxStringBytes+1)
	many := make([]int64, MaxReplicas+1)
	manyInc := map[int64]uint64{}
	for i := range MaxReplicas + 1 {
		manyInc[int64(i)] = 1
	}
	for name, c := range map[string]Command{
		"long group":        {Group: long},
		"long cluster":      {Cluster: long},
		"long address":      {Replica: Replica{GRPCAddr: long}},
		"long reason":       {Reason: long},
		"many ISR members":  {ISR: many},
		"many incarnations": {Incarnations: manyInc},
	} {
		if _, err := EncodeCommand(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: EncodeCommand: %v, want ErrInvalid", name, err)
		}
	}
}

// corruptCommands are encodings DecodeCommand must refuse.
func corruptCommands(t testing.TB) map[string][]byte {
	good, err := EncodeCommand(seedCommands()["alter-isr"])
	if err != nil {
		t.Fatal(err)
	}
	set := func(i int, v ...byte) []byte {
		b := slices.Clone(good)
		return append(b[:i], append(v, b[i+1:]...)...)
	}
	// Layout of "alter-isr": version, kind, cluster "" (1), group "broker-a"
	// (9), replica (5), lastEpoch, master, epoch, isrVersion, ISR (4),
	// incarnations (7), newMaster, unclean, reason, id, incarnation.
	const isrAt = 2 + 1 + 9 + 5 + 4
	const incAt = isrAt + 4
	const uncleanAt = incAt + 7 + 1
	return map[string][]byte{
		"empty":                  {},
		"version 0":              set(0, 0),
		"version 2":              set(0, 2),
		"truncated":              good[:len(good)-1],
		"trailing byte":          append(slices.Clone(good), 0),
		"overlong varint":        set(isrAt+1, 0x82, 0x00), // member 1 as two bytes
		"overflowing varint":     set(isrAt+1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"ISR count over bound":   set(isrAt, MaxReplicas+1),
		"ISR count over input":   set(isrAt, 60),
		"incarnations unordered": set(incAt+3, 2), // second id 1 → the same as the first
		"bool 2":                 set(uncleanAt, 2),
		"string over bound":      set(3, 0x81, 0x04), // group length 513
		"epoch over 32 bits":     set(2+1+9+5+1+1, 0x80, 0x80, 0x80, 0x80, 0x10),
		"over MaxCommandBytes":   make([]byte, MaxCommandBytes+1),
	}
}

func TestDecodeCommandRefuses(t *testing.T) {
	for name, b := range corruptCommands(t) {
		if c, err := DecodeCommand(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeCommand = %+v, %v; want ErrCorrupt", name, c, err)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for name, s := range seedStates(t) {
		b, err := s.Snapshot()
		if err != nil {
			t.Fatalf("%s: Snapshot: %v", name, err)
		}
		if n := s.snapshotSize(); n != len(b) {
			t.Fatalf("%s: snapshotSize %d, Snapshot %d bytes", name, n, len(b))
		}
		r, err := Restore(b)
		if err != nil || !reflect.DeepEqual(r, s) {
			t.Fatalf("%s: Restore = %+v, %v; want %+v", name, r, err, s)
		}
		if again, _ := r.Snapshot(); string(again) != string(b) {
			t.Fatalf("%s: Snapshot of the restored state differs", name)
		}
		if name == "two-wides" {
			continue // its prefixes are many; the small states cover the rule
		}
		for i := range len(b) {
			if _, err := Restore(b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: Restore of the first %d of %d bytes: %v, want ErrCorrupt", name, i, len(b), err)
			}
		}
	}
}

// corruptSnapshots are encodings Restore must refuse.
func corruptSnapshots(t testing.TB) map[string][]byte {
	good, err := fixture(t).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	two := fixture(t)
	mustApply(t, two, Command{Kind: KindRegister, Group: "h"})
	twoB, err := two.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Swap the two groups' encodings: "h" before "g".
	gLen := groupLen(two.Groups["g"])
	head := len(snapshotMagic) + 1 + 1 + 1
	swapped := slices.Concat(twoB[:head], twoB[head+gLen:len(twoB)-1], twoB[head:head+gLen], twoB[len(twoB)-1:])
	broken := fixture(t)
	broken.Groups["g"].ISR = []int64{2, 3} // master 1 outside: Check fails
	brokenB := slices.Concat([]byte(snapshotMagic), []byte{snapshotVersion}, []byte{5, 1}, appendGroup(nil, broken.Groups["g"]), []byte{0})
	set := func(i int, v ...byte) []byte {
		b := slices.Clone(good)
		return append(b[:i], append(v, b[i+1:]...)...)
	}
	return map[string][]byte{
		"empty":                  {},
		"magic only":             []byte(snapshotMagic),
		"bad magic":              set(0, 'X'),
		"version 0":              set(4, 0),
		"truncated":              good[:len(good)-1],
		"trailing byte":          append(slices.Clone(good), 0),
		"groups unordered":       swapped,
		"fails Check":            brokenB,
		"group count over max":   set(6, 0x91, 0x4e), // 10001
		"group count over input": set(6, 100),
		"over MaxSnapshotBytes":  append([]byte(snapshotMagic+"\x01"), make([]byte, MaxSnapshotBytes)...),
	}
}

func TestRestoreRefuses(t *testing.T) {
	for name, b := range corruptSnapshots(t) {
		if s, err := Restore(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Restore = %+v, %v; want ErrCorrupt", name, s, err)
		}
	}
}

func TestSnapshotRefusesBrokenState(t *testing.T) {
	s := fixture(t)
	s.Groups["g"].Master = 4
	if _, err := s.Snapshot(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Snapshot of a broken state: %v, want ErrInvalid", err)
	}
}

// A state that checkSize let a Register into still snapshots after any
// later non-Register commands: here every group at its widest (all
// replicas in the ISR, scalars at their largest).
func TestSnapshotBoundHolds(t *testing.T) {
	n := safeGroupCount + 50
	r := MaxReplicas
	for ; r > 0; r-- {
		s := wideState(n, r)
		if err := s.checkSize(s.Groups[groupName(0)]); err == nil {
			break
		}
	}
	if r == 0 || r == MaxReplicas {
		t.Fatalf("no replica count at the edge of the bound (%d)", r)
	}
	s := wideState(n, r)
	if _, err := s.Apply(Command{Kind: KindRegister, Group: groupName(0), Replica: Replica{ID: 1}}); err != nil {
		t.Fatalf("Register at %d replicas: %v", r, err)
	}
	for _, g := range s.Groups {
		g.ISR = replicaIDs(g)
		g.Epoch, g.ISRVersion, g.TransferTo = math.MaxUint32, math.MaxUint64, 2
		g.NextID = math.MaxInt64
	}
	for range MaxAudit {
		s.Audit = append(s.Audit, Audit{Group: strings.Repeat("a", MaxStringBytes), Epoch: math.MaxUint32, Master: math.MaxInt64, Reason: ReasonMasterLost, Unclean: true})
	}
	s.NextIncarnation = math.MaxUint64
	if size := s.snapshotSize(); size > MaxSnapshotBytes {
		t.Fatalf("widest state after an accepted Register: %d bytes, more than %d", size, MaxSnapshotBytes)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("widest state: %v", err)
	}
	t.Logf("%d groups × %d replicas: the widest state encodes to %d bytes", n, r, s.snapshotSize())
}

// TestFuzzSeedCorpus keeps the committed corpus in testdata/fuzz equal to
// the seeds built here (go test -run TestFuzzSeedCorpus -update-seeds
// rewrites it), so that a format change cannot leave stale seeds behind.
func TestFuzzSeedCorpus(t *testing.T) {
	corpus := map[string]map[string][]byte{"FuzzDecodeCommand": {}, "FuzzRestore": {}}
	for name, c := range seedCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		corpus["FuzzDecodeCommand"][name] = b
	}
	for name, b := range corruptCommands(t) {
		if len(b) <= 4096 {
			corpus["FuzzDecodeCommand"]["bad-"+strings.ReplaceAll(name, " ", "-")] = b
		}
	}
	for name, s := range seedStates(t) {
		if name == "two-wides" {
			continue
		}
		b, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		corpus["FuzzRestore"][name] = b
	}
	for name, b := range corruptSnapshots(t) {
		if len(b) <= 4096 {
			corpus["FuzzRestore"]["bad-"+strings.ReplaceAll(name, " ", "-")] = b
		}
	}
	for fuzz, seeds := range corpus {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		if *updateSeeds {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range seeds {
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			path := filepath.Join(dir, name)
			if *updateSeeds {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("seed %s is missing or stale (%v): run go test ./internal/controller/fsm -run TestFuzzSeedCorpus -update-seeds", path, err)
			}
		}
	}
}
