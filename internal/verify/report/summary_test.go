package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestVerdictFollowsTheInvalidatingAnomalies(t *testing.T) {
	cases := []struct {
		name  string
		c     Counts
		valid bool
	}{
		{"clean", Counts{Acked: 10}, true},
		{"duplicates, in doubt and failed are allowed", Counts{Acked: 10, Duplicated: 4, DuplicateRatio: .4, InDoubt: 3, Failed: 2}, true},
		{"lost", Counts{Lost: 1}, false},
		{"undelivered", Counts{Undelivered: 1}, false},
		{"unexpected", Counts{Unexpected: 1}, false},
		{"reordered", Counts{Reordered: 1}, false},
		{"early", Counts{Early: 1}, false},
		{"rolled back delivered", Counts{RolledBackDelivered: 1}, false},
		{"corrupt", Counts{Corrupt: 1}, false},
		{"holes", Counts{Holes: 1}, false},
	}
	for _, c := range cases {
		s := Build(nil, Findings{Total: c.c})
		want := Invalid
		if c.valid {
			want = Valid
		}
		if s.Verdict != want {
			t.Errorf("%s: verdict %q, want %q", c.name, s.Verdict, want)
		}
	}
}

func TestBuildSummary(t *testing.T) {
	s := sampleSummary(t, sampleFindings())
	if s.Verdict != Valid || s.Acked != 70 || len(s.Faults) != 3 || s.DurationS != 10 || !s.Start.Equal(t0) {
		t.Fatalf("summary verdict %s acked %d faults %d duration %v start %v", s.Verdict, s.Acked, len(s.Faults), s.DurationS, s.Start)
	}
	if s.DuplicateRatio != 0.042857 {
		t.Errorf("duplicate ratio %v, want rounded to 0.042857", s.DuplicateRatio)
	}
	if u := s.Unavailability["kill"]; u.Count != 1 || u.MedianMS != 555 || u.MaxMS != 555 {
		t.Errorf("kill unavailability %+v, want 1 at 555ms", u)
	}
	if u := s.Unavailability["partition"]; u.Count != 1 || u.Unrecovered != 1 {
		t.Errorf("partition unavailability %+v, want 1 unrecovered", u)
	}
	if s.Lateness != (LatenessJSON{Count: 10, MedianMS: 12, P99MS: 80.5, MaxMS: 81}) {
		t.Errorf("lateness %+v", s.Lateness)
	}
}

// TestJSONGolden pins the shape of `-o json`: tools read it, so a change
// to a key is a change of the contract (rewrite with -update, and say
// so).
func TestJSONGolden(t *testing.T) {
	for _, c := range []struct {
		file string
		f    Findings
	}{{"valid.json", sampleFindings()}, {"invalid.json", invalidFindings()}} {
		var buf bytes.Buffer
		if err := JSON(&buf, sampleSummary(t, c.f)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from the golden file:\n%s", c.file, buf.String())
		}
	}
}

func TestJSONHasTheContractKeys(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, Build(nil, Findings{})); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verdict", "acked", "lost", "duplicated", "reordered", "unexpected", "early",
		"in_doubt", "undelivered", "corrupt", "rolled_back_delivered", "holes", "duplicate_ratio", "faults",
		"unavailability", "lateness", "workloads", "history", "seed", "duration_s"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, buf.String())
		}
	}
	for _, k := range []string{"faults", "unavailability", "workloads"} {
		if string(m[k]) == "null" {
			t.Errorf("%s is null in an empty run, want empty", k)
		}
	}
	var s struct {
		Faults []struct {
			End           *string  `json:"end"`
			UnavailableMS *float64 `json:"unavailable_ms"`
		} `json:"faults"`
	}
	buf.Reset()
	if err := JSON(&buf, sampleSummary(t, sampleFindings())); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if p := s.Faults[2]; p.End != nil || p.UnavailableMS != nil {
		t.Errorf("a fault never healed nor followed by an ack has end %v unavailable_ms %v, want null", p.End, p.UnavailableMS)
	}
	if k := s.Faults[0]; k.End == nil || k.UnavailableMS == nil || *k.UnavailableMS != 555 {
		t.Errorf("kill fault: end %v unavailable_ms %v, want set, 555", k.End, k.UnavailableMS)
	}
}

func TestTextValid(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, sampleSummary(t, sampleFindings())); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	if want := "petrel verify: VALID — 70 acked, 0 lost, 3 duplicated (ratio 0.0429), 2 in doubt, 3 faults"; lines[0] != want {
		t.Errorf("verdict line\n%q, want\n%q", lines[0], want)
	}
	// The table: a header, one row per workload (sorted), the total, all
	// of one width (right-aligned columns).
	table := lines[2:6]
	for i, prefix := range []string{"workload", "delay", "queue", "total"} {
		if !strings.HasPrefix(strings.TrimSpace(table[i]), prefix) {
			t.Errorf("table line %d = %q, want it to start with %q", i, table[i], prefix)
		}
		if len(table[i]) != len(table[0]) {
			t.Errorf("table line %d is %d wide, the header %d:\n%s", i, len(table[i]), len(table[0]), strings.Join(table, "\n"))
		}
	}
	for _, want := range []string{
		"duplicated (3): r1-queue-0-1 r1-queue-0-2 r1-queue-0-3",
		"faults: 3 (kill 1, partition 1, pause 1)",
		"kill       n0            +2.000s  +2.450s     555ms         SIGKILL, restarted",
		"partition  queue-p0->n0  +8.000s  not healed  no ack after  blackhole",
		"partition  1      –       –      1",
		"pause      1      1.06s   1.06s  0",
		"lateness of delayed messages (10): median 12ms, p99 81ms, max 81ms",
		"duration: 10.00s, seed: 42",
		"history: /tmp/verify-r1/history.jsonl",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestTextInvalidNamesTheIDs(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, sampleSummary(t, invalidFindings())); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(buf.String(), "\n")
	want := "petrel verify: INVALID — 3 lost: r1-queue-0-7 r1-queue-0-8 r1-queue-0-9; 2 holes: verify-r1-queue/1:5-6 (70 acked, 3 faults)"
	if first != want {
		t.Errorf("verdict line\n%q, want\n%q", first, want)
	}
	if !strings.Contains(buf.String(), "\nlost (3): r1-queue-0-7 r1-queue-0-8 r1-queue-0-9\n") {
		t.Errorf("no list of the lost ids:\n%s", buf.String())
	}
}

func TestVerdictLineBoundsTheIDs(t *testing.T) {
	var ids []string
	for i := 0; i < 25; i++ {
		ids = append(ids, "id"+strings.Repeat("x", i%3))
	}
	// the checker gave 25 ids of 5000 lost
	s := Build(nil, Findings{Total: Counts{Acked: 52310, Lost: 5000, IDs: IDs{Lost: ids}}})
	line := s.VerdictLine()
	if !strings.HasPrefix(line, "petrel verify: INVALID — 5,000 lost: id idx idxx") || !strings.Contains(line, "… (+4,990 more) (52,310 acked, 0 faults)") {
		t.Errorf("verdict line %q", line)
	}
	if got := idList([]string{"a", "b"}, 2, 10); got != "a b" {
		t.Errorf("idList of all: %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 52310: "52,310", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
