package cli

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
)

func TestProducerListShowsConnectedProducers(t *testing.T) {
	c := startCluster(t)
	c.b.Core().Heartbeat(1<<62+11, broker.Heartbeat{ClientID: "shop-1", Producers: []string{"shop"}})
	c.b.Core().Heartbeat(1<<62+12, broker.Heartbeat{ClientID: "bill-1", Producers: []string{"billing"}})
	var ps []ProducerEntry
	c.mustJSON(&ps, func(cl *CLI) error { return cl.ProducerList(bg, "") })
	var groups []string
	for _, p := range ps {
		groups = append(groups, p.Group+"/"+p.ClientID)
	}
	if got := strings.Join(groups, ","); !strings.Contains(got, "billing/bill-1") || !strings.Contains(got, "shop/shop-1") {
		t.Fatalf("producers %v; want billing/bill-1 and shop/shop-1", got)
	}
	c.mustJSON(&ps, func(cl *CLI) error { return cl.ProducerList(bg, "shop") })
	if len(ps) != 1 || ps[0].ClientID != "shop-1" || ps[0].LastUpdate <= 0 {
		t.Fatalf("producers of shop %+v; want shop-1 alone with a last update", ps)
	}
	out := c.must(OutputTable, func(cl *CLI) error { return cl.ProducerList(bg, "shop") })
	if !strings.Contains(out, "shop-1") || strings.Contains(out, "bill-1") {
		t.Fatalf("producer list --group shop:\n%s", out)
	}
	out = c.must(OutputTable, func(cl *CLI) error { return cl.ProducerList(bg, "nobody") })
	if !strings.Contains(out, "No producer of group nobody") {
		t.Fatalf("producer list of an absent group:\n%s", out)
	}
}
