package dispatch

import (
	"errors"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

func TestCheckpointRoundTripAndDamage(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(fsys, "/d"); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("missing checkpoint: %v", err)
	}
	want := Checkpoint{Dispatched: 12345, LogFlushed: 23456, Digest: 7}
	if err := WriteCheckpoint(fsys, "/d", want); err != nil {
		t.Fatal(err)
	}
	// Durable: survives a crash right after the write.
	got, err := ReadCheckpoint(fsys.CrashClone(vfs.CrashOptions{}), "/d")
	if err != nil || got != want {
		t.Fatalf("after crash: %+v %v", got, err)
	}
	f, _ := fsys.Open("/d/" + CheckpointFile)
	f.WriteAt([]byte{0xFF}, 10)
	f.Close()
	if _, err := ReadCheckpoint(fsys, "/d"); err == nil || errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("damaged checkpoint accepted: %v", err)
	}
	// A failed write leaves the old checkpoint in place.
	if err := WriteCheckpoint(fsys, "/d", want); err != nil {
		t.Fatal(err)
	}
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpRename {
			return errors.New("injected")
		}
		return nil
	})
	if err := WriteCheckpoint(fsys, "/d", Checkpoint{Dispatched: 1}); err == nil {
		t.Fatal("write with a failing rename succeeded")
	}
	fsys.InjectError(nil)
	if got, err := ReadCheckpoint(fsys, "/d"); err != nil || got != want {
		t.Fatalf("after failed write: %+v %v", got, err)
	}
}
