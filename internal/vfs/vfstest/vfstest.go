// Package vfstest gives tests a disk that runs full, fails a write or holds
// its fsyncs on demand, for the files below one directory of a vfs.MemFS.
package vfstest

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/vfs"
)

// ErrWrite is the error of the write FailWrite picks.
var ErrWrite = errors.New("injected write error")

// Disk is the state the hooks of InstallDisk read; tests flip it while the
// code under test runs.
type Disk struct {
	// Full makes every Preallocate fail with vfs.ErrNoSpace.
	Full atomic.Bool
	// Hold makes every Sync signal Entered (without blocking) and then
	// wait until Release is closed.
	Hold atomic.Bool
	// Entered gets a value (buffer 1) when a held Sync starts.
	Entered chan struct{}
	// Release is closed by the test to let held Syncs go.
	Release chan struct{}
	// FailWrite is the write (1-based, counted in Writes while FailWrite
	// is above 0) that fails with ErrWrite; 0 for none.
	FailWrite atomic.Int64
	Writes    atomic.Int64
}

// InstallDisk sets fsys's error hook (replacing any other) to act on the
// operations on paths that begin with prefix, as d says.
func InstallDisk(fsys *vfs.MemFS, prefix string) *Disk {
	d := &Disk{Entered: make(chan struct{}, 1), Release: make(chan struct{})}
	fsys.InjectError(func(op vfs.Op, p string) error {
		if !strings.HasPrefix(p, prefix) {
			return nil
		}
		switch op {
		case vfs.OpPreallocate:
			if d.Full.Load() {
				return vfs.ErrNoSpace
			}
		case vfs.OpWrite:
			if n := d.FailWrite.Load(); n > 0 && d.Writes.Add(1) == n {
				return ErrWrite
			}
		case vfs.OpSync:
			if d.Hold.Load() {
				select {
				case d.Entered <- struct{}{}:
				default:
				}
				<-d.Release
			}
		}
		return nil
	})
	return d
}

// CrashAt makes the target-th file operation on fsys (counting from 1) a
// crash: it takes a crash clone of fsys as it was before that operation and
// fails the operation. The returned func gives the clone, nil until the
// crash happened. It replaces fsys's injected error function.
func CrashAt(fsys *vfs.MemFS, target int64) func() *vfs.MemFS {
	var n atomic.Int64
	var crashed atomic.Pointer[vfs.MemFS]
	fsys.InjectError(func(op vfs.Op, p string) error {
		if n.Add(1) == target {
			crashed.Store(fsys.CrashClone(vfs.CrashOptions{}))
			return fmt.Errorf("crash at %s %s", op, p)
		}
		return nil
	})
	return crashed.Load
}
