package report

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

func renderHTML(t *testing.T, ops []history.Op, s Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(&buf, ops, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var faultRectRE = regexp.MustCompile(`<rect class="fault fault-([a-z0-9-]+)"[^>]*><title>([^<]*)</title></rect>`)

func TestHTMLShowsEveryFaultWindow(t *testing.T) {
	ops := sampleHistory()
	page := renderHTML(t, ops, sampleSummary(t, sampleFindings()))
	rects := faultRectRE.FindAllStringSubmatch(page, -1)
	if len(rects) != 3 {
		t.Fatalf("%d fault rects, want 3:\n%s", len(rects), page)
	}
	for i, want := range []struct{ kind, title string }{
		{"kill", "kill n0 at +2.000s, healed after 450ms (SIGKILL, restarted)"},
		{"pause", "pause n0 at +5.000s, healed after 1.01s (pause 1s)"},
		{"partition", "partition queue-p0-&gt;n0 at +8.000s, not healed before the end (blackhole)"},
	} {
		if rects[i][1] != want.kind || html.UnescapeString(rects[i][2]) != html.UnescapeString(want.title) {
			t.Errorf("fault rect %d: class fault-%s title %q, want fault-%s %q", i, rects[i][1], rects[i][2], want.kind, want.title)
		}
		if !strings.Contains(page, `<text class="flabel"`) || !strings.Contains(page, ">"+want.kind+"</text>") {
			t.Errorf("no label for the %s window", want.kind)
		}
	}
	if n := strings.Count(page, `<rect class="unavail"`); n != 2 {
		t.Errorf("%d unavailability marks, want 2", n)
	}
	if n := strings.Count(page, `<rect class="unavail unrecovered"`); n != 1 {
		t.Errorf("%d marks of a fault with no ack after, want 1", n)
	}
	for _, want := range []string{"kill n0: unavailable 555ms", "pause n0: unavailable 1.06s",
		`<polyline class="tput" points="`, `<polyline class="p99" points="`,
		"petrel verify: VALID — 70 acked", "/tmp/verify-r1/history.jsonl", "<td>queue</td><td>60</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// 10 s of history: a step of the line per second, 0..10.
	tput := regexp.MustCompile(`<polyline class="tput" points="([^"]*)"`).FindStringSubmatch(page)
	if n := len(strings.Fields(tput[1])); n != 22 {
		t.Errorf("throughput line has %d points, want 22 (two per second 0..10)", n)
	}
}

// external matches anything that would make the page load something:
// a URL scheme, a src or href attribute, a script, a stylesheet link or
// import, a CSS url().
var external = regexp.MustCompile(`(?i)https?://|src\s*=|href\s*=|<script|<link|@import|url\(|<iframe|<object|<embed`)

func TestHTMLIsSelfContained(t *testing.T) {
	for _, f := range []Findings{sampleFindings(), invalidFindings(), {}} {
		s := sampleSummary(t, f)
		page := renderHTML(t, sampleHistory(), s)
		if m := external.FindString(page); m != "" {
			t.Errorf("page has an external reference or script %q", m)
		}
		if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "<style>") || !strings.Contains(page, "<svg ") {
			t.Errorf("page is not one HTML document with inline CSS and SVG")
		}
	}
	// An empty history still renders.
	page := renderHTML(t, nil, Build(nil, Findings{}))
	if !strings.Contains(page, "<svg ") || !strings.Contains(page, "No faults were injected.") {
		t.Errorf("empty history: %s", page)
	}
}

func TestHTMLEscapesTheHistorysText(t *testing.T) {
	const evil = `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	h := &hist{}
	h.send(0, ms, "p0", "a")
	h.fault(10*ms, `kill" onmouseover="alert(3)`, evil, evil)
	h.heal(20*ms, "kill", evil)
	h.send(30*ms, ms, "p0", "b")
	f := Findings{Total: Counts{Acked: 2, Lost: 1, IDs: IDs{Lost: []string{evil}}},
		Workloads: map[string]Counts{evil: {Acked: 2}}}
	s := Build(h.ops, f)
	s.History = evil
	page := renderHTML(t, h.ops, s)
	for _, bad := range []string{"<script", "<img", `onmouseover="`} {
		if strings.Contains(page, bad) {
			t.Errorf("page carries %q from the history unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the hostile text is not shown escaped")
	}
	if rects := faultRectRE.FindAllStringSubmatch(page, -1); len(rects) != 1 || rects[0][1] != "kill--onmouseover--alert-3-" {
		t.Errorf("fault rects %q, want one with its kind made a safe class", rects)
	}
}

func TestNiceCeilAndTicks(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.3: 1, 1: 1, 1.2: 2, 3: 5, 7: 10, 10: 10, 11: 20, 480: 500, 501: 1000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
	for _, total := range []float64{1, 10, 30, 120, 600, 3600, 86400, 10 * 86400} {
		d := durationOfSeconds(total)
		if n := d / tickEvery(d); n > 12 {
			t.Errorf("%v run: %d time labels, want at most 12", d, n)
		}
	}
}

func durationOfSeconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
