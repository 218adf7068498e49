package broker

import (
	"context"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestBrokerKeepsItsMetadataInTheTablesItIsGiven: a broker over the
// in-memory meta twin creates its template topic, topics, groups and
// consumer offsets there, and reads them back from there; the store's own
// meta store is not touched.
func TestBrokerKeepsItsMetadataInTheTablesItIsGiven(t *testing.T) {
	clk := clock.NewManual(t0)
	logger := storetest.Logger(t)
	st, err := store.Open(storetest.SmallConfig(vfs.NewMem(), clk, logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	md := meta.NewMem(clk)
	cfg := DefaultConfig()
	cfg.Clock, cfg.Logger = clk, logger
	b, err := New(st, md, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	if _, ok := md.Topic(TemplateTopic); !ok {
		t.Fatalf("the template topic %s is not in the given tables", TemplateTopic)
	}
	if err := b.CreateTopic(topicCfg("orders", 2, 6)); err != nil {
		t.Fatal(err)
	}
	if got, ok := md.Topic("orders"); !ok || got.WriteQueueNums != 2 {
		t.Fatalf("created topic in the tables: %+v, %v", got, ok)
	}
	if _, ok := b.Topic("orders"); !ok {
		t.Fatal("the broker does not read its topics from the given tables")
	}
	if err := b.UpdateGroup(GroupConfig{Name: "cg", ConsumeEnable: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := md.Group("cg"); !ok {
		t.Fatal("updated group is not in the given tables")
	}
	res, err := b.Send(context.Background(), sendReq("orders", 1, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	b.UpdateConsumerOffset("cg", "orders", 1, res.QueueOffset+1)
	if off, ok := md.Offset("cg", "orders", 1); !ok || off != res.QueueOffset+1 {
		t.Fatalf("committed offset in the tables: %d, %v", off, ok)
	}
	if off, ok := b.QueryConsumerOffset("cg", "orders", 1); !ok || off != res.QueueOffset+1 {
		t.Fatalf("QueryConsumerOffset = %d, %v", off, ok)
	}
	if v := b.TopicsVersion(); v.Counter != md.TopicsVersion().Counter || v.Counter < 2 {
		t.Fatalf("TopicsVersion %+v, tables' %+v", v, md.TopicsVersion())
	}
	if err := b.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := md.Topic("orders"); ok {
		t.Fatal("deleted topic still in the tables")
	}
	if _, ok := md.Offset("cg", "orders", 1); ok {
		t.Fatal("the deleted topic's offsets are still in the tables")
	}

	own := st.Meta()
	if ts, gs, os := own.Topics(), own.Groups(), own.AllOffsets(); len(ts)+len(gs)+len(os) != 0 {
		t.Fatalf("the broker wrote to the store's own meta store: %+v %+v %+v", ts, gs, os)
	}
}
