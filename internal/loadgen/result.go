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
	// Mode and Batch are the produce run's send mode and messages per
	// send (empty and 0 for consume; Batch is the receive batch of
	// receive).
	Mode  string
	Batch int
	// Protocol is ProtocolGRPC for a run over the gRPC front, empty over
	// remoting.
	Protocol string
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
	// NotReplicated counts messages the broker stored but did not confirm
	// replicated: answered SLAVE_NOT_AVAILABLE (11) or FLUSH_SLAVE_TIMEOUT
	// (12) over remoting, HA_NOT_AVAILABLE or SLAVE_PERSISTENCE_TIMEOUT over
	// gRPC. They are neither in Msgs nor failures (Errors, MaxErrors): the
	// master holds them, its slaves may not.
	NotReplicated int64
	// Latency holds the send latencies (produce) or the AckMessage
	// latencies (receive); nil for consume.
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
	if r.NotReplicated > 0 {
		fmt.Fprintf(&sb, " not_replicated=%d", r.NotReplicated)
	}
	return sb.String()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Summary is a Result for scripts: `petrel bench -o json` prints it as
// one JSON object.
type Summary struct {
	Scenario   string  `json:"scenario"`
	Mode       string  `json:"mode,omitempty"`
	Protocol   string  `json:"protocol,omitempty"`
	Batch      int     `json:"batch,omitempty"`
	SizeBytes  int     `json:"size_bytes"`
	Msgs       int64   `json:"msgs"`
	Bytes      int64   `json:"bytes"`
	Secs       float64 `json:"secs"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	// LatencyUS holds the send (produce) or ack (receive) latency
	// quantiles in microseconds.
	LatencyUS  *LatencySummary `json:"latency_us,omitempty"`
	Errors     int64           `json:"errors"`
	FirstError string          `json:"first_error,omitempty"`
	// NotReplicated: Result.NotReplicated.
	NotReplicated int64 `json:"not_replicated"`
}

// LatencySummary is the latency part of a Summary, in microseconds.
type LatencySummary struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// Summary returns r as a Summary.
func (r *Result) Summary() Summary {
	s := Summary{Scenario: r.Scenario, Mode: r.Mode, Protocol: r.Protocol, Batch: r.Batch, SizeBytes: r.BodyBytes, Msgs: r.Msgs, Bytes: r.Bytes,
		Secs: r.Elapsed.Seconds(), MsgsPerSec: r.MsgsPerSec(), MBPerSec: r.MBPerSec(), Errors: r.Errors, FirstError: r.FirstError,
		NotReplicated: r.NotReplicated}
	if h := r.Latency; h != nil {
		s.LatencyUS = &LatencySummary{P50: us(h.Quantile(0.50)), P90: us(h.Quantile(0.90)), P99: us(h.Quantile(0.99)),
			P999: us(h.Quantile(0.999)), Max: us(h.Max())}
	}
	return s
}
