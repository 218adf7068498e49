package namesrv

import (
	"encoding/json"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// The rmq encoders write byte for byte what the name server's own
// encoders wrote before the codec moved to rmq.
func TestRMQEncodersMatchTheNameServersOldBytes(t *testing.T) {
	topics := map[string]TopicConfig{
		"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		"B": {TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true},
	}
	wire := map[string]rmq.RegisteredTopic{}
	for k, v := range topics {
		wire[k] = rmq.RegisteredTopic{TopicName: v.TopicName, ReadQueueNums: v.ReadQueueNums, WriteQueueNums: v.WriteQueueNums,
			Perm: v.Perm, TopicFilterType: v.TopicFilterType, TopicSysFlag: v.TopicSysFlag, Order: v.Order}
	}
	v := DataVersion{Timestamp: 1700, Counter: 9}
	rv := rmq.DataVersion{Timestamp: 1700, Counter: 9}
	same(t, "103 full", encodeRegisterBody(topics, v), rmq.EncodeRegisterBrokerBody(wire, rv))
	same(t, "103 full empty", encodeRegisterBody(nil, v), rmq.EncodeRegisterBrokerBody(nil, rv))
	same(t, "103 delta", encodeDeltaBody(v, topics, []string{"C", "D"}),
		rmq.EncodeDeltaRegisterBody(rmq.DeltaRegisterBody{DataVersion: rv, TopicConfigTable: wire, RemovedTopics: []string{"C", "D"}}))
	same(t, "103 delta empty", encodeDeltaBody(v, nil, nil), rmq.EncodeDeltaRegisterBody(rmq.DeltaRegisterBody{DataVersion: rv}))
	if v.String() != rv.String() {
		t.Fatalf("data version %s vs %s", v, rv)
	}
	if bodyCRC([]byte("hello")) != rmq.BodyCRC([]byte("hello")) {
		t.Fatal("crc differs")
	}

	rd := RouteData{
		BrokerDatas:    []BrokerData{{BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1", 1: "1:2"}}, {BrokerName: "b"}},
		QueueDatas:     []QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
		OrderTopicConf: "a:4",
	}
	old, _ := json.Marshal(rd)
	same(t, "105", old, rmq.EncodeTopicRouteDataBody(rmq.TopicRouteData{
		BrokerDatas:    []rmq.BrokerData{{BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1", 1: "1:2"}}, {BrokerName: "b"}},
		QueueDatas:     []rmq.QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
		OrderTopicConf: "a:4",
	}))
	old, _ = json.Marshal(RouteData{})
	same(t, "105 empty", old, rmq.EncodeTopicRouteDataBody(rmq.TopicRouteData{}))
	ci := ClusterInfo{BrokerAddrTable: map[string]BrokerData{"a": {BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1"}}},
		ClusterAddrTable: map[string][]string{"c": {"a"}}}
	old, _ = json.Marshal(ci)
	same(t, "106", old, rmq.EncodeClusterInfoBody(rmq.ClusterInfo{
		BrokerAddrTable:  map[string]rmq.BrokerData{"a": {BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1"}}},
		ClusterAddrTable: map[string][]string{"c": {"a"}}}))
	old, _ = json.Marshal(struct {
		TopicList []string `json:"topicList"`
	}{[]string{"A", "B"}})
	same(t, "206", old, rmq.EncodeTopicListBody(rmq.TopicListBody{TopicList: []string{"A", "B"}}))
	old, _ = json.Marshal(kvTable{Table: map[string]string{"T": "a:4;b:4"}})
	same(t, "219", old, rmq.EncodeKVTableBody(rmq.KVTable{Table: map[string]string{"T": "a:4;b:4"}}))
}

func same(t *testing.T, what string, old, got []byte) {
	t.Helper()
	if string(old) != string(got) {
		t.Fatalf("%s: rmq writes\n%s\nthe name server wrote\n%s", what, got, old)
	}
	t.Logf("%s: %s", what, got)
}
