package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// OS is the FS of the operating system.
var OS FS = &osFS{statfs: unix.Statfs}

// StatfsFunc fills st for the file system holding path, as unix.Statfs does.
type StatfsFunc func(path string, st *unix.Statfs_t) error

// OSWithStatfs returns the FS of the operating system whose Usage takes its
// figures from statfs instead of the statfs(2) system call: tests use it to
// give the OS FS a device with reserved blocks or nearly full. A nil statfs
// is unix.Statfs.
func OSWithStatfs(statfs StatfsFunc) FS {
	if statfs == nil {
		statfs = unix.Statfs
	}
	return &osFS{statfs: statfs}
}

// IsOS reports whether fsys is the operating system's FS (OS or one made
// by OSWithStatfs), or a wrapper of one (its Unwrap() FS method returns
// the FS under it): its paths are real ones.
func IsOS(fsys FS) bool {
	for {
		w, ok := fsys.(interface{ Unwrap() FS })
		if !ok {
			break
		}
		fsys = w.Unwrap()
	}
	_, ok := fsys.(*osFS)
	return ok
}

type osFS struct{ statfs StatfsFunc }

type osFile struct{ *os.File }

func wrapNoSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

func (f osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, wrapNoSpace(err)
}

// Sync uses fdatasync: the data and the size are what matter for our files.
func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f osFile) Preallocate(size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("preallocate %s: %w", f.Name(), ErrNoSpace)
	}
	// File systems without fallocate (tmpfs on old kernels, some overlays):
	// fall back to a sparse file of the right size.
	if err := f.File.Truncate(size); err != nil {
		return wrapNoSpace(err)
	}
	return nil
}

// DropCache is posix_fadvise(POSIX_FADV_DONTNEED), which frees the clean
// cached pages of the range.
func (f osFile) DropCache(off, n int64) error {
	if off < 0 || n < 0 {
		return &fs.PathError{Op: "fadvise", Path: f.Name(), Err: unix.EINVAL}
	}
	if err := unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED); err != nil {
		return &fs.PathError{Op: "fadvise", Path: f.Name(), Err: err}
	}
	return nil
}

func (f osFile) Size() (int64, error) {
	st, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, wrapNoSpace(err)
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error              { return os.Remove(name) }
func (osFS) RemoveAll(name string) error           { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error  { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string) error             { return wrapNoSpace(os.MkdirAll(dir, 0o755)) }
func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

func (o *osFS) Usage(path string) (Usage, error) {
	var st unix.Statfs_t
	if err := o.statfs(path, &st); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	return UsageOfStatfs(&st), nil
}

// UsageOfStatfs turns statfs(2) figures into a Usage: the device is f_blocks,
// used is f_blocks − f_bfree and available f_bavail, each in f_bsize units
// (df's figures; f_bfree − f_bavail are the blocks reserved for the
// superuser).
func UsageOfStatfs(st *unix.Statfs_t) Usage {
	bs := uint64(st.Bsize)
	return Usage{
		TotalBytes: st.Blocks * bs,
		UsedBytes:  (st.Blocks - min(st.Bfree, st.Blocks)) * bs,
		FreeBytes:  min(st.Bavail, st.Blocks) * bs,
	}
}

// ZeroFiller is implemented by file systems that can write zeros into a
// file range more cheaply than WriteAt of a zero buffer.
type ZeroFiller interface {
	// ZeroFill writes zeros over [off, off+n) of the file at name. The
	// blocks are written, not just reserved, so later overwrites and syncs
	// need no allocation; nothing is synced.
	ZeroFill(name string, off, n int64) error
}

// directAlign is the alignment O_DIRECT needs for offsets and sizes.
const directAlign = 4096

// zeroPages is a read-only, page-aligned 1 MiB of zeros for O_DIRECT writes.
var zeroPages = sync.OnceValue(func() []byte {
	b, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
})

// ZeroFill writes the aligned middle of the range with O_DIRECT, so the
// zeros go to disk from one buffer instead of through the page cache (which
// costs a core at disk speed), and the unaligned edges with ordinary writes.
// Without O_DIRECT (tmpfs, some overlays) everything is written normally.
func (osFS) ZeroFill(name string, off, n int64) error {
	end := off + n
	lo := (off + directAlign - 1) / directAlign * directAlign
	hi := end / directAlign * directAlign
	if z := zeroPages(); lo < hi && z != nil {
		if f, err := os.OpenFile(name, os.O_WRONLY|unix.O_DIRECT, 0); err == nil {
			err = writeZeros(f, lo, hi, z)
			f.Close()
			if err != nil {
				return err
			}
			if err := bufferedZeros(name, off, lo); err != nil {
				return err
			}
			return bufferedZeros(name, hi, end)
		}
	}
	return bufferedZeros(name, off, end)
}

func bufferedZeros(name string, off, end int64) error {
	if off >= end {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeZeros(f, off, end, make([]byte, min(end-off, 1<<20)))
}

func writeZeros(f *os.File, off, end int64, zeros []byte) error {
	for off < end {
		k := min(int64(len(zeros)), end-off)
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return wrapNoSpace(err)
		}
		off += k
	}
	return nil
}
