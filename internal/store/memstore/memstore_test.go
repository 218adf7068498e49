package memstore_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/memstore"
	"github.com/petrelmq/petrel/internal/store/storetest"
)

// TestConformance holds the twin to the contract the file store passes.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg store.Config) storetest.Harness {
		return &memHarness{st: memstore.New(cfg)}
	})
}

type memHarness struct{ st *memstore.Store }

func (h *memHarness) Store() store.MessageStore { return h.st }

func (h *memHarness) Close() error { return h.st.Close() }

func (h *memHarness) Restart(t *testing.T) {
	t.Helper()
	h.st.Close()
	st, err := h.st.Reopen()
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
}

func (h *memHarness) Expire(t *testing.T, lagQueues bool) {
	if lagQueues {
		h.st.RemoveLogBefore(h.st.Written())
	} else {
		h.st.RemoveBefore(h.st.Written())
	}
}

// TestReopenNeedsAClosedStore: a store in use cannot be reopened, so two
// stores never share what one holds.
func TestReopenNeedsAClosedStore(t *testing.T) {
	st := memstore.New(storetest.SuiteConfig(t, nil))
	defer st.Close()
	if _, err := st.Reopen(); err == nil {
		t.Fatal("Reopen of an open store succeeded")
	}
}

// TestCloseWaitsForTheListeners: Close returns once the listeners have
// heard of every message stored before it, and stops their goroutine.
func TestCloseWaitsForTheListeners(t *testing.T) {
	st := memstore.New(storetest.SuiteConfig(t, nil))
	release := make(chan struct{})
	var heard atomic.Int64
	st.AddListener(func(string, int32, int64) {
		<-release
		heard.Add(1)
	})
	for range 3 {
		if err := st.Put(&message.Message{Topic: "T", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() {
		st.Close()
		close(closed)
	}()
	close(release)
	<-closed
	if n := heard.Load(); n != 3 {
		t.Fatalf("listener heard %d of 3 before Close returned", n)
	}
	st.AddListener(func(string, int32, int64) { t.Error("a listener added after Close ran") })
	if err := st.Put(&message.Message{Topic: "T", Body: []byte("late")}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}
}
