package dedup

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// model is the naive Window: a slice in remember order and a map from
// "topic\x00key" to the slice position, expired eagerly.
type model struct {
	windowMs int64
	max      int
	ring     []modelEntry
	head     int
	ids      map[string]int
}

type modelEntry struct {
	id string
	at int64
	r  Result
}

func (m *model) expire(now int64) {
	for m.head < len(m.ring) && now-m.ring[m.head].at >= m.windowMs {
		m.drop()
	}
}

func (m *model) drop() {
	if p, ok := m.ids[m.ring[m.head].id]; ok && p == m.head {
		delete(m.ids, m.ring[m.head].id)
	}
	m.head++
}

func (m *model) lookup(id string, now int64) (Result, bool) {
	m.expire(now)
	if p, ok := m.ids[id]; ok {
		return m.ring[p].r, true
	}
	return Result{}, false
}

func (m *model) remember(id string, r Result, at, now int64) {
	m.expire(now)
	if _, ok := m.ids[id]; ok {
		return
	}
	if len(m.ring)-m.head >= m.max {
		m.drop()
	}
	m.ring = append(m.ring, modelEntry{id: id, at: at, r: r})
	m.ids[id] = len(m.ring) - 1
}

// TestMatchesModel runs random Lookup / Remember / Acquire+Commit / Expire
// sequences against the model, with windows and caps small enough that
// ids expire, get replaced and get dropped for the cap, and the table
// grows and shrinks.
func TestMatchesModel(t *testing.T) {
	ops := 20000
	if testing.Short() {
		ops = 4000
	}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := runModel(t, rand.New(rand.NewPCG(seed, 99)), ops)
			if s.Hits == 0 {
				t.Fatal("no hit: the sequence tests little")
			}
		})
	}
}

// FuzzMatchesModel is TestMatchesModel driven by the fuzzer's bytes.
func FuzzMatchesModel(f *testing.F) {
	f.Add([]byte("\x00\x10\x00\x05\x00\x03\x00\x01\x00\x00\x00\x01\x00\x32\x00\x00\x00\x01\x00\x00\x00\x01"))
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, &byteSource{data: data}, -1)
	})
}

// byteSource gives IntN from fuzz bytes, two at a time; 0 once used up.
type byteSource struct{ data []byte }

func (b *byteSource) IntN(n int) int {
	if len(b.data) < 2 {
		b.data = nil
		return 0
	}
	v := int(b.data[0])<<8 | int(b.data[1])
	b.data = b.data[2:]
	return v % n
}

func (b *byteSource) done() bool { return len(b.data) < 2 }

type intSource interface{ IntN(n int) int }

// runModel plays ops operations from src (ops < 0: until a byteSource is
// used up) on a Window and the model and fails at the first difference.
func runModel(t *testing.T, src intSource, ops int) Stats {
	windowMs := int64(1 + src.IntN(200))
	maxEntries := 1 + src.IntN(3000)
	keys := 1 + src.IntN(5000)
	step := int(windowMs)/(2+src.IntN(60)) + 1 // max clock step
	w, clk := newTest(t, time.Duration(windowMs)*time.Millisecond, maxEntries)
	m := &model{windowMs: windowMs, max: maxEntries, ids: map[string]int{}}
	topics := []string{"A", "B"}
	for op := 0; op != ops; op++ {
		if bs, ok := src.(*byteSource); ok && bs.done() {
			break
		}
		topic := topics[src.IntN(2)]
		k := uniq(src.IntN(keys))
		id := topic + "\x00" + k
		now := clk.Now().UnixMilli()
		switch p := src.IntN(100); {
		case p < 40:
			got, ok := w.Lookup(topic, k)
			want, wok := m.lookup(id, now)
			if ok != wok || (ok && (got != want)) {
				t.Fatalf("op %d Lookup(%s %s) = %+v %v, model %+v %v", op, topic, k, got, ok, want, wok)
			}
		case p < 70:
			r := res(topic, op, clk.Now())
			w.Remember(k, r)
			m.remember(id, r, now, now)
		case p < 90:
			c := w.Acquire(topic, k)
			want, wok := m.lookup(id, now)
			if c.Dup != wok || c.Result != want || c.Held() == wok {
				t.Fatalf("op %d Acquire(%s %s) = %+v, model %+v %v", op, topic, k, c, want, wok)
			}
			if src.IntN(4) == 0 {
				c.Release()
			} else {
				r := res(topic, op, clk.Now())
				c.Commit(r)
				m.remember(id, r, now, now)
			}
		case p < 97:
			clk.Advance(time.Duration(src.IntN(step)) * time.Millisecond)
		default:
			m.expire(now)
			if got, want := w.Len(), len(m.ids); got != want {
				t.Fatalf("op %d Len %d, model %d", op, got, want)
			}
			checkIndex(t, w)
		}
	}
	checkIndex(t, w)
	if len(w.inflight) != 0 {
		t.Fatalf("%d claims left held", len(w.inflight))
	}
	s := w.Stats()
	t.Logf("window %d ms, cap %d, %d keys: %+v, %d slots", windowMs, maxEntries, keys, s, len(w.x.slots))
	return s
}

// TestIndexGrowsAndShrinks fills the table past several doublings, then
// empties it, checking the invariants on the way.
func TestIndexGrowsAndShrinks(t *testing.T) {
	w, clk := newTest(t, time.Second, 0)
	for i := range 50000 {
		w.Remember(uniq(i), res("T", i, clk.Now()))
		if i%9973 == 0 {
			checkIndex(t, w)
		}
	}
	if n := len(w.x.slots); n != 1<<17 {
		t.Fatalf("%d slots for 50000 ids, want 2^17", n)
	}
	checkIndex(t, w)
	clk.Advance(time.Second)
	for i := range 50000 {
		if i%2 == 0 {
			w.Lookup("T", uniq(i)) // expires expireBudget a call
		}
		if i%9973 == 0 {
			checkIndex(t, w)
		}
	}
	if n := w.Len(); n != 0 {
		t.Fatalf("Len %d after the window", n)
	}
	if n := len(w.x.slots); n != minSlots {
		t.Fatalf("%d slots when empty, want %d", n, minSlots)
	}
	checkIndex(t, w)
}
