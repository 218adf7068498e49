package loadgen

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Progress is a running load's figures so far, for the configs' Progress
// callback.
type Progress struct {
	// Elapsed is the time since the run started.
	Elapsed time.Duration
	// Msgs and Bytes count messages (and their body bytes) sent or
	// received; Errors failed requests.
	Msgs, Bytes, Errors int64
	// Latency says whether P50 and P99 are set (produce): send latencies
	// so far.
	Latency  bool
	P50, P99 time.Duration
}

// FormatProgress formats cur as one progress line, with rates over the
// interval since prev (the previous report; the zero Progress for the
// first), for example
//
//	[    12s] msgs=1204000 msgs/s=100250 MB/s=102.66 p50=0.41ms p99=1.20ms errors=0
//
// The line has no newline; MB/s counts body bytes, 10^6 per second.
func FormatProgress(prev, cur Progress) string {
	var rate, mbs float64
	if d := (cur.Elapsed - prev.Elapsed).Seconds(); d > 0 {
		rate = float64(cur.Msgs-prev.Msgs) / d
		mbs = float64(cur.Bytes-prev.Bytes) / d / 1e6
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "[%7s] msgs=%d msgs/s=%.0f MB/s=%.2f", cur.Elapsed.Truncate(time.Second), cur.Msgs, rate, mbs)
	if cur.Latency {
		fmt.Fprintf(&sb, " p50=%.2fms p99=%.2fms", ms(cur.P50), ms(cur.P99))
	}
	fmt.Fprintf(&sb, " errors=%d", cur.Errors)
	return sb.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportProgress calls fn with snap's figures every interval until the
// returned stop runs (stop waits for a call in progress). Without fn it
// does nothing. snap gets a histogram of its own to reuse.
func reportProgress(fn func(Progress), interval time.Duration, snap func(*Histogram) Progress) (stop func()) {
	if fn == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		h := NewHistogram()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fn(snap(h))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
}
