package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
)

// TmpSuffix marks the file WriteFileAtomic writes before renaming it;
// readers never load such a file, and openers may remove leftovers.
const TmpSuffix = ".tmp"

// WriteFileAtomic replaces dir/name by data so that a crash leaves either
// the old or the new file: it writes dir/name.tmp, syncs it, renames it
// over dir/name and syncs dir. On error the temporary file is removed
// (best effort). Errors name the step and the file.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	return WriteFileAtomicPrepared(fsys, dir, name, data, nil)
}

// WriteFileAtomicPrepared is WriteFileAtomic that runs prepare (when not
// nil) on the temporary file's path once it is created, before the data
// goes in (to narrow its mode, say); prepare's error aborts the write and
// is returned as it is.
func WriteFileAtomicPrepared(fsys FS, dir, name string, data []byte, prepare func(tmp string) error) (err error) {
	final := path.Join(dir, name)
	tmp := final + TmpSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			_ = fsys.Remove(tmp)
		}
	}()
	if prepare != nil {
		if err := prepare(tmp); err != nil {
			_ = f.Close()
			return err
		}
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, final); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, final, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		// The new file is in place, but its directory entry may not be
		// durable yet.
		return fmt.Errorf("sync dir of %s: %w", final, err)
	}
	return nil
}

// ReadFile returns the whole content of p, or false when p does not exist.
func ReadFile(fsys FS, p string) ([]byte, bool, error) {
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false, fmt.Errorf("size of %s: %w", p, err)
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		err = nil
	} else if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	return b, true, nil
}
