package meta

import (
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
)

// TestMemReturnsCopies: unlike Store, whose readers share the stored maps
// (callers must not modify them), Mem hands out copies, so a test that
// writes to a returned value cannot change the twin's state.
func TestMemReturnsCopies(t *testing.T) {
	m := NewMem(clock.NewManual(epoch))
	tp := topic("A", 1)
	tp.Attributes = map[string]string{"k": "v"}
	must(t, m.PutTopic(tp))
	g := Group{Name: "g", Attributes: map[string]string{"k": "v"},
		GroupRetryPolicy:    &RetryPolicy{Customized: &CustomizedRetry{Next: []int64{1}}},
		SubscriptionDataSet: []SimpleSubscription{{Topic: "A"}}}
	must(t, m.PutGroup(g))

	got, _ := m.Topic("A")
	got.Attributes["k"] = "x"
	at, _, _ := m.TopicAt("A")
	at.Attributes["k"] = "x"
	all, _ := m.TopicsAt()
	all[0].Attributes["k"] = "x"
	m.Topics()[0].Attributes["k"] = "x"
	cur, _, err := m.EnsureTopic(topic("A", 9))
	must(t, err)
	cur.Attributes["k"] = "x"
	if now, _ := m.Topic("A"); now.Attributes["k"] != "v" {
		t.Fatalf("a write to a returned topic reached the twin: %v", now.Attributes)
	}

	gr, _ := m.Group("g")
	gr.Attributes["k"] = "x"
	gr.GroupRetryPolicy.Customized.Next[0] = 9
	gr.SubscriptionDataSet[0].Topic = "B"
	gs := m.Groups()
	gs[0].Attributes["k"] = "x"
	if now, _ := m.Group("g"); now.Attributes["k"] != "v" || now.GroupRetryPolicy.Customized.Next[0] != 1 ||
		now.SubscriptionDataSet[0].Topic != "A" {
		t.Fatalf("a write to a returned group reached the twin: %+v", now)
	}
}

// TestMemNilClock: a nil clock is the real one.
func TestMemNilClock(t *testing.T) {
	m := NewMem(nil)
	must(t, m.PutTopic(topic("A", 1)))
	if v := m.TopicsVersion(); v.Counter != 1 || v.Timestamp <= epoch.UnixMilli() {
		t.Fatalf("version with the real clock = %+v", v)
	}
}
