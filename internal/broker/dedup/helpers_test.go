package dedup

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newTest(t testing.TB, window time.Duration, maxEntries int) (*Window, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(epoch)
	return New(Options{Window: window, MaxEntries: maxEntries, Clock: clk}), clk
}

// uniq makes a 32-hex-digit UNIQ_KEY like a Java producer's.
func uniq(i int) string { return fmt.Sprintf("7F0000010000%04X%016X", i%0xFFFF, uint64(i)) }

// res makes a distinct Result for message i stored at now.
func res(topic string, i int, now time.Time) Result {
	return Result{Topic: topic, QueueID: int32(i % 8), QueueOffset: int64(i) * 3,
		CommitLogOffset: int64(i) * 1000, StoredAt: now.UnixMilli()}
}

// await polls cond until it holds, failing the test after 10 s.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func (w *Window) waitingNow() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting
}

// checkIndex verifies the index invariants: every slot is reachable from
// its home, maps a ring entry with its tag, and count is right.
func checkIndex(t *testing.T, w *Window) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	x := &w.x
	if len(x.slots)&(len(x.slots)-1) != 0 || uint64(len(x.slots)-1) != x.mask {
		t.Fatalf("table size %d, mask %#x", len(x.slots), x.mask)
	}
	if x.ringLen() > w.maxEntries {
		t.Fatalf("ring holds %d > max %d", x.ringLen(), w.maxEntries)
	}
	n := 0
	for i, s := range x.slots {
		if s == 0 {
			continue
		}
		n++
		seq := x.seqOf(s)
		if seq < x.head || seq >= x.tail {
			t.Fatalf("slot %d maps seq %d outside [%d, %d)", i, seq, x.head, x.tail)
		}
		e := x.entryAt(seq)
		if uint32(s>>32) != tagOf(e.h) {
			t.Fatalf("slot %d tag %#x, entry tag %#x", i, s>>32, tagOf(e.h))
		}
		if j, ok := x.find(e.h); !ok || j != uint64(i) {
			t.Fatalf("slot %d: find gives %d, %v", i, j, ok)
		}
	}
	if n != x.count {
		t.Fatalf("%d slots used, count %d", n, x.count)
	}
	if x.count*4 > len(x.slots)*3 {
		t.Fatalf("load %d/%d over 3/4", x.count, len(x.slots))
	}
	want := 0
	switch {
	case x.head != x.tail:
		want = int((x.tail-1)>>chunkBits-x.head>>chunkBits) + 1
	case x.head&(chunkLen-1) != 0:
		want = 1 // the head's chunk is kept until the head leaves it
	}
	if got := len(x.chunks) - x.first; got != want {
		t.Fatalf("%d live chunks for seqs [%d, %d), want %d", got, x.head, x.tail, want)
	}
}

// fakeClock is a lock-free clock for benchmarks (Manual takes a mutex).
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("not used")
}
