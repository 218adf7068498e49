package memstore_test

import (
	"testing"

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
