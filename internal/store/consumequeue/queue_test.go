package consumequeue

import (
	"errors"
	"fmt"
	"path"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

func TestEntryCodecRoundTrip(t *testing.T) {
	for _, e := range []Entry{{}, ent(0), {Offset: -1, Size: -1, TagHash: -1}, {Offset: 1 << 62, Size: 1 << 30, TagHash: -5}} {
		var b [EntrySize]byte
		putEntry(b[:], e)
		if got := getEntry(b[:]); got != e {
			t.Errorf("round trip of %v = %v", e, got)
		}
	}
	var b [EntrySize]byte
	putEntry(b[:], Entry{Offset: 0x0102030405060708, Size: 0x090a0b0c, TagHash: 0x0d0e0f1011121314})
	want := [EntrySize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if b != want {
		t.Errorf("layout = %v, want big-endian %v", b, want)
	}
}

func TestFileNames(t *testing.T) {
	if got := fileName(0); got != "00000000000000000000" {
		t.Errorf("fileName(0) = %s", got)
	}
	if got := fileName(300_000); got != "00000000000006000000" {
		t.Errorf("fileName(300000) = %s", got)
	}
	for _, tc := range []struct {
		name string
		off  int64
		ok   bool
		err  bool
	}{
		{"00000000000006000000", 6_000_000, true, false},
		{"0000000000000600000", 0, false, false},  // 19 digits
		{"0000000000000600000x", 0, false, false}, // not digits
		{"99999999999999999999", 0, true, true},   // overflows
		{"00000000000006000000.tmp", 0, false, false},
	} {
		off, ok, err := parseName(tc.name)
		if off != tc.off || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("parseName(%s) = %d, %v, %v", tc.name, off, ok, err)
		}
	}
}

func TestAppendReadAcrossFiles(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 7)
		defer q.Close()
		checkMinMax(t, q, 0, 0)
		if n, err := q.Read(0, make([]Entry, 4)); n != 0 || err != nil {
			t.Fatalf("Read on empty queue = %d, %v", n, err)
		}
		if _, _, ok := q.Last(); ok {
			t.Fatal("Last on empty queue reports an entry")
		}
		appendRange(t, q, 0, 50)
		checkMinMax(t, q, 0, 50)
		checkEntries(t, q, 0, 50) // all still buffered or spilled at boundaries
		if err := q.Flush(); err != nil {
			t.Fatal(err)
		}
		checkEntries(t, q, 0, 50)
		checkEntries(t, q, 13, 50)
		// A read of many files at once, stopping at MaxOffset.
		dst := make([]Entry, 100)
		n, err := q.Read(3, dst)
		if err != nil || n != 47 {
			t.Fatalf("Read(3, 100) = %d, %v; want 47", n, err)
		}
		for k := range n {
			if dst[k] != ent(int64(3+k)) {
				t.Fatalf("entry %d = %v", 3+k, dst[k])
			}
		}
		if n, err := q.Read(50, dst); n != 0 || err != nil {
			t.Fatalf("Read(Max) = %d, %v", n, err)
		}
		if off, e, ok := q.Last(); !ok || off != 49 || e != ent(49) {
			t.Fatalf("Last = %d, %v, %v", off, e, ok)
		}
		got := files(t, fsys, dir)
		want := map[string]int64{}
		for base := int64(0); base < 50; base += 7 {
			want[fileName(base)] = min(7, 50-base) * EntrySize
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("files = %v, want %v", got, want)
		}
	})
}

func TestBufferSpillsAt4KiB(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/q"
	q := open(t, fsys, dir, 0)
	defer q.Close()
	appendRange(t, q, 0, bufEntries)
	if got := files(t, fsys, dir); len(got) != 0 {
		t.Fatalf("files after %d appends = %v, want none yet (all buffered)", bufEntries, got)
	}
	mustAppend(t, q, bufEntries, ent(bufEntries))
	got := files(t, fsys, dir)
	if got[fileName(0)] != bufEntries*EntrySize || bufEntries*EntrySize < 4096 {
		t.Fatalf("files after the spill = %v, want %d bytes (>= 4 KiB)", got, bufEntries*EntrySize)
	}
	checkEntries(t, q, 0, bufEntries+1)
}

func TestReopenRestores(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 7)
		appendRange(t, q, 0, 30)
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		q = open(t, fsys, dir, 7)
		checkMinMax(t, q, 0, 30)
		checkEntries(t, q, 0, 30)
		if off, e, ok := q.Last(); !ok || off != 29 || e != ent(29) {
			t.Fatalf("Last after reopen = %d, %v, %v", off, e, ok)
		}
		appendRange(t, q, 30, 45) // continues the partial file 28..34
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		q = open(t, fsys, dir, 7)
		defer q.Close()
		checkMinMax(t, q, 0, 45)
		checkEntries(t, q, 0, 45)
	})
}

func TestReopenWithOtherEntriesPerFile(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	appendRange(t, q, 0, 20)
	q.Close()
	_, err := Open(fsys, "/q", Options{EntriesPerFile: 5})
	wantErr(t, err, ErrCorrupt) // 00..140 is not a multiple of 5 entries
	_, err = Open(fsys, "/q", Options{EntriesPerFile: 14})
	wantErr(t, err, ErrCorrupt) // 7-entry files are not at multiples of 14... and 14*20 is too long
	_, err = Open(fsys, "/q", Options{EntriesPerFile: -1})
	if err == nil {
		t.Fatal("Open with EntriesPerFile -1 succeeded")
	}
}

func TestOpenIgnoresForeignNames(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	appendRange(t, q, 0, 10)
	q.Close()
	f, _ := fsys.Create("/q/checkpoint.tmp")
	f.Close()
	q = open(t, fsys, "/q", 7)
	defer q.Close()
	checkEntries(t, q, 0, 10)
}

func TestOpenCreatesDirDurably(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/root/cq/T/3", 7)
	appendRange(t, q, 0, 3)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	q2 := open(t, c, "/root/cq/T/3", 7)
	defer q2.Close()
	checkEntries(t, q2, 0, 3)
	q.Close()
}

func TestNonZeroStartSameFile(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 100)
		mustAppend(t, q, 30, ent(30))
		checkMinMax(t, q, 30, 31)
		_, err := q.Read(29, make([]Entry, 1))
		wantErr(t, err, ErrBelowMin)
		checkEntries(t, q, 30, 31)
		appendRange(t, q, 31, 40)
		q.Close()
		if got := files(t, fsys, dir); got[fileName(0)] != 40*EntrySize || len(got) != 1 {
			t.Fatalf("files = %v, want one file of 40 entries (30 blanks)", got)
		}
		q = open(t, fsys, dir, 100)
		defer q.Close()
		checkMinMax(t, q, 30, 40)
		checkEntries(t, q, 30, 40)
		var blanks [30]Entry
		if n, err := q.read(0, blanks[:], false); n != 30 || err != nil || blanks != [30]Entry{} {
			t.Fatalf("front padding = %d, %v, %v", n, err, blanks)
		}
	})
}

func TestNonZeroStartLaterFile(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 7)
		mustAppend(t, q, 1000, ent(1000)) // file 994..1000
		checkMinMax(t, q, 1000, 1001)
		appendRange(t, q, 1001, 1010)
		checkEntries(t, q, 1000, 1010)
		q.Close()
		got := files(t, fsys, dir)
		want := map[string]int64{fileName(994): 7 * EntrySize, fileName(1001): 7 * EntrySize, fileName(1008): 2 * EntrySize}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("files = %v, want %v", got, want)
		}
		q = open(t, fsys, dir, 7)
		defer q.Close()
		checkMinMax(t, q, 1000, 1010)
		checkEntries(t, q, 1000, 1010)
		_, err := q.Read(999, make([]Entry, 1))
		wantErr(t, err, ErrBelowMin)
	})
}

func TestRestartAfterRetentionEmptiedQueue(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 10)
	if _, err := q.DeleteBefore(ent(9).end()); err != nil {
		t.Fatal(err)
	}
	checkMinMax(t, q, 10, 10)
	// Jump ahead within the same file: the old entries go, blanks pad.
	mustAppend(t, q, 12, ent(12))
	checkMinMax(t, q, 12, 13)
	checkEntries(t, q, 12, 13)
	if off, e, ok := q.Last(); !ok || off != 12 || e != ent(12) {
		t.Fatalf("Last = %d %v %v", off, e, ok)
	}
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	got := files(t, fsys, "/q")
	if want := map[string]int64{fileName(7): 6 * EntrySize}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	var pad [5]Entry
	if n, err := q.read(7, pad[:], false); n != 5 || err != nil || pad != [5]Entry{} {
		t.Fatalf("padding = %d %v %v", n, err, pad)
	}
}

func TestAppendReplayMismatchGap(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 20)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, q, 20, 23) // 20..22 buffered
	for _, i := range []int64{0, 6, 7, 19, 20, 22} {
		if err := q.Append(i, ent(i)); err != nil {
			t.Errorf("replay of %d: %v", i, err)
		}
		bad := ent(i)
		bad.TagHash++
		wantErr(t, q.Append(i, bad), ErrMismatch)
	}
	wantErr(t, q.Append(25, ent(25)), ErrGap)
	checkMinMax(t, q, 0, 23)
	// Invalid entries.
	wantErr(t, q.Append(23, Entry{}), ErrInvalid)
	wantErr(t, q.Append(23, Entry{Offset: 1 << 40, Size: 0}), ErrInvalid)
	wantErr(t, q.Append(23, Entry{Offset: -1, Size: 10}), ErrInvalid)
	wantErr(t, q.Append(23, ent(22)), ErrInvalid) // offset does not grow
	checkMinMax(t, q, 0, 23)
	checkEntries(t, q, 0, 23)
	// Replay below MinOffset.
	if _, err := q.DeleteBefore(ent(9).Offset); err != nil {
		t.Fatal(err)
	}
	wantErr(t, q.Append(3, ent(3)), ErrBelowMin)
}

func TestTruncate(t *testing.T) {
	type tc struct {
		name     string
		n        int64 // entries appended
		flushed  bool
		physEnd  int64
		wantMax  int64
		wantFile map[string]int64
	}
	sizes := func(kv ...int64) map[string]int64 {
		m := map[string]int64{}
		for i := 0; i < len(kv); i += 2 {
			m[fileName(kv[i])] = kv[i+1] * EntrySize
		}
		return m
	}
	for _, c := range []tc{
		{"inside a file", 30, true, ent(17).Offset, 17, sizes(0, 7, 7, 7, 14, 3)},
		{"inside, mid record", 30, true, ent(17).Offset + 1, 18, sizes(0, 7, 7, 7, 14, 4)},
		{"at a boundary", 30, true, ent(14).Offset, 14, sizes(0, 7, 7, 7, 14, 0)},
		{"everything", 30, true, 0, 0, sizes(0, 0)},
		{"nothing", 30, true, ent(30).Offset, 30, sizes(0, 7, 7, 7, 14, 7, 21, 7, 28, 2)},
		{"buffered only", 30, false, ent(29).Offset, 29, nil},
		{"unflushed across files", 30, false, ent(10).Offset, 10, nil},
	} {
		fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
			t.Run(c.name, func(t *testing.T) {
				dir := path.Join(dir, "x")
				q := open(t, fsys, dir, 7)
				appendRange(t, q, 0, c.n)
				if c.flushed {
					if err := q.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				if err := q.Truncate(c.physEnd); err != nil {
					t.Fatal(err)
				}
				checkMinMax(t, q, 0, c.wantMax)
				checkEntries(t, q, 0, c.wantMax)
				off, e, ok := q.Last()
				if c.wantMax == 0 {
					if ok {
						t.Fatalf("Last after truncating everything = %d %v", off, e)
					}
				} else if !ok || off != c.wantMax-1 || e != ent(c.wantMax-1) {
					t.Fatalf("Last = %d %v %v", off, e, ok)
				}
				if c.wantFile != nil {
					if got := files(t, fsys, dir); fmt.Sprint(got) != fmt.Sprint(c.wantFile) {
						t.Fatalf("files = %v, want %v", got, c.wantFile)
					}
				}
				// The queue continues from the cut.
				appendRange(t, q, c.wantMax, c.wantMax+9)
				if err := q.Close(); err != nil {
					t.Fatal(err)
				}
				q = open(t, fsys, dir, 7)
				defer q.Close()
				checkMinMax(t, q, 0, c.wantMax+9)
				checkEntries(t, q, 0, c.wantMax+9)
			})
		})
	}
}

func TestTruncateKeepsPadding(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 100)
	appendRange(t, q, 40, 50)
	if err := q.Truncate(0); err != nil {
		t.Fatal(err)
	}
	checkMinMax(t, q, 40, 40)
	if _, _, ok := q.Last(); ok {
		t.Fatal("Last reports an entry after all were cut")
	}
	q.Close()
	q = open(t, fsys, "/q", 100)
	defer q.Close()
	checkMinMax(t, q, 40, 40)
	mustAppend(t, q, 40, ent(40))
	checkMinMax(t, q, 40, 41)
	checkEntries(t, q, 40, 41)
}

func TestTruncateDurable(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	appendRange(t, q, 0, 30)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := q.Truncate(ent(9).Offset); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	q2 := open(t, c, "/q", 7)
	defer q2.Close()
	checkMinMax(t, q2, 0, 9)
	checkEntries(t, q2, 0, 9)
	q.Close()
}

func TestDeleteBefore(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 7)
		appendRange(t, q, 0, 30) // files 0, 7, 14, 21, 28(2)
		// Files 0..6 and 7..13 end at or below ent(14).Offset; 14..20 does not.
		removed, err := q.DeleteBefore(ent(15).Offset)
		if err != nil || removed != 2 {
			t.Fatalf("DeleteBefore = %d, %v; want 2", removed, err)
		}
		checkMinMax(t, q, 15, 30)
		_, err = q.Read(14, make([]Entry, 1))
		wantErr(t, err, ErrBelowMin)
		_, err = q.Read(3, make([]Entry, 1))
		wantErr(t, err, ErrBelowMin)
		checkEntries(t, q, 15, 30)
		if _, ok := files(t, fsys, dir)[fileName(7)]; ok {
			t.Fatal("file 7 still there")
		}
		// Going back is a no-op.
		if removed, err := q.DeleteBefore(0); err != nil || removed != 0 {
			t.Fatalf("DeleteBefore(0) = %d, %v", removed, err)
		}
		checkMinMax(t, q, 15, 30)
		// Everything: the file of the last entry stays, and so does 21, the
		// last file on disk, since entries 28 and 29 are still buffered.
		removed, err = q.DeleteBefore(1 << 50)
		if err != nil || removed != 1 {
			t.Fatalf("DeleteBefore(all) = %d, %v; want 1 (14)", removed, err)
		}
		checkMinMax(t, q, 30, 30)
		if off, e, ok := q.Last(); !ok || off != 29 || e != ent(29) {
			t.Fatalf("Last = %d %v %v", off, e, ok)
		}
		appendRange(t, q, 30, 33)
		checkEntries(t, q, 30, 33)
		q.Close()
		if got := files(t, fsys, dir); len(got) != 2 || got[fileName(28)] != 5*EntrySize {
			t.Fatalf("files = %v, want 21 and 28", got)
		}
		q = open(t, fsys, dir, 7)
		defer q.Close()
		// The minimum is not stored: Open starts at the first stored entry.
		checkMinMax(t, q, 21, 33)
		if removed, err := q.DeleteBefore(ent(30).Offset); err != nil || removed != 1 {
			t.Fatalf("DeleteBefore = %d, %v; want 1 (21)", removed, err)
		}
		checkMinMax(t, q, 30, 33)
	})
}

func TestDeleteBeforeAtFileEnd(t *testing.T) {
	// The last entry ends a full file; the buffer is empty and the next file
	// does not exist yet. That file must stay.
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 14)
	q.Flush()
	removed, err := q.DeleteBefore(1 << 50)
	if err != nil || removed != 1 {
		t.Fatalf("DeleteBefore = %d, %v; want 1", removed, err)
	}
	checkMinMax(t, q, 14, 14)
	q.Close()
	q = open(t, fsys, "/q", 7)
	checkMinMax(t, q, 7, 14)
}

func TestDeleteBeforeDurable(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 30)
	q.Flush()
	if _, err := q.DeleteBefore(ent(15).Offset); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	if got := files(t, c, "/q"); len(got) != 3 {
		t.Fatalf("files after crash = %v, want 14, 21, 28", got)
	}
}

func TestSearch(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	storeTime := func(e Entry) (int64, error) { return e.Offset / 200, nil } // two entries per tick, from 5
	if got, err := q.Search(10, storeTime); err != nil || got != 0 {
		t.Fatalf("Search on empty = %d, %v", got, err)
	}
	appendRange(t, q, 0, 40)
	linear := func(ts int64) int64 {
		for i := q.MinOffset(); i < q.MaxOffset(); i++ {
			if st, _ := storeTime(ent(i)); st >= ts {
				return i
			}
		}
		return q.MaxOffset()
	}
	check := func() {
		t.Helper()
		for ts := int64(0); ts < 30; ts++ {
			got, err := q.Search(ts, storeTime)
			if err != nil || got != linear(ts) {
				t.Fatalf("Search(%d) = %d, %v; want %d", ts, got, err, linear(ts))
			}
		}
	}
	check()
	q.DeleteBefore(ent(17).Offset)
	check()
	boom := errors.New("commit log gone")
	_, err := q.Search(10, func(Entry) (int64, error) { return 0, boom })
	wantErr(t, err, boom)
}

func TestClosed(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	appendRange(t, q, 0, 10)
	q.Close()
	checkMinMax(t, q, 0, 10)
	_, err := q.Read(0, make([]Entry, 1))
	wantErr(t, err, ErrClosed)
	wantErr(t, q.Append(10, ent(10)), ErrClosed)
	wantErr(t, q.Flush(), ErrClosed)
	wantErr(t, q.Truncate(0), ErrClosed)
	_, err = q.DeleteBefore(0)
	wantErr(t, err, ErrClosed)
	_, err = q.Search(0, func(Entry) (int64, error) { return 0, nil })
	wantErr(t, err, ErrClosed)
}

func TestRemove(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		q := open(t, fsys, dir, 7)
		appendRange(t, q, 0, 20)
		q.Flush()
		if err := q.Remove(); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(dir); err == nil {
			t.Fatal("directory still there after Remove")
		}
		wantErr(t, q.Append(20, ent(20)), ErrClosed)
		if m, ok := fsys.(*vfs.MemFS); ok {
			c := m.CrashClone(vfs.CrashOptions{})
			if _, err := c.Stat(dir); err == nil {
				t.Fatal("directory back after a crash")
			}
		}
	})
}

func TestSyncFailureIsSticky(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 5)
	boom := errors.New("EIO")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync {
			return boom
		}
		return nil
	})
	err := q.Flush()
	wantErr(t, err, ErrFailed)
	wantErr(t, err, boom)
	fsys.InjectError(nil)
	wantErr(t, q.Flush(), ErrFailed)
	// Reads and appends go on.
	appendRange(t, q, 5, 10)
	checkEntries(t, q, 0, 10)
}

func TestWriteFailureKeepsEntry(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 7)
	boom := errors.New("ENOSPC")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite || op == vfs.OpCreate {
			return boom
		}
		return nil
	})
	// Entry 7 starts a new file, so the full buffer must be written first.
	wantErr(t, q.Append(7, ent(7)), boom)
	checkMinMax(t, q, 0, 7)
	checkEntries(t, q, 0, 7)
	fsys.InjectError(nil)
	appendRange(t, q, 7, 12)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	q2 := open(t, c, "/q", 7)
	defer q2.Close()
	checkEntries(t, q2, 0, 12)
}

func TestTruncateFailureIsSticky(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 20)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("EIO")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpTruncate {
			return boom
		}
		return nil
	})
	wantErr(t, q.Truncate(ent(10).Offset), boom)
	fsys.InjectError(nil)
	checkMinMax(t, q, 0, 10) // the in-memory queue is cut
	wantErr(t, q.Flush(), ErrFailed)
}

func TestDeleteBeforeRemoveFailure(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 30)
	q.Flush()
	boom := errors.New("EACCES")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpRemove && path.Base(p) == fileName(7) {
			return boom
		}
		return nil
	})
	removed, err := q.DeleteBefore(ent(20).Offset)
	wantErr(t, err, boom)
	if removed != 1 {
		t.Fatalf("removed %d files, want 1 (file 0 before the failure)", removed)
	}
	checkMinMax(t, q, 7, 30)
	checkEntries(t, q, 7, 30)
	fsys.InjectError(nil)
	if removed, err := q.DeleteBefore(ent(20).Offset); err != nil || removed != 1 {
		t.Fatalf("retry: DeleteBefore = %d, %v", removed, err)
	}
	checkMinMax(t, q, 20, 30)
}
