package epoch

import (
	"bytes"
	"errors"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// FuzzOpen opens arbitrary bytes as a history file (seeds in
// testdata/fuzz/FuzzOpen). Open either refuses them with ErrCorrupt, or
// returns ordered entries whose encoding is the start of the file, cuts the
// file to exactly those entries (dropping at most one torn entry's bytes),
// and takes a next entry.
func FuzzOpen(f *testing.F) {
	f.Add(entryBytes(Entry{1, 0}, Entry{2, 1 << 33}))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := writeFile(t, data)
		h, err := Open(mem, testPath)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want nil or ErrCorrupt", err)
			}
			return
		}
		es := h.Entries()
		enc := entryBytes(es...)
		if !bytes.HasPrefix(data, enc) {
			t.Fatalf("entries %+v are not the file's start", es)
		}
		if torn := len(data) - len(enc); torn >= 2*EntrySize || torn >= EntrySize && len(data)%EntrySize != 0 {
			t.Fatalf("Open dropped %d bytes after %d entries: more than one torn entry", torn, len(es))
		}
		for i := 1; i < len(es); i++ {
			if es[i].Epoch <= es[i-1].Epoch || es[i].Start < es[i-1].Start {
				t.Fatalf("entries out of order: %+v", es)
			}
		}
		cut, ok, err := vfs.ReadFile(mem, testPath)
		if err != nil || !ok || !bytes.Equal(cut, enc) {
			t.Fatalf("file after Open is %x (%v, %v), want %x", cut, ok, err, enc)
		}
		next := Entry{Epoch: 1, Start: 0}
		if last, ok := h.Last(); ok {
			if last.Epoch == 1<<32-1 {
				return
			}
			next = Entry{Epoch: last.Epoch + 1, Start: last.Start}
		}
		if err := h.Append(next); err != nil {
			t.Fatalf("Append(%+v) after Open: %v", next, err)
		}
		again, err := Open(mem.CrashClone(vfs.CrashOptions{}), testPath)
		if err != nil || !equalEntries(again.Entries(), append(es, next)) {
			t.Fatalf("after Append and crash: %+v, %v; want %+v", again.Entries(), err, append(es, next))
		}
	})
}
