package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrelmq/petrel/internal/remoting"
)

var (
	descRemotingHits = prometheus.NewDesc("petrel_remoting_limit_hits_total",
		"Times a remoting limit was hit, by limit: max_conns and max_conns_per_ip (connection refused), "+
			"conn_read_budget and server_read_budget (a reader waited for read budget), frame_timeout and "+
			"idle_timeout (connection closed), conn_write_queue (stopped reading from a peer that does not read its answers).",
		[]string{"limit"}, nil)
	descRemotingBudget = prometheus.NewDesc("petrel_remoting_read_budget_bytes",
		"Bytes of the remoting server's read budget in use: frames being read and requests whose handlers run.", nil, nil)
)

// AttachRemoting adds the remoting server's limit series, read from stats
// at every scrape (they exist at zero from the start). Call it once.
func (m *Metrics) AttachRemoting(stats func() remoting.Stats) {
	m.reg.MustRegister(remotingCollector{stats})
}

type remotingCollector struct{ stats func() remoting.Stats }

func (remotingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRemotingHits
	ch <- descRemotingBudget
}

func (c remotingCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, h := range []struct {
		limit string
		n     uint64
	}{
		{"max_conns", s.RefusedConns},
		{"max_conns_per_ip", s.RefusedConnsPerIP},
		{"conn_read_budget", s.ConnReadBudgetWaits},
		{"server_read_budget", s.ServerReadBudgetWaits},
		{"frame_timeout", s.FrameTimeouts},
		{"idle_timeout", s.IdleTimeouts},
		{"conn_write_queue", s.WriteQueuePauses},
	} {
		ch <- prometheus.MustNewConstMetric(descRemotingHits, prometheus.CounterValue, float64(h.n), h.limit)
	}
	ch <- prometheus.MustNewConstMetric(descRemotingBudget, prometheus.GaugeValue, float64(s.ReadBudgetBytes))
}

var descRemotingRequests = prometheus.NewDesc("petrel_remoting_requests_total",
	"Remoting requests read, by RocketMQ request code (\"other\": codes beyond the 64 distinct ones of 1024 and up that are counted apart) "+
		"and whether the broker serves that code (served=\"false\": answered REQUEST_CODE_NOT_SUPPORTED).",
	[]string{"code", "served"}, nil)

// AttachRequestCounts adds petrel_remoting_requests_total, read from
// counts (remoting.Server.RequestCounts) and served (Server.Codes) at
// every scrape. Call it once.
func (m *Metrics) AttachRequestCounts(counts func() map[int32]uint64, served func() []int32) {
	m.reg.MustRegister(requestCollector{counts, served})
}

type requestCollector struct {
	counts func() map[int32]uint64
	served func() []int32
}

func (requestCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRemotingRequests }

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	served := map[int32]bool{}
	for _, code := range c.served() {
		served[code] = true
	}
	for code, n := range c.counts() {
		label, ok := strconv.Itoa(int(code)), served[code]
		if code == remoting.OtherRequestCode {
			label = "other"
		}
		ch <- prometheus.MustNewConstMetric(descRemotingRequests, prometheus.CounterValue, float64(n), label, strconv.FormatBool(ok))
	}
}
