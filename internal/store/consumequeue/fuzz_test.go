package consumequeue

import (
	"errors"
	"math"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// FuzzEntry lays arbitrary bytes out as queue files and opens them. Open
// must not panic; it must expose exactly the whole entries (a torn tail is
// cut), Min must be the first real entry, Last the last one, reads must
// return only whole stored entries, and the cut state must reopen the same.
// Truncate and DeleteBefore on whatever the bytes hold must not panic either.
//
// mode's low 4 bits give EntriesPerFile-1; with bit 7 set all bytes go to
// one file (which may be too long: then Open must fail with ErrCorrupt).
func FuzzEntry(f *testing.F) {
	var b [EntrySize]byte
	putEntry(b[:], ent(0))
	f.Add([]byte{}, uint8(6), int64(0))
	f.Add(b[:], uint8(0), int64(0))
	f.Add(b[:13], uint8(6), int64(0))
	f.Add(append(make([]byte, 3*EntrySize), b[:]...), uint8(6), int64(1000))
	f.Add(append(append([]byte(nil), b[:]...), b[:7]...), uint8(0x80), int64(1100))
	f.Add(make([]byte, 7*EntrySize+1), uint8(0x81), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8, phys int64) {
		per := int64(mode&0x0f) + 1
		fileBytes := int(per * EntrySize)
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("/q"); err != nil {
			t.Fatal(err)
		}
		write := func(base int64, p []byte) {
			f, err := fsys.Create("/q/" + fileName(base))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(p, 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if mode&0x80 != 0 {
			write(0, data)
		} else {
			for i := 0; i == 0 || i*fileBytes < len(data); i++ {
				write(int64(i)*per, data[i*fileBytes:min(len(data), (i+1)*fileBytes)])
			}
		}

		q, err := Open(fsys, "/q", Options{EntriesPerFile: int(per)})
		if mode&0x80 != 0 && len(data) > fileBytes {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open of a %d-byte file with %d entries per file = %v, want ErrCorrupt", len(data), per, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer q.Close()

		whole := int64(len(data) / EntrySize)
		want := make([]Entry, whole)
		for i := range want {
			want[i] = getEntry(data[i*EntrySize:])
		}
		check := func(q *Queue) {
			t.Helper()
			if q.MaxOffset() != whole {
				t.Fatalf("MaxOffset = %d, want %d whole entries of %d bytes", q.MaxOffset(), whole, len(data))
			}
			min := whole
			for i, e := range want {
				if !e.blank() {
					min = int64(i)
					break
				}
			}
			if q.MinOffset() != min {
				t.Fatalf("MinOffset = %d, want first real entry %d", q.MinOffset(), min)
			}
			got := make([]Entry, whole+3)
			n, err := q.read(0, got, false)
			if err != nil || int64(n) != whole {
				t.Fatalf("raw read = %d, %v; want %d", n, err, whole)
			}
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("entry %d = %v, want %v", i, got[i], want[i])
				}
			}
			if min < whole {
				if n, err := q.Read(min, got); err != nil || int64(n) != whole-min {
					t.Fatalf("Read(Min) = %d, %v", n, err)
				}
			}
			off, e, ok := q.Last()
			if ok != (min < whole) || (ok && (want[off] != e || firstReal(want[off+1:]) >= 0)) {
				t.Fatalf("Last = %d %v %v", off, e, ok)
			}
		}
		check(q)
		for name, size := range files(t, fsys, "/q") {
			if size%EntrySize != 0 {
				t.Fatalf("%s keeps a torn entry: %d bytes", name, size)
			}
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		q, err = Open(fsys, "/q", Options{EntriesPerFile: int(per)})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		check(q)

		// Maintenance over arbitrary entries must not panic or break reads.
		if _, err := q.DeleteBefore(phys); err != nil {
			t.Fatalf("DeleteBefore(%d): %v", phys, err)
		}
		if err := q.Truncate(phys); err != nil {
			t.Fatalf("Truncate(%d): %v", phys, err)
		}
		if q.MinOffset() > q.MaxOffset() || q.MaxOffset() > whole {
			t.Fatalf("after maintenance [Min, Max) = [%d, %d)", q.MinOffset(), q.MaxOffset())
		}
		if _, e, ok := q.Last(); ok && e.Offset >= 0 && e.Offset < math.MaxInt64 {
			// Append after whatever is there must work.
			if err := q.Append(q.MaxOffset(), Entry{Offset: e.Offset + 1, Size: 1}); err != nil {
				t.Fatalf("Append after fuzzed entries: %v", err)
			}
		}
		buf := make([]Entry, 5)
		for i := q.MinOffset(); i < q.MaxOffset(); i += 5 {
			if _, err := q.Read(i, buf); err != nil {
				t.Fatalf("Read(%d): %v", i, err)
			}
		}
	})
}
