package report

import (
	"math"
	"sort"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// Verdicts (Summary.Verdict).
const (
	Valid   = "valid"
	Invalid = "invalid"
)

// Counts are the checker's counts of one workload, or of the whole run.
// The JSON names are those of `-o json` (see VERIFY-API.md "Anomalies").
type Counts struct {
	Acked               int     `json:"acked"`       // ids with an OK send
	InDoubt             int     `json:"in_doubt"`    // ids whose sends were all in doubt
	Failed              int     `json:"failed"`      // ids whose sends all failed
	Lost                int     `json:"lost"`        // acked, never delivered, not in the log
	Undelivered         int     `json:"undelivered"` // acked, in the log, never delivered
	Unexpected          int     `json:"unexpected"`  // delivered or drained, never sent
	Duplicated          int     `json:"duplicated"`  // ids delivered more than once (allowed)
	DuplicateRatio      float64 `json:"duplicate_ratio"`
	Reordered           int     `json:"reordered"`             // ordered workload
	Early               int     `json:"early"`                 // delay workload
	RolledBackDelivered int     `json:"rolled_back_delivered"` // txn workload
	Corrupt             int     `json:"corrupt"`               // checksum or id mismatch
	Holes               int     `json:"holes"`                 // missing offsets in the drained log
	Diverged            int     `json:"diverged"`              // groups whose replica logs differ below the commit point

	// IDs lists the ids behind the counts (the checker's; may be
	// shorter than the counts if the checker bounds them).
	IDs IDs `json:"-"`
}

// IDs are the message ids (and log holes) behind each anomaly.
type IDs struct {
	Lost                []string `json:"lost,omitempty"`
	Undelivered         []string `json:"undelivered,omitempty"`
	Unexpected          []string `json:"unexpected,omitempty"`
	Duplicated          []string `json:"duplicated,omitempty"`
	Reordered           []string `json:"reordered,omitempty"`
	Early               []string `json:"early,omitempty"`
	RolledBackDelivered []string `json:"rolled_back_delivered,omitempty"`
	Corrupt             []string `json:"corrupt,omitempty"`
	Holes               []Hole   `json:"holes,omitempty"`
	Diverged            []string `json:"diverged,omitempty"`
}

// Hole is a range of offsets [From, To] of one queue that the drain did
// not find between the smallest and largest offsets it found.
type Hole struct {
	Topic string `json:"topic"`
	Queue int32  `json:"queue"`
	From  int64  `json:"from"`
	To    int64  `json:"to"`
}

// Lateness is how long after their due time delayed messages were first
// delivered (delay workload), over N messages.
type Lateness struct {
	N                int
	Median, P99, Max time.Duration
}

// Findings is what Build needs from the checker: the counts in total and
// per workload, and the delay workload's lateness. The lead's adapter
// fills it from checker.Result.
type Findings struct {
	Total     Counts
	Workloads map[string]Counts
	Lateness  Lateness
}

// Summary is a checked run, ready to print. Its JSON form is the stable
// `-o json` object; Build fills everything but History and Seed, which the
// caller sets (Build only sees the history's lines, not where they are
// kept or how the nemesis was seeded).
type Summary struct {
	Verdict string `json:"verdict"` // Valid or Invalid
	Counts
	// IDs are the ids behind the total's anomalies.
	IDs            IDs                    `json:"ids"`
	Faults         []Fault                `json:"faults"`
	Unavailability map[string]Unavailable `json:"unavailability"` // per fault kind
	// Failover is, per master fault kind and client (workload), the time
	// from the fault to the first acknowledged send on the fault's group.
	Failover []Failover `json:"failover"`
	// ReplicaLogs is the end-of-run comparison of each group's replica
	// logs (the history's Compare lines), in line order.
	ReplicaLogs []ReplicaLog      `json:"replica_logs"`
	Lateness    LatenessJSON      `json:"lateness"`
	Workloads   map[string]Counts `json:"workloads"`
	History     string            `json:"history"`
	Seed        int64             `json:"seed"`
	// Start is the time of the history's earliest line; DurationS the
	// seconds from it to the latest.
	Start     time.Time `json:"start"`
	DurationS float64   `json:"duration_s"`
	// Auth and TLS say that the run had authentication (every request
	// signed by a normal user and authorized by its ACL) and TLS on every
	// connection; SecurityDetail what the history's Security line adds.
	// All three are left out of the JSON when off, as a run without
	// --auth and --tls wrote it before they existed.
	Auth           bool   `json:"auth,omitempty"`
	TLS            bool   `json:"tls,omitempty"`
	SecurityDetail string `json:"security,omitempty"`
}

// LatenessJSON is Lateness in milliseconds.
type LatenessJSON struct {
	Count    int     `json:"count"`
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// Valid reports whether c holds none of the anomalies that make a run
// invalid: every one but duplicates (allowed under at-least-once), in
// doubt and failed sends.
func (c Counts) Valid() bool {
	return c.Lost == 0 && c.Undelivered == 0 && c.Unexpected == 0 && c.Reordered == 0 &&
		c.Early == 0 && c.RolledBackDelivered == 0 && c.Corrupt == 0 && c.Holes == 0 && c.Diverged == 0
}

// Build makes the Summary of a run from its history and the checker's
// findings on it. ops must be in line order (as history.Read returns
// them). Build keeps no reference to ops; the Summary shares f's id
// slices.
func Build(ops []history.Op, f Findings) Summary {
	s := Summary{
		Verdict:        Invalid,
		Counts:         f.Total,
		IDs:            f.Total.IDs,
		Faults:         Faults(ops),
		Workloads:      map[string]Counts{},
		Unavailability: map[string]Unavailable{},
		Lateness: LatenessJSON{
			Count:    f.Lateness.N,
			MedianMS: millis(f.Lateness.Median),
			P99MS:    millis(f.Lateness.P99),
			MaxMS:    millis(f.Lateness.Max),
		},
	}
	if f.Total.Valid() {
		s.Verdict = Valid
	}
	s.DuplicateRatio = round(s.DuplicateRatio, 6)
	for name, c := range f.Workloads {
		c.DuplicateRatio = round(c.DuplicateRatio, 6)
		s.Workloads[name] = c
	}
	s.Unavailability = Unavailability(s.Faults)
	s.Failover = Failovers(ops)
	s.ReplicaLogs = ReplicaLogs(ops)
	sec := SecurityOf(ops)
	s.Auth, s.TLS, s.SecurityDetail = sec.Auth, sec.TLS, sec.Detail
	if len(ops) > 0 {
		start, end := span(ops)
		s.Start = start
		s.DurationS = round(end.Sub(start).Seconds(), 3)
	}
	return s
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// percentile is the nearest-rank p-th percentile (0 < p <= 1) of sorted
// durations: the smallest value with at least p of them at or below it.
// The median is percentile(0.5), the lower middle for an even count.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// workloadNames returns the names of s.Workloads, sorted.
func (s Summary) workloadNames() []string {
	names := make([]string, 0, len(s.Workloads))
	for n := range s.Workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
