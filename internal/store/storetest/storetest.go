// Package storetest gives the tests of the packages built on the store a
// small store on an in-memory file system: segments, index and consume
// queue files a few KiB to a MiB, so that rolling over and recovery happen
// within a test. Run is the conformance suite of store.MessageStore that
// the file store and its in-memory twin (memstore) both pass (suite.go).
package storetest

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// StoreHost is the address the small store writes into records.
var StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")

// SmallConfig is a store configuration on fsys under /data with clk:
// 1 MiB segments, 64 KiB messages, index files of 64 slots and 256
// entries, consume-queue files of 64 entries, StoreHost 127.0.0.1:10911,
// logging to log.
func SmallConfig(fsys vfs.FS, clk clock.Clock, log *slog.Logger) store.Config {
	cfg := store.DefaultConfig("/data")
	cfg.FS = fsys
	cfg.Clock = clk
	cfg.SegmentBytes = 1 << 20
	cfg.MaxMessageBytes = 64 << 10
	cfg.IndexSlotsPerFile = 64
	cfg.IndexEntriesPerFile = 256
	cfg.ConsumeQueueEntriesPerFile = 64
	cfg.StoreHost = StoreHost
	cfg.Logger = log
	return cfg
}

// Logger logs at Warn and above into t's log, one line per record.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
