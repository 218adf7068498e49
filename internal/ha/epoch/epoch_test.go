package epoch

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

const testPath = "/data/epochs"

func openT(t *testing.T, fsys vfs.FS) *History {
	t.Helper()
	h, err := Open(fsys, testPath)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return h
}

func TestAppendReopen(t *testing.T) {
	mem := vfs.NewMem()
	h := openT(t, mem)
	if _, ok := h.Last(); ok {
		t.Fatal("empty history has a last entry")
	}
	want := []Entry{{1, 0}, {2, 100}, {3, 100}, {7, 5 << 31}}
	for _, e := range want {
		if err := h.Append(e); err != nil {
			t.Fatalf("Append(%+v): %v", e, err)
		}
	}
	if got := h.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Entries() = %+v, want %+v", got, want)
	}
	// Every Append returned, so all of it is durable.
	again := openT(t, mem.CrashClone(vfs.CrashOptions{}))
	if got := again.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after crash Entries() = %+v, want %+v", got, want)
	}
	if last, ok := again.Last(); !ok || last != want[len(want)-1] {
		t.Fatalf("Last() = %+v, %v", last, ok)
	}
}

func TestAppendRefusesDisorder(t *testing.T) {
	h := openT(t, vfs.NewMem())
	if err := h.Append(Entry{Epoch: 0, Start: 0}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("epoch 0: %v, want ErrInvalid", err)
	}
	if err := h.Append(Entry{Epoch: 1, Start: -1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative start: %v, want ErrInvalid", err)
	}
	if err := h.Append(Entry{Epoch: 5, Start: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{{5, 2000}, {4, 2000}, {6, 999}} {
		if err := h.Append(e); !errors.Is(err, ErrOrder) {
			t.Fatalf("Append(%+v) = %v, want ErrOrder", e, err)
		}
	}
	if got, want := h.Entries(), []Entry{{5, 1000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Entries() = %+v, want %+v", got, want)
	}
}

// history returns a History on a fresh MemFS holding entries.
func history(t *testing.T, entries ...Entry) *History {
	t.Helper()
	h := openT(t, vfs.NewMem())
	for _, e := range entries {
		if err := h.Append(e); err != nil {
			t.Fatalf("Append(%+v): %v", e, err)
		}
	}
	return h
}

const maxOff = 1<<63 - 1

var tableEntries = []Entry{{1, 0}, {2, 1 << 31}, {3, 1 << 31}, {4, 3 << 32}, {9, 3<<32 + 5}}

func TestEpochAt(t *testing.T) {
	h := history(t, tableEntries...)
	for _, c := range []struct {
		off   int64
		epoch uint32
		ok    bool
	}{
		{-1, 0, false},
		{0, 1, true},
		{1<<31 - 1, 1, true},
		{1 << 31, 3, true}, // epoch 2 wrote nothing: its range is empty
		{3<<32 - 1, 3, true},
		{3 << 32, 4, true},
		{3<<32 + 4, 4, true},
		{3<<32 + 5, 9, true},
		{maxOff, 9, true},
	} {
		if epoch, ok := h.EpochAt(c.off); epoch != c.epoch || ok != c.ok {
			t.Errorf("EpochAt(%d) = %d, %v; want %d, %v", c.off, epoch, ok, c.epoch, c.ok)
		}
	}
	if _, ok := history(t).EpochAt(0); ok {
		t.Error("EpochAt on an empty history is ok")
	}
	late := history(t, Entry{5, 1 << 33})
	if _, ok := late.EpochAt(1<<33 - 1); ok {
		t.Error("EpochAt below the first start is ok")
	}
	if epoch, ok := late.EpochAt(1 << 33); epoch != 5 || !ok {
		t.Errorf("EpochAt(first start) = %d, %v", epoch, ok)
	}
}

func TestEndOf(t *testing.T) {
	h := history(t, tableEntries...)
	const leo = 1 << 40
	for _, c := range []struct {
		epoch uint32
		end   int64
		ok    bool
	}{
		{0, 0, false},
		{1, 1 << 31, true},
		{2, 1 << 31, true}, // an empty epoch ends where it starts
		{3, 3 << 32, true},
		{4, 3<<32 + 5, true},
		{5, 0, false}, // between known epochs: unknown, not "ends at 9's start"
		{8, 0, false},
		{9, leo, true},
		{10, 0, false},
		{1<<32 - 1, 0, false},
	} {
		if end, ok := h.EndOf(c.epoch, leo); end != c.end || ok != c.ok {
			t.Errorf("EndOf(%d) = %d, %v; want %d, %v", c.epoch, end, ok, c.end, c.ok)
		}
	}
	if _, ok := history(t).EndOf(1, leo); ok {
		t.Error("EndOf on an empty history is ok")
	}
}

func TestTruncateAfter(t *testing.T) {
	for _, c := range []struct {
		off  int64
		keep int
	}{
		{-1 << 63, 0},
		{-1, 0},
		{0, 0},
		{1, 1},
		{1 << 31, 1}, // epochs 2 and 3 both start there
		{1<<31 + 1, 3},
		{3 << 32, 3},
		{3<<32 + 1, 4},
		{3<<32 + 5, 4},
		{3<<32 + 6, 5},
		{maxOff, 5},
	} {
		mem := vfs.NewMem()
		h := openT(t, mem)
		for _, e := range tableEntries {
			if err := h.Append(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.TruncateAfter(c.off); err != nil {
			t.Fatalf("TruncateAfter(%d): %v", c.off, err)
		}
		want := tableEntries[:c.keep]
		if got := h.Entries(); !slices.Equal(got, want) {
			t.Errorf("TruncateAfter(%d): Entries() = %+v, want %+v", c.off, got, want)
		}
		if got := openT(t, mem.CrashClone(vfs.CrashOptions{})).Entries(); !slices.Equal(got, want) {
			t.Errorf("TruncateAfter(%d): after crash %+v, want %+v", c.off, got, want)
		}
		// The log goes on from the cut with a new epoch.
		next := Entry{Epoch: 10, Start: 3<<32 + 5}
		if c.keep < len(tableEntries) {
			next.Start = max(0, min(c.off, tableEntries[c.keep].Start))
		}
		if err := h.Append(next); err != nil {
			t.Fatalf("Append(%+v) after TruncateAfter(%d): %v", next, c.off, err)
		}
		if got, want := openT(t, mem.CrashClone(vfs.CrashOptions{})).Entries(), append(slices.Clone(want), next); !slices.Equal(got, want) {
			t.Errorf("TruncateAfter(%d) then Append: after crash %+v, want %+v", c.off, got, want)
		}
	}
}

// writeFile puts data in testPath, synced.
func writeFile(t *testing.T, data []byte) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/data"); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(mem, "/data", "epochs", data); err != nil {
		t.Fatal(err)
	}
	return mem
}

func entryBytes(es ...Entry) []byte {
	var b []byte
	for _, e := range es {
		enc := encodeEntry(e)
		b = append(b, enc[:]...)
	}
	return b
}

func TestOpenCutsTornTail(t *testing.T) {
	good := entryBytes(Entry{1, 0}, Entry{2, 1 << 33})
	bad := entryBytes(Entry{3, 1 << 34})
	bad[15] ^= 1
	for _, c := range []struct {
		name string
		tail []byte
	}{
		{"short", entryBytes(Entry{3, 1 << 34})[:9]},
		{"one byte", []byte{0}},
		{"whole, bad checksum", bad},
		{"zeros", make([]byte, EntrySize)},
		{"zeros, short", make([]byte, 5)},
	} {
		mem := writeFile(t, append(slices.Clone(good), c.tail...))
		h := openT(t, mem)
		want := []Entry{{1, 0}, {2, 1 << 33}}
		if got := h.Entries(); !slices.Equal(got, want) {
			t.Errorf("%s: Entries() = %+v, want %+v", c.name, got, want)
		}
		fi, err := mem.Stat(testPath)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(len(good)) {
			t.Errorf("%s: file is %d bytes after Open, want the torn tail cut to %d", c.name, fi.Size(), len(good))
		}
		if err := h.Append(Entry{3, 1 << 34}); err != nil {
			t.Fatalf("%s: Append after cut: %v", c.name, err)
		}
		if got, want := openT(t, mem.CrashClone(vfs.CrashOptions{})).Entries(), append(want, Entry{3, 1 << 34}); !slices.Equal(got, want) {
			t.Errorf("%s: after Append and crash %+v, want %+v", c.name, got, want)
		}
	}
}

func TestOpenRefusesCorruption(t *testing.T) {
	flipped := entryBytes(Entry{1, 0}, Entry{2, 100}, Entry{3, 200})
	flipped[EntrySize+3] ^= 0x10 // entry 1 (of 0..2)
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"bad entry before the last", "entry 1 (byte 16): checksum mismatch", flipped},
		{"bad whole entry then a short one", "entry 1 (byte 16): checksum mismatch",
			append(entryBytes(Entry{1, 0}), append(make([]byte, EntrySize), 1, 2, 3)...)},
		{"epoch not increasing", "entry 1 (byte 16): epoch: entry out of order: epoch 1 is not above the last epoch 1",
			entryBytes(Entry{1, 0}, Entry{1, 100})},
		{"start going back", "entry 2 (byte 32): epoch: entry out of order: epoch 3 starts at 50, below the start 100 of the last epoch 2",
			entryBytes(Entry{1, 0}, Entry{2, 100}, Entry{3, 50})},
		{"epoch 0", "entry 0 (byte 0): epoch: invalid entry: epoch 0", entryBytes(Entry{0, 0})},
		{"negative start", "entry 0 (byte 0): epoch: invalid entry: epoch 1 has negative start offset -5", entryBytes(Entry{1, -5})},
	} {
		_, err := Open(writeFile(t, c.data), testPath)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), testPath) {
			t.Errorf("%s: Open: %v, want ErrCorrupt naming %s and %q", c.name, err, testPath, c.want)
		}
	}
}

func TestOpenMissingFileCreatesNothing(t *testing.T) {
	mem := vfs.NewMem()
	h := openT(t, mem)
	if got := h.Entries(); len(got) != 0 {
		t.Fatalf("Entries() = %+v", got)
	}
	if _, err := mem.Stat("/data"); err == nil {
		t.Fatal("Open of a missing file created its directory")
	}
	if err := h.TruncateAfter(0); err != nil {
		t.Fatalf("TruncateAfter on an empty history: %v", err)
	}
	if _, err := mem.Stat(testPath); err == nil {
		t.Fatal("TruncateAfter of an empty history created the file")
	}
}

func TestBrokenAfterFailedSync(t *testing.T) {
	mem := vfs.NewMem()
	h := openT(t, mem)
	if err := h.Append(Entry{1, 0}); err != nil {
		t.Fatal(err)
	}
	mem.InjectError(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			return errors.New("disk gone")
		}
		return nil
	})
	err := h.Append(Entry{2, 10})
	if err == nil || !strings.Contains(err.Error(), "sync "+testPath+" after appending epoch 2") || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Append with a failing sync: %v", err)
	}
	mem.InjectError(nil)
	if err := h.Append(Entry{3, 20}); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Append after a failed sync: %v, want ErrBroken with the cause", err)
	}
	if err := h.TruncateAfter(0); !errors.Is(err, ErrBroken) {
		t.Fatalf("TruncateAfter after a failed sync: %v, want ErrBroken", err)
	}
	if got, want := h.Entries(), []Entry{{1, 0}}; !slices.Equal(got, want) {
		t.Fatalf("Entries() = %+v, want %+v", got, want)
	}
	// Reopening recovers; the entry whose sync failed may be there.
	again := openT(t, mem)
	if got := again.Entries(); !slices.Equal(got, []Entry{{1, 0}}) && !slices.Equal(got, []Entry{{1, 0}, {2, 10}}) {
		t.Fatalf("reopened: %+v", got)
	}
	if err := again.Append(Entry{3, 20}); err != nil {
		t.Fatalf("Append after reopening: %v", err)
	}
}

// TestConcurrentReaders reads while entries are appended (for the race
// detector), and checks every read sees a whole prefix.
func TestConcurrentReaders(t *testing.T) {
	h := history(t)
	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			if err := h.Append(Entry{uint32(i), int64(i) << 31}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			if got := len(h.Entries()); got != n {
				t.Fatalf("%d entries, want %d", got, n)
			}
			return
		default:
		}
		es := h.Entries()
		for i, e := range es {
			if e != (Entry{uint32(i + 1), int64(i+1) << 31}) {
				t.Fatalf("entry %d = %+v", i, e)
			}
		}
		if last, ok := h.Last(); ok {
			if epoch, ok := h.EpochAt(last.Start); !ok || epoch < last.Epoch {
				t.Fatalf("EpochAt(%d) = %d, %v after Last() = %+v", last.Start, epoch, ok, last)
			}
		}
	}
}
