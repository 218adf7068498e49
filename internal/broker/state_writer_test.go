package broker

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/memstore"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// refusingStore refuses puts to the state topic while refuse is set.
type refusingStore struct {
	store.MessageStore
	refuse atomic.Bool
}

func (s *refusingStore) PutBatch(msgs []*message.Message) error {
	if s.refuse.Load() && msgs[0].Topic == StateTopic {
		return errors.New("injected: disk full")
	}
	return s.MessageStore.PutBatch(msgs)
}

// TestStateWriterBackPressureAndRetry: while the store refuses, the
// writer retries (by the clock) and keeps every record; once the queue
// is full an emitter blocks; when the store takes puts again everything
// is written in emit order.
func TestStateWriterBackPressureAndRetry(t *testing.T) {
	clk := clock.NewManual(t0)
	scfg := storetest.SmallConfig(vfs.NewMem(), clk, storetest.Logger(t))
	scfg.MaxMessageBytes = 2 << 20
	mem := memstore.New(scfg)
	st := &refusingStore{MessageStore: mem}
	st.refuse.Store(true)
	cfg := DefaultConfig()
	cfg.Clock, cfg.Logger, cfg.StateReplication = clk, storetest.Logger(t), true
	// No offsets diff within the test's Advance: the manual clock runs its
	// timers on the advancing goroutine, and a diff that found a changed
	// offset would block there on the full queue, before the writer's
	// retry, due later in the same Advance, could drain it.
	cfg.StateFlushInterval = time.Hour
	b, err := New(st, meta.NewMem(clk), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	defer b.Close()

	const n = stateQueueBytes/maxStatePayload + 2 // more than the queue holds
	var emitted atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			p := make([]byte, maxStatePayload)
			p[0] = byte(i)
			b.emitState(staterec.KindTopicDelete, p)
			emitted.Add(1)
		}
	}()
	deadline := time.Now().Add(waitLimit)
	for b.state.blocked.Load() == 0 || b.state.failures.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d emits: %d emitters blocked, %d refused puts", emitted.Load(), b.state.blocked.Load(), b.state.failures.Load())
		}
		runtime.Gosched()
	}
	if got := emitted.Load(); got >= n {
		t.Fatalf("all %d emits returned with the store refusing", got)
	}
	b.state.mu.Lock()
	q := b.state.qBytes
	b.state.mu.Unlock()
	if q > stateQueueBytes {
		t.Fatalf("%d bytes queued, over the bound %d", q, stateQueueBytes)
	}
	if mem.MaxOffset(StateTopic, 0) != 0 {
		t.Fatal("state records were stored while the store refused")
	}

	st.refuse.Store(false)
	clk.Advance(stateRetryMax) // the retry is due
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := b.emitStateSync(ctx, stateKindBarrier, nil); err != nil {
		t.Fatal(err)
	}
	var kinds []staterec.Kind
	var order []byte
	for off := int64(0); off < mem.MaxOffset(StateTopic, 0); {
		res, err := mem.GetMessages(StateTopic, 0, off, 32, 64<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Records(func(r message.Record) {
			if err := staterec.DecodeBatch(r.Body(), func(rec staterec.Record) error {
				kinds = append(kinds, rec.Kind)
				if rec.Kind == staterec.KindTopicDelete && len(rec.Payload) == maxStatePayload {
					order = append(order, rec.Payload[0])
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
		off = res.NextOffset
		res.Release()
	}
	if len(kinds) == 0 || kinds[0] != staterec.KindSnapshotBegin {
		t.Fatalf("the log does not begin with the start snapshot: %v", kinds)
	}
	if len(order) != n {
		t.Fatalf("%d of %d records stored", len(order), n)
	}
	for i, v := range order {
		if v != byte(i) {
			t.Fatalf("record %d stored as number %d: out of order", v, i)
		}
	}
}
