package index

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestConcurrentQueries runs queries while one writer adds, flushes, rolls
// files, truncates and deletes old files. Message i has offset 10*i and key
// k(i mod 7), so every result can be checked, and a query must find every
// message that was added before it started, is at or below the committed
// mark (Truncate never cuts below it) and lies in a file DeleteBefore may
// not have removed.
func TestConcurrentQueries(t *testing.T) {
	const keys = 7
	n := 3000
	if testing.Short() {
		n = 800
	}
	fsys := newMem(t)
	x := mustOpen(t, fsys, Options{SlotsPerFile: 16, EntriesPerFile: 64})
	defer x.Close()

	var (
		added     atomic.Int64 // messages 0..added-1 are in
		committed atomic.Int64 // messages below it are never truncated
		floor     atomic.Int64 // DeleteBefore may remove offsets below it
		queries   atomic.Int64
	)
	errc := make(chan error, 3)
	report := func(err error) { // never blocks, so no goroutine is stuck
		select {
		case errc <- err:
		default:
		}
	}
	step := make(chan struct{}, 2) // writer -> readers: run a query now
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i%keys) }
		lastCut := 0
		for i := 0; i < n; i++ {
			if err := x.Add("T", key(i), int64(10*i), int64(i)); err != nil {
				report(err)
				return
			}
			added.Store(int64(i + 1))
			committed.Store(max(committed.Load(), int64(i-100)))
			if i%5 == 0 {
				step <- struct{}{} // queries overlap the whole run, at most 2 behind
			}
			switch {
			case i%50 == 49:
				if err := x.Flush(); err != nil {
					report(err)
					return
				}
			case i%311 == 310 && i > lastCut:
				lastCut = i
				// Cut back some messages (not below the committed mark)
				// and add them again.
				back := int(committed.Load()) + 1 + i%97
				added.Store(int64(back))
				if err := x.Truncate(int64(10 * back)); err != nil {
					report(err)
					return
				}
				i = back - 1
			case i%257 == 256:
				f := int64(10 * (i - 600))
				if f > floor.Load() {
					floor.Store(f)
				}
				if _, err := x.DeleteBefore(floor.Load()); err != nil {
					report(err)
					return
				}
			}
		}
	})
	// check runs one query and judges it.
	check := func(r, q int) error {
		j := (q + r) % keys
		upto := min(added.Load(), committed.Load()+1) // messages below it must be found
		got, err := x.Query("T", fmt.Sprintf("k%d", j), math.MinInt64, math.MaxInt64, 1<<20)
		if err != nil {
			return err
		}
		queries.Add(1)
		if m := x.MaxPhysOffset(); m < -1 || m > int64(10*n) {
			return fmt.Errorf("MaxPhysOffset %d", m)
		}
		low := floor.Load()
		for i, o := range got {
			if o%10 != 0 || (o/10)%keys != int64(j) || (i > 0 && o >= got[i-1]) {
				return fmt.Errorf("k%d: bad result %v", j, got)
			}
		}
		for i := upto - 1; i >= 0; i-- {
			if i%keys == int64(j) && 10*i >= low && !slices.Contains(got, 10*i) {
				return fmt.Errorf("k%d: %d missing from %v (upto %d, floor %d)", j, 10*i, got, upto, low)
			}
		}
		return nil
	}
	for r := range 2 {
		wg.Go(func() {
			for q := 0; ; q++ {
				select {
				case <-step:
				case <-stop:
					return
				}
				if err := check(r, q); err != nil {
					report(err) // and go on taking steps, so the writer is never stuck
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if queries.Load() == 0 {
		t.Fatal("no query ran")
	}
	t.Logf("%d queries", queries.Load())
}

// TestQueryDuringTruncateSeesOneState parks a query in the middle of its
// walk through the active file while Truncate cuts that file and new
// entries overwrite the cut ones on disk. The query must not mix the two
// states: it starts over and returns the new one.
func TestQueryDuringTruncateSeesOneState(t *testing.T) {
	fsys := newMem(t)
	x := mustOpen(t, fsys, Options{SlotsPerFile: 8, EntriesPerFile: 100})
	defer x.Close()
	for i := range 50 {
		if err := x.Add("T", []byte("a"), int64(10*i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil { // every entry on disk: the query reads them all there
		t.Fatal(err)
	}
	reading, resume := make(chan struct{}), make(chan struct{})
	first := true
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpRead && first {
			first = false
			close(reading)
			<-resume
		}
		return nil
	})
	defer fsys.InjectError(nil)
	type result struct {
		offs []int64
		err  error
	}
	done := make(chan result)
	go func() {
		offs, err := x.Query("T", "a", math.MinInt64, math.MaxInt64, 1000)
		done <- result{offs, err}
	}()
	<-reading
	if err := x.Truncate(200); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range 10 { // entries 21..30 again, at other offsets
		off := int64(205 + 10*i)
		if err := x.Add("T", []byte("a"), off, 100); err != nil {
			t.Fatal(err)
		}
		want = append(want, off)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	close(resume)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	for i := 19; i >= 0; i-- {
		want = append(want, int64(10*i))
	}
	slices.Reverse(want[:10])
	if !slices.Equal(res.offs, want) {
		t.Fatalf("query across Truncate = %v, want %v", res.offs, want)
	}
}
