package consumequeue

import (
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// The hot paths allocate nothing: Append (including its spills into the
// page cache on the OS file system) and Read. AllocsPerRun divides by the
// number of runs, which would hide one allocation per spill, so each run
// here makes many calls and the total must be 0.
func TestHotPathsDoNotAllocate(t *testing.T) {
	q := open(t, vfs.OS, t.TempDir(), 0)
	defer q.Close()
	i := int64(0)
	allocs := testing.AllocsPerRun(1, func() {
		for range 3 * bufEntries { // spills three times
			if err := q.Append(i, ent(i)); err != nil {
				t.Fatal(err)
			}
			i++
		}
	})
	if allocs != 0 {
		t.Errorf("%d Appends allocated %.0f times", 3*bufEntries, allocs)
	}
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, q, i, i+50) // some buffered entries too
	if raceEnabled {
		return // sync.Pool drops items under -race
	}
	dst := make([]Entry, 32)
	allocs = testing.AllocsPerRun(1, func() {
		for pos := int64(0); pos < q.MaxOffset(); pos += 13 {
			if _, err := q.Read(pos, dst); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Reads allocated %.0f times", allocs)
	}
}

func BenchmarkAppend(b *testing.B) {
	q := open(b, vfs.OS, b.TempDir(), 0)
	defer q.Close()
	b.ReportAllocs()
	b.SetBytes(EntrySize)
	var i int64
	for b.Loop() {
		if err := q.Append(i, ent(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRead32(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct {
		name  string
		flush bool
	}{{"file", true}, {"buffer", false}} {
		b.Run(tc.name, func(b *testing.B) {
			q := open(b, vfs.OS, b.TempDir(), 0)
			defer q.Close()
			appendRange(b, q, 0, n)
			if tc.flush {
				if err := q.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			dst := make([]Entry, 32)
			pos := int64(0)
			if !tc.flush {
				pos = n - n%bufEntries // after the last spill: buffered
			}
			start := pos
			b.ReportAllocs()
			b.SetBytes(32 * EntrySize)
			for b.Loop() {
				if _, err := q.Read(pos, dst); err != nil {
					b.Fatal(err)
				}
				if pos += 32; pos+32 > n {
					pos = start
				}
			}
		})
	}
}
