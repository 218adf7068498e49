package report

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// Fault is one fault the nemesis injected: from its Fault line to the
// Heal line that ended it, and how long the run went without an
// acknowledged send after it.
type Fault struct {
	Kind   string // kill, pause, partition, restart, slow-disk
	Target string // the process or link it hit
	Detail string // the Fault line's Value, then its Heal line's Value and Error
	Start  time.Time
	// End is the Heal line's time; zero when the history has no Heal for
	// it (the run ended first).
	End time.Time
	// Unavailable is the time from Start to the first OK send whose
	// Invoke came after the Fault line; Recovered is false when no such
	// send was acknowledged before the history ended (Unavailable is
	// then zero).
	Unavailable time.Duration
	Recovered   bool
	// Index is the Fault line's index; RecoveredBy the index of the OK
	// line that ended its unavailability (-1 if none).
	Index, RecoveredBy int64
}

// Healed reports whether the history has the Heal line of f.
func (f Fault) Healed() bool { return !f.End.IsZero() }

// MarshalJSON writes f as {kind, target, detail, start, end,
// unavailable_ms}, with end and unavailable_ms null when the fault was
// never healed or never followed by an acknowledged send.
func (f Fault) MarshalJSON() ([]byte, error) {
	type out struct {
		Kind          string     `json:"kind"`
		Target        string     `json:"target"`
		Detail        string     `json:"detail"`
		Start         time.Time  `json:"start"`
		End           *time.Time `json:"end"`
		UnavailableMS *float64   `json:"unavailable_ms"`
	}
	o := out{Kind: f.Kind, Target: f.Target, Detail: f.Detail, Start: f.Start}
	if f.Healed() {
		o.End = &f.End
	}
	if f.Recovered {
		v := millis(f.Unavailable)
		o.UnavailableMS = &v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // targets are links like "p0->n0"
	if err := enc.Encode(o); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Faults returns the faults of a history in the order they started, each
// paired with its Heal line (the first later Heal of the same kind and
// target; failing that, of the same target; failing that, the oldest
// fault still open), and with its unavailability measured.
func Faults(ops []history.Op) []Fault {
	var faults []Fault
	var open []int // indexes into faults, oldest first
	for _, op := range ops {
		if op.Type != history.Info {
			continue
		}
		switch op.F {
		case history.Fault:
			faults = append(faults, Fault{
				Kind: op.Fault, Target: op.Target, Detail: op.Value,
				Start: op.Time, Index: op.Index, RecoveredBy: -1,
			})
			open = append(open, len(faults)-1)
		case history.Heal:
			k := matchHeal(faults, open, op)
			if k < 0 {
				continue
			}
			f := &faults[open[k]]
			f.End = op.Time
			f.Detail = joinDetail(f.Detail, op.Value, op.Error)
			open = append(open[:k], open[k+1:]...)
		}
	}
	measureUnavailability(ops, faults)
	return faults
}

// joinDetail is a fault's detail: what the Fault line planned, what its
// Heal line says was done, and why either failed.
func joinDetail(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// matchHeal picks which open fault a Heal line ends (a position in open),
// or -1 when none is open.
func matchHeal(faults []Fault, open []int, heal history.Op) int {
	for k, i := range open {
		if faults[i].Target == heal.Target && faults[i].Kind == heal.Fault {
			return k
		}
	}
	for k, i := range open {
		if faults[i].Target == heal.Target {
			return k
		}
	}
	if len(open) > 0 {
		return 0
	}
	return -1
}

// measureUnavailability sets each fault's Unavailable: the time from its
// Fault line to the first OK send (in line order) whose Invoke line came
// after the Fault line. A send's OK is paired with the last Invoke of the
// same id by the same process before it; an OK with no such Invoke is not
// counted.
func measureUnavailability(ops []history.Op, faults []Fault) {
	if len(faults) == 0 {
		return
	}
	// faults are in Fault line order; the ones still waiting for an ack
	// are always faults[next:], since an OK whose Invoke came after fault
	// i also came after every fault before i.
	type sender struct{ process, id string }
	invoked := map[sender]int64{}
	next := 0
	for _, op := range ops {
		if op.F != history.Send {
			continue
		}
		key := sender{op.Process, op.ID}
		switch op.Type {
		case history.Invoke:
			invoked[key] = op.Index
			continue
		case history.OK:
		default:
			delete(invoked, key)
			continue
		}
		inv, ok := invoked[key]
		if !ok {
			continue
		}
		delete(invoked, key)
		for next < len(faults) && faults[next].Index < inv {
			f := &faults[next]
			f.Recovered, f.RecoveredBy = true, op.Index
			f.Unavailable = max(op.Time.Sub(f.Start), 0)
			next++
		}
		if next == len(faults) {
			return
		}
	}
}

// Unavailable sums up the unavailability of the faults of one kind: how
// many there were, the median and largest unavailability of those a send
// was acknowledged after, and how many had none acknowledged after them.
type Unavailable struct {
	Count       int     `json:"count"`
	MedianMS    float64 `json:"median_ms"`
	MaxMS       float64 `json:"max_ms"`
	Unrecovered int     `json:"unrecovered"`
}

// Unavailability sums the faults' unavailability up per kind.
func Unavailability(faults []Fault) map[string]Unavailable {
	byKind := map[string][]time.Duration{}
	out := map[string]Unavailable{}
	for _, f := range faults {
		u := out[f.Kind]
		u.Count++
		if f.Recovered {
			byKind[f.Kind] = append(byKind[f.Kind], f.Unavailable)
		} else {
			u.Unrecovered++
		}
		out[f.Kind] = u
	}
	for kind, d := range byKind {
		sortDurations(d)
		u := out[kind]
		u.MedianMS = millis(percentile(d, 0.5))
		u.MaxMS = millis(d[len(d)-1])
		out[kind] = u
	}
	return out
}

// MaxPoints bounds the points of a Timeline: a longer run gets wider
// steps, in whole seconds.
const MaxPoints = 1800

// Point is one step of a Timeline.
type Point struct {
	At     time.Duration // the step's start, from the Timeline's Start
	OK     int           // sends acknowledged (OK lines) in the step
	Errors int           // sends failed or in doubt in the step
	// P50 and P99 are the nearest-rank percentiles of the latency of the
	// step's OK sends; zero when it has none.
	P50, P99 time.Duration
}

// Timeline is the run's sends per step of time, from its first line to
// its last.
type Timeline struct {
	Start  time.Time
	End    time.Time
	Step   time.Duration // 1s, or more for runs longer than MaxPoints seconds
	Points []Point
}

// span returns the earliest and latest line times of ops.
func span(ops []history.Op) (start, end time.Time) {
	for i, op := range ops {
		if i == 0 || op.Time.Before(start) {
			start = op.Time
		}
		if i == 0 || op.Time.After(end) {
			end = op.Time
		}
	}
	return start, end
}

// NewTimeline counts the sends of a history per step: each OK, Fail and
// InDoubt send line falls in the step of its own time.
func NewTimeline(ops []history.Op) Timeline {
	start, end := span(ops)
	tl := Timeline{Start: start, End: end, Step: time.Second}
	if len(ops) == 0 {
		return tl
	}
	total := end.Sub(start)
	if total/tl.Step+1 > MaxPoints {
		// total/Step < MaxPoints-1, so the points stay under MaxPoints.
		tl.Step = (total/(MaxPoints-1)/time.Second + 1) * time.Second
	}
	n := int(total/tl.Step) + 1
	tl.Points = make([]Point, n)
	lat := make([][]time.Duration, n)
	for i := range tl.Points {
		tl.Points[i].At = time.Duration(i) * tl.Step
	}
	for _, op := range ops {
		if op.F != history.Send || op.Type == history.Invoke || op.Type == history.Info {
			continue
		}
		i := int(op.Time.Sub(start) / tl.Step)
		if op.Type == history.OK {
			tl.Points[i].OK++
			lat[i] = append(lat[i], op.Latency)
		} else {
			tl.Points[i].Errors++
		}
	}
	for i, d := range lat {
		if len(d) == 0 {
			continue
		}
		sortDurations(d)
		tl.Points[i].P50 = percentile(d, 0.5)
		tl.Points[i].P99 = percentile(d, 0.99)
	}
	return tl
}

// sortedKinds returns the keys of m, sorted.
func sortedKinds[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
