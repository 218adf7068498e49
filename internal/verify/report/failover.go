package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// Failover sums up, for one kind of master fault and one client (a
// workload: queue is Petrel's remoting client, grpc the 5.x gRPC front),
// how long the client went without an acknowledged send on the fault's
// group: from the Fault line to the first OK send whose Invoke came after
// it and went to that group (a send whose client names no group counts
// for any; a client that never sent to the group is not measured for its
// faults). Count faults, of which Unrecovered had no such send before the
// history ended; median and max over the others.
type Failover struct {
	Kind        string  `json:"kind"`
	Client      string  `json:"client"`
	Count       int     `json:"count"`
	MedianMS    float64 `json:"median_ms"`
	MaxMS       float64 `json:"max_ms"`
	Unrecovered int     `json:"unrecovered"`
	// GapMedianMS and GapMaxMS are over the same faults' longest gap
	// between two acknowledged sends to the group, from the fault to the
	// first ack after its heal: what the client went without, also when
	// the old master kept acking for a while (its lease) after the fault.
	GapMedianMS float64 `json:"gap_median_ms"`
	GapMaxMS    float64 `json:"gap_max_ms"`
}

// Failovers measures every fault that names a group (Op.Group on its
// Fault line: the master faults) for every workload that sent, sorted by
// kind then client (empty, not nil, without such faults). ops must be in
// line order.
func Failovers(ops []history.Op) []Failover {
	type fault struct {
		kind, group, target string
		index               int64
		at, healed          time.Time
	}
	var faults []fault
	clients := map[string]map[string]bool{} // workload → the groups it sent to
	for _, op := range ops {
		switch {
		case op.F == history.Fault && op.Type == history.Info && op.Group != "":
			faults = append(faults, fault{kind: op.Fault, group: op.Group, target: op.Target, index: op.Index, at: op.Time})
		case op.F == history.Heal && op.Type == history.Info:
			for i := len(faults) - 1; i >= 0; i-- {
				if f := &faults[i]; f.healed.IsZero() && f.kind == op.Fault && f.target == op.Target {
					f.healed = op.Time
					break
				}
			}
		case op.F == history.Send && op.Workload != "":
			if clients[op.Workload] == nil {
				clients[op.Workload] = map[string]bool{}
			}
			if op.Group != "" {
				clients[op.Workload][op.Group] = true
			}
		}
	}
	if len(faults) == 0 {
		return []Failover{}
	}
	type key struct{ kind, client string }
	times := map[key][]time.Duration{}
	gaps := map[key][]time.Duration{}
	unrecovered := map[key]int{}
	type sender struct{ process, id string }
	for client, groups := range clients {
		for _, f := range faults {
			if len(groups) > 0 && !groups[f.group] {
				continue // the client never sends to that group
			}
			k := key{f.kind, client}
			invoked := map[sender]history.Op{}
			found := false
			for _, op := range ops {
				if op.Index <= f.index || op.F != history.Send || op.Workload != client {
					continue
				}
				s := sender{op.Process, op.ID}
				if op.Type == history.Invoke {
					invoked[s] = op
					continue
				}
				inv, ok := invoked[s]
				delete(invoked, s)
				if !ok || op.Type != history.OK {
					continue
				}
				if g := inv.Group; g != "" && g != f.group {
					continue
				}
				times[k] = append(times[k], max(op.Time.Sub(f.at), 0))
				until := op.Time
				if f.healed.After(until) {
					until = f.healed
				}
				gaps[k] = append(gaps[k], longestGap(ops, client, f.group, f.index, f.at, until))
				found = true
				break
			}
			if !found {
				unrecovered[k]++
			}
		}
	}
	keys := map[key]bool{}
	for k := range times {
		keys[k] = true
	}
	for k := range unrecovered {
		keys[k] = true
	}
	out := make([]Failover, 0, len(keys))
	for k := range keys {
		d := times[k]
		sortDurations(d)
		fo := Failover{Kind: k.kind, Client: k.client, Count: len(d) + unrecovered[k], Unrecovered: unrecovered[k]}
		if len(d) > 0 {
			fo.MedianMS, fo.MaxMS = millis(percentile(d, 0.5)), millis(d[len(d)-1])
			g := gaps[k]
			sortDurations(g)
			fo.GapMedianMS, fo.GapMaxMS = millis(percentile(g, 0.5)), millis(g[len(g)-1])
		}
		out = append(out, fo)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Client < out[j].Client
	})
	return out
}

// longestGap is the longest time between two OK sends of client to group
// (or naming none) from the fault (line index from, time at) on, counting
// the fault as the first point and the first OK at or after until as the
// last.
func longestGap(ops []history.Op, client, group string, from int64, at, until time.Time) time.Duration {
	last, gap := at, time.Duration(0)
	for _, op := range ops {
		if op.Index <= from || op.F != history.Send || op.Type != history.OK || op.Workload != client || (op.Group != "" && op.Group != group) {
			continue
		}
		gap = max(gap, op.Time.Sub(last))
		last = op.Time
		if !op.Time.Before(until) {
			break
		}
	}
	return gap
}

// writeFailover writes the failover table of Text (nothing without
// master faults).
func writeFailover(w io.Writer, fs []Failover) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfailover (master fault to the first ack of a send to its group invoked after it, per client):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  kind\tclient\tcount\tmedian\tmax\tlongest gap median\tmax\tno ack after")
	for _, f := range fs {
		med, top, gmed, gtop := "–", "–", "–", "–"
		if f.Count > f.Unrecovered {
			med, top, gmed, gtop = msText(f.MedianMS), msText(f.MaxMS), msText(f.GapMedianMS), msText(f.GapMaxMS)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", f.Kind, f.Client, f.Count, med, top, gmed, gtop, f.Unrecovered)
	}
	tw.Flush()
}

// ReplicaLog is one group's end-of-run log comparison: what was compared
// (Result) and, when they differ or could not be compared, Error.
type ReplicaLog struct {
	Group  string `json:"group"`
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// ReplicaLogs collects the Compare lines of a history (empty, not nil,
// without any).
func ReplicaLogs(ops []history.Op) []ReplicaLog {
	out := []ReplicaLog{}
	for _, op := range ops {
		if op.F == history.Compare && op.Type == history.Info {
			out = append(out, ReplicaLog{Group: op.Group, Result: op.Value, Error: op.Error})
		}
	}
	return out
}

// writeReplicaLogs writes the comparison section of Text (nothing without
// Compare lines).
func writeReplicaLogs(w io.Writer, ls []ReplicaLog) {
	if len(ls) == 0 {
		return
	}
	fmt.Fprintln(w, "\nreplica logs (byte for byte up to each group's commit point, after a graceful stop):")
	for _, l := range ls {
		if l.Error != "" {
			fmt.Fprintf(w, "  %s: DIFFER: %s\n", l.Group, l.Error)
			continue
		}
		fmt.Fprintf(w, "  %s\n", l.Result)
	}
}
