package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/store"
)

// BenchmarkSend measures the broker's send path (validation, topic lookup,
// message build) over a sync-flush store on the in-memory FS, with 64
// concurrent senders so that group commit applies.
func BenchmarkSend(b *testing.B) {
	e := newBenchEnv(b)
	body := strings.Repeat("x", 1024)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := sendReq("T", 0, body, "TAGS", "A", "UNIQ_KEY", "C0A8000100000000000000000000")
		for pb.Next() {
			if _, err := e.b.Send(context.Background(), r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPull measures pulls of 32 records of 1 KiB from one queue.
func BenchmarkPull(b *testing.B) {
	e := newBenchEnv(b)
	body := strings.Repeat("x", 1024)
	const n = 4096
	for range n {
		if _, err := e.b.Send(context.Background(), sendReq("T", 0, body)); err != nil {
			b.Fatal(err)
		}
	}
	for e.st.MaxOffset("T", 0) < n {
		<-e.arrived
	}
	r := pullReq("g", "T", 0, 0).withSub("*")
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Offset = int64(i*32) % (n - 32)
		res, err := e.b.Pull(context.Background(), r)
		if err != nil || res.Count != 32 {
			b.Fatal(err, res.Count)
		}
		res.Release()
	}
}

func newBenchEnv(b *testing.B) *env {
	b.Helper()
	e := newEnv(b, func(s *store.Config, _ *Config) { s.SegmentBytes = 64 << 20 })
	e.b.polls.testHookParked = nil
	e.createTopic("T", 4)
	return e
}
