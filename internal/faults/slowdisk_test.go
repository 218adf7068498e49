package faults

import (
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// sleeps records the delays a SlowDisk asks for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

func (s *sleeps) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

func TestSlowDiskDelaysMatchedWritesAndSyncsWhileOn(t *testing.T) {
	mem := vfs.NewMem()
	var rec sleeps
	sd := &SlowDisk{Delay: 50 * time.Millisecond, Sleep: rec.sleep}
	fsys := sd.FS(mem, func(p string) bool { return strings.HasPrefix(p, "data/commitlog/") })
	for _, d := range []string{"data/commitlog", "data/other"} {
		if err := fsys.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	seg, err := fsys.Create("data/commitlog/0")
	if err != nil {
		t.Fatal(err)
	}
	other, err := fsys.Create("data/other/x")
	if err != nil {
		t.Fatal(err)
	}
	writeSync := func(f vfs.File) {
		t.Helper()
		if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}

	writeSync(seg)
	if rec.count() != 0 || sd.Delayed() != 0 {
		t.Fatalf("off: %d sleeps, %d delayed; want none", rec.count(), sd.Delayed())
	}

	if !sd.Set(true) || sd.Set(true) || !sd.On() {
		t.Fatal("Set(true) must report the change once and leave the switch on")
	}
	writeSync(seg)
	writeSync(other) // not a commit-log file
	reopened, err := fsys.Open("data/commitlog/0")
	if err != nil {
		t.Fatal(err)
	}
	writeSync(reopened)
	if rec.count() != 4 || sd.Delayed() != 4 {
		t.Fatalf("on: %d sleeps, %d delayed; want 4 (write and sync of the segment, twice)", rec.count(), sd.Delayed())
	}
	for _, d := range rec.d {
		if d != 50*time.Millisecond {
			t.Fatalf("slept %v; want the configured 50ms", d)
		}
	}

	if !sd.Set(false) || sd.On() {
		t.Fatal("Set(false) must switch it off")
	}
	writeSync(seg)
	if rec.count() != 4 {
		t.Fatalf("off again: %d sleeps; want still 4", rec.count())
	}
	// The data went through to the FS underneath.
	if b, ok, err := vfs.ReadFile(mem, "data/commitlog/0"); err != nil || !ok || string(b) != "abc" {
		t.Fatalf("underlying file = %q, %v, %v", b, ok, err)
	}
}

func TestSlowDiskFSKeepsWhatTheStoreChecks(t *testing.T) {
	sd := &SlowDisk{Delay: time.Millisecond}
	all := func(string) bool { return true }
	osWrapped := sd.FS(vfs.OS, all)
	// The store locks its data dir only on the OS FS.
	if !vfs.IsOS(osWrapped) {
		t.Fatal("a wrapped OS FS must still be IsOS")
	}
	if _, ok := osWrapped.(vfs.ZeroFiller); !ok {
		t.Fatal("a wrapped OS FS must keep its ZeroFiller")
	}
	memWrapped := sd.FS(vfs.NewMem(), all)
	if vfs.IsOS(memWrapped) {
		t.Fatal("a wrapped MemFS is not IsOS")
	}
	if _, ok := memWrapped.(vfs.ZeroFiller); ok {
		t.Fatal("a wrapped MemFS must not claim a ZeroFiller it lacks")
	}
	// ZeroFill goes to the OS FS and is not slowed.
	var rec sleeps
	sd = &SlowDisk{Delay: time.Millisecond, Sleep: rec.sleep}
	sd.Set(true)
	fsys := sd.FS(vfs.OS, all)
	name := path.Join(t.TempDir(), "seg")
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsys.(vfs.ZeroFiller).ZeroFill(name, 0, 8192); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); err != nil || size != 8192 || rec.count() != 0 {
		t.Fatalf("after ZeroFill: size %d, %v, %d sleeps; want 8192 bytes and no sleep", size, err, rec.count())
	}
}

func TestFollowFlipsTheDisksOnSignals(t *testing.T) {
	a, b := &SlowDisk{Delay: time.Millisecond}, &SlowDisk{Delay: 2 * time.Millisecond}
	var disks []*SlowDisk
	var logged strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
	sigs := make(chan os.Signal)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(sigs, syscall.SIGUSR1, syscall.SIGUSR2, func() []*SlowDisk { return disks }, log)
	}()
	// sigs is unbuffered: Follow has handled a signal once the send of
	// the next one returns.
	sigs <- syscall.SIGUSR1 // no disk yet: logged and ignored
	sigs <- syscall.SIGHUP  // not ours: ignored
	close(sigs)
	<-done
	logMu.Lock()
	if !strings.Contains(logged.String(), "no slow disk is configured") {
		t.Fatalf("log %q; want the ignored signal reported", logged.String())
	}
	logMu.Unlock()

	disks = []*SlowDisk{a, b}
	sigs = make(chan os.Signal)
	done = make(chan struct{})
	go func() {
		defer close(done)
		Follow(sigs, syscall.SIGUSR1, syscall.SIGUSR2, func() []*SlowDisk { return disks }, log)
	}()
	sigs <- syscall.SIGUSR1
	sigs <- syscall.SIGHUP // handled in order: the first flip is done
	if !a.On() || !b.On() {
		t.Fatalf("after SIGUSR1: on %v, %v; want both on", a.On(), b.On())
	}
	sigs <- syscall.SIGUSR2
	close(sigs)
	<-done
	if a.On() || b.On() {
		t.Fatalf("after SIGUSR2: on %v, %v; want both off", a.On(), b.On())
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logged.String(), "test fault slow-disk switched"); n != 4 {
		t.Fatalf("logged %d flips; want 4 (two disks, on and off):\n%s", n, logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
