package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// sendObserver counts what Config.ObserveSend reports.
type sendObserver struct {
	mu    sync.Mutex
	calls int
	total time.Duration
}

func (o *sendObserver) observe(d time.Duration) {
	o.mu.Lock()
	o.calls++
	o.total += d
	o.mu.Unlock()
}

func (o *sendObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
}

func TestObserveSendSeesSyncAsyncDuplicateAndRefusedSends(t *testing.T) {
	obs := &sendObserver{}
	e := newEnv(t, func(_ *store.Config, c *Config) { c.ObserveSend = obs.observe })
	e.createTopic("T", 1)
	e.send("T", 0, "a", message.PropertyUniqKey, "K1")
	if got := obs.count(); got != 1 {
		t.Fatalf("after one sync send the observer saw %d sends, want 1", got)
	}
	// The same UNIQ_KEY again: answered from the dedup window, still a send.
	if _, err := e.b.Send(context.Background(), sendReq("T", 0, "a", message.PropertyUniqKey, "K1")); err != nil {
		t.Fatal(err)
	}
	if got := obs.count(); got != 2 {
		t.Fatalf("after a duplicate the observer saw %d sends, want 2", got)
	}
	if hits := e.b.DedupStats().Hits; hits != 1 {
		t.Fatalf("DedupStats().Hits = %d after one resend, want 1", hits)
	}
	done := make(chan error, 1)
	e.b.SendBatch(context.Background(), []*SendRequest{sendReq("T", 0, "b")}, func(_ int, _ SendResult, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := obs.count(); got != 3 {
		t.Fatalf("after a batch send the observer saw %d sends, want 3", got)
	}
	bad := sendReq("T", 0, "c")
	bad.QueueID = 99
	if _, err := e.b.Send(context.Background(), bad); err == nil {
		t.Fatal("a send to queue 99 of a one-queue topic was accepted")
	}
	if got := obs.count(); got != 4 {
		t.Fatalf("after a refused send the observer saw %d sends, want 4", got)
	}
}

func TestSendWithoutObserverAndDedupStatsStartAtZero(t *testing.T) {
	e := newEnv(t)
	if s := e.b.DedupStats(); s.Hits != 0 || s.Entries != 0 {
		t.Fatalf("fresh broker DedupStats = %+v, want zero hits and entries", s)
	}
	e.createTopic("T", 1)
	e.send("T", 0, "a", message.PropertyUniqKey, "K1")
	if s := e.b.DedupStats(); s.Entries != 1 || s.Hits != 0 {
		t.Fatalf("after one send DedupStats = %+v, want 1 entry and 0 hits", s)
	}
}
