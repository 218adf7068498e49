package index

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand"
	"path"
	"slices"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

var (
	testTopics = []string{"TopicA", "TopicB"}
	testKeys   = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}
)

const day = 24 * 3600 * 1000

// fill adds n messages: message i has offset 100*i, store time t0+1000*i,
// key k(i mod 7) in topic A or B, and a unique key u<i>.
func fill(t testing.TB, x *Index, m *model, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		topic := testTopics[i%2]
		off, ts := int64(100*i), int64(1_700_000_000_000+1000*i)
		for _, k := range []string{testKeys[i%len(testKeys)], fmt.Sprintf("u%d", i)} {
			if err := x.Add(topic, []byte(k), off, ts); err != nil {
				t.Fatalf("Add %d: %v", i, err)
			}
			m.add(topic, k, off, ts)
		}
	}
}

func TestHashKeySameForStringAndBytes(t *testing.T) {
	for _, k := range []string{"", "a", "order-17", "\x00\xff"} {
		if hashKey("T", k) != hashKey("T", []byte(k)) {
			t.Fatalf("hash of %q differs between string and []byte", k)
		}
	}
	// FNV-1a of "T#a", computed by hand from the definition.
	h := uint32(fnvOffset)
	for _, c := range []byte("T#a") {
		h = (h ^ uint32(c)) * fnvPrime
	}
	if got := hashKey("T", "a"); got != h {
		t.Fatalf("hashKey = %#x, want %#x", got, h)
	}
	if hashKey("Ta", "") == hashKey("T", "a") {
		t.Fatal("the separator does not separate")
	}
}

func TestAddQueryAcrossFiles(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	m := &model{}
	fill(t, x, m, 0, 100) // 200 entries: 13 files of 16
	if n := len(indexFiles(t, fsys)); n != 13 {
		t.Fatalf("%d files, want 13", n)
	}
	distinctHashes(t, testTopics, append(slices.Clone(testKeys), "u5", "u99"))
	checkAll(t, x, m, rand.New(rand.NewSource(1)))
	// A unique key is found in whichever file holds it.
	for _, i := range []int{0, 5, 50, 99} {
		got, err := x.Query(testTopics[i%2], fmt.Sprintf("u%d", i), 0, math.MaxInt64, 10)
		if err != nil || !slices.Equal(got, []int64{int64(100 * i)}) {
			t.Fatalf("unique key %d: %v, %v", i, got, err)
		}
	}
	// The other topic does not see it.
	if got, _ := x.Query(testTopics[1], "u0", 0, math.MaxInt64, 10); len(got) != 0 {
		t.Fatalf("u0 found in the wrong topic: %v", got)
	}
}

func TestQueryNewestFirstMaxAndNoDuplicates(t *testing.T) {
	x := mustOpen(t, newMem(t), tiny)
	defer x.Close()
	// A key listed twice in KEYS, and equal to UNIQ_KEY: one result per
	// message, also when the entries of one offset straddle two files.
	for i := range 20 {
		for range 3 {
			if err := x.Add("T", []byte("dup"), int64(i*10), int64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := x.Query("T", "dup", 0, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := 19; i >= 0; i-- {
		want = append(want, int64(i*10))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, max := range []int{1, 2, 7, 20, 21} {
		got, err := x.Query("T", "dup", 0, 100, max)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[:min(max, len(want))]; !slices.Equal(got, w) {
			t.Fatalf("max %d: got %v, want %v", max, got, w)
		}
	}
	if got, _ := x.Query("T", "dup", 0, 100, 0); len(got) != 0 {
		t.Fatalf("max 0 gave %v", got)
	}
	if got, _ := x.Query("T", "nope", 0, 100, 10); len(got) != 0 {
		t.Fatalf("missing key gave %v", got)
	}
}

func TestQueryTimeRange(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	m := &model{}
	// Store times that go back now and then (clock steps) and jump by days.
	r := rand.New(rand.NewSource(2))
	ts := int64(1_700_000_000_000)
	for i := range 300 {
		switch r.Intn(20) {
		case 0:
			ts -= int64(r.Intn(5000))
		case 1:
			ts += 3 * day
		default:
			ts += int64(r.Intn(1000))
		}
		k := testKeys[r.Intn(3)]
		if err := x.Add("T", []byte(k), int64(i), ts); err != nil {
			t.Fatal(err)
		}
		m.add("T", k, int64(i), ts)
	}
	distinctHashes(t, []string{"T"}, testKeys)
	for range 300 {
		b := m.ents[r.Intn(len(m.ents))].ts - int64(r.Intn(3))
		e := b + int64(r.Intn(4*day))
		if r.Intn(4) == 0 {
			e = b // a single millisecond
		}
		checkQuery(t, x, m, "T", testKeys[r.Intn(3)], b, e, 1000)
	}
	// Both ends are included.
	one := m.ents[137]
	got, _ := x.Query("T", one.key, one.ts, one.ts, 1000)
	if !slices.Contains(got, one.off) {
		t.Fatalf("entry at exactly [ts, ts] not found: %v", got)
	}
}

func TestQuerySkipsFilesOutsideTimeRange(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	for i := range 64 { // 4 sealed files (16 entries each) ...
		if err := x.Add("T", []byte("k"), int64(i), int64(i*1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := x.Add("T", []byte("k"), 64, 64_000); err != nil { // ... and an active one
		t.Fatal(err)
	}
	reads := map[string]int{}
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpRead {
			reads[path.Base(p)]++ // queries below run on this goroutine
		}
		return nil
	})
	defer fsys.InjectError(nil)
	got, err := x.Query("T", "k", 20_000, 25_000, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{25, 24, 23, 22, 21, 20}) {
		t.Fatalf("got %v", got)
	}
	if len(reads) != 1 || reads[fileName(16)] == 0 {
		t.Fatalf("read files %v, want only %s", reads, fileName(16))
	}
	clear(reads)
	if got, _ := x.Query("T", "k", 64_000, 64_000, 100); !slices.Equal(got, []int64{64}) {
		t.Fatalf("active only: %v", got)
	}
	if len(reads) != 0 {
		t.Fatalf("a query on buffered entries read files %v", reads)
	}
}

func TestTimeSpanRollsFile(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, Options{SlotsPerFile: 8, EntriesPerFile: 1000})
	defer x.Close()
	m := &model{}
	ts := int64(0)
	for i := range 10 {
		ts += 20 * day // past ±24.8 days from a file's first entry every second step
		if err := x.Add("T", []byte("k"), int64(i), ts); err != nil {
			t.Fatal(err)
		}
		m.add("T", "k", int64(i), ts)
		if err := x.Add("T", []byte("k"), int64(i), ts-24*day); err != nil { // back in time
			t.Fatal(err)
		}
		m.add("T", "k", int64(i), ts-24*day)
	}
	if n := len(indexFiles(t, fsys)); n < 5 {
		t.Fatalf("%d files, want time-span rolls", n)
	}
	checkAll(t, x, m, rand.New(rand.NewSource(3)))
	for _, e := range m.ents {
		checkQuery(t, x, m, "T", "k", e.ts, e.ts, 10)
	}
}

func TestReopenGivesSameAnswers(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = newMem(t)
			dir := testDir
			if fsName == "os" {
				fsys, dir = vfs.OS, t.TempDir()
			}
			x, err := Open(fsys, dir, tiny)
			if err != nil {
				t.Fatal(err)
			}
			m := &model{}
			fill(t, x, m, 0, 77) // ends inside an active file
			if err := x.Flush(); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewSource(4))
			checkAll(t, x, m, r)
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := x.Query("TopicA", "k0", 0, math.MaxInt64, 1); !errors.Is(err, ErrClosed) {
				t.Fatalf("Query after Close: %v", err)
			}
			for round := range 3 {
				x, err = Open(fsys, dir, tiny)
				if err != nil {
					t.Fatal(err)
				}
				checkAll(t, x, m, rand.New(rand.NewSource(4)))
				fill(t, x, m, 77+round*10, 10) // Add after reopen continues the chains
				checkAll(t, x, m, r)
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestReopenWithOtherOptionsKeepsFiles(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	m := &model{}
	fill(t, x, m, 0, 20)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = mustOpen(t, fsys, Options{SlotsPerFile: 3, EntriesPerFile: 5})
	defer x.Close()
	checkAll(t, x, m, nil)
	fill(t, x, m, 20, 20)
	checkAll(t, x, m, rand.New(rand.NewSource(5)))
}

func TestTruncate(t *testing.T) {
	// 40 messages, 80 entries: files of 16 entries start at messages 0, 8,
	// 16, 24, 32 (offsets 0, 800, ...); the last is active.
	cases := []struct {
		name    string
		physEnd int64
	}{
		{"inside active", 3650},
		{"at start of active", 3200},
		{"inside sealed", 1750},
		{"inside first", 50},
		{"at file boundary", 1600},
		{"everything", 0},
		{"nothing", 4000},
		{"at the last", 3900},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newMem(t)
			x := mustOpen(t, fsys, tiny)
			defer x.Close()
			m := &model{}
			fill(t, x, m, 0, 40)
			if tc.physEnd%800 != 0 {
				if err := x.Flush(); err != nil { // some entries durable, some not
					t.Fatal(err)
				}
			}
			if err := x.Truncate(tc.physEnd); err != nil {
				t.Fatal(err)
			}
			m.truncate(tc.physEnd)
			r := rand.New(rand.NewSource(6))
			checkAll(t, x, m, r)
			for _, f := range indexFiles(t, fsys) {
				if b, _ := parseName(f); b >= max(tc.physEnd, 1) {
					t.Fatalf("file %s left after Truncate(%d)", f, tc.physEnd)
				}
			}
			// Add after Truncate: same keys again, chains must hold both
			// the old and the new entries.
			from := int(tc.physEnd+99) / 100
			fill(t, x, m, from, 30)
			checkAll(t, x, m, r)
			// Durable: reopen without Flush after a Truncate sees the cut.
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			x = mustOpen(t, fsys, tiny)
			checkAll(t, x, m, r)
		})
	}
}

func TestTruncateIsDurableWithoutFlush(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	m := &model{}
	fill(t, x, m, 0, 40)
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int64{3000, 1250} {
		if err := x.Truncate(p); err != nil {
			t.Fatal(err)
		}
		m.truncate(p)
		c := fsys.CrashClone(vfs.CrashOptions{})
		y := mustOpen(t, c, tiny)
		checkAll(t, y, m, nil)
		y.Close()
	}
	x.Close()
}

func TestDeleteBefore(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	m := &model{}
	fill(t, x, m, 0, 40) // files at offsets 0, 800, 1600, 2400, 3200 (active)
	n, err := x.DeleteBefore(1600)
	if err != nil || n != 2 { // files 0 and 800 end at 700 and 1500; file 1600 at 2300
		t.Fatalf("DeleteBefore(1600) = %d, %v; want 2", n, err)
	}
	if n, err := x.DeleteBefore(1600); err != nil || n != 0 {
		t.Fatalf("again: %d, %v", n, err)
	}
	m.deleteBefore(1600)
	r := rand.New(rand.NewSource(7))
	checkAll(t, x, m, r)
	if got := indexFiles(t, fsys); !slices.Equal(got, []string{fileName(1600), fileName(2400), fileName(3200)}) {
		t.Fatalf("files %v", got)
	}
	// Never the active file, whatever the bound.
	n, err = x.DeleteBefore(math.MaxInt64)
	if err != nil || n != 2 {
		t.Fatalf("DeleteBefore(max) = %d, %v; want 2", n, err)
	}
	if got := indexFiles(t, fsys); !slices.Equal(got, []string{fileName(3200)}) {
		t.Fatalf("files %v, want only the active one", got)
	}
	m.deleteBefore(3200)
	checkAll(t, x, m, r)
	// Durable: a crash right after brings nothing back.
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	if got := indexFiles(t, c); !slices.Equal(got, []string{fileName(3200)}) {
		t.Fatalf("after crash: files %v", got)
	}
	y := mustOpen(t, c, tiny)
	defer y.Close()
	checkAll(t, y, m, r)
	// The newest file stays even when it is sealed and no file is active.
	fill(t, x, m, 40, 4) // fills the active file exactly: it seals on the next Add
	if err := x.Truncate(4000); err != nil {
		t.Fatal(err)
	}
	if n, err := x.DeleteBefore(math.MaxInt64); err != nil || n != 0 {
		t.Fatalf("DeleteBefore with only the newest file: %d, %v", n, err)
	}
}

func TestDeleteBeforeDuringQuery(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	m := &model{}
	fill(t, x, m, 0, 40)
	reading := make(chan struct{})
	resume := make(chan struct{})
	first := true
	fsys.InjectError(func(op vfs.Op, p string) error {
		// The query's first read of the oldest file parks until that file
		// has been deleted.
		if op == vfs.OpRead && path.Base(p) == fileName(0) && first {
			first = false
			close(reading)
			<-resume
		}
		return nil
	})
	type result struct {
		offs []int64
		err  error
	}
	done := make(chan result)
	go func() {
		offs, err := x.Query("TopicA", "k0", 0, math.MaxInt64, 100)
		done <- result{offs, err}
	}()
	<-reading
	n, err := x.DeleteBefore(math.MaxInt64)
	if err != nil || n != 4 {
		t.Fatalf("DeleteBefore = %d, %v", n, err)
	}
	close(resume)
	res := <-done
	fsys.InjectError(nil)
	if res.err != nil {
		t.Fatal(res.err)
	}
	req, _ := m.matches("TopicA", "k0", 0, math.MaxInt64)
	if !slices.Equal(res.offs, req) {
		t.Fatalf("query during delete: %v, want %v", res.offs, req)
	}
	// The deleted files are closed once the query let go: their space is
	// freed.
	if names := indexFiles(t, fsys); len(names) != 1 {
		t.Fatalf("files %v", names)
	}
}

func TestAddErrors(t *testing.T) {
	x := mustOpen(t, newMem(t), Options{SlotsPerFile: 4, EntriesPerFile: 3})
	if err := x.Add("T", []byte("a"), 10, 1); err != nil {
		t.Fatal(err)
	}
	if err := x.Add("T", []byte("a"), 9, 1); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("lower offset: %v", err)
	}
	if err := x.Add("T", []byte("a"), -1, 1); !errors.Is(err, ErrBadOffset) {
		t.Fatalf("negative offset: %v", err)
	}
	for range 2 {
		if err := x.Add("T", []byte("b"), 10, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Add("T", []byte("c"), 10, 1); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("4 keys at one offset in files of 3: %v", err)
	}
	if err := x.Add("T", []byte("c"), 11, 1); err != nil {
		t.Fatalf("next offset after ErrTooManyEntries: %v", err)
	}
	if got, _ := x.Query("T", "c", 0, 10, 10); !slices.Equal(got, []int64{11}) {
		t.Fatalf("got %v", got)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Add("T", []byte("a"), 20, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := x.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if err := x.Truncate(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Truncate after Close: %v", err)
	}
	if _, err := x.DeleteBefore(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("DeleteBefore after Close: %v", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{{SlotsPerFile: -1}, {EntriesPerFile: -5}, {SlotsPerFile: maxSlots + 1}} {
		if _, err := Open(newMem(t), testDir, o); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("%+v: %v", o, err)
		}
	}
}

func TestSyncFailureIsSticky(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	m := &model{}
	fill(t, x, m, 0, 5)
	boom := errors.New("boom")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync {
			return boom
		}
		return nil
	})
	if err := x.Flush(); !errors.Is(err, ErrFailed) || !errors.Is(err, boom) {
		t.Fatalf("Flush: %v", err)
	}
	fsys.InjectError(nil)
	if err := x.Add("T", []byte("k"), 1000, 1); !errors.Is(err, ErrFailed) {
		t.Fatalf("Add after failed sync: %v", err)
	}
	if err := x.Flush(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Flush after failed sync: %v", err)
	}
	checkAll(t, x, m, nil) // queries still work
	if err := x.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close: %v", err)
	}
	x = mustOpen(t, fsys, tiny) // reopening recovers
	defer x.Close()
	fill(t, x, m, 5, 5)
	checkAll(t, x, m, nil)
}

func TestOpenRejectsCorruptSealedFile(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, tiny)
	fill(t, x, &model{}, 0, 20)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(path.Join(testDir, fileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte in both header copies.
	for _, at := range []int64{8, hdrCopyBytes + 8} {
		b := make([]byte, 1)
		f.ReadAt(b, at)
		b[0] ^= 0xff
		f.WriteAt(b, at)
	}
	f.Close()
	if _, err := Open(fsys, testDir, tiny); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v", err)
	}
}

func TestOpenIgnoresOtherNames(t *testing.T) {
	fsys := newMem(t)
	for _, n := range []string{"checkpoint", "0000000000000000000x", "1.tmp"} {
		f, err := fsys.Create(path.Join(testDir, n))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	x := mustOpen(t, fsys, tiny)
	defer x.Close()
	if x.MaxPhysOffset() != -1 {
		t.Fatalf("MaxPhysOffset of an empty index: %d", x.MaxPhysOffset())
	}
	if _, err := fsys.Stat(path.Join(testDir, "checkpoint")); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Open removed a file that is not its own")
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	x := mustOpen(t, newMem(t), Options{SlotsPerFile: 1 << 10, EntriesPerFile: 1 << 14})
	defer x.Close()
	key := []byte("order-123456")
	off := int64(0)
	if err := x.Add("TopicA", key, off, 1); err != nil { // creates the file
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5000, func() {
		off += 10
		if err := x.Add("TopicA", key, off, off); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Add allocates %v times per call", allocs)
	}
}
