package metrics

import (
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// TestRemotingLimitSeries: every limit has its counter from the start
// (zero until hit) and the read budget its gauge, read at scrape time.
func TestRemotingLimitSeries(t *testing.T) {
	m := New(Options{})
	stats := remoting.Stats{}
	m.AttachRemoting(func() remoting.Stats { return stats })
	scrape := func() (map[string]float64, float64) {
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		hits, budget := map[string]float64{}, -1.0
		for _, mf := range mfs {
			switch mf.GetName() {
			case "petrel_remoting_limit_hits_total":
				for _, s := range mf.GetMetric() {
					hits[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
				}
			case "petrel_remoting_read_budget_bytes":
				budget = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return hits, budget
	}
	hits, budget := scrape()
	if len(hits) != 7 || budget != 0 {
		t.Fatalf("before any hit: %v, budget %v; want 7 limits at 0 and a 0 budget", hits, budget)
	}
	for l, v := range hits {
		if v != 0 {
			t.Fatalf("limit %s at %v before any hit", l, v)
		}
	}
	stats = remoting.Stats{RefusedConnsPerIP: 3, FrameTimeouts: 1, WriteQueuePauses: 2, ReadBudgetBytes: 4096}
	hits, budget = scrape()
	if hits["max_conns_per_ip"] != 3 || hits["frame_timeout"] != 1 || hits["conn_write_queue"] != 2 || hits["max_conns"] != 0 || budget != 4096 {
		t.Fatalf("after hits: %v, budget %v", hits, budget)
	}
}

// TestRequestCountSeries: one series per code read, labelled with whether
// a handler serves it; the lumped codes as "other".
func TestRequestCountSeries(t *testing.T) {
	m := New(Options{})
	m.AttachRequestCounts(func() map[int32]uint64 {
		return map[int32]uint64{10: 5, 318: 2, remoting.OtherRequestCode: 7}
	}, func() []int32 { return []int32{10, 11} })
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "petrel_remoting_requests_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["code"]+"/"+l["served"]] = s.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"10/true": 5, "318/false": 2, "other/false": 7}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("series %v, want %v", got, want)
		}
	}
}
