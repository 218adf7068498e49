package meta

import (
	"fmt"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// BenchmarkCommitOffset commits to existing keys, the steady state of a
// consumer acking: it must not allocate.
func BenchmarkCommitOffset(b *testing.B) {
	s, err := Open(vfs.NewMem(), testDir, Options{Clock: clock.NewManual(epoch)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	groups := []string{"group-a", "group-b", "group-c", "group-d"}
	topics := make([]string, 64)
	for i := range topics {
		topics[i] = fmt.Sprintf("topic-%02d", i)
	}
	for _, g := range groups {
		for _, tp := range topics {
			for q := range int32(8) {
				s.CommitOffset(g, tp, q, 0)
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.CommitOffset(groups[i&3], topics[(i>>2)&63], int32(i>>8)&7, int64(i))
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				s.CommitOffset(groups[i&3], topics[(i>>2)&63], int32(i>>8)&7, int64(i))
				i++
			}
		})
	})
}

// TestCommitOffsetDoesNotAllocate pins the benchmark's 0 allocs/op.
func TestCommitOffsetDoesNotAllocate(t *testing.T) {
	s := openT(t, vfs.NewMem(), clock.NewManual(epoch))
	defer s.Close()
	s.CommitOffset("g", "t", 3, 1)
	if n := testing.AllocsPerRun(1000, func() { s.CommitOffset("g", "t", 3, 2) }); n != 0 {
		t.Fatalf("CommitOffset of an existing key: %v allocs", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.Offset("g", "t", 3) }); n != 0 {
		t.Fatalf("Offset: %v allocs", n)
	}
}
