package report

import (
	"bytes"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// randomHistory makes a history of n random lines: sends, outcomes with
// or without their invoke, faults and heals in any order, times that
// jump back and forth (callers may stamp lines themselves), some far
// apart.
func randomHistory(rng *rand.Rand, n int) []history.Op {
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.InDoubt, history.Info}
	funcs := []history.Func{history.Send, history.Fault, history.Heal, history.Deliver, history.Phase}
	kinds := []string{"kill", "pause", "partition", "", "odd kind"}
	ops := make([]history.Op, n)
	at := time.Duration(0)
	for i := range ops {
		switch rng.Intn(20) {
		case 0:
			at -= time.Duration(rng.Intn(5000)) * time.Millisecond
		case 1:
			at += time.Duration(rng.Int63n(int64(48 * time.Hour)))
		default:
			at += time.Duration(rng.Intn(300)) * time.Millisecond
		}
		op := history.New(types[rng.Intn(len(types))], funcs[rng.Intn(len(funcs))])
		op.Index, op.Time = int64(i), t0.Add(at)
		op.Process = []string{"p0", "p1", "nemesis"}[rng.Intn(3)]
		op.ID = []string{"a", "b", "c", "d"}[rng.Intn(4)]
		op.Fault = kinds[rng.Intn(len(kinds))]
		op.Target = []string{"n0", "p0->n0", ""}[rng.Intn(3)]
		op.Latency = time.Duration(rng.Intn(5000)) * time.Millisecond
		ops[i] = op
	}
	return ops
}

func TestRandomHistoriesReport(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for round := 0; round < 40; round++ {
		ops := randomHistory(rng, rng.Intn(300))
		s := Build(ops, Findings{Total: Counts{Lost: rng.Intn(2)}})
		nFaults := 0
		for _, op := range ops {
			if op.Type == history.Info && op.F == history.Fault {
				nFaults++
			}
		}
		if len(s.Faults) != nFaults {
			t.Fatalf("round %d: %d faults from %d Fault lines", round, len(s.Faults), nFaults)
		}
		for _, f := range s.Faults {
			if f.Recovered && (f.Unavailable < 0 || f.RecoveredBy <= f.Index) {
				t.Fatalf("round %d: fault at line %d recovered by line %d after %v", round, f.Index, f.RecoveredBy, f.Unavailable)
			}
		}
		tl := NewTimeline(ops)
		if len(tl.Points) > MaxPoints {
			t.Fatalf("round %d: %d points", round, len(tl.Points))
		}
		var page bytes.Buffer
		if err := HTML(&page, ops, s); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(page.String(), `<rect class="fault fault-`); n != nFaults {
			t.Fatalf("round %d: %d fault rects for %d faults", round, n, nFaults)
		}
		if err := Text(io.Discard, s); err != nil {
			t.Fatal(err)
		}
		if err := JSON(io.Discard, s); err != nil {
			t.Fatal(err)
		}
	}
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, io.ErrShortWrite
	}
	w.after--
	return len(p), nil
}

func TestWritersReturnTheWriteError(t *testing.T) {
	s := sampleSummary(t, invalidFindings())
	if err := Text(&failWriter{after: 3}, s); err != io.ErrShortWrite {
		t.Errorf("Text: %v, want the write error", err)
	}
	if err := JSON(&failWriter{}, s); err == nil {
		t.Error("JSON: no error from a failing writer")
	}
	if err := HTML(&failWriter{after: 1}, sampleHistory(), s); err == nil {
		t.Error("HTML: no error from a failing writer")
	}
}
