package dedup

import (
	"iter"
	"testing"
	"time"
)

func TestHitWithinWindowReturnsOriginalResult(t *testing.T) {
	w, clk := newTest(t, 10*time.Minute, 0)
	want := res("T", 1, clk.Now())
	w.Remember(uniq(1), want)
	clk.Advance(10*time.Minute - time.Millisecond)
	got, ok := w.Lookup("T", uniq(1))
	if !ok || got != want {
		t.Fatalf("Lookup at window end = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := w.Lookup("T", uniq(2)); ok {
		t.Fatal("an id never remembered hit")
	}
	if s := w.Stats(); s.Hits != 1 {
		t.Fatalf("hits %d, want 1", s.Hits)
	}
}

func TestMissAfterWindow(t *testing.T) {
	w, clk := newTest(t, 10*time.Minute, 0)
	w.Remember(uniq(1), res("T", 1, clk.Now()))
	clk.Advance(10 * time.Minute)
	if r, ok := w.Lookup("T", uniq(1)); ok {
		t.Fatalf("hit %+v after the window", r)
	}
	if n := w.Len(); n != 0 {
		t.Fatalf("Len %d after the window, want 0", n)
	}
}

func TestWindowCountsFromRememberNotStoredAt(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	r := res("T", 1, clk.Now().Add(-30*time.Second)) // stored 30 s before the store answered
	w.Remember(uniq(1), r)
	clk.Advance(time.Minute - time.Millisecond)
	if got, ok := w.Lookup("T", uniq(1)); !ok || got != r {
		t.Fatalf("Lookup = %+v, %v; want the result, StoredAt kept", got, ok)
	}
	clk.Advance(time.Millisecond)
	if _, ok := w.Lookup("T", uniq(1)); ok {
		t.Fatal("hit after the window")
	}
}

func TestZeroWindowDisables(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		w, clk := newTest(t, d, 0)
		if w.Enabled() {
			t.Fatalf("window %v enabled", d)
		}
		w.Remember(uniq(1), res("T", 1, clk.Now()))
		if _, ok := w.Lookup("T", uniq(1)); ok {
			t.Fatalf("window %v: hit", d)
		}
		if w.Len() != 0 || w.Bytes() != 0 {
			t.Fatalf("window %v holds %d ids, %d bytes", d, w.Len(), w.Bytes())
		}
		c := w.Acquire("T", uniq(1))
		c2 := w.Acquire("T", uniq(1)) // does not wait for c
		if c.Dup || c.Held() || c2.Dup || c2.Held() {
			t.Fatalf("window %v: claims %+v %+v", d, c, c2)
		}
		c.Commit(res("T", 1, clk.Now()))
		if n := w.Rebuild(seqOf(uniq(2), res("T", 2, clk.Now()))); n != 0 {
			t.Fatalf("window %v: rebuild added %d", d, n)
		}
		if !w.Horizon().IsZero() {
			t.Fatal("horizon of a disabled window")
		}
	}
}

func TestEmptyKeyIsNeverRemembered(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	w.Remember("", res("T", 1, clk.Now()))
	if _, ok := w.Lookup("T", ""); ok || w.Len() != 0 {
		t.Fatal("empty key remembered")
	}
	c := w.Acquire("T", "")
	if c.Dup || c.Held() {
		t.Fatalf("claim of empty key %+v", c)
	}
	if c2, ok := w.TryAcquire("T", ""); !ok || c2.Held() {
		t.Fatal("a second claim of the empty key waits or holds")
	}
}

func TestTopicsAreDistinct(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	a, b := res("A", 1, clk.Now()), res("B", 2, clk.Now())
	w.Remember(uniq(1), a)
	if _, ok := w.Lookup("B", uniq(1)); ok {
		t.Fatal("same key in another topic hit")
	}
	w.Remember(uniq(1), b)
	if got, _ := w.Lookup("A", uniq(1)); got != a {
		t.Fatalf("A: %+v, want %+v", got, a)
	}
	if got, _ := w.Lookup("B", uniq(1)); got != b {
		t.Fatalf("B: %+v, want %+v", got, b)
	}
	// The length prefix keeps ("AB","C…") and ("A","BC…") apart.
	w.Remember("C"+uniq(2), res("AB", 3, clk.Now()))
	if _, ok := w.Lookup("A", "BC"+uniq(2)); ok {
		t.Fatal("(AB, C…) hit as (A, BC…)")
	}
	if w.Len() != 3 {
		t.Fatalf("Len %d, want 3", w.Len())
	}
}

func TestRememberKeepsFirstResultWithinWindow(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	first := res("T", 1, clk.Now())
	w.Remember(uniq(1), first)
	clk.Advance(30 * time.Second)
	w.Remember(uniq(1), res("T", 2, clk.Now()))
	if got, _ := w.Lookup("T", uniq(1)); got != first {
		t.Fatalf("got %+v, want the first %+v", got, first)
	}
	// The second Remember did not restart the window.
	clk.Advance(30 * time.Second)
	if _, ok := w.Lookup("T", uniq(1)); ok {
		t.Fatal("hit after the first result's window")
	}
}

func TestRememberAfterExpiryReplaces(t *testing.T) {
	// Window 1 min; entries remembered out of order via StoredAt-based
	// Rebuild leave an expired id behind a live head, so it is still in
	// the table when it is remembered again.
	w, clk := newTest(t, time.Minute, 0)
	now := clk.Now()
	w.Rebuild(seqOf(
		uniq(1), res("T", 1, now.Add(-10*time.Second)),
		uniq(2), res("T", 2, now.Add(-50*time.Second)),
	))
	clk.Advance(20 * time.Second) // uniq(2) expired, head uniq(1) live
	if _, ok := w.Lookup("T", uniq(2)); ok {
		t.Fatal("expired id hit")
	}
	second := res("T", 22, clk.Now())
	w.Remember(uniq(2), second)
	if got, ok := w.Lookup("T", uniq(2)); !ok || got != second {
		t.Fatalf("got %+v %v, want %+v", got, ok, second)
	}
	checkIndex(t, w)
	clk.Advance(59 * time.Second)
	if _, ok := w.Lookup("T", uniq(2)); !ok {
		t.Fatal("replacement expired early")
	}
	if n := w.Len(); n != 1 {
		t.Fatalf("Len %d, want 1 (the replacement)", n)
	}
	checkIndex(t, w)
}

func TestCapDropsOldest(t *testing.T) {
	w, clk := newTest(t, time.Hour, 100)
	for i := range 150 {
		w.Remember(uniq(i), res("T", i, clk.Now()))
		clk.Advance(time.Millisecond)
	}
	if n := w.Len(); n != 100 {
		t.Fatalf("Len %d, want the cap 100", n)
	}
	for i := range 150 {
		_, ok := w.Lookup("T", uniq(i))
		if ok != (i >= 50) {
			t.Fatalf("id %d: hit %v, want %v", i, ok, i >= 50)
		}
	}
	if s := w.Stats(); s.CapDrops != 50 {
		t.Fatalf("cap drops %d, want 50", s.CapDrops)
	}
	checkIndex(t, w)
}

func TestCapCountsExpiredBeforeLive(t *testing.T) {
	// Dropping for the cap takes the oldest; an expired one is no loss.
	w, clk := newTest(t, time.Second, 3)
	w.Remember(uniq(0), res("T", 0, clk.Now()))
	clk.Advance(2 * time.Second)
	for i := 1; i <= 3; i++ {
		w.Remember(uniq(i), res("T", i, clk.Now()))
	}
	if s := w.Stats(); s.CapDrops != 0 {
		t.Fatalf("cap drops %d, want 0", s.CapDrops)
	}
	for i := 1; i <= 3; i++ {
		if _, ok := w.Lookup("T", uniq(i)); !ok {
			t.Fatalf("id %d lost", i)
		}
	}
}

func TestExpireGivesMemoryBack(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	for i := range 20000 {
		w.Remember(uniq(i), res("T", i, clk.Now()))
	}
	full := w.Bytes()
	if full < 20000*entryBytes {
		t.Fatalf("%d bytes for 20000 ids", full)
	}
	clk.Advance(time.Minute)
	if n := w.Expire(); n != 20000 {
		t.Fatalf("Expire dropped %d, want 20000", n)
	}
	checkIndex(t, w)
	if b := w.Bytes(); b > minSlots*slotBytes+3*chunkBytes+1024 {
		t.Fatalf("%d bytes held when empty (was %d)", b, full)
	}
	if w.BytesPerEntry() != NominalBytesPerEntry {
		t.Fatalf("BytesPerEntry of an empty window %d", w.BytesPerEntry())
	}
}

func TestExpiryIsAmortisedOverCalls(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	for i := range 1000 {
		w.Remember(uniq(i), res("T", i, clk.Now()))
	}
	clk.Advance(time.Minute)
	w.Lookup("T", uniq(0))
	if s := w.Stats(); s.Entries != 1000-expireBudget {
		t.Fatalf("one Lookup left %d entries, want %d", s.Entries, 1000-expireBudget)
	}
}

func TestHorizon(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	want := clk.Now().Add(-time.Minute + time.Millisecond)
	if h := w.Horizon(); !h.Equal(want) {
		t.Fatalf("horizon %v, want %v", h, want)
	}
	// A message stored exactly at the horizon is still inside.
	w.Rebuild(seqOf(uniq(1), Result{Topic: "T", StoredAt: w.Horizon().UnixMilli()}))
	if _, ok := w.Lookup("T", uniq(1)); !ok {
		t.Fatal("message stored at the horizon not remembered")
	}
}

func seqOf(kv ...any) iter.Seq2[string, Result] {
	return func(yield func(string, Result) bool) {
		for i := 0; i < len(kv); i += 2 {
			if !yield(kv[i].(string), kv[i+1].(Result)) {
				return
			}
		}
	}
}

func TestRebuild(t *testing.T) {
	w, clk := newTest(t, 10*time.Minute, 0)
	now := clk.Now()
	old := res("T", 1, now.Add(-10*time.Minute)) // just outside
	edge := res("T", 2, now.Add(-10*time.Minute+time.Millisecond))
	recent := res("T", 3, now.Add(-time.Second))
	dupLater := res("T", 4, now) // same id as recent, later: ignored
	other := res("U", 5, now)    // same id, other topic
	n := w.Rebuild(seqOf(uniq(1), old, uniq(2), edge, uniq(3), recent, uniq(3), dupLater, uniq(3), other, "", recent))
	if n != 3 {
		t.Fatalf("Rebuild added %d, want 3", n)
	}
	if _, ok := w.Lookup("T", uniq(1)); ok {
		t.Fatal("an id stored before the window was rebuilt")
	}
	if got, ok := w.Lookup("T", uniq(2)); !ok || got != edge {
		t.Fatalf("edge: %+v %v", got, ok)
	}
	if got, _ := w.Lookup("T", uniq(3)); got != recent {
		t.Fatalf("rebuilt %+v, want the first %+v", got, recent)
	}
	if got, _ := w.Lookup("U", uniq(3)); got != other {
		t.Fatalf("topic U: %+v", got)
	}
	// Rebuilt ids expire by their StoredAt.
	clk.Advance(time.Millisecond)
	if _, ok := w.Lookup("T", uniq(2)); ok {
		t.Fatal("edge id outlived its window")
	}
	clk.Advance(10*time.Minute - 2*time.Second)
	if _, ok := w.Lookup("T", uniq(3)); !ok {
		t.Fatal("recent id expired early")
	}
	clk.Advance(time.Second)
	if _, ok := w.Lookup("T", uniq(3)); ok {
		t.Fatal("recent id outlived its StoredAt window")
	}
	checkIndex(t, w)
}

func TestRebuildConsumesWholeSequence(t *testing.T) {
	// yield answers true throughout: Rebuild never stops a sequence early.
	w, clk := newTest(t, time.Minute, 0)
	calls := 0
	n := w.Rebuild(func(yield func(string, Result) bool) {
		for i := range 5 {
			calls++
			if !yield(uniq(i), res("T", i, clk.Now())) {
				t.Fatal("Rebuild stopped early")
			}
		}
	})
	if n != 5 || calls != 5 {
		t.Fatalf("added %d of %d", n, calls)
	}
}

func TestMaxEntriesDefaultAndLimit(t *testing.T) {
	w, _ := newTest(t, time.Minute, 0)
	if w.maxEntries != DefaultMaxEntries {
		t.Fatalf("default cap %d", w.maxEntries)
	}
	w, _ = newTest(t, time.Minute, 1<<40)
	if w.maxEntries != maxEntriesLimit {
		t.Fatalf("cap %d, want the limit", w.maxEntries)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New without a clock did not panic")
		}
	}()
	New(Options{Window: time.Minute})
}
