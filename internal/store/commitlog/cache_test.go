package commitlog

import (
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestPageCacheDroppedBehindTheDurableEnd: with PageCacheBytes set, the
// log frees the cache of the segments more than that far behind its
// durable end, only after they were synced, and leaves the newer ones.
func TestPageCacheDroppedBehindTheDurableEnd(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			const segBytes, window = 4096, 8192
			fsys := vfs.NewMem()
			var mu sync.Mutex
			synced := map[string]bool{}
			dropped := map[string]bool{}
			var early []string
			fsys.InjectError(func(op vfs.Op, p string) error {
				mu.Lock()
				defer mu.Unlock()
				switch op {
				case vfs.OpSync:
					synced[path.Base(p)] = true
				case vfs.OpDropCache:
					if !synced[path.Base(p)] {
						early = append(early, path.Base(p))
					}
					dropped[path.Base(p)] = true
				}
				return nil
			})
			l := openLog(t, fsys, Options{FlushMode: mode, SegmentBytes: segBytes, PageCacheBytes: window, FlushInterval: time.Millisecond})
			defer l.Close()
			for i := 0; l.Written() < 12*segBytes; i++ {
				if _, err := l.Append(testMsg("T", 0, strings.Repeat("x", 200+i%50))); err != nil {
					t.Fatal(err)
				}
			}
			// Under FlushAsync the flusher's tick makes the end durable.
			end := l.Written()
			deadline := time.Now().Add(10 * time.Second)
			for l.Flushed() < end && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			// The window starts in segment keepFrom; the dropper runs once
			// per 4096-byte chunk (a quarter of the window, at least a
			// page), so the segment before keepFrom may still be waiting.
			keepFrom := l.SegmentStart(l.Flushed() - window)
			want := SegmentName(keepFrom - 2*segBytes)
			for {
				mu.Lock()
				done := dropped[want]
				mu.Unlock()
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("segment %s (log durable to %d, window %d) was never dropped; dropped %v", want, l.Flushed(), window, dropped)
				}
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(early) > 0 {
				t.Fatalf("dropped the cache of %v before syncing them", early)
			}
			for start := int64(0); start <= keepFrom-2*segBytes; start += segBytes {
				if !dropped[SegmentName(start)] {
					t.Errorf("segment %s is behind the window but was not dropped", SegmentName(start))
				}
			}
			for start := keepFrom + segBytes; start < end; start += segBytes {
				if dropped[SegmentName(start)] {
					t.Errorf("segment %s lies inside the %d-byte window behind %d but was dropped", SegmentName(start), window, l.Flushed())
				}
			}
		})
	}
}

// TestPageCacheZeroDropsNothing: the default (0) leaves the cache to the OS.
func TestPageCacheZeroDropsNothing(t *testing.T) {
	fsys := vfs.NewMem()
	drops := countOps(fsys, vfs.OpDropCache)
	l := openLog(t, fsys, Options{SegmentBytes: 4096})
	for l.Written() < 8*4096 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("y", 300))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := drops.Load(); n != 0 {
		t.Fatalf("%d cache drops with PageCacheBytes 0", n)
	}
}
