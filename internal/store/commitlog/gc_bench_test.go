package commitlog

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

type countFS struct {
	vfs.FS
	syncs *atomic.Int64
	dur   *atomic.Int64
}
type countFile struct {
	vfs.File
	c *countFS
}

func (c countFS) Create(n string) (vfs.File, error) {
	f, err := c.FS.Create(n)
	return countFile{f, &c}, err
}
func (f countFile) Sync() error {
	t := time.Now()
	err := f.File.Sync()
	f.c.dur.Add(int64(time.Since(t)))
	f.c.syncs.Add(1)
	return err
}

// BenchmarkGroupCommit: 64 appenders of 1 KiB under FlushSync on the real
// disk. yields=16 is the writer as it runs; yields=0 drops its yields once
// the flusher is idle (gatherYields), to show what they buy: more messages
// per fsync, and so more per second.
func BenchmarkGroupCommit(b *testing.B) {
	for _, y := range []int{16, 0} {
		b.Run("yields="+strconv.Itoa(y), func(b *testing.B) {
			defer func(old int) { gatherYields = old }(gatherYields)
			gatherYields = y
			benchGroupCommit(b)
		})
	}
}

func benchGroupCommit(b *testing.B) {
	var syncs, dur atomic.Int64
	fsys := countFS{vfs.OS, &syncs, &dur}
	l, err := Open(fsys, b.TempDir(), Options{SegmentBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for p := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := testMsg("T", int32(p%8), string(make([]byte, 1024)))
			for next.Add(1) <= int64(b.N) {
				l.Append(m)
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/float64(syncs.Load()), "msgs/sync")
	b.ReportMetric(float64(dur.Load())/float64(syncs.Load())/1000, "us/sync")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkAppendRollOver is the writer's path without a disk: async
// appends to a MemFS log of 1 MiB segments, so that a roll-over (and the
// preparation of the next segment) comes every ~900 appends. Old segments
// are removed as it goes to bound the memory.
func BenchmarkAppendRollOver(b *testing.B) { benchAppendRollOver(b, vfs.NewMem()) }

// benchAppendRollOver appends 1 KiB messages asynchronously to a log of
// 1 MiB segments on fsys, removing old segments every 4096 appends.
func benchAppendRollOver(b *testing.B, fsys vfs.FS) {
	l, err := Open(fsys, "log", Options{SegmentBytes: 1 << 20, FlushMode: FlushAsync})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m := testMsg("T", 0, string(make([]byte, 1024)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := l.Append(m); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 0 {
			l.RemoveSegmentsBefore(l.Written() - 4<<20)
		}
	}
}

// discardFS is a MemFS whose files drop their writes, so that a benchmark
// measures the log's own work.
type discardFS struct{ *vfs.MemFS }
type discardFile struct{ vfs.File }

func (d discardFS) Create(n string) (vfs.File, error) {
	f, err := d.MemFS.Create(n)
	return discardFile{f}, err
}
func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardFile) Preallocate(int64) error                { return nil }
func (discardFile) Sync() error                            { return nil }

// BenchmarkAppendNoDisk is the writer's CPU cost per append (async, 1 KiB
// messages, a roll-over every ~900 appends), without any disk work.
func BenchmarkAppendNoDisk(b *testing.B) { benchAppendRollOver(b, discardFS{vfs.NewMem()}) }
