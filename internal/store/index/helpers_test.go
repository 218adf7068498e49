package index

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

const testDir = "/idx"

var tiny = Options{SlotsPerFile: 8, EntriesPerFile: 16}

func newMem(t testing.TB) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	if err := m.MkdirAll(testDir); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustOpen(t testing.TB, fsys vfs.FS, opts Options) *Index {
	t.Helper()
	x, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return x
}

func indexFiles(t testing.TB, fsys vfs.FS) []string {
	t.Helper()
	names, err := fsys.ReadDir(testDir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// ment is one entry of the model; opt marks an entry DeleteBefore may have
// removed.
type ment struct {
	topic, key string
	off, ts    int64
	opt        bool
}

// model is what the index should hold, in the order added.
type model struct {
	ents []ment
}

func (m *model) add(topic, key string, off, ts int64) {
	m.ents = append(m.ents, ment{topic: topic, key: key, off: off, ts: ts})
}

func (m *model) truncate(physEnd int64) {
	m.ents = slices.DeleteFunc(m.ents, func(e ment) bool { return e.off >= physEnd })
}

func (m *model) clone() *model {
	return &model{ents: slices.Clone(m.ents)}
}

func (m *model) maxOff() int64 {
	if len(m.ents) == 0 {
		return -1
	}
	return m.ents[len(m.ents)-1].off
}

// matches returns the distinct offsets of topic/key in [b, e], newest
// first, split into required and optional ones.
func (m *model) matches(topic, key string, b, e int64) (req, opt []int64) {
	seen := map[int64]bool{}
	var all []ment
	for _, en := range m.ents {
		if en.topic == topic && en.key == key && en.ts >= b && en.ts <= e && !seen[en.off] {
			seen[en.off] = true
			all = append(all, en)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].off > all[j].off })
	for _, en := range all {
		if en.opt {
			opt = append(opt, en.off)
		} else {
			req = append(req, en.off)
		}
	}
	return req, opt
}

// checkQuery compares one query with the model; it assumes every
// (topic, key) of the model has a distinct hash, so the index has no false
// positives.
func checkQuery(t testing.TB, x *Index, m *model, topic, key string, b, e int64, max int) {
	t.Helper()
	got, err := x.Query(topic, key, b, e, max)
	if err != nil {
		t.Fatalf("Query(%s, %s): %v", topic, key, err)
	}
	req, opt := m.matches(topic, key, b, e)
	if err := judge(got, req, opt, max); err != nil {
		t.Fatalf("Query(%s, %s, %d, %d, %d) = %v: %v (required %v, optional %v)", topic, key, b, e, max, got, err, req, opt)
	}
}

// judge checks a result against required and optional offsets (both newest
// first). Optional entries are older than required ones (DeleteBefore
// removes the oldest files), so they can only follow them.
func judge(got, req, opt []int64, max int) error {
	if len(got) > max {
		return fmt.Errorf("%d results, max %d", len(got), max)
	}
	n := min(len(req), max)
	if len(got) < n || !slices.Equal(got[:n], req[:n]) {
		return fmt.Errorf("want the required %v first", req[:n])
	}
	rest := got[n:]
	if len(req) >= max && len(rest) > 0 {
		return fmt.Errorf("extra results %v", rest)
	}
	last := int64(math.MaxInt64)
	if n > 0 {
		last = got[n-1]
	}
	for _, o := range rest {
		if o >= last || !slices.Contains(opt, o) {
			return fmt.Errorf("unexpected or misordered %d", o)
		}
		last = o
	}
	return nil
}

// checkAll checks full-range queries for every topic and key of the model
// and some random windows and caps.
func checkAll(t testing.TB, x *Index, m *model, r *rand.Rand) {
	t.Helper()
	type tk struct{ topic, key string }
	seen := map[tk]bool{}
	var minT, maxT int64 = math.MaxInt64, math.MinInt64
	for _, e := range m.ents {
		seen[tk{e.topic, e.key}] = true
		minT, maxT = min(minT, e.ts), max(maxT, e.ts)
	}
	// Every key when there are few, else a sample.
	var keys []tk
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].topic+keys[i].key < keys[j].topic+keys[j].key })
	if r != nil && len(keys) > 30 {
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		keys = keys[:30]
	}
	for _, k := range keys {
		checkQuery(t, x, m, k.topic, k.key, math.MinInt64, math.MaxInt64, 1<<20)
		if r != nil && maxT >= minT {
			b := minT + r.Int63n(maxT-minT+1)
			e := b + r.Int63n(maxT-b+1)
			checkQuery(t, x, m, k.topic, k.key, b, e, 1+r.Intn(6))
		}
	}
	// When every entry left may have been deleted (Truncate cut the rest),
	// the index may be empty.
	got, want := x.MaxPhysOffset(), m.maxOff()
	if n := len(m.ents); (n == 0 || !m.ents[n-1].opt) && got != want || got > want {
		t.Fatalf("MaxPhysOffset = %d, want %d", got, want)
	}
}

// distinctHashes fails the test when two of the pairs share a hash, which
// would make checkQuery's exact comparison wrong.
func distinctHashes(t testing.TB, topics, keys []string) {
	t.Helper()
	seen := map[uint32]string{}
	for _, tp := range topics {
		for _, k := range keys {
			h := hashKey(tp, k)
			if o, ok := seen[h]; ok {
				t.Fatalf("hash collision: %s#%s and %s", tp, k, o)
			}
			seen[h] = tp + "#" + k
		}
	}
}
