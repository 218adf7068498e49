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
	if wl == "" {
		out.Diverged = c.Diverged
		for _, d := range r.Diverged {
			out.IDs.Diverged = append(out.IDs.Diverged, d.Why)
		}
	}
	in := func(w string) bool { return wl == "" || w == wl }
	ids := &out.IDs
	ids.Lost = pick(r.Lost, in, func(m checker.Miss) (string, string) { return m.Workload, missID(m) })
	ids.Undelivered = pick(r.Undelivered, in, func(m checker.Miss) (string, string) { return m.Workload, missID(m) })
	ids.Unexpected = pick(r.Unexpected, in, lineID)
	ids.Duplicated = pick(r.Duplicated, in, func(d checker.Dup) (string, string) { return d.Workload, d.ID })
	ids.Reordered = pick(r.Reordered, in, func(o checker.Reorder) (string, string) {
		return o.Workload, fmt.Sprintf("%s(%s#%d after #%d)", o.Earlier, o.Key, o.EarlierSeq, o.LaterSeq)
	})
	ids.Early = pick(r.Early, in, func(e checker.Early) (string, string) { return e.Workload, e.ID })
	ids.RolledBackDelivered = pick(r.RolledBackDelivered, in, lineID)
	ids.Corrupt = pick(r.Corrupt, in, lineID)
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

// pick returns what of list belongs to a workload in says yes to: of
// each item, of gives its workload and the text to list.
func pick[T any](list []T, in func(string) bool, of func(T) (workload, text string)) []string {
	var out []string
	for _, v := range list {
		if wl, text := of(v); in(wl) {
			out = append(out, text)
		}
	}
	return out
}

func lineID(l checker.Line) (string, string) { return l.Workload, l.ID }
