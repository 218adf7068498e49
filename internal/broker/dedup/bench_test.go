package dedup

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// keyMaker writes distinct 32-hex-digit keys into one buffer, so that
// making a key allocates nothing. The returned string is valid until the
// next call; the Window keeps no key string, only its hash.
type keyMaker struct {
	buf [32]byte
	raw [16]byte
}

func (m *keyMaker) key(i uint64) string {
	m.raw[0], m.raw[1], m.raw[2], m.raw[3] = 0x7F, 0, 0, 1
	for j := range 8 {
		m.raw[8+j] = byte(i >> (56 - 8*j))
	}
	hex.Encode(m.buf[:], m.raw[:])
	return unsafe.String(&m.buf[0], len(m.buf))
}

// TestBytesPerEntry measures the heap one million remembered ids take and
// checks it against BytesPerEntry and the figure in doc.go.
func TestBytesPerEntry(t *testing.T) {
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w, clk := newTest(t, time.Hour, 0)
	var km keyMaker
	for i := range uint64(n) {
		w.Remember(km.key(i), res("TopicTest", int(i), clk.Now()))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	measured := float64(after.HeapAlloc-before.HeapAlloc) / n
	per := w.BytesPerEntry()
	t.Logf("%d ids: %.1f bytes/id measured, BytesPerEntry %d, Bytes %d", w.Len(), measured, per, w.Bytes())
	if w.Len() != n {
		t.Fatalf("Len %d", w.Len())
	}
	if measured < float64(entryBytes) || measured > 72 {
		t.Fatalf("%.1f bytes per id, want 48..72 (doc.go says about 65)", measured)
	}
	if d := measured - float64(per); d < -3 || d > 3 {
		t.Fatalf("BytesPerEntry %d, measured %.1f", per, measured)
	}
	runtime.KeepAlive(w)
}

// sendPath drives a window the way new messages do: each op remembers a
// new id, the clock moving so that the window holds about ids of them in
// steady state, which expire as new ones arrive. It warms up to steady
// state before the timed loop.
func sendPath(b *testing.B, ids int, op func(w *Window, k string, r Result)) {
	clk := &fakeClock{}
	clk.ns.Store(epoch.UnixNano())
	const window = 10 * time.Minute
	w := New(Options{Window: window, Clock: clk})
	step := int64(window) / int64(ids)
	var km keyMaker
	r := Result{Topic: "TopicTest", QueueID: 3, QueueOffset: 1, CommitLogOffset: 2}
	i := uint64(0)
	one := func() {
		r.StoredAt = clk.ns.Add(step) / 1e6
		op(w, km.key(i), r)
		i++
	}
	for range 2 * ids {
		one()
	}
	b.ReportAllocs()
	for b.Loop() {
		one()
	}
	b.ReportMetric(float64(w.BytesPerEntry()), "B/id")
}

// BenchmarkLookupRemember is the send path of a new message: a Lookup that
// misses, then Remember. With a million ids the table (16 MB) and ring
// (48 MB) are far beyond the caches: the cost is two or three memory
// misses; with 16k ids it is mostly hashing and locking.
func BenchmarkLookupRemember(b *testing.B) {
	for _, ids := range []int{1 << 14, 1 << 20, 1 << 22} {
		b.Run(fmt.Sprintf("ids=%d", ids), func(b *testing.B) {
			sendPath(b, ids, func(w *Window, k string, r Result) {
				if _, ok := w.Lookup(r.Topic, k); ok {
					b.Fatal("hit")
				}
				w.Remember(k, r)
			})
		})
	}
}

// BenchmarkAcquireCommit is the claim-based send path: Acquire, then
// Commit.
func BenchmarkAcquireCommit(b *testing.B) {
	for _, ids := range []int{1 << 14, 1 << 20, 1 << 22} {
		b.Run(fmt.Sprintf("ids=%d", ids), func(b *testing.B) {
			sendPath(b, ids, func(w *Window, k string, r Result) {
				c := w.Acquire(r.Topic, k)
				if !c.Held() {
					b.Fatal("not held")
				}
				c.Commit(r)
			})
		})
	}
}

// BenchmarkLookupHit is a resend found in the window.
func BenchmarkLookupHit(b *testing.B) {
	clk := &fakeClock{}
	clk.ns.Store(epoch.UnixNano())
	w := New(Options{Window: time.Hour, Clock: clk})
	var km keyMaker
	const n = 1 << 16
	for i := range uint64(n) {
		w.Remember(km.key(i), Result{Topic: "TopicTest", StoredAt: epoch.UnixMilli()})
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if _, ok := w.Lookup("TopicTest", km.key(i%n)); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

// BenchmarkLookupRememberParallel runs the send path from all cores.
func BenchmarkLookupRememberParallel(b *testing.B) {
	clk := &fakeClock{}
	clk.ns.Store(epoch.UnixNano())
	const window = 10 * time.Minute
	w := New(Options{Window: window, Clock: clk})
	step := int64(window / (1 << 20))
	var next atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var km keyMaker
		r := Result{Topic: "TopicTest"}
		base := next.Add(1) << 40
		i := uint64(0)
		for pb.Next() {
			k := km.key(base + i)
			w.Lookup(r.Topic, k)
			r.StoredAt = clk.ns.Add(step) / 1e6
			w.Remember(k, r)
			i++
		}
	})
}
