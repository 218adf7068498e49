package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// verdictIDs bounds the ids named on the verdict line, listIDs those
// listed per anomaly below the table; the JSON has them all.
const (
	verdictIDs = 10
	listIDs    = 100
)

// anomaly is one count of Counts with its ids, for listing.
type anomaly struct {
	name    string // as on the verdict line
	n       int
	ids     []string
	of      int  // how many ids there are in all, listed or not
	invalid bool // makes the run invalid
}

func (s Summary) anomalies() []anomaly {
	c, ids := s.Counts, s.IDs
	return []anomaly{
		{"lost", c.Lost, ids.Lost, c.Lost, true},
		{"undelivered", c.Undelivered, ids.Undelivered, c.Undelivered, true},
		{"unexpected", c.Unexpected, ids.Unexpected, c.Unexpected, true},
		{"reordered", c.Reordered, ids.Reordered, c.Reordered, true},
		{"early", c.Early, ids.Early, c.Early, true},
		{"rolled back but delivered", c.RolledBackDelivered, ids.RolledBackDelivered, c.RolledBackDelivered, true},
		{"corrupt", c.Corrupt, ids.Corrupt, c.Corrupt, true},
		// Holes counts offsets; the list has ranges of them.
		{"holes", c.Holes, holeStrings(ids.Holes), len(ids.Holes), true},
		{"diverged", c.Diverged, ids.Diverged, c.Diverged, true},
		{"duplicated", c.Duplicated, ids.Duplicated, c.Duplicated, false},
	}
}

func holeStrings(hs []Hole) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s/%d:%d-%d", h.Topic, h.Queue, h.From, h.To)
	}
	return out
}

// VerdictLine is the first line Text writes, without its newline:
// "petrel verify: VALID — 52,310 acked, 0 lost, …" or
// "petrel verify: INVALID — 3 lost: id1 id2 id3; …".
func (s Summary) VerdictLine() string {
	var b strings.Builder
	b.WriteString("petrel verify: ")
	if s.Verdict == Valid {
		fmt.Fprintf(&b, "VALID — %s acked, 0 lost, %s duplicated (ratio %s), %s in doubt, %s faults",
			thousands(s.Acked), thousands(s.Duplicated), ratio(s.DuplicateRatio),
			thousands(s.InDoubt), thousands(len(s.Faults)))
		return b.String()
	}
	b.WriteString("INVALID — ")
	first := true
	for _, a := range s.anomalies() {
		if !a.invalid || a.n == 0 {
			continue
		}
		if !first {
			b.WriteString("; ")
		}
		first = false
		fmt.Fprintf(&b, "%s %s", thousands(a.n), a.name)
		if len(a.ids) > 0 {
			b.WriteString(": ")
			b.WriteString(idList(a.ids, a.of, verdictIDs))
		}
	}
	fmt.Fprintf(&b, " (%s acked, %s faults)", thousands(s.Acked), thousands(len(s.Faults)))
	return b.String()
}

// idList joins at most limit of ids, and says how many of the n are not
// shown.
func idList(ids []string, n, limit int) string {
	shown := ids[:min(len(ids), limit)]
	out := strings.Join(shown, " ")
	if rest := max(n, len(ids)) - len(shown); rest > 0 {
		out += fmt.Sprintf(" … (+%s more)", thousands(rest))
	}
	return out
}

// Text writes the verdict line, then the summary table (a row per
// workload and the total, a column per count), the ids behind each
// anomaly, the faults with their unavailability, the lateness of delayed
// messages, and the history's path. It returns the first write error.
func Text(w io.Writer, s Summary) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, s.VerdictLine())
	fmt.Fprintln(ew)

	// Numbers align right; names left, padded to one width by hand.
	names := append(s.workloadNames(), "total")
	width := len("workload")
	for _, n := range names {
		width = max(width, len(n))
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "workload")
	fmt.Fprintln(tw, "acked\tin_doubt\tfailed\tlost\tundelivered\tunexpected\tduplicated\tdup_ratio\treordered\tearly\trolled_back\tcorrupt\tholes\t")
	row := func(name string, c Counts) {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t\n", width, name,
			c.Acked, c.InDoubt, c.Failed, c.Lost, c.Undelivered, c.Unexpected, c.Duplicated,
			ratio(c.DuplicateRatio), c.Reordered, c.Early, c.RolledBackDelivered, c.Corrupt, c.Holes)
	}
	for _, name := range names[:len(names)-1] {
		row(name, s.Workloads[name])
	}
	row("total", s.Counts)
	tw.Flush()

	for _, a := range s.anomalies() {
		if a.n == 0 {
			continue
		}
		fmt.Fprintf(ew, "\n%s (%s)", a.name, thousands(a.n))
		if len(a.ids) > 0 {
			fmt.Fprintf(ew, ": %s", idList(a.ids, a.of, listIDs))
		}
		fmt.Fprintln(ew)
	}

	fmt.Fprintf(ew, "\nfaults: %d", len(s.Faults))
	if len(s.Faults) > 0 {
		var kinds []string
		for _, k := range sortedKinds(s.Unavailability) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, s.Unavailability[k].Count))
		}
		fmt.Fprintf(ew, " (%s)\n", strings.Join(kinds, ", "))
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  kind\ttarget\tstart\tend\tunavailable\tdetail")
		for _, f := range s.Faults {
			end, unavail := "not healed", "no ack after"
			if f.Healed() {
				end = offset(f.End.Sub(s.Start))
			}
			if f.Recovered {
				unavail = dur(f.Unavailable)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", f.Kind, f.Target, offset(f.Start.Sub(s.Start)), end, unavail, f.Detail)
		}
		tw.Flush()
		fmt.Fprintln(ew, "\nunavailability (fault to the first ack of a send invoked after it):")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  kind\tcount\tmedian\tmax\tno ack after")
		for _, k := range sortedKinds(s.Unavailability) {
			u := s.Unavailability[k]
			med, top := "–", "–"
			if u.Count > u.Unrecovered {
				med, top = msText(u.MedianMS), msText(u.MaxMS)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\n", k, u.Count, med, top, u.Unrecovered)
		}
		tw.Flush()
	} else {
		fmt.Fprintln(ew)
	}

	writeFailover(ew, s.Failover)
	writeReplicaLogs(ew, s.ReplicaLogs)

	if s.Lateness.Count > 0 {
		fmt.Fprintf(ew, "\nlateness of delayed messages (%s): median %s, p99 %s, max %s\n", thousands(s.Lateness.Count),
			msText(s.Lateness.MedianMS), msText(s.Lateness.P99MS), msText(s.Lateness.MaxMS))
	}
	if sec := s.security(); sec.On() {
		fmt.Fprintf(ew, "\nsecurity: %s", sec.Line())
	}
	fmt.Fprintf(ew, "\nduration: %s, seed: %d\n", dur(time.Duration(s.DurationS*float64(time.Second))), s.Seed)
	if s.History != "" {
		fmt.Fprintf(ew, "history: %s\n", s.History)
	}
	return ew.err
}

// errWriter keeps the first write error and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// thousands writes n with comma separators: 52310 → "52,310".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ratio(r float64) string { return strconv.FormatFloat(r, 'f', 4, 64) }

// dur prints a duration to the millisecond below a second, to the
// hundredth of a second above.
func dur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)
	}
	return fmt.Sprintf("%.2fs", d.Round(10*time.Millisecond).Seconds())
}

func msText(v float64) string { return dur(time.Duration(v * float64(time.Millisecond))) }

// offset prints a time from the run's start: "+12.345s".
func offset(d time.Duration) string { return fmt.Sprintf("+%.3fs", d.Seconds()) }
