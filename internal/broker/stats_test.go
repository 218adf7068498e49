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
