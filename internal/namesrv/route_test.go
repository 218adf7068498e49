package namesrv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func topic(name string, queues int32, perm int32) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}

func full(cluster, name string, id int64, addr string, v int64, topics ...TopicConfig) Registration {
	m := map[string]TopicConfig{}
	for _, tc := range topics {
		m[tc.TopicName] = tc
	}
	return Registration{Broker: BrokerID{Cluster: cluster, Name: name, ID: id}, Addr: addr,
		Version: DataVersion{Timestamp: 1, Counter: v}, Topics: m}
}

func mustRoute(t *testing.T, tb *Table, topicName string) RouteData {
	t.Helper()
	rd, ok := tb.Route(topicName)
	if !ok {
		t.Fatalf("no route for %q", topicName)
	}
	return rd
}

func routeJSON(t *testing.T, rd RouteData) string {
	t.Helper()
	b, err := json.Marshal(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRegisterBuildsRouteJSONTheGoClientReads(t *testing.T) {
	tb := NewTable()
	tb.Register(full("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", 1, topic("T", 4, 6)), t0)
	got := routeJSON(t, mustRoute(t, tb, "T"))
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4,"topicSysFlag":0}]}`
	if got != want {
		t.Fatalf("route JSON\n got %s\nwant %s", got, want)
	}
	if _, ok := tb.Route("other"); ok {
		t.Fatal("route for an unregistered topic")
	}
}

func TestRouteWithSeveralBrokersAndASlave(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c1", "broker-b", 0, "10.0.0.2:10911", 1, topic("T", 8, 6), topic("OnlyB", 1, 6)), t0)
	tb.Register(full("c1", "broker-a", 0, "10.0.0.1:10911", 1, topic("T", 4, 6)), t0)
	// The slave lists other topics: slaves contribute addresses only.
	res := tb.Register(full("c1", "broker-a", 1, "10.0.0.3:10911", 1, topic("SlaveOnly", 4, 6)), t0)
	if res.MasterAddr != "10.0.0.1:10911" {
		t.Fatalf("slave's master address %q", res.MasterAddr)
	}
	rd := mustRoute(t, tb, "T")
	want := RouteData{
		BrokerDatas: []BrokerData{
			{BrokerName: "broker-a", Cluster: "c1", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.3:10911"}},
			{BrokerName: "broker-b", Cluster: "c1", BrokerAddrs: map[int64]string{0: "10.0.0.2:10911"}},
		},
		FilterServerTable: map[string][]string{},
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4},
			{BrokerName: "broker-b", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8},
		},
	}
	if !reflect.DeepEqual(rd, want) {
		t.Fatalf("route\n got %+v\nwant %+v", rd, want)
	}
	if s := routeJSON(t, rd); !strings.Contains(s, `"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.3:10911"}`) {
		t.Fatalf("brokerAddrs not compact: %s", s)
	}
	if _, ok := tb.Route("SlaveOnly"); ok {
		t.Fatal("a slave's topic got a route")
	}
	if got := tb.Topics(); !reflect.DeepEqual(got, []string{"OnlyB", "T"}) {
		t.Fatalf("topics %v", got)
	}
}

func TestBrokersExpireAfter120sOfSilence(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "a", 0, "A:1", 1, topic("T", 4, 6)), t0)
	tb.Register(full("c", "b", 0, "B:1", 1, topic("T", 4, 6)), t0)
	tb.Register(full("c", "a", 1, "A:2", 1), t0)
	// b keeps heart-beating.
	tb.Register(full("c", "b", 0, "B:1", 1, topic("T", 4, 6)), t0.Add(60*time.Second))
	if gone := tb.Expire(t0.Add(120*time.Second), 120*time.Second); len(gone) != 0 {
		t.Fatalf("expired at exactly 120 s: %v", gone)
	}
	gone := tb.Expire(t0.Add(120*time.Second+time.Millisecond), 120*time.Second)
	if !reflect.DeepEqual(gone, []string{"A:1", "A:2"}) {
		t.Fatalf("expired %v", gone)
	}
	rd := mustRoute(t, tb, "T")
	if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "b" || len(rd.BrokerDatas) != 1 {
		t.Fatalf("route after expiry %+v", rd)
	}
	if gone := tb.Expire(t0.Add(181*time.Second), 120*time.Second); !reflect.DeepEqual(gone, []string{"B:1"}) {
		t.Fatalf("expired %v", gone)
	}
	if _, ok := tb.Route("T"); ok {
		t.Fatal("route survives all brokers")
	}
	if len(tb.Topics()) != 0 || len(tb.ClusterInfo().BrokerAddrTable) != 0 {
		t.Fatal("state left after all brokers expired")
	}
}

// TestMasterGoneKeepsQueueDataWithSlave: with replication (issue 16) a
// broker name whose master is gone stays routed through its slave (this
// test asserted the opposite before slaves served reads; see
// TestSlaveKeepsItsGroupRoutedWhileTheMasterIsGone).
func TestMasterGoneKeepsQueueDataWithSlave(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "a", 0, "A:1", 1, topic("T", 4, 6)), t0)
	tb.Register(full("c", "a", 1, "A:2", 1), t0)
	tb.Unregister("c", "a", 0, "other:1") // wrong address: ignored
	mustRoute(t, tb, "T")
	tb.Unregister("c", "a", 0, "A:1")
	rd := mustRoute(t, tb, "T")
	if got := rd.BrokerDatas[0].BrokerAddrs; len(rd.QueueDatas) != 1 || !reflect.DeepEqual(got, map[int64]string{1: "A:2"}) {
		t.Fatalf("route without a master: %+v", rd)
	}
	ci := tb.ClusterInfo()
	if got := ci.BrokerAddrTable["a"].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{1: "A:2"}) {
		t.Fatalf("cluster info addrs %v", got)
	}
}

func TestDeleteTopic(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "a", 0, "A:1", 1, topic("T", 4, 6), topic("U", 4, 6)), t0)
	tb.Register(full("c", "b", 0, "B:1", 1, topic("T", 4, 6)), t0)
	tb.DeleteTopic("T")
	if _, ok := tb.Route("T"); ok {
		t.Fatal("deleted topic still routed")
	}
	mustRoute(t, tb, "U")
	// A full registration that still has the topic brings it back.
	tb.Register(full("c", "b", 0, "B:1", 2, topic("T", 4, 6)), t0)
	if rd := mustRoute(t, tb, "T"); len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("route %+v", rd)
	}
}

func TestClusterInfo(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c1", "a", 0, "A:1", 1), t0)
	tb.Register(full("c1", "a", 1, "A:2", 1), t0)
	tb.Register(full("c1", "b", 0, "B:1", 1), t0)
	tb.Register(full("c2", "x", 0, "X:1", 1), t0)
	ci := tb.ClusterInfo()
	b, _ := json.Marshal(ci)
	want := `{"brokerAddrTable":{"a":{"brokerAddrs":{"0":"A:1","1":"A:2"},"brokerName":"a","cluster":"c1"},` +
		`"b":{"brokerAddrs":{"0":"B:1"},"brokerName":"b","cluster":"c1"},"x":{"brokerAddrs":{"0":"X:1"},"brokerName":"x","cluster":"c2"}},` +
		`"clusterAddrTable":{"c1":["a","b"],"c2":["x"]}}`
	if string(b) != want {
		t.Fatalf("cluster info\n got %s\nwant %s", b, want)
	}
}

func TestDeltaRegistration(t *testing.T) {
	tb := NewTable()
	v1 := DataVersion{Timestamp: 1, Counter: 1}
	v2 := DataVersion{Timestamp: 1, Counter: 2}
	id := BrokerID{Cluster: "c", Name: "a"}
	delta := func(base, v DataVersion, changed []TopicConfig, removed ...string) Registration {
		m := map[string]TopicConfig{}
		for _, tc := range changed {
			m[tc.TopicName] = tc
		}
		return Registration{Broker: id, Addr: "A:1", Delta: true, BaseVersion: base, Version: v, Topics: m, Removed: removed}
	}
	// Unknown broker: a delta is refused.
	if res := tb.Register(delta(v1, v2, nil), t0); !res.NeedFull {
		t.Fatal("delta from an unknown broker accepted")
	}
	tb.Register(full("c", "a", 0, "A:1", 1, topic("T", 4, 6), topic("U", 4, 6)), t0)
	// Wrong base: refused, nothing changes.
	if res := tb.Register(delta(v2, v2, []TopicConfig{topic("V", 1, 6)}), t0); !res.NeedFull || res.Version != v1 {
		t.Fatalf("delta on a wrong base: %+v", res)
	}
	if _, ok := tb.Route("V"); ok {
		t.Fatal("refused delta applied")
	}
	res := tb.Register(delta(v1, v2, []TopicConfig{topic("V", 2, 6), topic("T", 8, 6)}, "U"), t0.Add(30*time.Second))
	if res.NeedFull || res.Version != v2 {
		t.Fatalf("delta refused: %+v", res)
	}
	if got := tb.Topics(); !reflect.DeepEqual(got, []string{"T", "V"}) {
		t.Fatalf("topics after delta %v", got)
	}
	if rd := mustRoute(t, tb, "T"); rd.QueueDatas[0].WriteQueueNums != 8 {
		t.Fatalf("changed topic not applied: %+v", rd)
	}
	// An empty delta at the current version is a heartbeat: it keeps the
	// broker alive.
	tb.Register(delta(v2, v2, nil), t0.Add(100*time.Second))
	if gone := tb.Expire(t0.Add(200*time.Second), 120*time.Second); len(gone) != 0 {
		t.Fatalf("heartbeat did not refresh: %v expired", gone)
	}
	// A delta from another address is refused (a restarted process).
	r := delta(v2, v2, nil)
	r.Addr = "A:9"
	if res := tb.Register(r, t0); !res.NeedFull {
		t.Fatal("delta from another address accepted")
	}
}

func TestDropSessionAndAddressReuse(t *testing.T) {
	tb := NewTable()
	r := full("c", "a", 0, "A:1", 1, topic("T", 4, 6))
	r.Session = 7
	tb.Register(r, t0)
	r2 := full("c", "b", 0, "B:1", 1, topic("T", 4, 6))
	r2.Session = 8
	tb.Register(r2, t0)
	if gone := tb.DropSession(0); len(gone) != 0 {
		t.Fatal("session 0 dropped something")
	}
	if gone := tb.DropSession(7); !reflect.DeepEqual(gone, []string{"A:1"}) {
		t.Fatalf("dropped %v", gone)
	}
	// A broker renamed on the same address replaces the old entry.
	tb.Register(full("c", "b2", 0, "B:1", 1, topic("T", 4, 6)), t0)
	rd := mustRoute(t, tb, "T")
	if len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerName != "b2" {
		t.Fatalf("route after rename %+v", rd)
	}
}

func TestOrderTopicConfFromKV(t *testing.T) {
	tb := NewTable()
	tb.Register(full("c", "a", 0, "A:1", 1, topic("T", 4, 6)), t0)
	tb.PutKV(OrderTopicNamespace, "T", "a:4")
	if s := routeJSON(t, mustRoute(t, tb, "T")); !strings.Contains(s, `,"orderTopicConf":"a:4"}`) {
		t.Fatalf("no orderTopicConf: %s", s)
	}
	if v, ok := tb.GetKV(OrderTopicNamespace, "T"); !ok || v != "a:4" {
		t.Fatal("GetKV")
	}
	m, ok := tb.KVList(OrderTopicNamespace)
	if !ok || !reflect.DeepEqual(m, map[string]string{"T": "a:4"}) {
		t.Fatalf("KVList %v", m)
	}
	tb.DeleteKV(OrderTopicNamespace, "T")
	if s := routeJSON(t, mustRoute(t, tb, "T")); strings.Contains(s, "orderTopicConf") {
		t.Fatalf("orderTopicConf after delete: %s", s)
	}
	if _, ok := tb.KVList(OrderTopicNamespace); ok {
		t.Fatal("empty namespace listed")
	}
}

func TestEmptyRouteDataEncodesArrays(t *testing.T) {
	got := routeJSON(t, RouteData{BrokerDatas: []BrokerData{{BrokerName: "x"}}})
	want := `{"brokerDatas":[{"brokerAddrs":{},"brokerName":"x","cluster":""}],"filterServerTable":{},"queueDatas":[]}`
	if got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}
