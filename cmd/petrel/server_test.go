package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store"
)

func TestServerOpensStoreAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	f := serverFlags{dataDir: dir, flush: "async", flushInterval: 100 * time.Millisecond,
		segmentBytes: 1 << 20, maxMessage: 64 << 10, reserve: time.Hour, logLevel: "error"}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, f, &out, func() { close(started) }) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
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
	if !strings.Contains(out.String(), "data dir "+dir) {
		t.Fatalf("startup line missing: %q", out.String())
	}
	// Stopped cleanly: the store reopens.
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatalf("reopen after stop: %v", err)
	}
	s.Close()
}

func TestServerRejectsBadFlags(t *testing.T) {
	for _, f := range []serverFlags{
		{dataDir: t.TempDir(), flush: "sometimes", logLevel: "info"},
		{dataDir: t.TempDir(), flush: "sync", logLevel: "loud"},
	} {
		err := runServer(context.Background(), f, &bytes.Buffer{}, nil)
		if err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("flags %+v: err %v, want a message saying what is accepted", f, err)
		}
	}
}
