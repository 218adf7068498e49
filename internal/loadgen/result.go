package loadgen

import (
	"fmt"
	"strings"
	"time"
)

// Result is the outcome of a run.
type Result struct {
	// Scenario names the run ("produce", "consume" unless configured).
	Scenario string
	// BodyBytes is the body size (consume: the mean received, rounded).
	BodyBytes int
	// Msgs counts messages sent and acknowledged (produce) or received
	// (consume); Bytes their body bytes.
	Msgs, Bytes int64
	// Elapsed is the measured time (see the package doc).
	Elapsed time.Duration
	// Errors counts failed requests; FirstError is the first one's text.
	Errors     int64
	FirstError string
	// Latency holds the send latencies (produce only; nil for consume).
	Latency *Histogram
}

// MsgsPerSec is Msgs / Elapsed (0 when nothing was measured).
func (r *Result) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Msgs) / r.Elapsed.Seconds()
}

// MBPerSec is Bytes / Elapsed in 10^6 bytes per second.
func (r *Result) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Elapsed.Seconds() / 1e6
}

// Line formats the result as one line in the peer benchmarks' format, for
// example
//
//	petrel produce 1024B msgs=300000 secs=2.105 msgs/s=142518 MB/s=145.94 p50_us=420 p90_us=610 p99_us=1200 p999_us=3100 max_us=9000 errors=0
func (r *Result) Line() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "petrel %s %dB msgs=%d secs=%.3f msgs/s=%.0f MB/s=%.2f",
		r.Scenario, r.BodyBytes, r.Msgs, r.Elapsed.Seconds(), r.MsgsPerSec(), r.MBPerSec())
	if h := r.Latency; h != nil {
		fmt.Fprintf(&sb, " p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f",
			us(h.Quantile(0.50)), us(h.Quantile(0.90)), us(h.Quantile(0.99)), us(h.Quantile(0.999)), us(h.Max()))
	}
	fmt.Fprintf(&sb, " errors=%d", r.Errors)
	return sb.String()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
