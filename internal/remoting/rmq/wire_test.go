package rmq

import "testing"

// TestEncodersWriteTheBytesPetrelWrote: each golden body is what the
// broker front or the name server wrote for the same input before their
// encoders moved here (the byte comparison ran against the old code in
// brokerfront and namesrv, commits "rmq: typed codec for the admin..." and
// "namesrv: test that rmq's registration requests..."). mqadmin, the
// dashboard and the official clients parse these.
func TestEncodersWriteTheBytesPetrelWrote(t *testing.T) {
	wg := DefaultSubscriptionGroupConfig("g")
	wg.GroupRetryPolicy = &GroupRetryPolicy{Type: "EXPONENTIAL", Exponential: &ExponentialRetryPolicy{Initial: 1000, Max: 60000, Multiplier: 2}}
	wg.SubscriptionDataSet = []SimpleSubscriptionData{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 1}}
	wg.Attributes = map[string]string{"k": "v"}
	wh := DefaultSubscriptionGroupConfig("h")
	wh.GroupRetryPolicy = &GroupRetryPolicy{Type: "CUSTOMIZED", Customized: &CustomizedRetryPolicy{Next: []int64{1000, 5000}}}
	topics := map[string]RegisteredTopic{
		"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		"B": {TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true},
	}
	v := DataVersion{Timestamp: 1700, Counter: 9}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"202", EncodeTopicStatsBody(TopicStatsTable{Offsets: []TopicOffset{
			{Topic: "T", BrokerName: "b", QueueID: 0, MinOffset: 1, MaxOffset: 9, LastUpdateTimestamp: 1700},
			{Topic: "T", BrokerName: "b", QueueID: 1}}, RemovedUnconsumed: map[string]uint64{"g": 3}}),
			`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":1,"maxOffset":9,"lastUpdateTimestamp":1700},{"brokerName":"b","queueId":1,"topic":"T"}:{"minOffset":0,"maxOffset":0,"lastUpdateTimestamp":0}},"removedUnconsumed":{"g":3},"topicPutTps":0}`},
		{"202 empty", EncodeTopicStatsBody(TopicStatsTable{}),
			`{"offsetTable":{},"removedUnconsumed":{},"topicPutTps":0}`},
		{"208", EncodeConsumeStatsBody(ConsumeStats{Offsets: []ConsumeOffset{
			{Topic: "T", BrokerName: "b", QueueID: 2, BrokerOffset: 10, ConsumerOffset: 7, PullOffset: 8, LastTimestamp: 99, InFlight: 1}}}),
			`{"offsetTable":{{"brokerName":"b","queueId":2,"topic":"T"}:{"brokerOffset":10,"consumerOffset":7,"pullOffset":8,"lastTimestamp":99,"inFlight":1}},"consumeTps":0}`},
		{"28", EncodeRuntimeInfoBody(map[string]string{"putTps": "1.00 2.00 3.00", "brokerName": "b"}),
			`{"table":{"brokerName":"b","putTps":"1.00 2.00 3.00"}}`},
		{"203", EncodeConsumerConnectionBody(ConsumerConnection{
			ConnectionSet:     []Connection{{ClientID: "c", ClientAddr: "1.2.3.4:5", Language: "GO", Version: 317}},
			SubscriptionTable: map[string]SubscriptionData{"T": {Topic: "T", SubString: "*", SubVersion: 5, ExpressionType: "TAG"}},
			ConsumeType:       "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"}),
			`{"connectionSet":[{"clientId":"c","clientAddr":"1.2.3.4:5","language":"GO","version":317}],"subscriptionTable":{"T":{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":5,"expressionType":"TAG"}},"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET"}`},
		{"21", EncodeTopicConfigBody(TopicConfigBody{
			TopicConfigTable: map[string]TopicConfig{
				"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"persistent": "false"}},
				"B": {TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true},
			}, DataVersion: DataVersion{Timestamp: 17, Counter: 3}}),
			`{"topicConfigTable":{"A":{"topicName":"A","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{"persistent":"false"}},"B":{"topicName":"B","readQueueNums":1,"writeQueueNums":2,"perm":4,"topicFilterType":"MULTI_TAG","topicSysFlag":1,"order":true}},"dataVersion":{"timestamp":17,"counter":3}}`},
		{"201", EncodeSubscriptionGroupTableBody(SubscriptionGroupTable{SubscriptionGroupTable: map[string]SubscriptionGroupConfig{"g": wg, "h": wh}, DataVersion: DataVersion{Timestamp: 5, Counter: 6}}),
			`{"subscriptionGroupTable":{"g":{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true,"consumeMessageOrderly":false,"groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":2}},"groupSysFlag":0,"consumeTimeoutMinute":15,"subscriptionDataSet":[{"topic":"T","expressionType":"TAG","expression":"*","version":1}],"attributes":{"k":"v"}},"h":{"groupName":"h","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true,"consumeMessageOrderly":false,"groupRetryPolicy":{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}},"groupSysFlag":0,"consumeTimeoutMinute":15}},"forbiddenTable":{},"dataVersion":{"timestamp":5,"counter":6}}`},
		{"103 full", EncodeRegisterBrokerBody(topics, v),
			`{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"A","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false},"B":{"topicName":"B","readQueueNums":1,"writeQueueNums":2,"perm":4,"topicFilterType":"MULTI_TAG","topicSysFlag":1,"order":true}},"dataVersion":{"timestamp":1700,"counter":9}},"filterServerList":[]}`},
		{"103 full empty", EncodeRegisterBrokerBody(nil, v),
			`{"topicConfigSerializeWrapper":{"topicConfigTable":{},"dataVersion":{"timestamp":1700,"counter":9}},"filterServerList":[]}`},
		{"103 delta", EncodeDeltaRegisterBody(DeltaRegisterBody{DataVersion: v, TopicConfigTable: topics, RemovedTopics: []string{"C", "D"}}),
			`{"dataVersion":{"timestamp":1700,"counter":9},"topicConfigTable":{"A":{"topicName":"A","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false},"B":{"topicName":"B","readQueueNums":1,"writeQueueNums":2,"perm":4,"topicFilterType":"MULTI_TAG","topicSysFlag":1,"order":true}},"removedTopics":["C","D"]}`},
		{"103 delta empty", EncodeDeltaRegisterBody(DeltaRegisterBody{DataVersion: v}),
			`{"dataVersion":{"timestamp":1700,"counter":9},"topicConfigTable":{},"removedTopics":[]}`},
		{"105", EncodeTopicRouteDataBody(TopicRouteData{
			BrokerDatas:    []BrokerData{{BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1", 1: "1:2"}}, {BrokerName: "b"}},
			QueueDatas:     []QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
			OrderTopicConf: "a:4"}),
			`{"brokerDatas":[{"brokerAddrs":{"0":"1:1","1":"1:2"},"brokerName":"a","cluster":"c"},{"brokerAddrs":{},"brokerName":"b","cluster":""}],"filterServerTable":{},"queueDatas":[{"brokerName":"a","perm":6,"readQueueNums":4,"writeQueueNums":4,"topicSysFlag":0}],"orderTopicConf":"a:4"}`},
		{"105 empty", EncodeTopicRouteDataBody(TopicRouteData{}),
			`{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}`},
		{"106", EncodeClusterInfoBody(ClusterInfo{
			BrokerAddrTable:  map[string]BrokerData{"a": {BrokerName: "a", Cluster: "c", BrokerAddrs: map[int64]string{0: "1:1"}}},
			ClusterAddrTable: map[string][]string{"c": {"a"}}}),
			`{"brokerAddrTable":{"a":{"brokerAddrs":{"0":"1:1"},"brokerName":"a","cluster":"c"}},"clusterAddrTable":{"c":["a"]}}`},
		{"206", EncodeTopicListBody(TopicListBody{TopicList: []string{"A", "B"}}),
			`{"topicList":["A","B"]}`},
		{"219", EncodeKVTableBody(KVTable{Table: map[string]string{"T": "a:4;b:4"}}),
			`{"table":{"T":"a:4;b:4"}}`},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}
