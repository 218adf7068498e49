package broker

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkPopWakeupsPerMessage parks many pops of one group on a topic
// and stores messages one at a time, each taken by one pop before the
// next is sent; it reports the looks parked pops made per message
// (rechecks/msg). The waiter set before longpoll.Table woke every pop of
// the topic on every message.
func BenchmarkPopWakeupsPerMessage(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run("pops="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b)
			e.createTopic("T", 8)
			parked := make(chan struct{}, n+1)
			e.b.pops.testHookParked = func() {
				select {
				case parked <- struct{}{}:
				default:
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := popReq("G", "T", 32)
					req.Wait = 20 * 60e9
					for ctx.Err() == nil {
						ms, err := e.b.Pop(ctx, req)
						if err != nil {
							return
						}
						if len(ms) > 0 {
							got <- len(ms)
						}
					}
				}()
			}
			for range n {
				<-parked
			}
			before := e.b.pops.rechecks.Load()
			b.ResetTimer()
			for i := range b.N {
				e.send("T", int32(i%8), "m")
				<-got
			}
			b.StopTimer()
			b.ReportMetric(float64(e.b.pops.rechecks.Load()-before)/float64(b.N), "rechecks/msg")
			cancel()
			wg.Wait()
		})
	}
}
