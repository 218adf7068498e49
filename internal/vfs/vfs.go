// Package vfs puts all of Petrel's disk I/O behind a small interface so that
// storage code can be driven by the real operating system (OS) or by an
// in-memory file system (MemFS) that can simulate a crash (CrashClone drops
// whatever was not synced; KillClone keeps it, not yet durable, as a
// process restarted after kill -9 finds it), inject write and sync errors,
// and hold syncs (HoldSync) to look between a write and its fsync.
//
// Paths are slash-separated and interpreted by the FS: the OS FS passes them
// to the operating system, MemFS keeps its own tree. Durability follows POSIX
// rules and MemFS enforces the strict reading of them: file data is durable
// after File.Sync, and the creation, removal or renaming of a directory entry
// is durable only after SyncDir of the directory that holds it.
package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// ErrNoSpace is returned (wrapped) by writes and preallocations when the
// device is full. Callers test for it with errors.Is.
var ErrNoSpace = errors.New("vfs: no space left on device")

// File is an open file. ReadAt and WriteAt may be called concurrently from
// several goroutines; the other methods may be called concurrently with them.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes all data written so far durable.
	Sync() error
	// Truncate changes the size of the file; growing it fills with zeros.
	Truncate(size int64) error
	// Preallocate reserves disk space for [0, size) so that later writes in
	// that range cannot fail for lack of space, and extends the file size to
	// size. It returns an error wrapping ErrNoSpace when the space is not there.
	Preallocate(size int64) error
	// Size returns the current size of the file.
	Size() (int64, error)
	// DropCache tells the OS that [off, off+n) will not be read soon, so
	// that it frees the cached pages of that range which are already on
	// disk. It changes no data; a range with dirty pages keeps them.
	DropCache(off, n int64) error
}

// Usage describes the space of the device that holds a path, as statfs(2)
// reports it. Some of the device may be reserved for the superuser (5% on a
// default ext4): those blocks are neither used nor available, so
// UsedBytes+FreeBytes can be less than TotalBytes.
type Usage struct {
	// TotalBytes is the size of the device (f_blocks).
	TotalBytes uint64
	// UsedBytes is what files take: f_blocks − f_bfree.
	UsedBytes uint64
	// FreeBytes is what is left for an unprivileged process (f_bavail).
	FreeBytes uint64
}

// UsedFraction returns the fraction of the device in use, 0..1, as df and
// RocketMQ (getDiskPartitionSpaceUsedPercent) compute it:
// used / (used + available), so blocks reserved for the superuser count
// neither way. Everything in Petrel that reports or acts on disk use goes
// through it.
func (u Usage) UsedFraction() float64 {
	if u.UsedBytes+u.FreeBytes == 0 {
		return 0
	}
	return float64(u.UsedBytes) / float64(u.UsedBytes+u.FreeBytes)
}

// FS is a file system. All methods are safe for concurrent use.
type FS interface {
	// Create creates name (truncating it if it exists) and opens it for
	// reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything under it; a missing path is not
	// an error.
	RemoveAll(name string) error
	// Rename atomically replaces newname by oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(dir string) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat describes a path. A missing path gives an error for which
	// errors.Is(err, fs.ErrNotExist) holds.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the creations, removals and renames of entries of dir
	// durable.
	SyncDir(dir string) error
	// Usage reports the space of the device that holds path.
	Usage(path string) (Usage, error)
}
