package vfs

import (
	"errors"
	"io/fs"
	"testing"
)

// TestWriteFileAtomicPreparedRunsPrepareOnTheTemporaryFile: prepare gets
// the temporary file's path before the data goes in; its error aborts the
// write as it is, leaving neither the temporary nor the final file, and
// without it the data lands in the final file.
func TestWriteFileAtomicPreparedRunsPrepareOnTheTemporaryFile(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	var seen string
	err := WriteFileAtomicPrepared(m, "d", "f", []byte("x"), func(tmp string) error {
		seen = tmp
		return refused
	})
	if !errors.Is(err, refused) || err.Error() != "refused" {
		t.Fatalf("prepare's error came back as %v", err)
	}
	if seen != "d/f"+TmpSuffix {
		t.Fatalf("prepare got %q, want the temporary file d/f%s", seen, TmpSuffix)
	}
	for _, p := range []string{"d/f", "d/f" + TmpSuffix} {
		if _, err := m.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after the aborted write %s: %v, want it absent", p, err)
		}
	}
	if err := WriteFileAtomicPrepared(m, "d", "f", []byte("x"), func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	data, ok, err := ReadFile(m, "d/f")
	if err != nil || !ok || string(data) != "x" {
		t.Fatalf("after the write d/f holds %q (%v, %v), want x", data, ok, err)
	}
}
