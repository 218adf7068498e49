package commitlog

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestDeferredAppendsWaitForFlush: a deferred append is neither written
// nor answered before Flush; Flush writes the lot in order (on the calling
// goroutine under FlushAsync, through the writer under FlushSync), splitting
// it at MaxBatchBytes, and every callback runs once.
func TestDeferredAppendsWaitForFlush(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		t.Run(mode.String(), func(t *testing.T) {
			l := openLog(t, vfs.NewMem(), Options{FlushMode: mode, SegmentBytes: 1 << 20, MaxBatchBytes: 1024})
			defer l.Close()
			const n = 50
			var mu sync.Mutex
			var wg sync.WaitGroup
			answered := 0
			for i := range n {
				wg.Add(1)
				body := fmt.Sprintf("m%02d-%s", i, strings.Repeat("x", 100))
				l.AppendDeferred([]*message.Message{testMsg("T", 0, body)}, func(_ Result, err error) {
					if err != nil {
						t.Errorf("append %d: %v", i, err)
					}
					mu.Lock()
					answered++
					mu.Unlock()
					wg.Done()
				})
			}
			mu.Lock()
			early := answered
			mu.Unlock()
			if early != 0 || l.Written() != 0 {
				t.Fatalf("before Flush: %d answered, %d bytes written; want none", early, l.Written())
			}
			l.Flush()
			if mode == FlushAsync {
				// Written and answered by Flush itself.
				mu.Lock()
				got := answered
				mu.Unlock()
				if got != n {
					t.Fatalf("after Flush under async flush: %d answered, want %d", got, n)
				}
			}
			wg.Wait()
			got := readAll(t, l)
			if len(got) != n {
				t.Fatalf("read %d records, want %d", len(got), n)
			}
			for i, m := range got {
				if m.QueueOffset != int64(i) || string(m.Body[:3]) != fmt.Sprintf("m%02d", i) {
					t.Fatalf("record %d: queue offset %d body %q", i, m.QueueOffset, m.Body[:3])
				}
			}
			l.Flush() // nothing deferred: a no-op
		})
	}
}

// TestCloseWritesDeferredAppends: appends deferred before Close are not
// lost; after Close a deferred append fails with ErrClosed.
func TestCloseWritesDeferredAppends(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	done := make(chan error, 1)
	l.AppendDeferred([]*message.Message{testMsg("T", 0, "kept")}, func(_ Result, err error) { done <- err })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("deferred append answered %v by Close, want success", err)
	}
	l.AppendDeferred([]*message.Message{testMsg("T", 0, "late")}, func(_ Result, err error) { done <- err })
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("deferred append after Close: %v, want ErrClosed", err)
	}
	l = openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	defer l.Close()
	if got := readAll(t, l); len(got) != 1 || string(got[0].Body) != "kept" {
		t.Fatalf("after reopening: %d records", len(got))
	}
}

// TestCloseWaitsForAFlushInProgress: a Flush that took the deferred
// appends and is writing them when Close starts finishes before Close
// stops the writer and closes the segments, so the appends it answers as
// stored are on disk.
func TestCloseWaitsForAFlushInProgress(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	writing, release := make(chan struct{}), make(chan struct{})
	var blocked atomic.Bool
	fsys.InjectError(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite && blocked.CompareAndSwap(false, true) {
			close(writing)
			<-release
		}
		return nil
	})
	answered := make(chan error, 1)
	l.AppendDeferred([]*message.Message{testMsg("T", 0, "in flight")}, func(_ Result, err error) { answered <- err })
	go l.Flush()
	<-writing
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	// Wait until Close waits for the Flush (it then holds off every new
	// reader of closeMu), or has wrongly finished without it.
	for {
		select {
		case err := <-closed:
			close(release)
			t.Fatalf("Close returned %v while a Flush was still writing", err)
		default:
		}
		if !l.closeMu.TryRLock() {
			break
		}
		l.closeMu.RUnlock()
		runtime.Gosched()
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatalf("deferred append answered %v, want success", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	fsys.InjectError(nil)
	l = openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	defer l.Close()
	if got := readAll(t, l); len(got) != 1 || string(got[0].Body) != "in flight" {
		t.Fatalf("after reopening: %d records, want the one Flush wrote", len(got))
	}
}
