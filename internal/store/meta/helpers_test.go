package meta

import (
	"log/slog"
	"maps"
	"path"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// testDir is where the tests keep the store on a MemFS; it does not exist
// beforehand, so Open's directory creation is exercised too.
const testDir = "/data/meta"

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// hookFS wraps an FS and calls before(op, path) ahead of every operation,
// file operations included; a non-nil result fails the operation. It works
// over vfs.OS and vfs.MemFS alike, to count, block, fail or crash-clone at a
// chosen operation.
type hookFS struct {
	vfs.FS
	mu     sync.Mutex
	before func(op vfs.Op, name string) error
}

func (h *hookFS) setHook(fn func(op vfs.Op, name string) error) {
	h.mu.Lock()
	h.before = fn
	h.mu.Unlock()
}

func (h *hookFS) call(op vfs.Op, name string) error {
	h.mu.Lock()
	fn := h.before
	h.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(op, name)
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	if err := h.call(vfs.OpCreate, name); err != nil {
		return nil, err
	}
	f, err := h.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, h: h, name: name}, nil
}

func (h *hookFS) Open(name string) (vfs.File, error) {
	if err := h.call(vfs.OpOpen, name); err != nil {
		return nil, err
	}
	f, err := h.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, h: h, name: name}, nil
}

func (h *hookFS) Remove(name string) error {
	if err := h.call(vfs.OpRemove, name); err != nil {
		return err
	}
	return h.FS.Remove(name)
}

func (h *hookFS) Rename(oldname, newname string) error {
	if err := h.call(vfs.OpRename, oldname); err != nil {
		return err
	}
	return h.FS.Rename(oldname, newname)
}

func (h *hookFS) SyncDir(dir string) error {
	if err := h.call(vfs.OpSyncDir, dir); err != nil {
		return err
	}
	return h.FS.SyncDir(dir)
}

type hookFile struct {
	vfs.File
	h    *hookFS
	name string
}

func (f *hookFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.h.call(vfs.OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *hookFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.h.call(vfs.OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *hookFile) Truncate(size int64) error {
	if err := f.h.call(vfs.OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *hookFile) Sync() error {
	if err := f.h.call(vfs.OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// opCounter counts operations per (op, base name).
type opCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounter) hook(op vfs.Op, name string) error {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[op.String()+" "+path.Base(name)]++
	c.mu.Unlock()
	return nil
}

func (c *opCounter) get(op vfs.Op, base string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op.String()+" "+base]
}

// renames counts completed file replacements of base.
func (c *opCounter) renames(base string) int { return c.get(vfs.OpRename, base+tmpSuffix) }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func openT(t *testing.T, fsys vfs.FS, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(fsys, testDir, Options{Clock: clk, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// openOpts is openT with options; Clock and Logger are filled in.
func openOpts(t *testing.T, fsys vfs.FS, opts Options) *Store {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clock.NewManual(epoch)
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or a generous deadline passes. It
// yields instead of sleeping.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// waiting reports how many callers are parked on w's running write.
func (w *writer) waitingCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting
}

func (w *writer) attemptCount() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.attempts
}

// allOffsets returns a flat copy of every offset.
func allOffsets(s *Store) map[offsetKey]int64 {
	s.offsets.mu.Lock()
	defer s.offsets.mu.Unlock()
	return maps.Clone(s.offsets.m)
}

func topic(name string, queues int32) Topic {
	return Topic{Name: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: PermRead | PermWrite, TopicFilterType: "SINGLE_TAG"}
}

// await waits for ch to be closed, failing the test after a generous
// deadline instead of hanging.
func await(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a blocked file operation")
	}
}
