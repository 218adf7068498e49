package checker

import (
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// bigHistory is a model history of about 200k lines, what a 120 s run
// writes; made once per test binary.
var bigHistory = sync.OnceValue(func() []history.Op {
	cfg := defaultModel()
	cfg.Steps, cfg.Queues, cfg.Consumers = 93_000, 8, 3
	return modelHistory(7, cfg)
})

func BenchmarkCheck200k(b *testing.B) {
	ops := bigHistory()
	b.ReportAllocs()
	for b.Loop() {
		if r := Check(ops); !r.Valid {
			b.Fatalf("model history invalid: %q", r.Reasons)
		}
	}
	b.ReportMetric(float64(len(ops)), "lines")
}
