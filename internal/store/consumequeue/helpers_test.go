package consumequeue

import (
	"errors"
	"path"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// ent is the entry the tests store at logical offset i: records of 100 bytes
// back to back from commit-log offset 1000.
func ent(i int64) Entry {
	return Entry{Offset: 1000 + i*100, Size: 100, TagHash: i*7 + 1}
}

func open(t testing.TB, fsys vfs.FS, dir string, per int) *Queue {
	t.Helper()
	q, err := Open(fsys, dir, Options{EntriesPerFile: per})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return q
}

func mustAppend(t testing.TB, q *Queue, logical int64, e Entry) {
	t.Helper()
	if err := q.Append(logical, e); err != nil {
		t.Fatalf("Append(%d, %v): %v", logical, e, err)
	}
}

// appendRange appends ent(i) for i in [from, to).
func appendRange(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		mustAppend(t, q, i, ent(i))
	}
}

// readAll reads [from, MaxOffset) with reads of size chunk.
func readAll(t testing.TB, q *Queue, from int64, chunk int) []Entry {
	t.Helper()
	var out []Entry
	dst := make([]Entry, chunk)
	for pos := from; ; {
		n, err := q.Read(pos, dst)
		if err != nil {
			t.Fatalf("Read(%d): %v", pos, err)
		}
		if n == 0 {
			return out
		}
		out = append(out, dst[:n]...)
		pos += int64(n)
	}
}

// checkEntries checks that the queue reads ent(i) for every i in [from, to)
// and ends at to.
func checkEntries(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for _, chunk := range []int{1, 3, 32} {
		got := readAll(t, q, from, chunk)
		if int64(len(got)) != to-from {
			t.Fatalf("read %d entries from %d (chunk %d), want %d", len(got), from, chunk, to-from)
		}
		for k, e := range got {
			if want := ent(from + int64(k)); e != want {
				t.Fatalf("entry %d = %v, want %v (chunk %d)", from+int64(k), e, want, chunk)
			}
		}
	}
}

func checkMinMax(t testing.TB, q *Queue, min, max int64) {
	t.Helper()
	if got := q.MinOffset(); got != min {
		t.Errorf("MinOffset = %d, want %d", got, min)
	}
	if got := q.MaxOffset(); got != max {
		t.Errorf("MaxOffset = %d, want %d", got, max)
	}
}

// files lists the queue files in dir with their sizes.
func files(t testing.TB, fsys vfs.FS, dir string) map[string]int64 {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%s): %v", dir, err)
	}
	out := map[string]int64{}
	for _, n := range names {
		st, err := fsys.Stat(path.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = st.Size()
	}
	return out
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// fsyses runs f against the OS and the in-memory FS.
func fsyses(t *testing.T, f func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Run("os", func(t *testing.T) { f(t, vfs.OS, path.Join(t.TempDir(), "cq", "TopicA", "0")) })
	t.Run("mem", func(t *testing.T) { f(t, vfs.NewMem(), "/data/cq/TopicA/0") })
}
