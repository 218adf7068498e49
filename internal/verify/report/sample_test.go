package report

import (
	"testing"
	"time"
)

// sampleFindings are made-up checker findings to go with sampleHistory:
// valid, with duplicates and in-doubt sends, over two workloads.
func sampleFindings() Findings {
	queue := Counts{Acked: 60, InDoubt: 2, Failed: 36, Duplicated: 3, DuplicateRatio: 0.05,
		IDs: IDs{Duplicated: []string{"r1-queue-0-1", "r1-queue-0-2", "r1-queue-0-3"}}}
	delay := Counts{Acked: 10}
	total := queue
	total.Acked += delay.Acked
	total.DuplicateRatio = 3.0 / 70
	return Findings{
		Total:     total,
		Workloads: map[string]Counts{"queue": queue, "delay": delay},
		Lateness:  Lateness{N: 10, Median: 12 * time.Millisecond, P99: 80500 * time.Microsecond, Max: 81 * time.Millisecond},
	}
}

// invalidFindings has three lost ids and a hole in the log.
func invalidFindings() Findings {
	f := sampleFindings()
	f.Total.Lost = 3
	f.Total.IDs.Lost = []string{"r1-queue-0-7", "r1-queue-0-8", "r1-queue-0-9"}
	f.Total.Holes = 2
	f.Total.IDs.Holes = []Hole{{Topic: "verify-r1-queue", Queue: 1, From: 5, To: 6}}
	q := f.Workloads["queue"]
	q.Lost, q.Holes = 3, 2
	f.Workloads["queue"] = q
	return f
}

func sampleSummary(t *testing.T, f Findings) Summary {
	t.Helper()
	s := Build(sampleHistory(), f)
	s.History = "/tmp/verify-r1/history.jsonl"
	s.Seed = 42
	return s
}
