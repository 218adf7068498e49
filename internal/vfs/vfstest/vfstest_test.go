package vfstest

import (
	"errors"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

func TestDiskActsOnlyBelowItsPrefixAndAsTold(t *testing.T) {
	fsys := vfs.NewMem()
	d := InstallDisk(fsys, "log/")
	if err := fsys.MkdirAll("log"); err != nil {
		t.Fatal(err)
	}
	in, err := fsys.Create("log/a")
	if err != nil {
		t.Fatal(err)
	}
	out, err := fsys.Create("other")
	if err != nil {
		t.Fatal(err)
	}
	d.Full.Store(true)
	if err := in.Preallocate(1 << 10); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("preallocate on a full disk: %v", err)
	}
	if err := out.Preallocate(1 << 10); err != nil {
		t.Fatalf("preallocate outside the prefix: %v", err)
	}
	d.Full.Store(false)
	if err := in.Preallocate(1 << 10); err != nil {
		t.Fatalf("preallocate once space is back: %v", err)
	}

	d.FailWrite.Store(2)
	if _, err := in.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if _, err := in.WriteAt([]byte("y"), 1); !errors.Is(err, ErrWrite) {
		t.Fatalf("second write: %v, want ErrWrite", err)
	}
	if _, err := in.WriteAt([]byte("z"), 2); err != nil {
		t.Fatalf("third write: %v", err)
	}
	d.FailWrite.Store(0)

	d.Hold.Store(true)
	done := make(chan error, 1)
	go func() { done <- in.Sync() }()
	select {
	case <-d.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync was not held")
	}
	select {
	case err := <-done:
		t.Fatalf("a held sync returned (%v)", err)
	default:
	}
	if err := out.Sync(); err != nil {
		t.Fatalf("sync outside the prefix: %v", err)
	}
	close(d.Release)
	if err := <-done; err != nil {
		t.Fatalf("released sync: %v", err)
	}
}
