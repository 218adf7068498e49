package consumequeue

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// checkAfterCrash reopens the crashed FS and checks that the queue holds a
// prefix of what was appended, at least up to durable entries, with every
// readable entry intact and every file a whole number of entries.
func checkAfterCrash(t *testing.T, c *vfs.MemFS, per int, durable, appended int64) *Queue {
	t.Helper()
	q := open(t, c, "/q", per)
	max := q.MaxOffset()
	if max < durable || max > appended {
		t.Fatalf("MaxOffset after crash = %d, want in [%d (flushed), %d (appended)]", max, durable, appended)
	}
	checkEntries(t, q, q.MinOffset(), max)
	for name, size := range files(t, c, "/q") {
		if size%EntrySize != 0 {
			t.Fatalf("file %s has %d bytes after Open, not whole entries", name, size)
		}
	}
	return q
}

func TestCrashKeepsFlushedEntriesOnly(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	appendRange(t, q, 0, 40)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, q, 40, 60) // spills into files 42 and 49, never synced
	c := fsys.CrashClone(vfs.CrashOptions{})
	q2 := checkAfterCrash(t, c, 7, 40, 60)
	defer q2.Close()
	checkMinMax(t, q2, 0, 40) // strict crash: exactly the flushed entries
	q.Close()
}

func TestCrashRandomPrefix(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		per := []int{1, 3, 7, 64}[seed%4]
		fsys := vfs.NewMem()
		q := open(t, fsys, "/q", per)
		var durable, max int64
		var ops []string
		defer func() {
			if t.Failed() {
				t.Logf("seed %d per %d ops %v", seed, per, ops)
			}
		}()
		for range 30 + r.Intn(200) {
			switch k := r.Intn(100); {
			case k < 85:
				ops = append(ops, "A")
				mustAppend(t, q, max, ent(max))
				max++
			case k < 92:
				ops = append(ops, "F")
				if err := q.Flush(); err != nil {
					t.Fatal(err)
				}
				durable = max
			case k < 96 && max > 0:
				cut := r.Int63n(max + 1)
				ops = append(ops, fmt.Sprintf("T%d", cut))
				if err := q.Truncate(ent(cut).Offset); err != nil {
					t.Fatal(err)
				}
				// Entries already removed by retention cannot be cut.
				if got := q.MaxOffset(); got < cut {
					t.Fatalf("Truncate to %d left MaxOffset %d", cut, got)
				}
				max = q.MaxOffset()
				durable = min(durable, max)
			default:
				d := r.Int63n(max + 1)
				n, err := q.DeleteBefore(ent(d).Offset)
				if err != nil {
					t.Fatal(err)
				}
				ops = append(ops, fmt.Sprintf("D%d:%d(max %d)", d, n, max))
			}
		}
		c := fsys.CrashClone(vfs.CrashOptions{Rand: r})
		q2 := checkAfterCrash(t, c, per, durable, max)
		// The recovered queue works: append where it ends, reopen.
		m2 := q2.MaxOffset()
		appendRange(t, q2, m2, m2+5)
		q2.Close()
		q3 := open(t, c, "/q", per)
		checkEntries(t, q3, q3.MinOffset(), m2+5)
		q3.Close()
		q.Close()
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

func TestCrashDuringRestart(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		r := rand.New(rand.NewSource(seed))
		fsys := vfs.NewMem()
		q := open(t, fsys, "/q", 7)
		appendRange(t, q, 0, 10)
		if err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		q.DeleteBefore(1 << 50)
		mustAppend(t, q, 100, ent(100)) // new file 98; files 0, 7 removed
		appendRange(t, q, 101, 103)
		flushed := r.Intn(2) == 0
		if flushed {
			if err := q.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		c := fsys.CrashClone(vfs.CrashOptions{Rand: r})
		q2 := open(t, c, "/q", 7)
		min, max := q2.MinOffset(), q2.MaxOffset()
		switch {
		case flushed && (min != 100 || max != 103):
			t.Fatalf("seed %d: flushed restart came back as [%d, %d), want [100, 103)", seed, min, max)
		case max <= 10:
			checkEntries(t, q2, min, max) // the old queue, or what of it was durable
		case min != 100 || max > 103:
			t.Fatalf("seed %d: restart came back as [%d, %d)", seed, min, max)
		default:
			checkEntries(t, q2, 100, max)
		}
		q2.Close()
		q.Close()
	}
}

func TestTornTrailingEntryCut(t *testing.T) {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/q")
	f, _ := fsys.Create("/q/" + fileName(0))
	var b [EntrySize]byte
	for i := range int64(3) {
		putEntry(b[:], ent(i))
		f.WriteAt(b[:], i*EntrySize)
	}
	putEntry(b[:], ent(3))
	f.WriteAt(b[:13], 3*EntrySize)
	f.Sync()
	f.Close()
	fsys.SyncDir("/q")

	q := open(t, fsys, "/q", 7)
	checkMinMax(t, q, 0, 3)
	checkEntries(t, q, 0, 3)
	if got := files(t, fsys, "/q")[fileName(0)]; got != 3*EntrySize {
		t.Fatalf("file size after Open = %d, want %d", got, 3*EntrySize)
	}
	// The cut is durable, and appends land where it was.
	c := fsys.CrashClone(vfs.CrashOptions{})
	if got := files(t, c, "/q")[fileName(0)]; got != 3*EntrySize {
		t.Fatalf("file size after crash = %d, want %d", got, 3*EntrySize)
	}
	appendRange(t, q, 3, 10)
	q.Close()
	q = open(t, fsys, "/q", 7)
	defer q.Close()
	checkEntries(t, q, 0, 10)
}

// writeFile writes entries ent(from..to) into the file starting at base.
func writeFile(t *testing.T, fsys vfs.FS, base, from, to int64) {
	t.Helper()
	f, err := fsys.Create("/q/" + fileName(base))
	if err != nil {
		t.Fatal(err)
	}
	var b [EntrySize]byte
	for i := from; i < to; i++ {
		putEntry(b[:], ent(i))
		if _, err := f.WriteAt(b[:], (i-base)*EntrySize); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func TestOpenCutsAfterShortOrMissingFile(t *testing.T) {
	t.Run("short middle file", func(t *testing.T) {
		fsys := vfs.NewMem()
		fsys.MkdirAll("/q")
		writeFile(t, fsys, 0, 0, 7)
		writeFile(t, fsys, 7, 7, 10) // short
		writeFile(t, fsys, 14, 14, 21)
		q := open(t, fsys, "/q", 7)
		defer q.Close()
		checkMinMax(t, q, 0, 10)
		checkEntries(t, q, 0, 10)
		if _, ok := files(t, fsys, "/q")[fileName(14)]; ok {
			t.Fatal("file after the short one was kept")
		}
	})
	t.Run("missing middle file", func(t *testing.T) {
		fsys := vfs.NewMem()
		fsys.MkdirAll("/q")
		writeFile(t, fsys, 7, 7, 14)
		writeFile(t, fsys, 21, 21, 28)
		q := open(t, fsys, "/q", 7)
		defer q.Close()
		checkMinMax(t, q, 7, 14)
		checkEntries(t, q, 7, 14)
		if got := files(t, fsys, "/q"); len(got) != 1 {
			t.Fatalf("files = %v, want only %s", got, fileName(7))
		}
	})
	t.Run("empty last file", func(t *testing.T) {
		fsys := vfs.NewMem()
		fsys.MkdirAll("/q")
		writeFile(t, fsys, 0, 0, 7)
		writeFile(t, fsys, 7, 7, 7)
		q := open(t, fsys, "/q", 7)
		defer q.Close()
		checkMinMax(t, q, 0, 7)
		appendRange(t, q, 7, 9)
		checkEntries(t, q, 0, 9)
	})
}
