package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrelmq/petrel/internal/broker"
)

// descPopInFlight: what 5.x simple consumers hold unacknowledged.
var descPopInFlight = prometheus.NewDesc("petrel_pop_inflight_messages",
	"Messages a simple-consumer (pop) group received on a topic and has neither acknowledged nor let pass their invisible time.",
	[]string{"group", "topic"}, nil)

// collectPopInFlight reports every pop group's in-flight messages per
// topic, at most MaxLagQueues series (the pop state holds one entry per
// group and topic it served).
func (c *brokerCollector) collectPopInFlight(b *broker.Broker, gauge func(*prometheus.Desc, float64, ...string)) {
	all := b.PopInFlight()
	for _, p := range all[:min(len(all), c.m.opts.MaxLagQueues)] {
		gauge(descPopInFlight, float64(p.Messages), p.Group, p.Topic)
	}
}
