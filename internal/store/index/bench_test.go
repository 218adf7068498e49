package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// BenchmarkAdd measures the dispatcher's hot path with the default sizes on
// the real file system: one entry per call, files rolling (sealed and
// created) as they fill.
func BenchmarkAdd(b *testing.B) {
	x, err := Open(vfs.OS, b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "ORDER-%08d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := x.Add("TopicTest", keys[i%len(keys)], int64(i)*300, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQuery looks up one key among 1M entries (the last one in the
// active file, the rest in sealed files read with ReadAt); each key has
// about 1000 entries, and a query asks for the newest 32.
func BenchmarkQuery(b *testing.B) {
	for _, where := range []string{"active", "sealed"} {
		b.Run(where, func(b *testing.B) {
			x, err := Open(vfs.OS, b.TempDir(), Options{SlotsPerFile: 1 << 16, EntriesPerFile: 1 << 18})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			const n = 1 << 20
			for i := range n {
				if err := x.Add("TopicTest", fmt.Appendf(nil, "k%d", i%1000), int64(i)*300, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := x.Flush(); err != nil {
				b.Fatal(err)
			}
			end := int64(math.MaxInt64)
			if where == "sealed" {
				end = n - (1 << 18) - 1 // only entries of sealed files match
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				got, err := x.Query("TopicTest", fmt.Sprint("k", i%1000), 0, end, 32)
				if err != nil || len(got) != 32 {
					b.Fatalf("%d results, %v", len(got), err)
				}
			}
		})
	}
}
