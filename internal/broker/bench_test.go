package broker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"

	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
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

// BenchmarkSendLease is BenchmarkSend on a master with a valid lease (a
// LeaseTimer on the real clock): the cost of the two lease checks.
func BenchmarkSendLease(b *testing.B) {
	l := NewLeaseClock(clock.Real)
	l.Extend(time.Now().Add(time.Hour))
	e := newEnv(b, func(s *store.Config, c *Config) { s.SegmentBytes = 64 << 20; c.Lease = l })
	e.b.polls.testHookParked = nil
	e.createTopic("T", 4)
	body := strings.Repeat("x", 1024)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := sendReq("T", 0, body, "TAGS", "A", "UNIQ_KEY", "C0A8000100000000000000000000")
		for pb.Next() {
			if res, err := e.b.Send(context.Background(), r); err != nil || res.Status != SendOK {
				b.Error(res.Status, err)
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

// BenchmarkCreateTopic creates new topics through the broker, 64 callers at
// a time, with 1,000, 10,000 or 100,000 topics stored. "hook=none" is the
// broker and meta store alone; "hook=table" adds a topic hook that reads
// the whole table, as the daemon's hand-over to the name-server registrar
// does (its runs are shared among the creates in flight).
func BenchmarkCreateTopic(b *testing.B) {
	for _, hook := range []bool{false, true} {
		for _, existing := range []int{1000, 10000, 100000} {
			name := "hook=none"
			if hook {
				name = "hook=table"
			}
			b.Run(fmt.Sprintf("%s/existing=%d", name, existing), func(b *testing.B) {
				e := newEnv(b)
				pre := make([]meta.Topic, existing)
				for i := range pre {
					pre[i] = topicCfg(fmt.Sprintf("existing-topic-%06d", i), 8, 6).meta()
				}
				if err := e.md.PutTopics(pre); err != nil {
					b.Fatal(err)
				}
				if hook {
					e.b.OnTopicsChanged(func() {
						if len(e.b.Topics()) < existing {
							b.Error("short table")
						}
					})
				}
				var next atomic.Int64
				b.SetParallelism(32)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := e.b.CreateTopic(topicCfg(fmt.Sprintf("new-topic-%08d", next.Add(1)), 8, 6)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer() // closing the store folds the log: not a create
			})
		}
	}
}
