package store

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// benchStore opens a store on the real disk in a temporary directory.
// Segments are 128 MiB rather than 1 GiB so that a run of a few seconds
// rolls over several of them and measures the steady state (under sync
// flush, segments zero-filled ahead by the filler).
func benchStore(b *testing.B, mode commitlog.FlushMode) *Store {
	b.Helper()
	cfg := DefaultConfig(b.TempDir())
	cfg.FS = vfs.OS
	cfg.SegmentBytes = 128 << 20
	cfg.FlushMode = mode
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchMessage(size, producer int) *message.Message {
	m := &message.Message{
		Topic:         "BenchTopic",
		QueueID:       int32(producer % 8),
		Body:          make([]byte, size),
		BornTimestamp: 1,
		BornHost:      netip.MustParseAddrPort("127.0.0.2:40000"),
		Properties:    "TAGS\x01TagA\x02UNIQ_KEY\x01C0A80001000018B4AAC20000000000\x02",
	}
	m.BodyCRC = message.BodyChecksum(m.Body)
	return m
}

// BenchmarkPut measures Store.Put (commit-log append, acknowledged under the
// flush mode) for several message sizes and numbers of concurrent
// producers. Bytes/s counts message bodies.
func BenchmarkPut(b *testing.B) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		for _, size := range []int{100, 1024, 4096} {
			for _, producers := range []int{1, 64} {
				b.Run(fmt.Sprintf("flush=%s/size=%d/producers=%d", mode, size, producers), func(b *testing.B) {
					s := benchStore(b, mode)
					b.ReportAllocs()
					b.SetBytes(int64(size))
					var next atomic.Int64
					var wg sync.WaitGroup
					b.ResetTimer()
					for p := range producers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							m := benchMessage(size, p)
							for next.Add(1) <= int64(b.N) {
								if err := s.Put(m); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				})
			}
		}
	}
}

// BenchmarkGetMessages measures reading 32 messages at a time through a
// consume queue from a backlog of 1 KiB messages.
func BenchmarkGetMessages(b *testing.B) {
	s := benchStore(b, commitlog.FlushAsync)
	const backlog = 200_000
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := benchMessage(1024, p)
			m.QueueID = 0
			for range backlog / 8 {
				if err := s.Put(m); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitDispatched(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	msgs := 0
	for b.Loop() {
		res, err := s.GetMessages("BenchTopic", 0, off, 32, 1<<20, nil)
		if err != nil || res.Status != Found {
			b.Fatalf("get at %d: %v %v", off, err, res.Status)
		}
		msgs += res.Count
		b.SetBytes(int64(len(res.Body)))
		off = res.NextOffset
		if off >= backlog {
			off = 0
		}
		res.Release()
	}
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkPutBatches is the store's side of a remoting connection's sends
// of one read: 64 one-message groups of 1 KiB put with one call through an
// Appender (written on this goroutine under async flush) and waited for,
// by one caller and by 4 (four connections) at once. One op is one message.
func BenchmarkPutBatches(b *testing.B) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		for _, callers := range []int{1, 4} {
			b.Run(fmt.Sprintf("flush=%s/callers=%d", mode, callers), func(b *testing.B) {
				s := benchStore(b, mode)
				b.ReportAllocs()
				b.SetBytes(1024)
				const n = 64
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for c := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						app := s.NewAppender()
						groups := make([][]*message.Message, n)
						for i := range groups {
							groups[i] = []*message.Message{benchMessage(1024, c*n+i)}
						}
						var answered sync.WaitGroup
						done := func(_ int, err error) {
							if err != nil {
								b.Error(err)
							}
							answered.Done()
						}
						for next.Add(n) <= int64(b.N)+n-1 {
							answered.Add(n)
							app.PutBatches(groups, done)
							answered.Wait()
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}
