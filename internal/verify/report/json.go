package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSON writes s as the stable `-o json` object (indented, one trailing
// newline). Its keys are Summary's JSON names: verdict, the counts of the
// total (acked, lost, duplicated, …), ids, faults, unavailability,
// lateness, workloads, history, seed, start, duration_s. Lists and maps
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
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode json: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}
