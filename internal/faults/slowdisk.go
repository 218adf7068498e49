package faults

import (
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// SlowDisk is the slow-disk fault: while it is on, each write and sync of
// a file its FS wrappers match sleeps Delay first. Tests give it a Sleep
// that records instead of sleeping. Safe for concurrent use.
type SlowDisk struct {
	// Delay is added to each matched write and sync while on.
	Delay time.Duration
	// Sleep waits d; nil is time.Sleep.
	Sleep func(d time.Duration)

	on      atomic.Bool
	delayed atomic.Int64
}

// Set switches the fault on or off and reports whether that changed it.
func (s *SlowDisk) Set(on bool) bool { return s.on.Swap(on) != on }

// On reports whether the fault is on.
func (s *SlowDisk) On() bool { return s.on.Load() }

// Delayed is the number of writes and syncs delayed so far.
func (s *SlowDisk) Delayed() int64 { return s.delayed.Load() }

func (s *SlowDisk) wait() {
	if !s.on.Load() || s.Delay <= 0 {
		return
	}
	s.delayed.Add(1)
	if s.Sleep != nil {
		s.Sleep(s.Delay)
		return
	}
	time.Sleep(s.Delay)
}

// FS wraps inner so that the writes (WriteAt) and syncs (Sync) of the
// files whose path match reports true for are slowed while s is on; every
// other operation, and every other file, passes straight through. The
// wrapper unwraps (Unwrap) to inner and offers inner's vfs.ZeroFiller when
// inner has one (zero-filling a new segment is preparation, not a write a
// send waits for, so it is not slowed).
func (s *SlowDisk) FS(inner vfs.FS, match func(path string) bool) vfs.FS {
	f := &slowFS{FS: inner, s: s, match: match}
	if zf, ok := inner.(vfs.ZeroFiller); ok {
		return &slowZeroFS{slowFS: f, zf: zf}
	}
	return f
}

type slowFS struct {
	vfs.FS
	s     *SlowDisk
	match func(string) bool
}

// Unwrap returns the FS under the wrapper.
func (f *slowFS) Unwrap() vfs.FS { return f.FS }

func (f *slowFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || !f.match(name) {
		return file, err
	}
	return &slowFile{File: file, s: f.s}, nil
}

func (f *slowFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	return f.wrap(name, file, err)
}

func (f *slowFS) Open(name string) (vfs.File, error) {
	file, err := f.FS.Open(name)
	return f.wrap(name, file, err)
}

type slowZeroFS struct {
	*slowFS
	zf vfs.ZeroFiller
}

func (f *slowZeroFS) ZeroFill(name string, off, n int64) error { return f.zf.ZeroFill(name, off, n) }

type slowFile struct {
	vfs.File
	s *SlowDisk
}

func (f *slowFile) WriteAt(p []byte, off int64) (int, error) {
	f.s.wait()
	return f.File.WriteAt(p, off)
}

func (f *slowFile) Sync() error {
	f.s.wait()
	return f.File.Sync()
}

// Follow switches every disk of disks() on at each on signal and off at
// each off signal it reads from sigs, logging each flip (and a signal that
// finds no slow disk), until sigs is closed. The tagged daemon feeds it
// SIGUSR1 and SIGUSR2 from signal.Notify.
func Follow(sigs <-chan os.Signal, on, off os.Signal, disks func() []*SlowDisk, log *slog.Logger) {
	for sig := range sigs {
		var want bool
		switch sig {
		case on:
			want = true
		case off:
		default:
			continue
		}
		list := disks()
		if len(list) == 0 {
			log.Warn("test fault slow-disk: signal ignored, no slow disk is configured (add slow-disk=D to "+EnvVar+")", "signal", sig.String())
			continue
		}
		for _, d := range list {
			if d.Set(want) {
				log.Warn("test fault slow-disk switched", "on", want, "delay", d.Delay.String(), "signal", sig.String(), "delayed", d.Delayed())
			}
		}
	}
}
