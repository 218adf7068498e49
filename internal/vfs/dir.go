package vfs

import (
	"errors"
	"io/fs"
	"path"
	"slices"
)

// MkdirAllDurable creates dir and its missing parents like FS.MkdirAll,
// then syncs the parent of every directory it created, so that the new
// directories survive a crash.
func MkdirAllDurable(fsys FS, dir string) error {
	var missing []string
	for d := path.Clean(dir); ; d = path.Dir(d) {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if path.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	// Outermost first, so each entry is durable before the ones under it.
	for _, d := range slices.Backward(missing) {
		if p := path.Dir(d); p != d {
			if err := fsys.SyncDir(p); err != nil {
				return err
			}
		}
	}
	return nil
}
