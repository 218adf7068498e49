package broker

// Hooks and counters for metrics. The send path pays one nil check when no
// observer is set, and one clock read at each end of a send when one is;
// nothing here allocates.

import (
	"time"

	"github.com/petrelmq/petrel/internal/broker/dedup"
)

// sendStart is when a send began, for Config.ObserveSend (the zero time
// when no observer is set, so the clock is not read).
func (b *Broker) sendStart() time.Time {
	if b.cfg.ObserveSend == nil {
		return time.Time{}
	}
	return b.clk.Now()
}

// sendDone tells Config.ObserveSend of a send that began at t0.
func (b *Broker) sendDone(t0 time.Time) {
	if f := b.cfg.ObserveSend; f != nil {
		f(b.clk.Now().Sub(t0))
	}
}

// DedupStats returns the counters of the deduplication window: Hits counts
// resends answered with the original's result instead of being stored.
// Safe for concurrent use; it takes the window's lock briefly.
func (b *Broker) DedupStats() dedup.Stats { return b.dedup.Stats() }
