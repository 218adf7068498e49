package verify

import (
	"fmt"

	"github.com/petrelmq/petrel/internal/verify/checker"
	"github.com/petrelmq/petrel/internal/verify/report"
)

// findings turns the checker's result into what the report prints: the
// counts and the ids behind them, in total and per workload.
func findings(r checker.Result) report.Findings {
	f := report.Findings{
		Total:     reportCounts(r.Total, r, ""),
		Workloads: make(map[string]report.Counts, len(r.Workloads)),
		Lateness: report.Lateness{
			N: r.Total.Lateness.Count, Median: r.Total.Lateness.Median,
			P99: r.Total.Lateness.P99, Max: r.Total.Lateness.Max,
		},
	}
	for _, w := range r.Workloads {
		f.Workloads[w.Name] = reportCounts(w.Counts, r, w.Name)
	}
	return f
}

// reportCounts copies c and the ids of r's lists that belong to workload
// wl (every list when wl is empty).
func reportCounts(c checker.Counts, r checker.Result, wl string) report.Counts {
	out := report.Counts{
		Acked: c.Acked, InDoubt: c.InDoubt, Failed: c.Failed, Lost: c.Lost,
		Undelivered: c.Undelivered, Unexpected: c.Unexpected, Duplicated: c.Duplicated,
		DuplicateRatio: c.DuplicateRatio, Reordered: c.Reordered, Early: c.Early,
		RolledBackDelivered: c.RolledBackDelivered, Corrupt: c.Corrupt, Holes: c.Holes,
	}
	in := func(w string) bool { return wl == "" || w == wl }
	ids := &out.IDs
	for _, m := range r.Lost {
		if in(m.Workload) {
			ids.Lost = append(ids.Lost, missID(m))
		}
	}
	for _, m := range r.Undelivered {
		if in(m.Workload) {
			ids.Undelivered = append(ids.Undelivered, missID(m))
		}
	}
	for _, l := range r.Unexpected {
		if in(l.Workload) {
			ids.Unexpected = append(ids.Unexpected, l.ID)
		}
	}
	for _, d := range r.Duplicated {
		if in(d.Workload) {
			ids.Duplicated = append(ids.Duplicated, d.ID)
		}
	}
	for _, o := range r.Reordered {
		if in(o.Workload) {
			ids.Reordered = append(ids.Reordered, fmt.Sprintf("%s(%s#%d after #%d)", o.Earlier, o.Key, o.EarlierSeq, o.LaterSeq))
		}
	}
	for _, e := range r.Early {
		if in(e.Workload) {
			ids.Early = append(ids.Early, e.ID)
		}
	}
	for _, l := range r.RolledBackDelivered {
		if in(l.Workload) {
			ids.RolledBackDelivered = append(ids.RolledBackDelivered, l.ID)
		}
	}
	for _, l := range r.Corrupt {
		if in(l.Workload) {
			ids.Corrupt = append(ids.Corrupt, l.ID)
		}
	}
	for _, h := range r.Holes {
		if in(h.Workload) {
			ids.Holes = append(ids.Holes, report.Hole{Topic: h.Topic, Queue: h.Queue, From: h.From, To: h.To})
		}
	}
	return out
}

// missID is a lost or undelivered id, with the broadcast member that
// missed it.
func missID(m checker.Miss) string {
	if m.Member != "" {
		return m.ID + "@" + m.Member
	}
	return m.ID
}
