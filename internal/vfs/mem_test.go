package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"path"
	"strings"
	"sync"
	"testing"
)

// fsUnderTest gives each conformance check a fresh FS and a directory in it
// that exists.
type fsUnderTest struct {
	name string
	new  func(t *testing.T) (FS, string)
}

var allFS = []fsUnderTest{
	{"OS", func(t *testing.T) (FS, string) { return OS, t.TempDir() }},
	{"Mem", func(t *testing.T) (FS, string) {
		m := NewMem()
		dir := t.TempDir() // an absolute path like the ones real callers use
		if err := m.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		return m, dir
	}},
	{"MemRelative", func(t *testing.T) (FS, string) {
		m := NewMem()
		if err := m.MkdirAll("data/x"); err != nil {
			t.Fatal(err)
		}
		return m, "data/x"
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, fsys FS, name string, data string) File {
	t.Helper()
	f, err := fsys.Create(name)
	must(t, err)
	if data != "" {
		if _, err := f.WriteAt([]byte(data), 0); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func contents(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	must(t, err)
	defer f.Close()
	size, err := f.Size()
	must(t, err)
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); err != nil && !(err == io.EOF && int64(n) == size) {
		t.Fatalf("read %s: %d, %v", name, n, err)
	}
	return string(b)
}

func wantNotExist(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want fs.ErrNotExist", err)
	}
}

// TestConformance runs the same file-semantics checks on the OS and on MemFS.
func TestConformance(t *testing.T) {
	checks := []struct {
		name string
		run  func(t *testing.T, fsys FS, dir string)
	}{
		{"ReadWriteSize", func(t *testing.T, fsys FS, dir string) {
			f := create(t, fsys, path.Join(dir, "f"), "hello world")
			defer f.Close()
			size, err := f.Size()
			must(t, err)
			if size != 11 {
				t.Fatalf("size %d", size)
			}
			b := make([]byte, 5)
			n, err := f.ReadAt(b, 6)
			if n != 5 || err != nil || string(b) != "world" {
				t.Fatalf("ReadAt = %d %v %q", n, err, b)
			}
		}},
		{"DropCacheKeepsData", func(t *testing.T, fsys FS, dir string) {
			f := create(t, fsys, path.Join(dir, "f"), strings.Repeat("p", 3*4096))
			defer f.Close()
			must(t, f.Sync())
			must(t, f.DropCache(0, 2*4096))
			must(t, f.DropCache(4096, 1<<20)) // past the end: nothing to drop
			b := make([]byte, 3*4096)
			if n, err := f.ReadAt(b, 0); n != len(b) || err != nil || string(b) != strings.Repeat("p", 3*4096) {
				t.Fatalf("after DropCache ReadAt = %d %v", n, err)
			}
			if err := f.DropCache(-1, 10); err == nil {
				t.Fatal("DropCache at a negative offset succeeded")
			}
		}},
		{"ReadAtPastEOF", func(t *testing.T, fsys FS, dir string) {
			f := create(t, fsys, path.Join(dir, "f"), "abcdef")
			defer f.Close()
			b := make([]byte, 4)
			n, err := f.ReadAt(b, 4)
			if n != 2 || err != io.EOF || string(b[:n]) != "ef" {
				t.Fatalf("ReadAt across EOF = %d %v %q", n, err, b[:n])
			}
			n, err = f.ReadAt(b, 6)
			if n != 0 || err != io.EOF {
				t.Fatalf("ReadAt at EOF = %d %v", n, err)
			}
			n, err = f.ReadAt(b, 100)
			if n != 0 || err != io.EOF {
				t.Fatalf("ReadAt past EOF = %d %v", n, err)
			}
			if _, err := f.ReadAt(b, -1); err == nil {
				t.Fatal("ReadAt at negative offset succeeded")
			}
		}},
		{"WriteAtGapZeroFills", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "ab")
			_, err := f.WriteAt([]byte("cd"), 5)
			must(t, err)
			must(t, f.Close())
			if got := contents(t, fsys, name); got != "ab\x00\x00\x00cd" {
				t.Fatalf("contents %q", got)
			}
		}},
		{"Truncate", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "abcdef")
			must(t, f.Truncate(3))
			must(t, f.Truncate(5))
			must(t, f.Close())
			if got := contents(t, fsys, name); got != "abc\x00\x00" {
				t.Fatalf("contents %q", got)
			}
		}},
		{"PreallocateExtends", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "abc")
			defer f.Close()
			must(t, f.Preallocate(4096))
			size, err := f.Size()
			must(t, err)
			if size != 4096 {
				t.Fatalf("size after Preallocate %d", size)
			}
			must(t, f.Preallocate(10)) // smaller: no shrink
			size, _ = f.Size()
			if size != 4096 {
				t.Fatalf("Preallocate shrank the file to %d", size)
			}
			b := make([]byte, 5)
			_, err = f.ReadAt(b, 0)
			must(t, err)
			if string(b) != "abc\x00\x00" {
				t.Fatalf("head %q", b)
			}
			st, err := fsys.Stat(name)
			must(t, err)
			if st.Size() != 4096 || st.IsDir() || st.Name() != "f" {
				t.Fatalf("stat %v %v %v", st.Size(), st.IsDir(), st.Name())
			}
		}},
		{"CreateTruncatesExisting", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			must(t, create(t, fsys, name, "old contents").Close())
			f := create(t, fsys, name, "new")
			must(t, f.Close())
			if got := contents(t, fsys, name); got != "new" {
				t.Fatalf("contents %q", got)
			}
		}},
		{"Missing", func(t *testing.T, fsys FS, dir string) {
			_, err := fsys.Stat(path.Join(dir, "nope"))
			wantNotExist(t, err)
			_, err = fsys.Open(path.Join(dir, "nope"))
			wantNotExist(t, err)
			_, err = fsys.Create(path.Join(dir, "nodir", "f"))
			wantNotExist(t, err)
			_, err = fsys.ReadDir(path.Join(dir, "nodir"))
			wantNotExist(t, err)
			wantNotExist(t, fsys.Remove(path.Join(dir, "nope")))
			wantNotExist(t, fsys.Rename(path.Join(dir, "nope"), path.Join(dir, "x")))
			must(t, fsys.RemoveAll(path.Join(dir, "nope")))
			must(t, fsys.RemoveAll(path.Join(dir, "nodir", "nope")))
		}},
		{"DirsAndReadDir", func(t *testing.T, fsys FS, dir string) {
			must(t, fsys.MkdirAll(path.Join(dir, "b", "c")))
			must(t, fsys.MkdirAll(path.Join(dir, "b", "c"))) // again: fine
			for _, n := range []string{"z", "a", "m"} {
				must(t, create(t, fsys, path.Join(dir, n), n).Close())
			}
			names, err := fsys.ReadDir(dir)
			must(t, err)
			if got := strings.Join(names, ","); got != "a,b,m,z" {
				t.Fatalf("ReadDir %s", got)
			}
			st, err := fsys.Stat(path.Join(dir, "b"))
			must(t, err)
			if !st.IsDir() {
				t.Fatal("b is not a dir")
			}
			if err := fsys.Remove(path.Join(dir, "b")); err == nil {
				t.Fatal("Remove of a non-empty dir succeeded")
			}
			if err := fsys.MkdirAll(path.Join(dir, "a", "x")); err == nil {
				t.Fatal("MkdirAll through a file succeeded")
			}
			if _, err := fsys.Open(path.Join(dir, "b")); err == nil {
				t.Fatal("Open of a dir succeeded")
			}
			must(t, fsys.Remove(path.Join(dir, "b", "c")))
			must(t, fsys.Remove(path.Join(dir, "m")))
			must(t, fsys.MkdirAll(path.Join(dir, "d", "e")))
			must(t, create(t, fsys, path.Join(dir, "d", "e", "f"), "x").Close())
			must(t, fsys.RemoveAll(path.Join(dir, "d")))
			names, _ = fsys.ReadDir(dir)
			if got := strings.Join(names, ","); got != "a,b,z" {
				t.Fatalf("ReadDir after removes %s", got)
			}
			must(t, fsys.SyncDir(dir))
		}},
		{"RenameReplaces", func(t *testing.T, fsys FS, dir string) {
			a, b := path.Join(dir, "a"), path.Join(dir, "b")
			must(t, create(t, fsys, a, "AAA").Close())
			must(t, create(t, fsys, b, "B").Close())
			must(t, fsys.Rename(a, b))
			if got := contents(t, fsys, b); got != "AAA" {
				t.Fatalf("b = %q", got)
			}
			_, err := fsys.Stat(a)
			wantNotExist(t, err)
			must(t, fsys.MkdirAll(path.Join(dir, "d1")))
			must(t, fsys.Rename(path.Join(dir, "d1"), path.Join(dir, "d2")))
			st, err := fsys.Stat(path.Join(dir, "d2"))
			must(t, err)
			if !st.IsDir() {
				t.Fatal("renamed dir is not a dir")
			}
			if err := fsys.Rename(b, path.Join(dir, "d2")); err == nil {
				t.Fatal("rename of a file over a dir succeeded")
			}
		}},
		{"RemoveOpenFile", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "abc")
			g, err := fsys.Open(name)
			must(t, err)
			must(t, fsys.Remove(name))
			_, err = fsys.Stat(name)
			wantNotExist(t, err)
			_, err = f.WriteAt([]byte("XYZ"), 3)
			must(t, err)
			b := make([]byte, 6)
			_, err = g.ReadAt(b, 0)
			must(t, err)
			if string(b) != "abcXYZ" {
				t.Fatalf("orphan read %q", b)
			}
			must(t, f.Sync())
			must(t, f.Close())
			must(t, g.Close())
		}},
		{"SharedHandles", func(t *testing.T, fsys FS, dir string) {
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "")
			g, err := fsys.Open(name)
			must(t, err)
			_, err = f.WriteAt([]byte("via f"), 0)
			must(t, err)
			if size, _ := g.Size(); size != 5 {
				t.Fatalf("size via g %d", size)
			}
			must(t, f.Close())
			must(t, g.Close())
		}},
		{"ClosedHandle", func(t *testing.T, fsys FS, dir string) {
			f := create(t, fsys, path.Join(dir, "f"), "abc")
			must(t, f.Close())
			errs := map[string]error{"close": f.Close(), "sync": f.Sync(), "truncate": f.Truncate(1)}
			_, errs["read"] = f.ReadAt(make([]byte, 1), 0)
			_, errs["write"] = f.WriteAt([]byte("x"), 0)
			_, errs["size"] = f.Size()
			for op, err := range errs {
				if op == "sync" && err != nil {
					continue // vfs.OS reports EBADF from fdatasync
				}
				if !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s on closed file: %v, want fs.ErrClosed", op, err)
				}
			}
		}},
		{"Usage", func(t *testing.T, fsys FS, dir string) {
			u, err := fsys.Usage(dir)
			must(t, err)
			if u.TotalBytes == 0 || u.FreeBytes > u.TotalBytes {
				t.Fatalf("usage %+v", u)
			}
		}},
	}
	for _, impl := range allFS {
		t.Run(impl.name, func(t *testing.T) {
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					fsys, dir := impl.new(t)
					c.run(t, fsys, dir)
				})
			}
		})
	}
}

func TestMemPaths(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/a/b"))
	must(t, create(t, m, "/a/b/../b/./f", "x").Close())
	for _, p := range []string{"a/b/f", "/a/b/f", "/a//b/f", "a/b/f/"} {
		if _, err := m.Stat(p); err != nil {
			t.Errorf("Stat(%q): %v", p, err)
		}
	}
	if _, err := m.Stat("a/b/f/g"); err == nil {
		t.Error("Stat through a file succeeded")
	}
	names, err := m.ReadDir("/")
	must(t, err)
	if len(names) != 1 || names[0] != "a" {
		t.Fatalf("root %v", names)
	}
	if err := m.Remove("/"); err == nil {
		t.Error("Remove of the root succeeded")
	}
	if err := m.Rename("/a", "/a/b/c"); err == nil {
		t.Error("rename of a dir into itself succeeded")
	}
}

func TestCrashDropsUnsyncedData(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	f := create(t, m, "/d/f", "synced|")
	must(t, f.Sync())
	must(t, m.SyncDir("/d"))
	_, err := f.WriteAt([]byte("lost"), 7)
	must(t, err)
	must(t, f.Truncate(3))

	c := m.CrashClone(CrashOptions{})
	if got := contents(t, c, "/d/f"); got != "synced|" {
		t.Fatalf("after crash %q, want the synced bytes", got)
	}
	// The original is untouched and keeps working.
	if got := contents(t, m, "/d/f"); got != "syn" {
		t.Fatalf("original %q", got)
	}
	must(t, f.Sync())
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "syn" {
		t.Fatalf("after sync and crash %q", got)
	}
	must(t, f.Close())
}

func TestCrashCreateNeedsSyncDir(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d/sub"))
	f := create(t, m, "/d/f", "data")
	must(t, f.Sync())
	c := m.CrashClone(CrashOptions{})
	_, err := c.Stat("/d/f")
	wantNotExist(t, err)
	// MkdirAll'ed directories are durable at once.
	if _, err := c.Stat("/d/sub"); err != nil {
		t.Fatalf("MkdirAll dir lost: %v", err)
	}

	must(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "data" {
		t.Fatalf("after SyncDir %q", got)
	}

	// Removal needs a SyncDir too.
	must(t, f.Close())
	must(t, m.Remove("/d/f"))
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "data" {
		t.Fatalf("unsynced remove: %q", got)
	}
	must(t, m.SyncDir("/d"))
	_, err = m.CrashClone(CrashOptions{}).Stat("/d/f")
	wantNotExist(t, err)
}

func TestCrashSyncedDirUnsyncedFile(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	f := create(t, m, "/d/f", "data")
	must(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "" {
		t.Fatalf("file data survived without Sync: %q", got)
	}
	must(t, f.Close())
}

func TestCrashRenameNeedsSyncDir(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	must(t, m.MkdirAll("/e"))
	for _, n := range []string{"/d/tmp", "/d/final"} {
		f := create(t, m, n, n)
		must(t, f.Sync())
		must(t, f.Close())
	}
	must(t, m.SyncDir("/d"))

	must(t, m.Rename("/d/tmp", "/d/final"))
	c := m.CrashClone(CrashOptions{})
	if got := contents(t, c, "/d/final"); got != "/d/final" {
		t.Fatalf("rename durable without SyncDir: final = %q", got)
	}
	if got := contents(t, c, "/d/tmp"); got != "/d/tmp" {
		t.Fatalf("tmp = %q", got)
	}

	must(t, m.SyncDir("/d"))
	c = m.CrashClone(CrashOptions{})
	if got := contents(t, c, "/d/final"); got != "/d/tmp" {
		t.Fatalf("after SyncDir final = %q", got)
	}
	_, err := c.Stat("/d/tmp")
	wantNotExist(t, err)

	// Across directories, each side needs its own SyncDir.
	must(t, m.Rename("/d/final", "/e/moved"))
	must(t, m.SyncDir("/e"))
	c = m.CrashClone(CrashOptions{})
	for _, n := range []string{"/d/final", "/e/moved"} {
		if got := contents(t, c, n); got != "/d/tmp" {
			t.Fatalf("%s = %q", n, got)
		}
	}
	must(t, m.SyncDir("/d"))
	c = m.CrashClone(CrashOptions{})
	_, err = c.Stat("/d/final")
	wantNotExist(t, err)
}

func TestCrashCloneIsIndependent(t *testing.T) {
	m := NewMem()
	m.SetCapacity(1000)
	must(t, m.MkdirAll("/d"))
	f := create(t, m, "/d/f", "abc")
	must(t, f.Sync())
	must(t, m.SyncDir("/d"))
	c := m.CrashClone(CrashOptions{})

	g, err := c.Open("/d/f")
	must(t, err)
	_, err = g.WriteAt([]byte("clone"), 0)
	must(t, err)
	must(t, c.Remove("/d/f"))
	must(t, c.SyncDir("/d"))
	_, err = f.WriteAt([]byte("orig"), 0)
	must(t, err)
	must(t, f.Sync())

	if got := contents(t, m, "/d/f"); got != "orig" {
		t.Fatalf("original %q", got)
	}
	b := make([]byte, 5)
	_, err = g.ReadAt(b, 0)
	must(t, err)
	if string(b) != "clone" {
		t.Fatalf("clone %q", b)
	}
	uc, _ := c.Usage("/")
	if uc.TotalBytes != 1000 || uc.FreeBytes != 995 {
		t.Fatalf("clone usage %+v", uc)
	}
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "orig" {
		t.Fatalf("second clone %q", got)
	}
}

// tornOp is one unsynced change in the torn-write property test.
type tornOp struct {
	write []byte
	off   int64
	size  int64 // truncate when write == nil
}

func (o tornOp) apply(b []byte, cut int) []byte {
	b = bytes.Clone(b)
	if o.write == nil {
		if o.size <= int64(len(b)) {
			return b[:o.size]
		}
		return append(b, make([]byte, o.size-int64(len(b)))...)
	}
	p := o.write[:cut]
	if len(p) == 0 {
		return b
	}
	for int64(len(b)) < o.off+int64(len(p)) {
		b = append(b, 0)
	}
	copy(b[o.off:], p)
	return b
}

// TestCrashTornPrefix checks over many seeds that a crash with Rand keeps the
// synced data plus a prefix of the later changes, the last write possibly cut:
// every result must be one a naive model of that rule allows.
func TestCrashTornPrefix(t *testing.T) {
	var none, all, torn int
	for seed := int64(0); seed < 400; seed++ {
		gen := rand.New(rand.NewSource(seed))
		m := NewMem()
		must(t, m.MkdirAll("/d"))
		f := create(t, m, "/d/f", "")
		must(t, m.SyncDir("/d"))
		base := []byte(strings.Repeat("s", gen.Intn(20)))
		_, err := f.WriteAt(base, 0)
		must(t, err)
		must(t, f.Sync())

		var ops []tornOp
		cur := bytes.Clone(base)
		for i, n := 0, 1+gen.Intn(6); i < n; i++ {
			var op tornOp
			if gen.Intn(4) == 0 {
				op.size = int64(gen.Intn(len(cur) + 10))
				must(t, f.Truncate(op.size))
			} else {
				op.write = []byte(strings.Repeat(string(rune('a'+i)), 1+gen.Intn(8)))
				op.off = int64(gen.Intn(len(cur) + 5))
				_, err := f.WriteAt(op.write, op.off)
				must(t, err)
			}
			ops = append(ops, op)
			cur = op.apply(cur, len(op.write))
		}
		if got := contents(t, m, "/d/f"); got != string(cur) {
			t.Fatalf("seed %d: live contents %q, model %q", seed, got, cur)
		}

		// Every outcome the rule allows, and how it came about.
		allowed := map[string]string{string(base): "none"}
		state := base
		for i, op := range ops {
			if op.write != nil {
				for cut := 0; cut < len(op.write); cut++ {
					if _, ok := allowed[string(op.apply(state, cut))]; !ok {
						allowed[string(op.apply(state, cut))] = "torn"
					}
				}
			}
			state = op.apply(state, len(op.write))
			kind := "prefix"
			if i == len(ops)-1 {
				kind = "all"
			}
			allowed[string(state)] = kind
		}

		c := m.CrashClone(CrashOptions{Rand: rand.New(rand.NewSource(seed))})
		got := contents(t, c, "/d/f")
		kind, ok := allowed[got]
		if !ok {
			t.Fatalf("seed %d: crash left %q, not a torn prefix of %d ops on %q", seed, got, len(ops), base)
		}
		switch kind {
		case "none":
			none++
		case "all":
			all++
		case "torn":
			torn++
		}
		again := m.CrashClone(CrashOptions{Rand: rand.New(rand.NewSource(seed))})
		if g2 := contents(t, again, "/d/f"); g2 != got {
			t.Fatalf("seed %d: same seed gave %q then %q", seed, got, g2)
		}
		if g := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); g != string(base) {
			t.Fatalf("seed %d: crash without Rand %q, want synced %q", seed, g, base)
		}
		must(t, f.Close())
	}
	if none == 0 || all == 0 || torn == 0 {
		t.Fatalf("outcomes not all exercised: none=%d all=%d torn=%d", none, all, torn)
	}
	t.Logf("outcomes: none=%d all=%d torn=%d", none, all, torn)
}

func TestCapacity(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	m.SetCapacity(100)
	usage := func() Usage {
		u, err := m.Usage("/d")
		must(t, err)
		return u
	}
	f := create(t, m, "/d/f", strings.Repeat("x", 60))
	if u := usage(); u.TotalBytes != 100 || u.FreeBytes != 40 {
		t.Fatalf("usage %+v", u)
	}
	wantNoSpace := func(err error) {
		t.Helper()
		if !errors.Is(err, ErrNoSpace) {
			t.Fatalf("got %v, want ErrNoSpace", err)
		}
	}
	_, err := f.WriteAt(make([]byte, 50), 60)
	wantNoSpace(err)
	wantNoSpace(f.Truncate(101))
	wantNoSpace(f.Preallocate(200))
	if size, _ := f.Size(); size != 60 {
		t.Fatalf("failed ops changed the size to %d", size)
	}
	_, err = f.WriteAt([]byte("overwrite"), 0) // no growth: fine
	must(t, err)
	_, err = f.WriteAt(make([]byte, 40), 60) // exactly full
	must(t, err)
	if u := usage(); u.FreeBytes != 0 || u.UsedFraction() != 1 {
		t.Fatalf("usage when full %+v", u)
	}
	_, err = m.Create("/d/g")
	wantNoSpace(err)
	_, err = m.Stat("/d/g")
	wantNotExist(t, err)

	// The disk empties: raise the capacity.
	m.SetCapacity(300)
	g := create(t, m, "/d/g", "")
	must(t, g.Preallocate(150))
	if u := usage(); u.FreeBytes != 50 {
		t.Fatalf("after preallocate %+v", u)
	}
	// The disk fills below current use: growing fails, shrinking works.
	m.SetCapacity(200)
	_, err = g.WriteAt([]byte("x"), 150)
	wantNoSpace(err)
	must(t, g.Truncate(50))
	if u := usage(); u.FreeBytes != 50 {
		t.Fatalf("after truncate %+v", u)
	}
	// A removed file frees its space only once closed.
	must(t, m.Remove("/d/f"))
	if u := usage(); u.FreeBytes != 50 {
		t.Fatalf("removed but open %+v", u)
	}
	must(t, f.Close())
	if u := usage(); u.FreeBytes != 150 {
		t.Fatalf("removed and closed %+v", u)
	}
	// Create over an existing file gives its bytes back.
	h := create(t, m, "/d/g", "")
	if u := usage(); u.FreeBytes != 200 {
		t.Fatalf("after re-create %+v", u)
	}
	must(t, g.Close())
	must(t, h.Close())

	m.SetCapacity(0)
	if u := usage(); u.TotalBytes != unlimitedBytes {
		t.Fatalf("unlimited %+v", u)
	}
}

func TestInjectError(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	f := create(t, m, "/d/f", "abc")
	must(t, f.Sync())
	must(t, m.SyncDir("/d"))

	errBoom := errors.New("boom")
	var mu sync.Mutex
	var seen []string
	m.InjectError(func(op Op, p string) error {
		mu.Lock()
		seen = append(seen, op.String()+" "+p)
		mu.Unlock()
		if (op == OpWrite || op == OpSync || op == OpCreate || op == OpRename) && strings.Contains(p, "d/") {
			return errBoom
		}
		return nil
	})
	if _, err := f.WriteAt([]byte("XYZ"), 0); !errors.Is(err, errBoom) {
		t.Fatalf("write: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, errBoom) {
		t.Fatalf("sync: %v", err)
	}
	if _, err := m.Create("/d/g"); !errors.Is(err, errBoom) {
		t.Fatalf("create: %v", err)
	}
	if err := m.Rename("d/f", "/d/h"); !errors.Is(err, errBoom) {
		t.Fatalf("rename: %v", err)
	}
	must(t, f.Truncate(1)) // not chosen: goes through
	if got := contents(t, m, "/d/f"); got != "a" {
		t.Fatalf("contents %q", got)
	}
	names, _ := m.ReadDir("/d")
	if strings.Join(names, ",") != "f" {
		t.Fatalf("failed ops changed the dir: %v", names)
	}
	want := []string{"write /d/f", "sync /d/f", "create /d/g", "rename d/f", "truncate /d/f", "open /d/f", "read /d/f", "readdir /d"}
	if got := strings.Join(seen, "|"); got != strings.Join(want, "|") {
		t.Fatalf("hook saw %s\nwant      %s", got, strings.Join(want, "|"))
	}
	// The failed Sync left the truncation unsynced.
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "abc" {
		t.Fatalf("crash %q", got)
	}

	m.InjectError(nil)
	must(t, f.Sync())
	if got := contents(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "a" {
		t.Fatalf("crash after clearing the hook %q", got)
	}
	must(t, f.Close())
}

func TestOpString(t *testing.T) {
	for op := OpCreate; op <= OpStat; op++ {
		if s := op.String(); s == "" || strings.HasPrefix(s, "Op(") {
			t.Errorf("op %d has no name", int(op))
		}
	}
	if s := Op(99).String(); s != "Op(99)" {
		t.Errorf("unknown op %q", s)
	}
}

// TestMemConcurrent drives one file from several goroutines (run with -race).
func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	f := create(t, m, "/d/f", "")
	const writers, chunks, chunk = 4, 50, 16
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			g, err := m.Open("/d/f")
			if err != nil {
				t.Error(err)
				return
			}
			defer g.Close()
			p := bytes.Repeat([]byte{byte('A' + w)}, chunk)
			buf := make([]byte, chunk)
			for i := range chunks {
				off := int64((i*writers + w) * chunk)
				if _, err := g.WriteAt(p, off); err != nil {
					t.Error(err)
					return
				}
				if _, err := g.ReadAt(buf, off); err != nil || !bytes.Equal(buf, p) {
					t.Errorf("read back %q, %v", buf, err)
					return
				}
				if i%10 == 0 {
					if err := g.Sync(); err != nil {
						t.Error(err)
					}
					m.CrashClone(CrashOptions{})
					if _, err := m.ReadDir("/d"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	size, _ := f.Size()
	if size != writers*chunks*chunk {
		t.Fatalf("size %d", size)
	}
	got := contents(t, m, "/d/f")
	for i := 0; i < writers*chunks; i++ {
		w := i % writers
		if want := strings.Repeat(string(rune('A'+w)), chunk); got[i*chunk:(i+1)*chunk] != want {
			t.Fatalf("chunk %d = %q", i, got[i*chunk:(i+1)*chunk])
		}
	}
	must(t, f.Close())
}

func ExampleMemFS_CrashClone() {
	m := NewMem()
	_ = m.MkdirAll("/data")
	f, _ := m.Create("/data/log")
	_ = m.SyncDir("/data") // the name is durable
	_, _ = f.WriteAt([]byte("acked"), 0)
	_ = f.Sync() // the bytes are durable
	_, _ = f.WriteAt([]byte(" pending"), 5)

	after := m.CrashClone(CrashOptions{})
	g, _ := after.Open("/data/log")
	size, _ := g.Size()
	fmt.Println(size)
	// Output: 5
}
