package epoch

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// step is one operation of a crash scenario.
type step struct {
	open     bool  // Open the history (the first step)
	truncate bool  // TruncateAfter(off)
	off      int64 //
	append   Entry // else Append(append)
}

func (s step) String() string {
	switch {
	case s.open:
		return "Open"
	case s.truncate:
		return fmt.Sprintf("TruncateAfter(%d)", s.off)
	default:
		return fmt.Sprintf("Append(%+v)", s.append)
	}
}

// apply returns the entries after s, as the History must hold them.
func (s step) apply(entries []Entry) []Entry {
	switch {
	case s.open:
		return entries
	case s.truncate:
		return slices.DeleteFunc(slices.Clone(entries), func(e Entry) bool { return e.Start >= s.off })
	default:
		return append(slices.Clone(entries), s.append)
	}
}

var scenario = []step{
	{open: true},
	{append: Entry{2, 1 << 31}},
	{append: Entry{3, 1 << 31}}, // epoch 2 wrote nothing
	{append: Entry{4, 3 << 32}},
	{truncate: true, off: 3 << 32},
	{append: Entry{5, 3<<32 + 10}},
	{truncate: true, off: 1<<31 + 1},
	{truncate: true, off: 1 << 40}, // drops nothing: no file operation
	{append: Entry{6, 1 << 33}},
	{truncate: true, off: 0}, // drops everything
	{append: Entry{7, 1 << 34}},
}

// setup prepares a MemFS for the scenario: fresh (no directory, no file), or
// holding a file with entry {1, 0} and a torn second entry that Open cuts.
// It returns the entries the file holds.
func setup(t *testing.T, torn bool) (*vfs.MemFS, []Entry) {
	t.Helper()
	mem := vfs.NewMem()
	if !torn {
		return mem, nil
	}
	must(t, mem.MkdirAll("/data"))
	f, err := mem.Create(testPath)
	must(t, err)
	e := encodeEntry(Entry{1, 0})
	next := encodeEntry(Entry{2, 64})
	_, err = f.WriteAt(append(e[:], next[:7]...), 0)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	must(t, mem.SyncDir("/data"))
	return mem, []Entry{{1, 0}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runScenario runs the scenario on mem with hook installed: before each file
// operation, hook gets its 1-based index and the states the file may hold if
// the machine crashed there (the last state a step returned with, and the
// state of the step in progress); a non-nil return fails the operation.
// After a failed step the others must be refused without touching the file.
// It returns the number of file operations and the states the file may
// hold at the end.
func runScenario(t *testing.T, mem *vfs.MemFS, initial []Entry, hook func(op int, cands [][]Entry) error) (int, [][]Entry) {
	t.Helper()
	acked := initial
	var pending []Entry
	ops := 0
	mem.InjectError(func(vfs.Op, string) error {
		ops++
		return hook(ops, [][]Entry{acked, pending})
	})
	defer mem.InjectError(nil)
	var h *History
	for i, s := range scenario {
		pending = s.apply(acked)
		var err error
		switch {
		case s.open:
			h, err = Open(mem, testPath)
		case s.truncate:
			err = h.TruncateAfter(s.off)
		default:
			err = h.Append(s.append)
		}
		if err == nil {
			acked = pending
			if got := h.Entries(); !equalEntries(got, acked) {
				t.Fatalf("after %v: Entries() = %+v, want %+v", s, got, acked)
			}
			continue
		}
		if s.open {
			return ops, [][]Entry{acked}
		}
		if got := h.Entries(); !equalEntries(got, acked) {
			t.Fatalf("after failed %v (%v): Entries() = %+v, want the previous %+v", s, err, got, acked)
		}
		before := ops
		for _, later := range scenario[i+1:] {
			if later.truncate {
				err = h.TruncateAfter(later.off)
			} else {
				err = h.Append(later.append)
			}
			if !errors.Is(err, ErrBroken) && !equalEntries(later.apply(acked), acked) {
				t.Fatalf("%v after a failed %v: %v, want ErrBroken", later, s, err)
			}
		}
		if ops != before {
			t.Fatalf("a broken history did %d file operations", ops-before)
		}
		return ops, [][]Entry{acked, pending}
	}
	return ops, [][]Entry{acked}
}

// checkRecovered opens fsys and checks that it holds one of cands, that a
// second crash and Open find the same, and that the recovered history takes
// a new entry.
func checkRecovered(t *testing.T, what string, fsys *vfs.MemFS, cands [][]Entry) {
	t.Helper()
	h, err := Open(fsys, testPath)
	if err != nil {
		t.Fatalf("%s: Open after crash: %v", what, err)
	}
	got := h.Entries()
	if !slices.ContainsFunc(cands, func(c []Entry) bool { return equalEntries(c, got) }) {
		t.Fatalf("%s: recovered %+v, want one of %+v", what, got, cands)
	}
	again, err := Open(fsys.CrashClone(vfs.CrashOptions{}), testPath)
	if err != nil {
		t.Fatalf("%s: second Open: %v", what, err)
	}
	if got2 := again.Entries(); !equalEntries(got2, got) {
		t.Fatalf("%s: second Open %+v, first %+v", what, got2, got)
	}
	next := Entry{Epoch: 100, Start: 1 << 41}
	if err := h.Append(next); err != nil {
		t.Fatalf("%s: Append after recovery: %v", what, err)
	}
	reopened, err := Open(fsys.CrashClone(vfs.CrashOptions{}), testPath)
	if err != nil {
		t.Fatalf("%s: Open after recovery and Append: %v", what, err)
	}
	if got3, want := reopened.Entries(), append(slices.Clone(got), next); !equalEntries(got3, want) {
		t.Fatalf("%s: after recovery and Append %+v, want %+v", what, got3, want)
	}
}

func equalEntries(a, b []Entry) bool { return slices.Equal(a, b) }

func crashOpts(seed int64) vfs.CrashOptions {
	if seed < 0 {
		return vfs.CrashOptions{} // only synced data survives
	}
	return vfs.CrashOptions{Rand: rand.New(rand.NewSource(seed))}
}

// TestCrashAtEveryOperation crashes the machine before each file operation
// of the scenario in turn, keeping only synced data or a random prefix of
// the unsynced writes (the last possibly cut short): Open then finds the
// entries of the last step that returned or of the one in progress, never
// a torn or invented entry, and the recovered history keeps working.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, torn := range []bool{false, true} {
		total, _ := runScenario(t, func() *vfs.MemFS { m, _ := setup(t, torn); return m }(), mustInitial(t, torn),
			func(int, [][]Entry) error { return nil })
		if total < 20 {
			t.Fatalf("torn=%v: the scenario did only %d file operations", torn, total)
		}
		t.Logf("torn=%v: crashing before each of %d file operations", torn, total)
		for k := 1; k <= total; k++ {
			for seed := int64(-1); seed < 6; seed++ {
				mem, initial := setup(t, torn)
				var crashed, killed *vfs.MemFS
				var cands [][]Entry
				runScenario(t, mem, initial, func(op int, c [][]Entry) error {
					if op == k {
						crashed = mem.CrashClone(crashOpts(seed))
						killed = mem.KillClone()
						cands = c
					}
					return nil
				})
				if crashed == nil {
					t.Fatalf("torn=%v: no operation %d of %d", torn, k, total)
				}
				what := fmt.Sprintf("torn=%v, crash before op %d of %d, seed %d", torn, k, total, seed)
				checkRecovered(t, what, crashed, cands)
				if seed == -1 { // a kill -9 there: everything written is kept, not yet durable
					checkRecovered(t, fmt.Sprintf("torn=%v, kill before op %d of %d", torn, k, total), killed, cands)
				}
			}
		}
	}
}

// TestErrorAtEveryOperation fails each file operation of the scenario in
// turn: the failing step reports it, the History keeps its previous entries
// and refuses further changes, and after a crash Open finds the state before
// or after the failed step.
func TestErrorAtEveryOperation(t *testing.T) {
	for _, torn := range []bool{false, true} {
		total, _ := runScenario(t, func() *vfs.MemFS { m, _ := setup(t, torn); return m }(), mustInitial(t, torn),
			func(int, [][]Entry) error { return nil })
		for k := 1; k <= total; k++ {
			for seed := int64(-1); seed < 3; seed++ {
				mem, initial := setup(t, torn)
				injected := false
				_, cands := runScenario(t, mem, initial, func(op int, _ [][]Entry) error {
					if op == k {
						injected = true
						return fmt.Errorf("injected failure of operation %d", k)
					}
					return nil
				})
				if !injected {
					t.Fatalf("torn=%v: no operation %d of %d", torn, k, total)
				}
				what := fmt.Sprintf("torn=%v, error at op %d of %d, seed %d", torn, k, total, seed)
				checkRecovered(t, what+" (crash)", mem.CrashClone(crashOpts(seed)), cands)
				checkRecovered(t, what+" (kill)", mem.KillClone(), cands)
			}
		}
	}
}

func mustInitial(t *testing.T, torn bool) []Entry {
	_, initial := setup(t, torn)
	return initial
}
