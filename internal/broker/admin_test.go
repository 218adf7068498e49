package broker

import (
	"slices"
	"testing"
	"time"
)

func TestConsumerMembersListsEachConnection(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	if got := e.b.ConsumerMembers("g"); got != nil {
		t.Fatalf("members of an unknown group: %+v", got)
	}
	e.subscribe(7, "client-b", "g", "T", "*")
	e.subscribe(3, "client-a", "g", "T", "TagA")
	got := e.b.ConsumerMembers("g")
	if len(got) != 2 || got[0].Conn != 3 || got[0].ClientID != "client-a" || got[1].Conn != 7 || got[1].ClientID != "client-b" {
		t.Fatalf("members %+v", got)
	}
	if got[0].Subscriptions[0].Expression != "TagA" || got[0].MessageModel != "CLUSTERING" {
		t.Fatalf("member data %+v", got[0].ConsumerData)
	}
}

func TestTopicStatsGivesOffsetsAndLastStoreTime(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	e.send("T", 1, "a")
	e.clk.Advance(time.Second)
	e.send("T", 1, "b")
	got, err := e.b.TopicStats("T")
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueStat{
		{QueueID: 0},
		{QueueID: 1, MinOffset: 0, MaxOffset: 2, LastStoreTime: e.clk.Now().UnixMilli()},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	_, err = e.b.TopicStats("Nope")
	wantKind(t, err, KindTopicNotExist, "Nope")
}

func TestConsumeStatsAndGroupNotKnown(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	for range 3 {
		e.send("T", 0, "m")
	}
	_, err := e.b.ConsumeStats("ghost", "")
	wantKind(t, err, KindGroupNotExist, "ghost")
	e.subscribe(1, "c1", "g", "T", "*")
	e.b.UpdateConsumerOffset("g", "T", 0, 1)
	got, err := e.b.ConsumeStats("g", "")
	if err != nil {
		t.Fatal(err)
	}
	// The member's subscription to T and the retry topic the heartbeat
	// created have no offsets; only T was subscribed.
	want := []ConsumeStat{
		{Topic: "T", QueueID: 0, BrokerOffset: 3, ConsumerOffset: 1, LastTimestamp: e.clk.Now().UnixMilli(), PullOffset: 1},
		{Topic: "T", QueueID: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("consume stats\n got %+v\nwant %+v", got, want)
	}
	_, err = e.b.ConsumeStats("g", "Nope")
	wantKind(t, err, KindTopicNotExist)
}

func TestResetOffsetByTimeEarliestAndLatest(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.send("T", 0, "old")
	e.clk.Advance(time.Minute)
	mark := e.clk.Now().UnixMilli()
	e.send("T", 0, "new1")
	e.send("T", 0, "new2")
	e.b.UpdateConsumerOffset("g", "T", 0, 3)

	got, err := e.b.ResetOffset("g", "T", mark)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 {
		t.Fatalf("reset to %d: offsets %v, want queue 0 at 1", mark, got)
	}
	if off, _ := e.b.QueryConsumerOffset("g", "T", 0); off != 1 {
		t.Fatalf("committed offset after reset: %d, want 1", off)
	}
	if got, _ := e.b.ResetOffset("g", "T", 0); got[0] != 0 {
		t.Fatalf("reset to earliest: %v", got)
	}
	if got, _ := e.b.ResetOffset("g", "T", -1); got[0] != 3 {
		t.Fatalf("reset to latest: %v", got)
	}
	_, err = e.b.ResetOffset("ghost", "T", 0)
	wantKind(t, err, KindGroupNotExist)
	_, err = e.b.ResetOffset("g", "Nope", 0)
	wantKind(t, err, KindTopicNotExist)
}

func TestDiskUsageReportsTheDataDevice(t *testing.T) {
	e := newEnv(t)
	u, err := e.b.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes == 0 || u.FreeBytes > u.TotalBytes {
		t.Fatalf("usage %+v", u)
	}
}
