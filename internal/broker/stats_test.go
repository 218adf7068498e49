package broker

import (
	"testing"
	"time"
)

func TestTrafficAndThroughput(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.createTopic("U", 1)
	if p, g := e.b.Throughput(time.Minute); p != 0 || g != 0 {
		t.Fatalf("throughput before any sample: %v %v", p, g)
	}
	e.clk.Advance(time.Second) // first sample: nothing yet
	for range 4 {
		e.send("T", 0, "0123456789")
	}
	e.send("U", 0, "x")
	e.waitMax("T", 0, 4)
	e.subscribe(1, "client-1", "g", "T", "*")
	p := e.mustPull(pullReq("g", "T", 0, 0))
	if len(p.bodies) != 4 {
		t.Fatalf("pulled %d, want 4", len(p.bodies))
	}
	tot := e.b.TotalTraffic()
	if tot.PutMsgs != 5 || tot.GetMsgs != 4 || tot.PutBytes == 0 || tot.GetBytes == 0 {
		t.Fatalf("totals %+v", tot)
	}
	tt := e.b.TopicTraffic()
	if len(tt) != 2 || tt[0].Topic != "T" || tt[0].PutMsgs != 4 || tt[0].GetMsgs != 4 || tt[1].Topic != "U" || tt[1].PutMsgs != 1 {
		t.Fatalf("per topic %+v", tt)
	}
	// A record is the body plus its fixed fields, topic and properties:
	// what was got of T is what was put to it.
	if tt[0].PutBytes != tt[0].GetBytes || tt[0].PutBytes <= 40 {
		t.Fatalf("T bytes put %d got %d", tt[0].PutBytes, tt[0].GetBytes)
	}
	e.clk.Advance(time.Second) // second sample
	put, got := e.b.Throughput(time.Minute)
	if put != 5 || got != 4 {
		t.Fatalf("throughput over 1 s: put %v got %v, want 5 and 4", put, got)
	}
	e.clk.Advance(time.Second)
	if put, _ := e.b.Throughput(2 * time.Second); put != 2.5 {
		t.Fatalf("throughput over 2 s: %v, want 2.5", put)
	}
	if !e.b.Started().Equal(e.clk.Now().Add(-3 * time.Second)) {
		t.Fatalf("started %v, now %v", e.b.Started(), e.clk.Now())
	}
}

func TestDeletedTopicLeavesTheTraffic(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "m")
	if err := e.b.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	if tt := e.b.TopicTraffic(); len(tt) != 0 {
		t.Fatalf("traffic of a deleted topic: %+v", tt)
	}
	if tot := e.b.TotalTraffic(); tot.PutMsgs != 1 {
		t.Fatalf("totals %+v: the broker's totals keep what was put", tot)
	}
}

// TestStatsWindows: the minute, hour and day windows of a topic's puts, a
// group's gets of it and the broker's totals, from 10 s samples: a counter
// first seen is counted from the sample before it existed, before its
// own first sample too; once the minute
// ring is full the minute is the last 60 s; the hour and day still count
// from the first sample; a deleted group's and topic's windows go.
func TestStatsWindows(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.subscribe(1, "client-1", "g", "T", "*")
	e.clk.Advance(10 * time.Second) // the first 10 s sample: no counter of T yet
	for range 6 {
		e.send("T", 0, "m")
	}
	e.waitMax("T", 0, 6)
	if p := e.mustPull(pullReq("g", "T", 0, 0)); len(p.bodies) != 6 {
		t.Fatalf("pulled %d, want 6", len(p.bodies))
	}
	if w, ok := e.b.StatsWindows(StatsTopicPutMsgs, "T", ""); !ok || w.Minute.Sum != 6 || w.Day.Sum != 6 || w.Minute.Span != 0 {
		t.Fatalf("windows of T before its first sample: %+v (found %v), want 6 since the last sample", w, ok)
	}
	e.clk.Advance(10 * time.Second)
	for _, k := range []struct {
		kind         StatsKind
		topic, group string
	}{{StatsTopicPutMsgs, "T", ""}, {StatsGroupGetMsgs, "T", "g"}} {
		w, ok := e.b.StatsWindows(k.kind, k.topic, k.group)
		if !ok || w.Minute.Sum != 6 || w.Minute.Span != 10*time.Second || w.Minute.TPS() != 0.6 || w.Day.Sum != 6 {
			t.Fatalf("%v of %s/%s after one sample: %+v (found %v), want 6 over 10 s", k.kind, k.topic, k.group, w, ok)
		}
	}
	if w, ok := e.b.StatsWindows(StatsGroupGetBytes, "T", "g"); !ok || w.Minute.Sum == 0 {
		t.Fatalf("bytes got by g: %+v", w)
	}
	if _, ok := e.b.StatsWindows(StatsGroupGetMsgs, "T", "other"); ok {
		t.Fatal("windows of a group that got nothing")
	}
	e.clk.Advance(60 * time.Second) // six more samples: the minute ring is full
	for range 3 {
		e.send("T", 0, "m")
	}
	e.waitMax("T", 0, 9)
	w, _ := e.b.StatsWindows(StatsTopicPutMsgs, "T", "")
	if w.Minute.Sum != 3 || w.Minute.Span != time.Minute || w.Hour.Sum != 9 || w.Hour.Span != 70*time.Second || w.Day.Sum != 9 {
		t.Fatalf("windows of T: %+v, want 3 in the last minute and 9 in the hour and day", w)
	}
	if w, ok := e.b.StatsWindows(StatsBrokerPutMsgs, "", ""); !ok || w.Minute.Sum != 3 || w.Day.Sum != 9 || w.Day.Span != 80*time.Second {
		t.Fatalf("broker puts: %+v, want 3 in the last minute and 9 over the 80 s since start", w)
	}
	if w, _ := e.b.StatsWindows(StatsBrokerGetMsgs, "", ""); w.Day.Sum != 6 {
		t.Fatalf("broker gets: %+v, want 6", w)
	}
	if err := e.b.DeleteGroup("g", true); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.b.StatsWindows(StatsGroupGetMsgs, "T", "g"); ok {
		t.Fatal("a deleted group still has windows")
	}
	if err := e.b.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Second)
	if _, ok := e.b.StatsWindows(StatsTopicPutMsgs, "T", ""); ok {
		t.Fatal("a deleted topic still has windows")
	}
	if n := len(e.b.stats.win.topics) + len(e.b.stats.win.groups); n != 0 {
		t.Fatalf("%d windows left after the topic and group were deleted", n)
	}
}
