package meta

import (
	"fmt"
	"sync/atomic"
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

// BenchmarkPutTopic creates new topics, 64 callers at a time (so group
// commit applies), in a table that already holds 1,000, 10,000 or 100,000
// topics, on the in-memory FS and on disk (b.TempDir, with fsync). A
// create must cost about the same at every size.
func BenchmarkPutTopic(b *testing.B) {
	for _, disk := range []bool{false, true} {
		for _, existing := range []int{1000, 10000, 100000} {
			fsName := "mem"
			if disk {
				fsName = "disk"
			}
			b.Run(fmt.Sprintf("%s/existing=%d", fsName, existing), func(b *testing.B) {
				var fsys vfs.FS = vfs.NewMem()
				dir := testDir
				if disk {
					fsys, dir = vfs.OS, b.TempDir()
				}
				s, err := Open(fsys, dir, Options{Clock: clock.NewManual(epoch)})
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					b.StopTimer() // Close folds the log into topics.json: not a create
					s.Close()
				}()
				pre := make([]Topic, existing)
				for i := range pre {
					pre[i] = topic(fmt.Sprintf("existing-topic-%06d", i), 8)
				}
				if err := s.PutTopics(pre); err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				b.SetParallelism(32)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := s.PutTopic(topic(fmt.Sprintf("new-topic-%08d", next.Add(1)), 8)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkOpenTopics opens a store holding 100,000 topics: all in
// topics.json (after Close), or half in the change log (after a crash).
func BenchmarkOpenTopics(b *testing.B) {
	for _, crashed := range []bool{false, true} {
		name := "closed"
		if crashed {
			name = "crashed"
		}
		b.Run(name, func(b *testing.B) {
			mem := vfs.NewMem()
			s, err := Open(mem, testDir, Options{Clock: clock.NewManual(epoch)})
			if err != nil {
				b.Fatal(err)
			}
			ts := make([]Topic, 100000)
			for i := range ts {
				ts[i] = topic(fmt.Sprintf("bench-topic-%06d", i), 4)
			}
			if err := s.PutTopics(ts[:50000]); err != nil {
				b.Fatal(err)
			}
			for i := 50000; i < len(ts); i += 100 {
				if err := s.PutTopics(ts[i : i+100]); err != nil {
					b.Fatal(err)
				}
			}
			fsys := mem.CrashClone(vfs.CrashOptions{})
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			if !crashed {
				fsys = mem
			}
			b.ResetTimer()
			for b.Loop() {
				c, err := Open(fsys.CrashClone(vfs.CrashOptions{}), testDir, Options{Clock: clock.NewManual(epoch)})
				if err != nil {
					b.Fatal(err)
				}
				if n := len(c.Topics()); n != len(ts) {
					b.Fatalf("%d topics", n)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
		})
	}
}
