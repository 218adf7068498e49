package commitlog

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// zeroWatchFS records the all-zero writes of fillChunk bytes (the filler's)
// per file.
type zeroWatchFS struct {
	vfs.FS
	mu    sync.Mutex
	zeros map[string][]int64 // file -> offsets of zero chunks written
	log   atomic.Pointer[Log]
}

type zeroWatchFile struct {
	vfs.File
	fs   *zeroWatchFS
	name string
}

func (z *zeroWatchFS) Create(name string) (vfs.File, error) {
	f, err := z.FS.Create(name)
	return zeroWatchFile{f, z, name}, err
}

func (f zeroWatchFile) WriteAt(p []byte, off int64) (int, error) {
	if len(p) == fillChunk && bytes.Count(p, []byte{0}) == len(p) {
		f.fs.mu.Lock()
		f.fs.zeros[f.name] = append(f.fs.zeros[f.name], off)
		f.fs.mu.Unlock()
		// A slow zero write: hold it until the writer has passed it (it
		// never does while the interlock holds the writer back) or for a
		// while, so that without the interlock the zeros would land on
		// records.
		if l := f.fs.log.Load(); l != nil {
			for i := 0; i < 20000 && l.written.Load() <= off+fillChunk; i++ {
				runtime.Gosched()
			}
		}
	}
	return f.File.WriteAt(p, off)
}

// TestFillInPlaceNeverOverwritesRecords: under sync flush every segment is
// zero-filled ahead of the writer, and no zero
// write ever lands on a record — every record reads back intact — while
// producers append as fast as they can and the zero writes are slow.
func TestFillInPlaceNeverOverwritesRecords(t *testing.T) {
	fsys := &zeroWatchFS{FS: vfs.NewMem(), zeros: map[string][]int64{}}
	const segBytes = 8 << 20
	l := openLog(t, fsys, Options{SegmentBytes: segBytes, FlushMode: FlushSync})
	fsys.log.Store(l)
	body := string(bytes.Repeat([]byte("x"), 2000))
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				if _, err := l.Append(testMsg("T", int32(p), fmt.Sprintf("%d-%d-%s", p, i, body))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := readAll(t, l)
	if len(got) != 8000 {
		t.Fatalf("read back %d records, want 8000", len(got))
	}
	for _, m := range got {
		if len(m.Body) < len(body) || string(m.Body[len(m.Body)-len(body):]) != body {
			t.Fatalf("record at %d damaged: %q...", m.PhysicalOffset, m.Body[:min(20, len(m.Body))])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	for start := int64(0); start < 2*segBytes; start += segBytes {
		if name := "log/" + SegmentName(start); len(fsys.zeros[name]) == 0 {
			t.Fatalf("segment %s was not zero-filled ahead (zero writes: %v)", name, fsys.zeros)
		}
	}
}
