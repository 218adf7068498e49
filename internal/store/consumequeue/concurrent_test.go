package consumequeue

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestConcurrentReadersDuringAppendFlushDelete runs one writer (appending and
// flushing), a retention goroutine and several readers at once; readers
// check every entry they get. Run it with -race.
func TestConcurrentReadersDuringAppendFlushDelete(t *testing.T) {
	fsyses(t, func(t *testing.T, fsys vfs.FS, dir string) {
		const total = 6_000
		q := open(t, fsys, dir, 64)
		defer q.Close()
		var done atomic.Bool
		var wg sync.WaitGroup
		errc := make(chan error, 8)
		fail := func(err error) {
			select {
			case errc <- err:
			default:
			}
		}

		wg.Add(1)
		go func() { // writer
			defer wg.Done()
			defer done.Store(true)
			for i := int64(0); i < total; i++ {
				if err := q.Append(i, ent(i)); err != nil {
					fail(fmt.Errorf("Append(%d): %w", i, err))
					return
				}
				if i%499 == 0 {
					if err := q.Flush(); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
		wg.Add(1)
		go func() { // a second flusher, as a store-wide flush timer would be
			defer wg.Done()
			for !done.Load() {
				if err := q.Flush(); err != nil {
					fail(err)
					return
				}
			}
		}()
		wg.Add(1)
		go func() { // retention, lagging the writer
			defer wg.Done()
			for !done.Load() {
				keep := q.MaxOffset() - 1500
				if keep <= 0 {
					continue
				}
				if _, err := q.DeleteBefore(ent(keep).Offset); err != nil {
					fail(fmt.Errorf("DeleteBefore: %w", err))
					return
				}
			}
		}()
		var reads atomic.Int64
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewSource(int64(r)))
				dst := make([]Entry, 100)
				for !done.Load() {
					lo, hi := q.MinOffset(), q.MaxOffset()
					if hi <= lo {
						continue
					}
					from := lo + rnd.Int63n(hi-lo)
					if rnd.Intn(4) == 0 {
						from = hi - 1 - rnd.Int63n(min(hi-lo, 300)) // the buffered tail
					}
					n, err := q.Read(from, dst[:1+rnd.Intn(len(dst))])
					if errors.Is(err, ErrBelowMin) {
						continue // retention passed it meanwhile
					}
					if err != nil {
						fail(fmt.Errorf("Read(%d): %w", from, err))
						return
					}
					if n == 0 {
						fail(fmt.Errorf("Read(%d) below MaxOffset %d returned nothing", from, hi))
						return
					}
					for k := range n {
						if want := ent(from + int64(k)); dst[k] != want {
							fail(fmt.Errorf("Read(%d)[%d] = %v, want %v", from, k, dst[k], want))
							return
						}
					}
					if off, e, ok := q.Last(); ok && e != ent(off) {
						fail(fmt.Errorf("Last = %d %v", off, e))
						return
					}
					reads.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if q.MaxOffset() != total {
			t.Fatalf("MaxOffset = %d, want %d", q.MaxOffset(), total)
		}
		// The concurrent retention may not have been scheduled on a busy
		// machine; one more pass makes the final state deterministic.
		if _, err := q.DeleteBefore(ent(total - 1500).Offset); err != nil {
			t.Fatal(err)
		}
		if q.MinOffset() < 64 {
			t.Fatalf("MinOffset = %d: retention did not move it", q.MinOffset())
		}
		checkEntries(t, q, q.MinOffset(), total)
		t.Logf("%d concurrent reads checked", reads.Load())
	})
}

// TestReadDuringTruncate checks that a Read overlapping a Truncate never
// mixes entries from before and after the cut: entries re-appended after a
// cut carry a new generation in their tag, and along the queue generations
// never go down.
func TestReadDuringTruncate(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 16)
	defer q.Close()
	gent := func(i, gen int64) Entry { e := ent(i); e.TagHash = gen; return e }
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		rnd := rand.New(rand.NewSource(1))
		var max int64
		for gen := int64(1); gen <= 300; gen++ {
			for range 1 + rnd.Intn(60) {
				if err := q.Append(max, gent(max, gen)); err != nil {
					errc <- err
					return
				}
				max++
			}
			if gen%3 == 0 {
				if err := q.Flush(); err != nil {
					errc <- err
					return
				}
			}
			cut := max - rnd.Int63n(min(max, 50)+1)
			if err := q.Truncate(ent(cut).Offset); err != nil {
				errc <- err
				return
			}
			max = cut
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(r + 10)))
			dst := make([]Entry, 64)
			for !done.Load() {
				max := q.MaxOffset()
				if max == 0 {
					continue
				}
				from := rnd.Int63n(max)
				n, err := q.Read(from, dst)
				if err != nil {
					errc <- err
					return
				}
				for k := range n {
					e := dst[k]
					if e.Offset != ent(from+int64(k)).Offset || (k > 0 && e.TagHash < dst[k-1].TagHash) {
						errc <- fmt.Errorf("Read(%d) mixed states: %v", from, dst[:n])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// blockOn installs a hook that blocks the first operation op until release
// is closed; entered is closed when it blocks.
func blockOn(fsys *vfs.MemFS, op vfs.Op) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.InjectError(func(o vfs.Op, _ string) error {
		if o == op {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return nil
	})
	return entered, release
}

// TestFsyncDoesNotBlockReadersOrAppend holds Flush inside its fsync and
// checks that readers and the writer carry on meanwhile.
func TestFsyncDoesNotBlockReadersOrAppend(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 20)
	entered, release := blockOn(fsys, vfs.OpSync)
	flushed := make(chan error, 1)
	go func() { flushed <- q.Flush() }()
	<-entered
	// Flush is stuck in fsync. Everything else must still work.
	checkEntries(t, q, 0, 20)
	appendRange(t, q, 20, 40) // crosses files: spills and creates files
	checkEntries(t, q, 0, 40)
	if _, err := q.DeleteBefore(ent(5).Offset); err != nil {
		t.Fatal(err)
	}
	checkMinMax(t, q, 5, 40)
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	fsys.InjectError(nil)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone(vfs.CrashOptions{})
	q2 := open(t, c, "/q", 7)
	defer q2.Close()
	checkEntries(t, q2, q2.MinOffset(), 40)
}

// TestRetentionIODoesNotBlockAppend holds DeleteBefore inside a file removal
// and checks that the writer and readers carry on.
func TestRetentionIODoesNotBlockAppend(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpRemove, vfs.OpSyncDir, vfs.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			q := open(t, fsys, "/q", 7)
			defer q.Close()
			appendRange(t, q, 0, 30)
			if err := q.Flush(); err != nil {
				t.Fatal(err)
			}
			entered, release := blockOn(fsys, op)
			deleted := make(chan error, 1)
			go func() {
				_, err := q.DeleteBefore(ent(16).Offset)
				deleted <- err
			}()
			<-entered
			appendRange(t, q, 30, 50)
			if op != vfs.OpRead { // a read hook would block our own reads too
				checkEntries(t, q, 16, 50)
			}
			close(release)
			if err := <-deleted; err != nil {
				t.Fatal(err)
			}
			fsys.InjectError(nil)
			checkMinMax(t, q, 16, 50)
			checkEntries(t, q, 16, 50)
		})
	}
}

// TestDeletedFileClosedAfterReader: a file removed by retention while a
// reader holds it stays readable until the reader lets go.
func TestDeletedFileClosedAfterReader(t *testing.T) {
	fsys := vfs.NewMem()
	q := open(t, fsys, "/q", 7)
	defer q.Close()
	appendRange(t, q, 0, 30)
	q.Flush()
	// Hold a reader inside its ReadAt of file 0.
	entered, release := blockOn(fsys, vfs.OpRead)
	got := make(chan error, 1)
	dst := make([]Entry, 5)
	go func() {
		n, err := q.Read(0, dst)
		if err == nil && n != 5 {
			err = fmt.Errorf("read %d entries", n)
		}
		got <- err
	}()
	<-entered
	fsys.InjectError(nil) // DeleteBefore's own reads must pass
	removed, err := q.DeleteBefore(ent(20).Offset)
	if err != nil || removed != 2 {
		t.Fatalf("DeleteBefore = %d, %v", removed, err)
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("reader of a removed file: %v", err)
	}
	for k, e := range dst {
		if e != ent(int64(k)) {
			t.Fatalf("entry %d = %v", k, e)
		}
	}
}
