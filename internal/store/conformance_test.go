package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestConformance holds the file store to the MessageStore contract the
// in-memory twin (memstore) is held to as well.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg store.Config) storetest.Harness {
		h := &fileHarness{cfg: cfg, fs: cfg.FS.(*vfs.MemFS), clk: cfg.Clock.(*clock.Manual)}
		h.open(t)
		return h
	})
}

// fileHarness runs the suite on a file store over a MemFS.
type fileHarness struct {
	cfg store.Config
	fs  *vfs.MemFS
	clk *clock.Manual
	st  *store.Store
}

func (h *fileHarness) open(t *testing.T) {
	t.Helper()
	st, err := store.Open(h.cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	h.st = st
}

func (h *fileHarness) Store() store.MessageStore { return h.st }

func (h *fileHarness) Close() error { return h.st.Close() }

func (h *fileHarness) Restart(t *testing.T) {
	t.Helper()
	if err := h.st.Close(); err != nil {
		t.Fatalf("close store: %v", err)
	}
	h.open(t)
}

// Expire fills the segment being written so that a new one starts, lets
// the reserve time pass and runs retention: every segment but the new one
// goes. With lagQueues the consume-queue files cannot be removed, so the
// queues keep pointing at what went.
func (h *fileHarness) Expire(t *testing.T, lagQueues bool) {
	t.Helper()
	seg := h.st.Written() / h.cfg.SegmentBytes
	for h.st.Written()/h.cfg.SegmentBytes == seg {
		m := &message.Message{Topic: storetest.FillerTopic, Body: make([]byte, h.cfg.MaxMessageBytes/2)}
		if err := h.st.Put(m); err != nil {
			t.Fatalf("put filler: %v", err)
		}
	}
	h.clk.Advance(h.cfg.FileReservedTime + time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.st.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected: consume-queue files cannot be removed")
	if lagQueues {
		h.fs.InjectError(func(op vfs.Op, p string) error {
			if op == vfs.OpRemove && strings.Contains(p, "/consumequeue/") {
				return injected
			}
			return nil
		})
		defer h.fs.InjectError(nil)
	}
	rep, err := h.st.RunRetention()
	if err != nil && !(lagQueues && errors.Is(err, injected)) {
		t.Fatalf("retention: %v", err)
	}
	if rep.SegmentsRemoved == 0 {
		t.Fatalf("retention removed no segment: %+v", rep)
	}
}
