package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

//go:embed report.html.tmpl
var pageSource string

var page = template.Must(template.New("report").Parse(pageSource))

// htmlIDs bounds the ids the page lists per anomaly; the JSON has them
// all.
const htmlIDs = 1000

// The SVG's geometry, in user units: two panels (acked sends per step,
// then latency) over one time axis, fault windows across both.
const (
	svgW      = 1000
	svgH      = 520
	plotLeft  = 70
	plotRight = 980
	tputTop   = 30
	tputBot   = 230
	latTop    = 270
	latBot    = 470
	axisY     = 490
	markH     = 7
)

// HTML writes one self-contained page: the verdict, the summary table,
// the ids behind each anomaly, the faults and their unavailability, and
// an inline SVG timeline of the history's sends (acknowledged sends and
// errors per second, latency p50/p99 per second) with each fault's window
// shaded as a rect of class "fault fault-<kind>" carrying a <title>, and
// its unavailability marked below the throughput. The page has no script
// and no external reference; all text is escaped. ops is the history s
// was built from.
func HTML(w io.Writer, ops []history.Op, s Summary) error {
	v := newPageView(NewTimeline(ops), s)
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	return nil
}

type pageView struct {
	Valid       bool
	VerdictLine string
	Rows        []rowView
	Anomalies   []anomalyView
	Faults      []faultView
	Unavail     []unavailView
	Lateness    LatenessJSON
	History     string
	Seed        int64
	Security    string // "" when neither auth nor TLS was on
	Duration    string
	Start       string
	SVG         svgView
}

type rowView struct {
	Name  string
	Total bool
	Counts
	Ratio string
}

type anomalyView struct {
	Name    string
	N       string
	IDs     string
	Invalid bool
}

type faultView struct {
	Kind, Class, Target, Detail, Start, End, Unavailable string
}

type unavailView struct {
	Kind, Class     string
	Count           int
	Median, Max     string
	Unrecovered     int
	HasMeasurements bool
}

type svgView struct {
	W, H                 int
	Left, Right          int
	TputTop, TputBot     int
	LatTop, LatBot       int
	AxisY                int
	Tput, Errs, P50, P99 string // polyline points
	XTicks               []tick
	TputTicks, LatTicks  []tick
	Faults               []faultRect
	Marks                []markRect
	Step                 string
}

type tick struct {
	X, Y  float64
	Label string
}

type faultRect struct {
	Class      string
	X, Y, W, H float64
	LX, LY     float64
	Label      string
	Title      string
}

type markRect struct {
	Class      string
	X, Y, W, H float64
	Title      string
}

func newPageView(tl Timeline, s Summary) pageView {
	v := pageView{
		Valid:       s.Verdict == Valid,
		VerdictLine: s.VerdictLine(),
		Lateness:    s.Lateness,
		History:     s.History,
		Seed:        s.Seed,
		Duration:    dur(time.Duration(s.DurationS * float64(time.Second))),
		Start:       s.Start.UTC().Format(time.RFC3339),
	}
	if sec := s.security(); sec.On() {
		v.Security = sec.Line()
	}
	for _, name := range s.workloadNames() {
		c := s.Workloads[name]
		v.Rows = append(v.Rows, rowView{Name: name, Counts: c, Ratio: ratio(c.DuplicateRatio)})
	}
	v.Rows = append(v.Rows, rowView{Name: "total", Total: true, Counts: s.Counts, Ratio: ratio(s.DuplicateRatio)})
	for _, a := range s.anomalies() {
		if a.n == 0 {
			continue
		}
		v.Anomalies = append(v.Anomalies, anomalyView{Name: a.name, N: thousands(a.n), IDs: idList(a.ids, a.of, htmlIDs), Invalid: a.invalid})
	}
	for _, f := range s.Faults {
		fv := faultView{Kind: f.Kind, Class: kindClass(f.Kind), Target: f.Target, Detail: f.Detail,
			Start: offset(f.Start.Sub(s.Start)), End: "not healed", Unavailable: "no ack after"}
		if f.Healed() {
			fv.End = offset(f.End.Sub(s.Start))
		}
		if f.Recovered {
			fv.Unavailable = dur(f.Unavailable)
		}
		v.Faults = append(v.Faults, fv)
	}
	for _, k := range sortedKinds(s.Unavailability) {
		u := s.Unavailability[k]
		v.Unavail = append(v.Unavail, unavailView{Kind: k, Class: kindClass(k), Count: u.Count,
			Median: msText(u.MedianMS), Max: msText(u.MaxMS), Unrecovered: u.Unrecovered,
			HasMeasurements: u.Count > u.Unrecovered})
	}
	v.SVG = newSVGView(tl, s.Faults)
	return v
}

// kindClass makes a fault kind safe as a CSS class name: lower case
// letters, digits and '-'.
func kindClass(kind string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(kind) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

func newSVGView(tl Timeline, faults []Fault) svgView {
	v := svgView{W: svgW, H: svgH, Left: plotLeft, Right: plotRight, TputTop: tputTop, TputBot: tputBot,
		LatTop: latTop, LatBot: latBot, AxisY: axisY, Step: dur(tl.Step)}
	total := tl.End.Sub(tl.Start)
	if n := time.Duration(len(tl.Points)) * tl.Step; n > total {
		total = n
	}
	if total <= 0 {
		total = time.Second
	}
	x := func(d time.Duration) float64 {
		d = min(max(d, 0), total)
		return round(plotLeft+float64(plotRight-plotLeft)*float64(d)/float64(total), 1)
	}
	var maxRate float64
	var maxLat time.Duration
	for _, p := range tl.Points {
		maxRate = max(maxRate, float64(p.OK), float64(p.Errors))
		maxLat = max(maxLat, p.P99)
	}
	rateTop := niceCeil(maxRate / tl.Step.Seconds())
	latTopMS := niceCeil(float64(maxLat) / float64(time.Millisecond))
	yRate := func(r float64) float64 { return round(tputBot-(tputBot-tputTop)*r/rateTop, 1) }
	yLat := func(d time.Duration) float64 {
		return round(latBot-(latBot-latTop)*(float64(d)/float64(time.Millisecond))/latTopMS, 1)
	}
	var tput, errs, p50, p99 []string
	secs := tl.Step.Seconds()
	for _, p := range tl.Points {
		// Rates are drawn as steps over their interval, latencies at its
		// middle.
		x0, x1, px := x(p.At), x(p.At+tl.Step), x(p.At+tl.Step/2)
		yOK, yErr := yRate(float64(p.OK)/secs), yRate(float64(p.Errors)/secs)
		tput = append(tput, pt(x0, yOK), pt(x1, yOK))
		errs = append(errs, pt(x0, yErr), pt(x1, yErr))
		if p.OK > 0 {
			p50 = append(p50, pt(px, yLat(p.P50)))
			p99 = append(p99, pt(px, yLat(p.P99)))
		}
	}
	v.Tput, v.Errs = strings.Join(tput, " "), strings.Join(errs, " ")
	v.P50, v.P99 = strings.Join(p50, " "), strings.Join(p99, " ")
	for _, f := range []float64{0, 0.5, 1} {
		v.TputTicks = append(v.TputTicks, tick{Y: yRate(rateTop * f), Label: trimFloat(rateTop * f)})
		v.LatTicks = append(v.LatTicks, tick{Y: latBot - (latBot-latTop)*f, Label: trimFloat(latTopMS*f) + "ms"})
	}
	every := tickEvery(total)
	for d := time.Duration(0); d <= total; d += every {
		v.XTicks = append(v.XTicks, tick{X: x(d), Label: fmt.Sprintf("%gs", d.Seconds())})
	}
	for _, f := range faults {
		x0 := x(f.Start.Sub(tl.Start))
		end := tl.End
		if f.Healed() {
			end = f.End
		}
		x1 := max(x(end.Sub(tl.Start)), x0+2) // a kill healed at once stays visible
		heal := "not healed before the end"
		if f.Healed() {
			heal = "healed after " + dur(f.End.Sub(f.Start))
		}
		title := fmt.Sprintf("%s %s at %s, %s", f.Kind, f.Target, offset(f.Start.Sub(tl.Start)), heal)
		if f.Detail != "" {
			title += " (" + f.Detail + ")"
		}
		v.Faults = append(v.Faults, faultRect{Class: "fault fault-" + kindClass(f.Kind),
			X: x0, Y: tputTop, W: round(x1-x0, 1), H: latBot - tputTop,
			// The label runs down the window's left edge, so that windows
			// a few pixels apart keep their labels apart.
			LX: x0 + 2, LY: tputTop + 3, Label: f.Kind, Title: title})
		m := markRect{Class: "unavail", X: x0, Y: tputBot - markH, H: markH}
		if f.Recovered {
			m.W = max(round(x(f.Start.Sub(tl.Start)+f.Unavailable)-x0, 1), 1)
			m.Title = fmt.Sprintf("%s %s: unavailable %s (first ack of a send invoked after the fault)", f.Kind, f.Target, dur(f.Unavailable))
		} else {
			m.Class += " unrecovered"
			m.W = max(round(x(tl.End.Sub(tl.Start))-x0, 1), 1)
			m.Title = fmt.Sprintf("%s %s: no send invoked after it was acknowledged", f.Kind, f.Target)
		}
		v.Marks = append(v.Marks, m)
	}
	return v
}

func pt(x, y float64) string { return fmt.Sprintf("%.1f,%.1f", x, y) }

func trimFloat(f float64) string { return fmt.Sprintf("%g", f) }

// niceCeil rounds a positive value up to 1, 2 or 5 times a power of ten
// (at least 1), so the axis labels read well.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tickEvery picks the spacing of the time axis' labels: at most about 12.
func tickEvery(total time.Duration) time.Duration {
	for _, s := range []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400} {
		if d := time.Duration(s) * time.Second; total/d <= 12 {
			return d
		}
	}
	return total / 12
}
