package index

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// workload makes random messages: offsets that grow by random steps, store
// times that mostly grow but sometimes step back or jump by days, 1-3 keys
// (possibly repeated) and a unique key with a hash no other key has.
type workload struct {
	r      *rand.Rand
	next   int64 // offset of the next message
	ts     int64
	hashes map[uint32]bool
}

var workloadTopics = []string{"TopicA", "TopicB"}

func newWorkload(r *rand.Rand) *workload {
	w := &workload{r: r, ts: 1_700_000_000_000, hashes: map[uint32]bool{}}
	for _, tp := range workloadTopics {
		for _, k := range testKeys {
			w.hashes[hashKey(tp, k)] = true
		}
	}
	if len(w.hashes) != len(workloadTopics)*len(testKeys) {
		panic("test keys collide")
	}
	return w
}

// message returns the entries of the next message.
func (w *workload) message() []ment {
	r := w.r
	off := w.next
	w.next += 1 + int64(r.Intn(300))
	switch r.Intn(30) {
	case 0:
		w.ts -= int64(r.Intn(10_000))
	case 1:
		w.ts += int64(1+r.Intn(40)) * day
	default:
		w.ts += int64(r.Intn(2000))
	}
	topic := workloadTopics[r.Intn(len(workloadTopics))]
	var es []ment
	for range 1 + r.Intn(3) {
		es = append(es, ment{topic: topic, key: testKeys[r.Intn(len(testKeys))], off: off, ts: w.ts})
	}
	for i := 0; ; i++ {
		u := fmt.Sprintf("u%d-%d", off, i)
		if h := hashKey(topic, u); !w.hashes[h] {
			w.hashes[h] = true
			es = append(es, ment{topic: topic, key: u, off: off, ts: w.ts})
			break
		}
	}
	return es
}

// deleteBefore marks the entries DeleteBefore(physMin) may remove.
func (m *model) deleteBefore(physMin int64) {
	for i := range m.ents {
		if m.ents[i].off < physMin {
			m.ents[i].opt = true
		}
	}
}

var modelOptions = []Options{
	{SlotsPerFile: 8, EntriesPerFile: 16},
	{SlotsPerFile: 3, EntriesPerFile: 5},
	{SlotsPerFile: 1, EntriesPerFile: 7},
	{SlotsPerFile: 64, EntriesPerFile: 50},
}

// checkRecovered checks an index reopened after a crash: every entry of
// durable (what was flushed, minus what may have been truncated or deleted
// since) is found, and nothing that was never added.
func checkRecovered(t testing.TB, x *Index, durable, current *model) {
	t.Helper()
	type tk struct{ topic, key string }
	keys := map[tk]bool{}
	for _, e := range current.ents {
		keys[tk{e.topic, e.key}] = true
	}
	n := 0
	for k := range keys { // map order: a different sample of unique keys each time
		if n++; n > 30 && k.key[0] == 'u' {
			continue
		}
		got, err := x.Query(k.topic, k.key, math.MinInt64, math.MaxInt64, 1<<20)
		if err != nil {
			t.Fatalf("Query(%s, %s): %v", k.topic, k.key, err)
		}
		req, _ := durable.matches(k.topic, k.key, math.MinInt64, math.MaxInt64)
		curReq, curOpt := current.matches(k.topic, k.key, math.MinInt64, math.MaxInt64)
		allowed := append(curReq, curOpt...)
		for _, o := range req {
			if !slices.Contains(got, o) {
				t.Fatalf("Query(%s, %s) = %v lost flushed offset %d", k.topic, k.key, got, o)
			}
		}
		for i, o := range got {
			if !slices.Contains(allowed, o) {
				t.Fatalf("Query(%s, %s) = %v: %d was never added", k.topic, k.key, got, o)
			}
			if i > 0 && o >= got[i-1] {
				t.Fatalf("Query(%s, %s) = %v: not newest first, or duplicates", k.topic, k.key, got)
			}
		}
	}
	low := int64(-1)
	for _, e := range durable.ents {
		if !e.opt {
			low = e.off
		}
	}
	if got := x.MaxPhysOffset(); got < low || got > current.maxOff() {
		t.Fatalf("MaxPhysOffset = %d, want between %d and %d", got, low, current.maxOff())
	}
}

// TestModel runs random Add, Flush, Truncate, DeleteBefore, reopen and
// crash sequences against the map model.
func TestModel(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runModel(t, int64(seed), 400)
		})
	}
}

func runModel(t *testing.T, seed int64, ops int) {
	r := rand.New(rand.NewSource(seed))
	opts := modelOptions[r.Intn(len(modelOptions))]
	fsys := newMem(t)
	x := mustOpen(t, fsys, opts)
	defer func() { x.Close() }()
	w := newWorkload(r)
	m := &model{}
	durable := &model{}
	var boundary int64 // every entry below it is durable
	for op := range ops {
		switch p := r.Intn(100); {
		case p < 70:
			for _, e := range w.message() {
				if err := x.Add(e.topic, []byte(e.key), e.off, e.ts); err != nil {
					t.Fatalf("op %d: Add: %v", op, err)
				}
				m.add(e.topic, e.key, e.off, e.ts)
			}
		case p < 80:
			if err := x.Flush(); err != nil {
				t.Fatalf("op %d: Flush: %v", op, err)
			}
			durable, boundary = m.clone(), w.next
		case p < 87:
			end := max(0, m.maxOff()+1-r.Int63n(1500))
			if err := x.Truncate(end); err != nil {
				t.Fatalf("op %d: Truncate(%d): %v", op, end, err)
			}
			m.truncate(end)
			durable.truncate(end)
			boundary = min(boundary, end)
			w.next = max(end, m.maxOff()+1)
		case p < 91:
			physMin := r.Int63n(m.maxOff() + 2)
			if _, err := x.DeleteBefore(physMin); err != nil {
				t.Fatalf("op %d: DeleteBefore: %v", op, err)
			}
			m.deleteBefore(physMin)
			durable.deleteBefore(physMin)
		case p < 95:
			if err := x.Close(); err != nil {
				t.Fatalf("op %d: Close: %v", op, err)
			}
			x = mustOpen(t, fsys, opts)
			durable, boundary = m.clone(), w.next
		default:
			// Crash, keeping a random part of the unsynced writes.
			c := fsys.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(r.Int63()))})
			x.Close()
			fsys = c
			x = mustOpen(t, fsys, opts)
			checkRecovered(t, x, durable, m)
			// Recovery: cut back to what is known durable and go on.
			if err := x.Truncate(boundary); err != nil {
				t.Fatal(err)
			}
			m.truncate(boundary)
			durable = m.clone()
			w.next = boundary
		}
		if op%20 == 0 || op == ops-1 {
			checkAll(t, x, m, r)
		}
	}
}
