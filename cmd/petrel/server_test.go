package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/store"
)

// startTestServer runs `petrel server` with o in-process until the test
// ends (then it must stop without error) and returns what it printed so far
// and a context that ends when it is stopped.
func startTestServer(t *testing.T, o *options) (context.Context, *logtest.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &logtest.Buffer{}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, o, out, func() { close(started) }) }()
	select {
	case <-started:
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	return ctx, out
}

func testOptions(dir string) *options {
	return &options{dataDir: dir, namesrvListen: "127.0.0.1:0", brokerListen: "127.0.0.1:0",
		brokerName: "broker-a", cluster: "DefaultCluster", flush: "async", flushInterval: 100 * time.Millisecond,
		autoCreate: true, segmentBytes: 1 << 20, maxMessage: 64 << 10, reserve: time.Hour, diskMaxUsed: 75, logLevel: "error"}
}

func TestServerStartsPrintsListenersAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out := &logtest.Buffer{}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, testOptions(dir), out, func() { close(started) }) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	for _, want := range []string{"name server listening on 127.0.0.1:", "broker broker-a listening on 127.0.0.1:", "data dir " + dir} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("startup output lacks %q:\n%s", want, out.String())
		}
	}
	// While it runs, the data dir is locked.
	cfg := store.DefaultConfig(dir)
	if _, err := store.Open(cfg); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of a running server's data dir: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("server stopped with %v", err)
	}
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatalf("reopen after stop: %v", err)
	}
	s.Close()
}

func TestServerRejectsBadFlags(t *testing.T) {
	for _, mutate := range []func(*options){
		func(o *options) { o.flush = "sometimes" },
		func(o *options) { o.logLevel = "loud" },
		func(o *options) { o.diskMaxUsed = 95 },
		func(o *options) { o.diskMaxUsed = 0 },
	} {
		o := testOptions(t.TempDir())
		mutate(o)
		err := runServer(context.Background(), o, &bytes.Buffer{}, nil)
		if err == nil || !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "give") {
			t.Errorf("err %v, want a message saying what is accepted", err)
		}
	}
}

// TestDiskMaxUsedRatioSetsTheHighWaterMark: --disk-max-used-ratio is the
// store's early-deletion threshold, as a fraction.
func TestDiskMaxUsedRatioSetsTheHighWaterMark(t *testing.T) {
	o := testOptions(t.TempDir())
	o.diskMaxUsed = 85
	cfg, err := o.storeConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DiskHighWater != 0.85 {
		t.Fatalf("DiskHighWater %v, want 0.85", cfg.DiskHighWater)
	}
}

// TestPageCacheBytesFlag: --page-cache-bytes is the store's PageCacheBytes;
// its 0 turns dropping off (the store's negative, since the store's 0
// means its default), and a negative size is refused.
func TestPageCacheBytesFlag(t *testing.T) {
	for _, c := range []struct{ flag, want int64 }{{1 << 30, 1 << 30}, {64 << 20, 64 << 20}, {0, -1}} {
		o := testOptions(t.TempDir())
		o.pageCache = c.flag
		cfg, err := o.storeConfig(nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.PageCacheBytes != c.want {
			t.Errorf("--page-cache-bytes %d: PageCacheBytes %d, want %d", c.flag, cfg.PageCacheBytes, c.want)
		}
	}
	o := testOptions(t.TempDir())
	o.pageCache = -1
	if _, err := o.storeConfig(nil); err == nil || !strings.Contains(err.Error(), "--page-cache-bytes") {
		t.Fatalf("negative --page-cache-bytes: err %v, want one naming the flag", err)
	}
}

// TestSIGTERMRightAfterStartStopsGracefully: a SIGTERM that arrives as
// soon as the server is ready (verify's restart fault does just that,
// once /readyz answers) must stop it gracefully. The handler used to be
// installed only after the start-up lines were printed, so such a SIGTERM
// took the default action and killed the process (here: the test binary).
func TestSIGTERMRightAfterStartStopsGracefully(t *testing.T) {
	o := testOptions(t.TempDir())
	done := make(chan error, 1)
	go func() {
		done <- runServer(context.Background(), o, &bytes.Buffer{}, func() {
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Error(err)
			}
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server stopped with %v; want a graceful stop", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server did not stop on SIGTERM")
	}
}

// TestBrokerWritesItsCPUProfile: --cpu-profile is a common flag, and
// `petrel broker` accepted it but only `petrel server` started the
// profile.
func TestBrokerWritesItsCPUProfile(t *testing.T) {
	o := testOptions(t.TempDir())
	o.cpuProfile = t.TempDir() + "/cpu.pprof"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runBroker(ctx, o, nil, &bytes.Buffer{}, cancel, nil) }()
	if err := <-done; err != nil {
		t.Fatalf("broker: %v", err)
	}
	fi, err := os.Stat(o.cpuProfile)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no CPU profile written by petrel broker: %v", err)
	}
}
