package dedup

import (
	"sync"
	"testing"
	"time"
)

func TestAcquireDupReturnsOriginal(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	c := w.Acquire("T", uniq(1))
	if c.Dup || !c.Held() {
		t.Fatalf("first claim %+v", c)
	}
	r := res("T", 1, clk.Now())
	c.Commit(r)
	c.Release() // after Commit: nothing
	if got, ok := w.Lookup("T", uniq(1)); !ok || got != r {
		t.Fatalf("after Commit Lookup = %+v %v", got, ok)
	}
	d := w.Acquire("T", uniq(1))
	if !d.Dup || d.Held() || d.Result != r {
		t.Fatalf("resend claim %+v, want Dup with %+v", d, r)
	}
	d.Commit(res("T", 9, clk.Now())) // Commit of a Dup: nothing
	if got, _ := w.Lookup("T", uniq(1)); got != r {
		t.Fatalf("Dup Commit changed the result to %+v", got)
	}
	if s := w.Stats(); s.Hits != 3 { // two Lookups, one Acquire
		t.Fatalf("hits %d, want 3", s.Hits)
	}
}

// A resend arriving while the first send is being stored waits for it and
// gets its result; nothing is stored twice.
func TestConcurrentAcquireSecondWaitsForFirst(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	first := w.Acquire("T", uniq(1))
	if !first.Held() {
		t.Fatal("first claim not held")
	}
	if _, ok := w.TryAcquire("T", uniq(1)); ok {
		t.Fatal("TryAcquire of a held id succeeded")
	}
	got := make(chan Claim, 1)
	go func() { got <- w.Acquire("T", uniq(1)) }()
	await(t, "the resend to wait", func() bool { return w.waitingNow() == 1 })
	select {
	case c := <-got:
		t.Fatalf("resend did not wait: %+v", c)
	default:
	}
	r := res("T", 1, clk.Now())
	first.Commit(r)
	c := <-got
	if !c.Dup || c.Result != r || c.Held() {
		t.Fatalf("resend got %+v, want Dup %+v", c, r)
	}
	if s := w.Stats(); s.Waits != 1 {
		t.Fatalf("waits %d", s.Waits)
	}
}

// If the first send fails, the waiting resend takes over and stores.
func TestConcurrentAcquireTakesOverAfterRelease(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	first := w.Acquire("T", uniq(1))
	got := make(chan Claim, 1)
	go func() { got <- w.Acquire("T", uniq(1)) }()
	await(t, "the resend to wait", func() bool { return w.waitingNow() == 1 })
	first.Release()
	c := <-got
	if c.Dup || !c.Held() {
		t.Fatalf("resend got %+v, want the hold", c)
	}
	first.Release() // stale: must not free the resend's hold
	if _, ok := w.TryAcquire("T", uniq(1)); ok {
		t.Fatal("a stale Release freed another send's hold")
	}
	first.Commit(res("T", 7, clk.Now())) // stale too
	if _, ok := w.Lookup("T", uniq(1)); ok {
		t.Fatal("a stale Commit remembered a result")
	}
	r := res("T", 2, clk.Now())
	c.Commit(r)
	if got, _ := w.Lookup("T", uniq(1)); got != r {
		t.Fatalf("got %+v, want %+v", got, r)
	}
}

// Many goroutines send the same id at once: exactly one stores, all others
// answer with its result.
func TestConcurrentSendsOfOneIdStoreOnce(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	const n = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		stored int
		fails  int
		dups   []Result
	)
	for g := range n {
		wg.Go(func() {
			for {
				c := w.Acquire("T", uniq(1))
				if c.Dup {
					mu.Lock()
					dups = append(dups, c.Result)
					mu.Unlock()
					return
				}
				mu.Lock()
				// The first two holders fail to store: their resends take over.
				fail := fails < 2
				if fail {
					fails++
				} else {
					stored++
				}
				mu.Unlock()
				if fail {
					c.Release()
					continue
				}
				c.Commit(res("T", 100+g, clk.Now()))
				return
			}
		})
	}
	wg.Wait()
	if stored != 1 || len(dups) != n-1 {
		t.Fatalf("stored %d, dups %d", stored, len(dups))
	}
	want, _ := w.Lookup("T", uniq(1))
	for _, d := range dups {
		if d != want {
			t.Fatalf("dup answered %+v, stored %+v", d, want)
		}
	}
}

func TestReserve(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	release, dup := w.Reserve("T", uniq(1))
	if dup {
		t.Fatal("first Reserve is dup")
	}
	done := make(chan bool, 1)
	go func() {
		rel, dup := w.Reserve("T", uniq(1))
		rel()
		done <- dup
	}()
	await(t, "the second Reserve to wait", func() bool { return w.waitingNow() == 1 })
	r := res("T", 1, clk.Now())
	w.Remember(uniq(1), r)
	release()
	if !<-done {
		t.Fatal("second Reserve not dup after Remember + release")
	}
	if got, ok := w.Lookup("T", uniq(1)); !ok || got != r {
		t.Fatalf("Lookup %+v %v", got, ok)
	}
}

func TestAcquireBatchPartlySeen(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	seen := res("T", 2, clk.Now())
	w.Remember(uniq(2), seen)
	keys := []string{uniq(1), uniq(2), "", uniq(3), uniq(1)}
	cs := w.AcquireBatch("T", keys, nil)
	if len(cs) != 5 {
		t.Fatalf("%d claims", len(cs))
	}
	if !cs[0].Held() || cs[0].Dup {
		t.Fatalf("item 0 %+v", cs[0])
	}
	if !cs[1].Dup || cs[1].Result != seen {
		t.Fatalf("item 1 %+v, want Dup %+v", cs[1], seen)
	}
	if cs[2].Held() || cs[2].Dup || cs[4].Held() || cs[4].Dup {
		t.Fatalf("empty key / repeat: %+v %+v", cs[2], cs[4])
	}
	if !cs[3].Held() {
		t.Fatalf("item 3 %+v", cs[3])
	}
	// Another batch overlapping on uniq(3) cannot be taken now, and holds
	// nothing after failing.
	if _, ok := w.TryAcquireBatch("T", []string{uniq(4), uniq(3)}, nil); ok {
		t.Fatal("overlapping batch claimed a held id")
	}
	if c, ok := w.TryAcquire("T", uniq(4)); !ok || !c.Held() {
		t.Fatal("a failed TryAcquireBatch kept a hold")
	} else {
		c.Release()
	}
	for i, c := range cs {
		c.Commit(res("T", 10+i, clk.Now()))
	}
	w.ReleaseAll(cs)
	got := w.AcquireBatch("T", keys, nil)
	for i, c := range got {
		if (keys[i] != "") != c.Dup {
			t.Fatalf("second send item %d: %+v", i, c)
		}
	}
	if got[0].Result != got[4].Result || got[1].Result != seen {
		t.Fatalf("results %+v", got)
	}
}

// Two batches with overlapping ids in opposite order cannot deadlock: the
// one that finds an id held waits holding nothing.
func TestAcquireBatchOverlappingBatchesDoNotDeadlock(t *testing.T) {
	w, clk := newTest(t, time.Minute, 0)
	a := w.AcquireBatch("T", []string{uniq(1), uniq(2)}, nil)
	got := make(chan []Claim, 1)
	go func() { got <- w.AcquireBatch("T", []string{uniq(3), uniq(2), uniq(1)}, nil) }()
	await(t, "the second batch to wait", func() bool { return w.waitingNow() == 1 })
	// While it waits it holds nothing: uniq(3) is free.
	c3, ok := w.TryAcquire("T", uniq(3))
	if !ok || !c3.Held() {
		t.Fatal("a waiting batch holds an id")
	}
	c3.Release()
	a[0].Commit(res("T", 1, clk.Now())) // a's uniq(1) stored, uniq(2) failed
	w.ReleaseAll(a)
	b := <-got
	if !b[0].Held() || !b[1].Held() || !b[2].Dup {
		t.Fatalf("second batch %+v", b)
	}
	w.ReleaseAll(b)
}

func TestAcquireBatchAppends(t *testing.T) {
	w, _ := newTest(t, time.Minute, 0)
	prev := []Claim{{Dup: true}}
	cs := w.AcquireBatch("T", []string{uniq(1)}, prev)
	if len(cs) != 2 || !cs[0].Dup || !cs[1].Held() {
		t.Fatalf("claims %+v", cs)
	}
	cs2, ok := w.TryAcquireBatch("T", []string{uniq(1)}, []Claim{{Dup: true}})
	if ok || len(cs2) != 1 || !cs2[0].Dup {
		t.Fatalf("TryAcquireBatch = %d claims, %v", len(cs2), ok)
	}
	w.ReleaseAll(cs)
}
