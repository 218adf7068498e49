package index

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestCrashKeepsFlushed: after Flush and more unflushed work (including
// file rolls), a crash loses nothing flushed, whatever part of the unsynced
// writes survives; after cutting back to the flushed boundary the index is
// exact and usable.
func TestCrashKeepsFlushed(t *testing.T) {
	for seed := range 60 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(seed)))
			opts := modelOptions[seed%len(modelOptions)]
			fsys := newMem(t)
			x := mustOpen(t, fsys, opts)
			defer x.Close()
			w := newWorkload(r)
			m := &model{}
			addN := func(n int) {
				for range n {
					for _, e := range w.message() {
						if err := x.Add(e.topic, []byte(e.key), e.off, e.ts); err != nil {
							t.Fatal(err)
						}
						m.add(e.topic, e.key, e.off, e.ts)
					}
				}
			}
			addN(r.Intn(60))
			if err := x.Flush(); err != nil {
				t.Fatal(err)
			}
			durable, boundary := m.clone(), w.next
			addN(r.Intn(40))
			var crash vfs.CrashOptions
			if seed%4 != 0 {
				crash.Rand = rand.New(rand.NewSource(int64(seed)))
			}
			c := fsys.CrashClone(crash)
			y := mustOpen(t, c, opts)
			defer y.Close()
			checkRecovered(t, y, durable, m)
			if err := y.Truncate(boundary); err != nil {
				t.Fatal(err)
			}
			checkAll(t, y, durable, r)
			x, m = y, durable // go on with the recovered index
			w.next = boundary
			addN(20)
			checkAll(t, y, m, r)
		})
	}
}

var errInjected = errors.New("injected")

// faultRun drives a fixed workload on fsys; when failAt > 0 the failAt-th
// file-system operation fails and the run stops at the first error. It
// returns the model of what may be in the index (everything attempted and
// not truncated), what must be (flushed, not truncated or deleted since),
// the flushed boundary, and how many operations it counted.
func faultRun(t *testing.T, fsys *vfs.MemFS, seed int64, failAt int) (current, durable *model, boundary int64, ops int) {
	r := rand.New(rand.NewSource(seed))
	opts := modelOptions[seed%int64(len(modelOptions))]
	x := mustOpen(t, fsys, opts)
	fsys.InjectError(func(op vfs.Op, p string) error {
		ops++ // only this goroutine touches the FS
		if ops == failAt {
			return errInjected
		}
		return nil
	})
	defer fsys.InjectError(nil)
	w := newWorkload(r)
	current, durable = &model{}, &model{}
	for range 120 {
		var err error
		switch p := r.Intn(100); {
		case p < 80:
			for _, e := range w.message() {
				current.add(e.topic, e.key, e.off, e.ts) // may be in, even if Add fails
				if err = x.Add(e.topic, []byte(e.key), e.off, e.ts); err != nil {
					break
				}
			}
		case p < 90:
			if err = x.Flush(); err == nil {
				durable, boundary = current.clone(), w.next
			}
		case p < 95:
			end := max(0, current.maxOff()+1-r.Int63n(1000))
			durable.truncate(end) // gone, or going
			boundary = min(boundary, end)
			if err = x.Truncate(end); err == nil {
				current.truncate(end)
				w.next = end
			}
		default:
			physMin := r.Int63n(current.maxOff() + 2)
			current.deleteBefore(physMin)
			durable.deleteBefore(physMin)
			_, err = x.DeleteBefore(physMin)
		}
		if err != nil {
			if !errors.Is(err, errInjected) {
				t.Fatalf("unexpected error: %v", err)
			}
			break
		}
	}
	fsys.InjectError(nil)
	x.Close()
	return current, durable, boundary, ops
}

// TestCrashAtEveryOperation fails each file-system operation of a workload
// in turn (a write, a sync, a create, a remove...: in the middle of a flush,
// a seal, a truncate or a retention pass), then crashes, keeping a random
// part of the unsynced writes. Recovery must open cleanly, keep everything
// flushed, and invent nothing.
func TestCrashAtEveryOperation(t *testing.T) {
	seeds := []int64{0, 2, 3} // between them, every kind of Options
	if testing.Short() {
		seeds = seeds[2:]
	}
	for _, seed := range seeds {
		_, _, _, total := faultRun(t, newMem(t), seed, 0)
		if total < 50 {
			t.Fatalf("seed %d: only %d operations", seed, total)
		}
		for k := 1; k <= total; k++ {
			fsys := newMem(t)
			current, durable, boundary, _ := faultRun(t, fsys, seed, k)
			c := fsys.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(int64(k)))})
			x, err := Open(c, testDir, modelOptions[seed%int64(len(modelOptions))])
			if err != nil {
				t.Fatalf("seed %d, failing op %d: Open after crash: %v", seed, k, err)
			}
			checkRecovered(t, x, durable, current)
			if err := x.Truncate(boundary); err != nil {
				t.Fatal(err)
			}
			current.truncate(boundary)
			checkAll(t, x, current, rand.New(rand.NewSource(int64(k))))
			x.Close()
		}
	}
}

// TestRecoverFallsBackToOlderHeader simulates what a real disk may do and
// MemFS's in-order crash does not: the newest header reached the disk but
// entries it covers did not, or the newest header itself is torn.
func TestRecoverFallsBackToOlderHeader(t *testing.T) {
	opts := Options{SlotsPerFile: 8, EntriesPerFile: 100}
	setup := func(t *testing.T) (*vfs.MemFS, *model, *model) {
		fsys := newMem(t)
		x := mustOpen(t, fsys, opts)
		m := &model{}
		fill(t, x, m, 0, 10) // entries 1..20
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		first := m.clone()
		fill(t, x, m, 10, 10) // entries 21..40
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		return fsys, first, m
	}
	overwrite := func(t *testing.T, fsys *vfs.MemFS, at int64, n int, v byte) {
		f, err := fsys.Open(testDir + "/" + fileName(0))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, n)
		for i := range b {
			b[i] = v
		}
		if _, err := f.WriteAt(b, at); err != nil {
			t.Fatal(err)
		}
	}
	entriesAt := entriesOffset(uint32(opts.SlotsPerFile))

	t.Run("entries missing", func(t *testing.T) {
		fsys, first, _ := setup(t)
		overwrite(t, fsys, entriesAt+20*entryBytes, 20*entryBytes, 0)
		x := mustOpen(t, fsys, opts)
		defer x.Close()
		checkAll(t, x, first, rand.New(rand.NewSource(1)))
		fill(t, x, first, 10, 5) // chains rebuilt: adding goes on
		checkAll(t, x, first, nil)
	})
	t.Run("last entry torn", func(t *testing.T) {
		fsys, first, _ := setup(t)
		overwrite(t, fsys, entriesAt+39*entryBytes+7, 5, 0xee)
		x := mustOpen(t, fsys, opts)
		defer x.Close()
		checkAll(t, x, first, nil)
	})
	t.Run("newest header torn", func(t *testing.T) {
		fsys, first, _ := setup(t)
		overwrite(t, fsys, hdrCopyBytes+30, 10, 0x55) // Close wrote seq 2 into copy 1
		x := mustOpen(t, fsys, opts)
		defer x.Close()
		checkAll(t, x, first, nil)
	})
	t.Run("both headers torn", func(t *testing.T) {
		fsys, _, _ := setup(t)
		overwrite(t, fsys, 30, 10, 0x55)
		overwrite(t, fsys, hdrCopyBytes+30, 10, 0x55)
		if _, err := Open(fsys, testDir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open: %v, want ErrCorrupt", err)
		}
	})
	t.Run("intact", func(t *testing.T) {
		fsys, _, all := setup(t)
		x := mustOpen(t, fsys, opts)
		defer x.Close()
		checkAll(t, x, all, nil)
	})
}
