// Package report turns a checked `petrel verify` run into what its user
// reads: a verdict line and an aligned summary table (Text), a stable JSON
// object (JSON, for `-o json`), and one self-contained HTML page with an
// SVG timeline of throughput and latency per second, the fault windows
// shaded and the unavailability of each fault marked (HTML, for
// `--report FILE.html`).
//
// Build joins two inputs: the checker's findings (Findings, the counts of
// every anomaly per workload and in total) and what only the history
// itself holds: when each fault started and healed, how long after each
// fault the first send invoked after it was acknowledged (its
// unavailability), and the run's start and length. Build, Faults,
// Unavailability and Timeline are pure (no I/O, no clock); Text, JSON and
// HTML only write to the io.Writer they are given.
//
// The HTML page carries no script, no external reference (no src=, no
// href, no http:// or https://): its CSS and SVG are inline, and every
// text taken from the history (targets, ids, details) is escaped by
// html/template.
package report
