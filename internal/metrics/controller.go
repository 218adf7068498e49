package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/controller/fsm"
)

var (
	descCtlElections = prometheus.NewDesc("petrel_controller_elections_total",
		"Masters this controller elected while it led, by reason: master-lost (session and lease expired), "+
			"offline (a group without a master), transfer (a master resigned), elect-master (an operator).",
		[]string{"reason"}, nil)
	descCtlLeaseGrants = prometheus.NewDesc("petrel_controller_lease_grants_total",
		"Master heartbeats this controller answered with a lease.", nil, nil)
	descCtlLeaseDenials = prometheus.NewDesc("petrel_controller_lease_denials_total",
		"Master heartbeats answered without a lease (not the committed master, leadership unconfirmed, an election in flight).", nil, nil)
	descCtlLeader = prometheus.NewDesc("petrel_controller_leader",
		"1 while this controller voter leads (and has caught up with the log), else 0.", nil, nil)
)

// electionReasons are the reasons every scrape reports (at zero until
// the first election of each).
var electionReasons = []string{fsm.ReasonMasterLost, fsm.ReasonOffline, fsm.ReasonTransfer, fsm.ReasonOperator}

// AttachController adds the controller service's series, read from stats
// at every scrape (install (*controller.Service).Stats). Call it once.
func (m *Metrics) AttachController(stats func() controller.ServiceStats) {
	m.reg.MustRegister(controllerCollector{stats})
}

type controllerCollector struct {
	stats func() controller.ServiceStats
}

func (controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCtlElections
	ch <- descCtlLeaseGrants
	ch <- descCtlLeaseDenials
	ch <- descCtlLeader
}

func (c controllerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, r := range electionReasons {
		ch <- prometheus.MustNewConstMetric(descCtlElections, prometheus.CounterValue, float64(s.Elections[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descCtlLeaseGrants, prometheus.CounterValue, float64(s.LeaseGrants))
	ch <- prometheus.MustNewConstMetric(descCtlLeaseDenials, prometheus.CounterValue, float64(s.LeaseDenials))
	leader := 0.0
	if s.Leading {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descCtlLeader, prometheus.GaugeValue, leader)
}
