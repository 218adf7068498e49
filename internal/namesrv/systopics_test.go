package namesrv

import (
	"reflect"
	"testing"
	"time"
)

// TestTopicsByClusterAndSystemTopics: 224 lists the topics of the
// cluster's broker names only; 304 lists cluster and broker names and a
// master's address.
func TestTopicsByClusterAndSystemTopics(t *testing.T) {
	tb := NewTable()
	now := time.Unix(1000, 0)
	tb.Register(Registration{Broker: BrokerID{Cluster: "c1", Name: "b1", ID: MasterID}, Addr: "10.0.0.1:10911",
		Topics: map[string]TopicConfig{"A": {ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, "B": {ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}, now)
	tb.Register(Registration{Broker: BrokerID{Cluster: "c2", Name: "b2", ID: MasterID}, Addr: "10.0.0.2:10911",
		Topics: map[string]TopicConfig{"C": {ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}, now)
	if got := tb.TopicsByCluster("c1"); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Fatalf("c1: %v", got)
	}
	if got := tb.TopicsByCluster("nope"); len(got) != 0 {
		t.Fatalf("unknown cluster: %v", got)
	}
	names, addr := tb.SystemTopics()
	if !reflect.DeepEqual(names, []string{"b1", "b2", "c1", "c2"}) || addr != "10.0.0.1:10911" {
		t.Fatalf("system topics %v addr %q", names, addr)
	}
}
