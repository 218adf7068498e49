package rmq

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// wantField asserts err is a *FieldError naming field.
func wantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), field) {
		t.Fatalf("%s: error %v, want a *FieldError naming %s", what, err, field)
	}
}

// roundTrip decodes what encode wrote from h and compares.
func roundTrip[T any](t *testing.T, what string, h T, encode func(T) *remoting.Command, decode func(*remoting.Command) (T, error), code int16) {
	t.Helper()
	c := encode(h)
	if c.Code != code {
		t.Fatalf("%s: code %d, want %d", what, c.Code, code)
	}
	got, err := decode(c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("%s: round trip\n %+v\nbecame\n %+v", what, h, got)
	}
}

func TestCreateTopicRoundTrip(t *testing.T) {
	h := CreateTopicRequest{Topic: "T", DefaultTopic: "TBW102", ReadQueueNums: 4, WriteQueueNums: 8, Perm: 6,
		TopicFilterType: "SINGLE_TAG", TopicSysFlag: 1, Order: true, Attributes: "+persistent=false,-a"}
	roundTrip(t, "17", h, EncodeCreateTopic, DecodeCreateTopic, CodeUpdateAndCreateTopic)
	roundTrip(t, "17 minimal", CreateTopicRequest{Topic: "T", ReadQueueNums: 1, WriteQueueNums: 1}, EncodeCreateTopic, DecodeCreateTopic, CodeUpdateAndCreateTopic)
	if _, ok := EncodeCreateTopic(CreateTopicRequest{Topic: "T"}).ExtFields["attributes"]; ok {
		t.Fatal("empty attributes are sent")
	}
}

// TestCreateTopicOfTheGoClient: the header rocketmq-client-go's admin
// CreateTopic sends (every field, numbers as %d) decodes.
func TestCreateTopicOfTheGoClient(t *testing.T) {
	c := remoting.NewRequest(CodeUpdateAndCreateTopic, map[string]string{
		"topic": "T", "defaultTopic": "defaultTopic", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, nil)
	h, err := DecodeCreateTopic(c)
	if err != nil || h.Topic != "T" || h.ReadQueueNums != 8 || h.WriteQueueNums != 8 || h.Perm != 6 || h.Order {
		t.Fatalf("%+v %v", h, err)
	}
}

// TestMalformedNumericFieldIsRefusedByName: a 17 with readQueueNums "x"
// is refused, and the remark names the field (it used to become 0).
func TestMalformedNumericFieldIsRefusedByName(t *testing.T) {
	ext := func(k, v string) map[string]string {
		m := map[string]string{"topic": "T", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicSysFlag": "0"}
		m[k] = v
		return m
	}
	for _, c := range []struct{ field, value, want string }{
		{"readQueueNums", "x", "32-bit"}, {"writeQueueNums", "99999999999", "32-bit"}, {"perm", "6.0", "32-bit"},
		{"topicSysFlag", "-", "32-bit"},
	} {
		_, err := DecodeCreateTopic(remoting.NewRequest(CodeUpdateAndCreateTopic, ext(c.field, c.value), nil))
		wantField(t, c.field+"="+c.value, err, c.field)
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.value) {
			t.Fatalf("remark %q does not say what was sent and what is wanted", err)
		}
	}
	for _, f := range []string{"topic", "readQueueNums", "writeQueueNums", "perm"} {
		m := ext("x", "")
		delete(m, f)
		_, err := DecodeCreateTopic(remoting.NewRequest(CodeUpdateAndCreateTopic, m, nil))
		wantField(t, "without "+f, err, f)
		if !strings.Contains(err.Error(), "missing") {
			t.Fatalf("remark %q does not say missing", err)
		}
	}
}

func TestSmallHeadersRoundTrip(t *testing.T) {
	roundTrip(t, "215", DeleteTopicRequest{Topic: "T"}, EncodeDeleteTopicInBroker, DecodeDeleteTopic, CodeDeleteTopicInBroker)
	roundTrip(t, "216", DeleteTopicRequest{Topic: "T"}, EncodeDeleteTopicInNamesrv, DecodeDeleteTopic, CodeDeleteTopicInNamesrv)
	roundTrip(t, "207", DeleteSubscriptionGroupRequest{GroupName: "g", CleanOffset: true}, EncodeDeleteSubscriptionGroup, DecodeDeleteSubscriptionGroup, CodeDeleteSubscriptionGroup)
	roundTrip(t, "207 keep", DeleteSubscriptionGroupRequest{GroupName: "g"}, EncodeDeleteSubscriptionGroup, DecodeDeleteSubscriptionGroup, CodeDeleteSubscriptionGroup)
	roundTrip(t, "105", RouteRequest{Topic: "T"}, EncodeRouteRequest, DecodeRouteRequest, CodeGetRouteInfoByTopic)
	roundTrip(t, "202", TopicStatsRequest{Topic: "T"}, EncodeTopicStatsRequest, DecodeTopicStatsRequest, CodeGetTopicStatsInfo)
	roundTrip(t, "203", ConsumerConnectionListRequest{ConsumerGroup: "g"}, EncodeConsumerConnectionListRequest, DecodeConsumerConnectionListRequest, CodeGetConsumerConnectionList)
	roundTrip(t, "208", ConsumeStatsRequest{ConsumerGroup: "g", Topic: "T"}, EncodeConsumeStatsRequest, DecodeConsumeStatsRequest, CodeGetConsumeStats)
	roundTrip(t, "208 all topics", ConsumeStatsRequest{ConsumerGroup: "g"}, EncodeConsumeStatsRequest, DecodeConsumeStatsRequest, CodeGetConsumeStats)
	roundTrip(t, "100", KVConfigRequest{Namespace: "ns", Key: "k", Value: "v"}, EncodePutKVConfig, DecodeKVConfig, CodePutKVConfig)
	roundTrip(t, "100 empty value", KVConfigRequest{Namespace: "ns", Key: "k"}, EncodePutKVConfig, DecodeKVConfig, CodePutKVConfig)
	roundTrip(t, "101", KVConfigRequest{Namespace: "ns", Key: "k"}, EncodeGetKVConfig, DecodeKVConfig, CodeGetKVConfig)
	roundTrip(t, "102", KVConfigRequest{Namespace: "ns", Key: "k"}, EncodeDeleteKVConfig, DecodeKVConfig, CodeDeleteKVConfig)
	roundTrip(t, "219", KVListRequest{Namespace: "ns"}, EncodeKVList, DecodeKVList, CodeGetKVListByNamespace)
	id := BrokerIdentity{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911", BrokerID: 2}
	roundTrip(t, "104", UnregisterBrokerRequest{BrokerIdentity: id, HAServerAddr: "127.0.0.1:10912"}, EncodeUnregisterBroker, DecodeUnregisterBroker, CodeUnregisterBroker)
	roundTrip(t, "322", QueryDataVersionRequest{BrokerIdentity: id, DataVersion: DataVersion{Timestamp: 1, Counter: 2}}, EncodeQueryDataVersion, DecodeQueryDataVersion, CodeQueryDataVersion)
}

func TestSmallHeadersNameTheMissingField(t *testing.T) {
	empty := func(code int16) *remoting.Command { return remoting.NewRequest(code, nil, nil) }
	_, err := DecodeDeleteTopic(empty(CodeDeleteTopicInBroker))
	wantField(t, "215", err, "topic")
	_, err = DecodeDeleteSubscriptionGroup(empty(CodeDeleteSubscriptionGroup))
	wantField(t, "207", err, "groupName")
	_, err = DecodeDeleteSubscriptionGroup(remoting.NewRequest(CodeDeleteSubscriptionGroup, map[string]string{"groupName": "g", "cleanOffset": "yes"}, nil))
	wantField(t, "207 cleanOffset", err, "cleanOffset")
	if !strings.Contains(err.Error(), "true or false") {
		t.Fatalf("remark %q", err)
	}
	_, err = DecodeRouteRequest(empty(CodeGetRouteInfoByTopic))
	wantField(t, "105", err, "topic")
	_, err = DecodeTopicStatsRequest(empty(CodeGetTopicStatsInfo))
	wantField(t, "202", err, "topic")
	_, err = DecodeConsumerConnectionListRequest(empty(CodeGetConsumerConnectionList))
	wantField(t, "203", err, "consumerGroup")
	_, err = DecodeConsumeStatsRequest(empty(CodeGetConsumeStats))
	wantField(t, "208", err, "consumerGroup")
	_, err = DecodeKVConfig(remoting.NewRequest(CodePutKVConfig, map[string]string{"namespace": "ns"}, nil))
	wantField(t, "100", err, "key")
	_, err = DecodeKVList(empty(CodeGetKVListByNamespace))
	wantField(t, "219", err, "namespace")
	for _, c := range []struct{ drop, field, value string }{
		{"brokerName", "brokerName", ""}, {"brokerAddr", "brokerAddr", ""}, {"brokerId", "brokerId", ""},
		{"", "brokerId", "-1"}, {"", "brokerId", "0x1"},
	} {
		ext := map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "brokerId": "0"}
		delete(ext, c.drop)
		if c.value != "" {
			ext[c.field] = c.value
		}
		_, err = DecodeUnregisterBroker(remoting.NewRequest(CodeUnregisterBroker, ext, nil))
		wantField(t, "104 "+c.field+"="+c.value, err, c.field)
		_, err = DecodeRegisterBroker(remoting.NewRequest(CodeRegisterBroker, ext, nil))
		wantField(t, "103 "+c.field+"="+c.value, err, c.field)
	}
	_, err = DecodeQueryDataVersion(remoting.NewRequest(CodeQueryDataVersion, map[string]string{"brokerName": "b", "brokerAddr": "a:1", "brokerId": "0"}, []byte("{")))
	var be *BodyError
	if !errors.As(err, &be) {
		t.Fatalf("322 with a bad body: %v", err)
	}
}

func TestRegisterBrokerRoundTrip(t *testing.T) {
	id := BrokerIdentity{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911", BrokerID: 0}
	topics := map[string]RegisteredTopic{"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}}
	v := DataVersion{Timestamp: 7, Counter: 8}

	body := EncodeRegisterBrokerBody(topics, v)
	h := RegisterBrokerRequest{BrokerIdentity: id, HAServerAddr: "127.0.0.1:10912"}
	c := EncodeRegisterBroker(h, body)
	got, err := DecodeRegisterBroker(c)
	h.BodyCRC32 = BodyCRC(body)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("full header %+v %v, want %+v", got, err, h)
	}
	b, err := DecodeRegisterBrokerBody(c.Body)
	if err != nil || !reflect.DeepEqual(b.Wrapper.TopicConfigTable, topics) || b.Wrapper.DataVersion != v {
		t.Fatalf("full body %+v %v", b, err)
	}

	d := DeltaRegisterBody{DataVersion: v, TopicConfigTable: topics, RemovedTopics: []string{"U"}}
	zbody := Deflate(EncodeDeltaRegisterBody(d))
	h = RegisterBrokerRequest{BrokerIdentity: id, Delta: true, BaseVersion: DataVersion{Timestamp: 6, Counter: 7}, Zlib: true}
	c = EncodeRegisterBroker(h, zbody)
	got, err = DecodeRegisterBroker(c)
	h.BodyCRC32 = BodyCRC(zbody)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("delta header %+v %v, want %+v", got, err, h)
	}
	plain, err := Inflate(c.Body, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	gotD, err := DecodeDeltaRegisterBody(plain)
	if err != nil || !reflect.DeepEqual(gotD, d) {
		t.Fatalf("delta body %+v %v", gotD, err)
	}
	if _, err := Inflate(c.Body, len(plain)-1); err == nil {
		t.Fatal("inflating past the limit: no error")
	}
	bad := remoting.NewRequest(CodeRegisterBroker, map[string]string{"brokerName": "b", "brokerAddr": "a:1", "brokerId": "0",
		ExtDelta: "true", ExtBaseVersion: "nope"}, nil)
	_, err = DecodeRegisterBroker(bad)
	wantField(t, "103 baseVersion", err, ExtBaseVersion)
	bad = remoting.NewRequest(CodeRegisterBroker, map[string]string{"brokerName": "b", "brokerAddr": "a:1", "brokerId": "0", "bodyCrc32": "x"}, nil)
	_, err = DecodeRegisterBroker(bad)
	wantField(t, "103 bodyCrc32", err, "bodyCrc32")
}

func TestRegisterBrokerResponses(t *testing.T) {
	req := remoting.NewRequest(CodeRegisterBroker, nil, nil)
	resp := EncodeRegisterBrokerResponse(req, RegisterBrokerResponse{MasterAddr: "m:1", MasterHAAddr: "m:2", DataVersion: DataVersion{Timestamp: 1, Counter: 2},
		OrderTopicConf: map[string]string{"T": "b:4"}})
	if resp.Code != RespSuccess || resp.Ext("masterAddr") != "m:1" || resp.Ext("haServerAddr") != "m:2" ||
		resp.Ext(ExtDataVersion) != `{"timestamp":1,"counter":2}` || NeedFullRegistration(resp) {
		t.Fatalf("%+v", resp)
	}
	kv, err := DecodeKVTableBody(resp.Body)
	if err != nil || kv.Table["T"] != "b:4" {
		t.Fatalf("%+v %v", kv, err)
	}
	if resp := EncodeRegisterBrokerResponse(req, RegisterBrokerResponse{}); resp.Body != nil {
		t.Fatalf("a body without order topics: %s", resp.Body)
	}
	nf := EncodeNeedFullRegistration(req, "send a full one")
	if nf.Code != RespSystemError || !NeedFullRegistration(nf) || nf.Remark != "send a full one" {
		t.Fatalf("%+v", nf)
	}
	q := remoting.NewRequest(CodeQueryDataVersion, nil, nil)
	for _, r := range []QueryDataVersionResponse{{Changed: true}, {Held: &DataVersion{Timestamp: 3, Counter: 4}}} {
		got, err := DecodeQueryDataVersionResponse(EncodeQueryDataVersionResponse(q, r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("322 answer %+v became %+v %v", r, got, err)
		}
	}
	if v := EncodeGetKVConfigResponse(remoting.NewRequest(CodeGetKVConfig, nil, nil), "x"); v.Ext("value") != "x" {
		t.Fatalf("101 answer %+v", v)
	}
}

func TestBodiesRoundTrip(t *testing.T) {
	tc := TopicConfigBody{TopicConfigTable: map[string]TopicConfig{"T": {TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"a": "b"}}}, DataVersion: DataVersion{Timestamp: 1, Counter: 2}}
	if got, err := DecodeTopicConfigBody(EncodeTopicConfigBody(tc)); err != nil || !reflect.DeepEqual(got, tc) {
		t.Fatalf("21: %+v %v", got, err)
	}
	tl := TopicListBody{TopicList: []string{"A", "B"}}
	if got, err := DecodeTopicListBody(EncodeTopicListBody(tl)); err != nil || !reflect.DeepEqual(got, tl) {
		t.Fatalf("206: %+v %v", got, err)
	}
	g := DefaultSubscriptionGroupConfig("g")
	g.GroupRetryPolicy = &GroupRetryPolicy{Type: "CUSTOMIZED", Customized: &CustomizedRetryPolicy{Next: []int64{1, 2}}}
	g.SubscriptionDataSet = []SimpleSubscriptionData{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 3}}
	g.Attributes = map[string]string{"+a": "b"}
	if got, err := DecodeSubscriptionGroupBody(EncodeSubscriptionGroup(g).Body); err != nil || !reflect.DeepEqual(got, g) {
		t.Fatalf("200: %+v %v", got, err)
	}
	gt := SubscriptionGroupTable{SubscriptionGroupTable: map[string]SubscriptionGroupConfig{"g": g}, ForbiddenTable: map[string]map[string]int{},
		DataVersion: DataVersion{Timestamp: 4, Counter: 5}}
	if got, err := DecodeSubscriptionGroupTableBody(EncodeSubscriptionGroupTableBody(gt)); err != nil || !reflect.DeepEqual(got, gt) {
		t.Fatalf("201: %+v %v", got, err)
	}
	rd := TopicRouteData{BrokerDatas: []BrokerData{{BrokerName: "b", Cluster: "c", BrokerAddrs: map[int64]string{0: "a:1", 1: "a:2"}}},
		QueueDatas: []QueueData{{BrokerName: "b", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}}, FilterServerTable: map[string][]string{}, OrderTopicConf: "b:4"}
	if got, err := DecodeTopicRouteDataBody(EncodeTopicRouteDataBody(rd)); err != nil || !reflect.DeepEqual(got, rd) {
		t.Fatalf("105: %+v %v", got, err)
	}
	ci := ClusterInfo{BrokerAddrTable: map[string]BrokerData{"b": rd.BrokerDatas[0]}, ClusterAddrTable: map[string][]string{"c": {"b"}}}
	if got, err := DecodeClusterInfoBody(EncodeClusterInfoBody(ci)); err != nil || !reflect.DeepEqual(got, ci) {
		t.Fatalf("106: %+v %v", got, err)
	}
	rt := map[string]string{RuntimePutTps: "1.00 1.00 1.00", RuntimeBrokerName: "b"}
	if got, err := DecodeRuntimeInfoBody(EncodeRuntimeInfoBody(rt)); err != nil || !reflect.DeepEqual(got, rt) {
		t.Fatalf("28: %+v %v", got, err)
	}
	ts := TopicStatsTable{Offsets: []TopicOffset{{Topic: "T", BrokerName: "b", QueueID: 0, MinOffset: 1, MaxOffset: 5, LastUpdateTimestamp: 9},
		{Topic: "T", BrokerName: "b", QueueID: 1}}, TopicPutTps: 1.5, RemovedUnconsumed: map[string]uint64{"g": 2}}
	if got, err := DecodeTopicStatsBody(EncodeTopicStatsBody(ts)); err != nil || !reflect.DeepEqual(got, ts) {
		t.Fatalf("202: %+v %v", got, err)
	}
	cs := ConsumeStats{Offsets: []ConsumeOffset{{Topic: "T", BrokerName: "b", QueueID: 3, BrokerOffset: 10, ConsumerOffset: 7, PullOffset: 8, LastTimestamp: 1, InFlight: 1}},
		ConsumeTps: 2}
	if got, err := DecodeConsumeStatsBody(EncodeConsumeStatsBody(cs)); err != nil || !reflect.DeepEqual(got, cs) {
		t.Fatalf("208: %+v %v", got, err)
	}
	cc := ConsumerConnection{ConnectionSet: []Connection{{ClientID: "c", ClientAddr: "a:1", Language: "JAVA", Version: 401}},
		SubscriptionTable: map[string]SubscriptionData{"T": {Topic: "T", SubString: "a||b", TagsSet: []string{"a", "b"}, CodeSet: []int32{97, 98},
			SubVersion: 4, ExpressionType: "TAG"}},
		ConsumeType: "CONSUME_ACTIVELY", MessageModel: "BROADCASTING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET"}
	if got, err := DecodeConsumerConnectionBody(EncodeConsumerConnectionBody(cc)); err != nil || !reflect.DeepEqual(got, cc) {
		t.Fatalf("203: %+v %v", got, err)
	}
}

// TestStatsBodiesOfJava: the forms Java's fastjson and other writers use —
// object keys with spaces and fields in any order, the array form, the
// table not first — decode.
func TestStatsBodiesOfJava(t *testing.T) {
	java := `{"consumeTps":0.0, "offsetTable":{ {"brokerName":"b","queueId":1,"topic":"T"} : {"brokerOffset":5,"consumerOffset":3,"lastTimestamp":7,"pullOffset":4} }}`
	s, err := DecodeConsumeStatsBody([]byte(java))
	want := ConsumeStats{Offsets: []ConsumeOffset{{Topic: "T", BrokerName: "b", QueueID: 1, BrokerOffset: 5, ConsumerOffset: 3, PullOffset: 4, LastTimestamp: 7}}}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("%+v %v", s, err)
	}
	arr := `{"offsetTable":[[{"brokerName":"b","queueId":2,"topic":"T"},{"minOffset":1,"maxOffset":3,"lastUpdateTimestamp":0}]],"topicPutTps":2}`
	ts, err := DecodeTopicStatsBody([]byte(arr))
	if err != nil || len(ts.Offsets) != 1 || ts.Offsets[0].QueueID != 2 || ts.Offsets[0].MaxOffset != 3 || ts.TopicPutTps != 2 {
		t.Fatalf("%+v %v", ts, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"offsetTable":5}`, `{"offsetTable":{}`, `{"offsetTable":{{"queueId":"x"}:{}}}`,
		`{"offsetTable":{},"consumeTps":"fast"}`, `{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":"x"}}}`,
		`{"offsetTable":{}} trailing`, `{"offsetTable":[[{}]]}`, `{5:{}}`} {
		var be *BodyError
		if _, err := DecodeConsumeStatsBody([]byte(bad)); !errors.As(err, &be) {
			t.Errorf("%q: %v, want a *BodyError", bad, err)
		}
	}
}

func TestSubscriptionGroupBodyErrorsNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		``:                           "no SubscriptionGroupConfig",
		`{"retryMaxTimes":"x"}`:      "retryMaxTimes must be a JSON number",
		`{"consumeEnable":1}`:        "consumeEnable must be a JSON boolean",
		`{"groupName":"g"`:           "not valid JSON",
		`{"retryQueueNums":1e100}`:   "retryQueueNums must be a JSON number in range",
		strings.Repeat(" ", 1<<20+1): "limit",
	} {
		_, err := DecodeSubscriptionGroupBody([]byte(body))
		var be *BodyError
		if !errors.As(err, &be) || !strings.Contains(be.Problem, want) {
			t.Errorf("%.40q: %v, want a problem containing %q", body, err, want)
		}
	}
	g, err := DecodeSubscriptionGroupBody([]byte(`{"groupName":"g","retryMaxTimes":3}`))
	want := DefaultSubscriptionGroupConfig("g")
	want.RetryMaxTimes = 3
	if err != nil || !reflect.DeepEqual(g, want) {
		t.Fatalf("missing fields are not Java's defaults: %+v %v", g, err)
	}
}
