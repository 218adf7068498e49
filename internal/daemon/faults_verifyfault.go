//go:build verifyfault

package daemon

// The test-only slow-disk fault of `petrel verify` (package faults), built
// in only with the build tag verifyfault: with slow-disk=D in
// PETREL_TEST_FAULTS, the store's commit-log files sit on a faults.SlowDisk
// wrapper of the store's FS, off at start; SIGUSR1 switches every such
// disk of the process on (each commit-log write and sync takes D longer),
// SIGUSR2 off, and each flip is logged. The tagged build always catches
// the two signals, so that a stray one never kills a broker started
// without slow-disk (it is logged and ignored).

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/petrelmq/petrel/internal/faults"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// slowDisks are the slow disks of the process's brokers, which the
// signals switch together.
var slowDisks struct {
	mu     sync.Mutex
	list   []*faults.SlowDisk
	follow sync.Once
}

func registeredSlowDisks() []*faults.SlowDisk {
	slowDisks.mu.Lock()
	defer slowDisks.mu.Unlock()
	return append([]*faults.SlowDisk(nil), slowDisks.list...)
}

// openStore opens the store, its commit log on a slow disk when the spec
// asks for slow-disk.
func openStore(cfg store.Config, log *slog.Logger) (*store.Store, error) {
	spec, err := faults.FromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	slowDisks.follow.Do(func() {
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
		go faults.Follow(sigs, syscall.SIGUSR1, syscall.SIGUSR2, registeredSlowDisks, log)
	})
	if spec.SlowDisk > 0 {
		sd := &faults.SlowDisk{Delay: spec.SlowDisk}
		fsys := cfg.FS
		if fsys == nil {
			fsys = vfs.OS
		}
		prefix := path.Join(cfg.Dir, "commitlog") + "/"
		cfg.FS = sd.FS(fsys, func(p string) bool { return strings.HasPrefix(p, prefix) })
		slowDisks.mu.Lock()
		slowDisks.list = append(slowDisks.list, sd)
		slowDisks.mu.Unlock()
		log.Warn("test fault slow-disk is ready: SIGUSR1 slows each commit-log write and sync, SIGUSR2 stops it",
			"delay", spec.SlowDisk.String(), "commitlog", prefix)
	}
	return store.Open(cfg)
}
