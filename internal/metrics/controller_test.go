package metrics

import (
	"testing"

	"github.com/petrelmq/petrel/internal/controller"
)

// TestControllerSeries: every election reason has its counter from the
// start; the values are read at scrape time.
func TestControllerSeries(t *testing.T) {
	m := New(Options{})
	stats := controller.ServiceStats{}
	m.AttachController(func() controller.ServiceStats { return stats })
	scrape := func() (map[string]float64, map[string]float64) {
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		elections, other := map[string]float64{}, map[string]float64{}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "petrel_controller_elections_total":
				for _, s := range mf.GetMetric() {
					elections[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
				}
			case "petrel_controller_lease_grants_total", "petrel_controller_lease_denials_total":
				other[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
			case "petrel_controller_leader":
				other[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return elections, other
	}
	el, other := scrape()
	if len(el) != 4 || len(other) != 3 {
		t.Fatalf("before any election: %v %v; want 4 reasons and 3 series", el, other)
	}
	for r, v := range el {
		if v != 0 {
			t.Fatalf("reason %s at %v before any election", r, v)
		}
	}
	stats = controller.ServiceStats{Elections: map[string]uint64{"master-lost": 2, "transfer": 1}, LeaseGrants: 7, LeaseDenials: 3, Leading: true}
	el, other = scrape()
	if el["master-lost"] != 2 || el["transfer"] != 1 || el["offline"] != 0 || other["petrel_controller_lease_grants_total"] != 7 ||
		other["petrel_controller_lease_denials_total"] != 3 || other["petrel_controller_leader"] != 1 {
		t.Fatalf("after elections: %v %v", el, other)
	}
}
