package commitlog

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// commitRecorder collects what OnGroupCommit reports.
type commitRecorder struct {
	mu      sync.Mutex
	commits []GroupCommit
}

func (r *commitRecorder) observe(c GroupCommit) {
	r.mu.Lock()
	r.commits = append(r.commits, c)
	r.mu.Unlock()
}

func (r *commitRecorder) totals() (msgs, calls, synced int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.commits {
		msgs += c.Messages
		if c.Synced {
			synced++
		}
		if c.Sync < 0 {
			panic("negative sync duration")
		}
	}
	return msgs, len(r.commits), synced
}

func TestOnGroupCommitUnderFlushSyncReportsEachMessageOnceAndFewerCallsThanMessages(t *testing.T) {
	rec := &commitRecorder{}
	l := openLog(t, vfs.NewMem(), Options{SegmentBytes: 1 << 20, OnGroupCommit: rec.observe})
	var wg sync.WaitGroup
	const writers, per = 16, 40
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, err := l.Append(testMsg("T", int32(w), fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	msgs, calls, synced := rec.totals()
	if msgs != writers*per {
		t.Fatalf("group commits reported %d messages, want %d", msgs, writers*per)
	}
	if synced != calls {
		t.Fatalf("%d of %d group commits under FlushSync were not syncs", calls-synced, calls)
	}
	if calls >= writers*per {
		t.Fatalf("%d group commits for %d appends: the hook runs per message", calls, writers*per)
	}
}

func TestOnGroupCommitUnderFlushAsyncReportsWritesAndPeriodicSyncs(t *testing.T) {
	rec := &commitRecorder{}
	clk := clock.NewManual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	l := openLog(t, vfs.NewMem(), Options{SegmentBytes: 1 << 20, FlushMode: FlushAsync, FlushInterval: time.Second,
		Clock: clk, OnGroupCommit: rec.observe})
	for i := range 5 {
		if _, err := l.Append(testMsg("T", 0, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _, _ := rec.totals()
	if msgs != 5 {
		t.Fatalf("writes reported %d messages, want 5", msgs)
	}
	if err := l.Close(); err != nil { // the final sync
		t.Fatal(err)
	}
	_, _, synced := rec.totals()
	if synced == 0 {
		t.Fatal("no sync was reported under FlushAsync")
	}
}

func TestOnGroupCommitAddsNoAllocationPerAppend(t *testing.T) {
	var msgs atomic.Int64
	l := openLog(t, vfs.NewMem(), Options{SegmentBytes: 64 << 20, FlushMode: FlushAsync,
		OnGroupCommit: func(c GroupCommit) { msgs.Add(int64(c.Messages)) }})
	defer l.Close()
	m := testMsg("T", 0, strings.Repeat("x", 1024))
	l.Append(m)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per append with the hook set, want <= 1 (as without)", allocs)
	}
	if msgs.Load() < 201 {
		t.Fatalf("the hook saw %d messages, want at least 201", msgs.Load())
	}
}
