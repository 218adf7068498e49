package namesrv

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
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

func TestRMQRegisterRequestsMatchTheRegistrarsOldOnes(t *testing.T) {
	bi := BrokerInfo{Cluster: "c", Name: "b", ID: 1, Addr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912"}
	r := NewRegistrar(nil, nil, bi, RegistrarOptions{CompressAboveBytes: 300})
	id := rmq.BrokerIdentity{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911", BrokerID: 1}
	topics := map[string]TopicConfig{"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}}
	wire := map[string]rmq.RegisteredTopic{"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}}
	v := DataVersion{Timestamp: 5, Counter: 6}
	rv := rmq.DataVersion{Timestamp: 5, Counter: 6}

	old := r.fullRequest(topics, 1, v)
	got := rmq.EncodeRegisterBroker(rmq.RegisterBrokerRequest{BrokerIdentity: id, HAServerAddr: bi.HAServerAddr}, rmq.EncodeRegisterBrokerBody(wire, rv))
	sameCommand(t, "full", old, got)

	big := map[string]TopicConfig{}
	bigWire := map[string]rmq.RegisteredTopic{}
	for _, n := range []string{"T1", "T2", "T3", "T4"} {
		big[n] = TopicConfig{TopicName: n, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"}
		bigWire[n] = rmq.RegisteredTopic{TopicName: n, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	}
	old = r.fullRequest(big, 2, v)
	got = rmq.EncodeRegisterBroker(rmq.RegisterBrokerRequest{BrokerIdentity: id, HAServerAddr: bi.HAServerAddr, Zlib: true},
		rmq.Deflate(rmq.EncodeRegisterBrokerBody(bigWire, rv)))
	sameCommand(t, "full zlib", old, got)

	base := DataVersion{Timestamp: 4, Counter: 5}
	old = r.deltaRequest(base, v, topics, []string{"Z"})
	got = rmq.EncodeRegisterBroker(rmq.RegisterBrokerRequest{BrokerIdentity: id, HAServerAddr: bi.HAServerAddr, Delta: true,
		BaseVersion: rmq.DataVersion{Timestamp: 4, Counter: 5}},
		rmq.EncodeDeltaRegisterBody(rmq.DeltaRegisterBody{DataVersion: rv, TopicConfigTable: wire, RemovedTopics: []string{"Z"}}))
	sameCommand(t, "delta", old, got)

	old = remoting.NewRequest(rmq.CodeUnregisterBroker, r.identityExt(), nil)
	got = rmq.EncodeUnregisterBroker(rmq.UnregisterBrokerRequest{BrokerIdentity: id, HAServerAddr: bi.HAServerAddr})
	sameCommand(t, "unregister", old, got)
}

func sameCommand(t *testing.T, what string, old, got *remoting.Command) {
	t.Helper()
	if old.Code != got.Code || !maps.Equal(old.ExtFields, got.ExtFields) || !bytes.Equal(old.Body, got.Body) {
		t.Fatalf("%s: rmq sends %d %v %q\nthe registrar sent %d %v %q", what, got.Code, got.ExtFields, got.Body, old.Code, old.ExtFields, old.Body)
	}
	t.Logf("%s: %v", what, got.ExtFields)
}
