package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// JSON writes s as the stable `-o json` object (indented, one trailing
// newline). Its keys are Summary's JSON names: verdict, the counts of the
// total (acked, lost, duplicated, …), ids, faults, unavailability,
// lateness, workloads, history, seed, start, duration_s. An
// unavailability with count == unrecovered has no measurement: its
// median_ms and max_ms are 0. Lists and maps
// are written empty, never null, so that readers need not test for both.
func JSON(w io.Writer, s Summary) error {
	if s.Faults == nil {
		s.Faults = []Fault{}
	}
	if s.Unavailability == nil {
		s.Unavailability = map[string]Unavailable{}
	}
	if s.Workloads == nil {
		s.Workloads = map[string]Counts{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "p0->n0", not "p0-\u003en0"
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("report: encode json: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}
