package vfs

import (
	"errors"
	"math"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ext4Like is a 100,000-block device of 4 KiB blocks with 5% reserved for
// root, 70,000 blocks in use: df prints 74% (70,000 / 95,000 rounded up),
// where 1 − f_bavail/f_blocks would say 75%.
func ext4Like(path string, st *unix.Statfs_t) error {
	*st = unix.Statfs_t{Bsize: 4096, Blocks: 100_000, Bfree: 30_000, Bavail: 25_000}
	return nil
}

func TestUsedFractionLeavesReservedBlocksOut(t *testing.T) {
	u, err := OSWithStatfs(ext4Like).Usage("/anywhere")
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes != 100_000*4096 || u.UsedBytes != 70_000*4096 || u.FreeBytes != 25_000*4096 {
		t.Fatalf("usage %+v, want total 100000, used 70000, free 25000 blocks of 4096", u)
	}
	want := 70_000.0 / 95_000
	if got := u.UsedFraction(); math.Abs(got-want) > 1e-12 {
		t.Fatalf("UsedFraction %.6f, want used/(used+avail) = %.6f (df's figure, not 1-avail/total = 0.75)", got, want)
	}
	// The 75% high-water mark is not reached at df's 74%.
	if u.UsedFraction() >= 0.75 {
		t.Fatalf("UsedFraction %.4f counts the reserved blocks as used", u.UsedFraction())
	}
}

func TestUsageOfStatfsEdges(t *testing.T) {
	for _, c := range []struct {
		name string
		st   unix.Statfs_t
		want float64
	}{
		{"empty device", unix.Statfs_t{Bsize: 4096}, 0},
		{"nothing used", unix.Statfs_t{Bsize: 4096, Blocks: 1000, Bfree: 1000, Bavail: 950}, 0},
		{"full to the reserve", unix.Statfs_t{Bsize: 4096, Blocks: 1000, Bfree: 50, Bavail: 0}, 1},
		{"no reserve", unix.Statfs_t{Bsize: 512, Blocks: 1000, Bfree: 400, Bavail: 400}, 0.6},
		// Root may eat into the reserve: f_bavail stays 0, never wraps.
		{"root wrote into the reserve", unix.Statfs_t{Bsize: 4096, Blocks: 1000, Bfree: 10, Bavail: 0}, 1},
		{"bogus bfree above blocks", unix.Statfs_t{Bsize: 4096, Blocks: 10, Bfree: 20, Bavail: 20}, 0},
	} {
		u := UsageOfStatfs(&c.st)
		if got := u.UsedFraction(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %+v UsedFraction %.4f, want %.4f", c.name, u, got, c.want)
		}
		if u.UsedBytes > u.TotalBytes || u.FreeBytes > u.TotalBytes {
			t.Errorf("%s: %+v used or free exceeds the total", c.name, u)
		}
	}
}

func TestOSWithStatfsReportsItsErrors(t *testing.T) {
	fsys := OSWithStatfs(func(string, *unix.Statfs_t) error { return unix.EACCES })
	if _, err := fsys.Usage("/x"); !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), "/x") {
		t.Fatalf("Usage error %v, want EACCES naming the path", err)
	}
}

func TestOSUsageMatchesStatfs(t *testing.T) {
	dir := t.TempDir()
	u, err := OSWithStatfs(nil).Usage(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes != st.Blocks*uint64(st.Bsize) || u.TotalBytes == 0 {
		t.Fatalf("OS usage %+v, statfs %d blocks of %d", u, st.Blocks, st.Bsize)
	}
	if u.UsedBytes+u.FreeBytes > u.TotalBytes {
		t.Fatalf("OS usage %+v: used+free exceeds total", u)
	}
}

func TestMemReservedIsNeitherUsedNorFree(t *testing.T) {
	m := NewMem()
	must(t, m.MkdirAll("/d"))
	m.SetCapacity(1000)
	m.SetReserved(50)
	f := create(t, m, "/d/f", strings.Repeat("x", 700))
	u, err := m.Usage("/d")
	must(t, err)
	if u.TotalBytes != 1000 || u.UsedBytes != 700 || u.FreeBytes != 250 {
		t.Fatalf("usage %+v, want total 1000 used 700 free 250", u)
	}
	if got, want := u.UsedFraction(), 700.0/950; math.Abs(got-want) > 1e-12 {
		t.Fatalf("UsedFraction %.4f, want %.4f", got, want)
	}
	// Writes stop at the reserve, as for an unprivileged process.
	_, err = f.WriteAt(make([]byte, 251), 700)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("write into the reserve: %v, want ErrNoSpace", err)
	}
	_, err = f.WriteAt(make([]byte, 250), 700)
	must(t, err)
	if _, err := m.Create("/d/g"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("create with only the reserve left: %v, want ErrNoSpace", err)
	}
	c := m.CrashClone(CrashOptions{})
	if cu, _ := c.Usage("/"); cu.TotalBytes != 1000 || cu.UsedBytes+cu.FreeBytes != 950 {
		t.Fatalf("crash clone usage %+v: capacity or reserve lost", cu)
	}
}

func TestIsOS(t *testing.T) {
	if !IsOS(OS) || !IsOS(OSWithStatfs(ext4Like)) || !IsOS(OSWithStatfs(nil)) || IsOS(NewMem()) {
		t.Fatal("IsOS: want true for OS and OSWithStatfs, false for MemFS")
	}
}
