package epoch

import (
	"errors"
	"reflect"
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
