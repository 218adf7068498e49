package store

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/petrelmq/petrel/internal/vfs"
)

// lockDir takes an exclusive lock on dir/lock so that two processes never
// open one store. Only the OS file system needs it.
func lockDir(fsys vfs.FS, dir string) (func() error, error) {
	if !vfs.IsOS(fsys) {
		return func() error { return nil }, nil
	}
	p := filepath.Join(dir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: data dir %s is in use by another process (lock %s: %v); stop it or choose another --data-dir", dir, p, err)
	}
	return f.Close, nil
}
