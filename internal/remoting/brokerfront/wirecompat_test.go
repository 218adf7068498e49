package brokerfront

import (
	"encoding/json"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// The rmq encoders write byte for byte what the front's own encoders
// wrote before the codec moved to rmq.
func TestRMQEncodersMatchTheFrontsOldBytes(t *testing.T) {
	// 202
	var m mqMap
	m.add(mqKey("T", "b", 0), struct {
		MinOffset           int64 `json:"minOffset"`
		MaxOffset           int64 `json:"maxOffset"`
		LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	}{1, 9, 1700})
	m.add(mqKey("T", "b", 1), struct {
		MinOffset           int64 `json:"minOffset"`
		MaxOffset           int64 `json:"maxOffset"`
		LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	}{0, 0, 0})
	old, err := mqMapBody(&m, map[string]any{"topicPutTps": 0, "removedUnconsumed": map[string]uint64{"g": 3}})
	if err != nil {
		t.Fatal(err)
	}
	got := rmq.EncodeTopicStatsBody(rmq.TopicStatsTable{Offsets: []rmq.TopicOffset{
		{Topic: "T", BrokerName: "b", QueueID: 0, MinOffset: 1, MaxOffset: 9, LastUpdateTimestamp: 1700},
		{Topic: "T", BrokerName: "b", QueueID: 1}}, RemovedUnconsumed: map[string]uint64{"g": 3}})
	same(t, "202", old, got)
	old, _ = mqMapBody(&mqMap{}, map[string]any{"topicPutTps": 0, "removedUnconsumed": map[string]uint64{}})
	same(t, "202 empty", old, rmq.EncodeTopicStatsBody(rmq.TopicStatsTable{}))

	// 208
	m = mqMap{}
	m.add(mqKey("T", "b", 2), struct {
		BrokerOffset   int64 `json:"brokerOffset"`
		ConsumerOffset int64 `json:"consumerOffset"`
		PullOffset     int64 `json:"pullOffset"`
		LastTimestamp  int64 `json:"lastTimestamp"`
		InFlight       int64 `json:"inFlight"`
	}{10, 7, 8, 99, 1})
	old, _ = mqMapBody(&m, map[string]any{"consumeTps": 0})
	same(t, "208", old, rmq.EncodeConsumeStatsBody(rmq.ConsumeStats{Offsets: []rmq.ConsumeOffset{
		{Topic: "T", BrokerName: "b", QueueID: 2, BrokerOffset: 10, ConsumerOffset: 7, PullOffset: 8, LastTimestamp: 99, InFlight: 1}}}))

	// 28
	table := map[string]string{"putTps": "1.00 2.00 3.00", "brokerName": "b"}
	old, _ = json.Marshal(struct {
		Table map[string]string `json:"table"`
	}{table})
	same(t, "28", old, rmq.EncodeRuntimeInfoBody(table))

	// 203
	oldConn := struct {
		ConnectionSet     []connectionJSON            `json:"connectionSet"`
		SubscriptionTable map[string]subscriptionJSON `json:"subscriptionTable"`
		ConsumeType       string                      `json:"consumeType"`
		MessageModel      string                      `json:"messageModel"`
		ConsumeFromWhere  string                      `json:"consumeFromWhere"`
	}{[]connectionJSON{{ClientID: "c", ClientAddr: "1.2.3.4:5", Language: "GO", Version: 317}},
		map[string]subscriptionJSON{"T": {Topic: "T", SubString: "*", TagsSet: []string{}, CodeSet: []int32{}, SubVersion: 5, ExpressionType: "TAG"}},
		"CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"}
	old, _ = json.Marshal(oldConn)
	same(t, "203", old, rmq.EncodeConsumerConnectionBody(rmq.ConsumerConnection{
		ConnectionSet:     []rmq.Connection{{ClientID: "c", ClientAddr: "1.2.3.4:5", Language: "GO", Version: 317}},
		SubscriptionTable: map[string]rmq.ConnectionSubscription{"T": {Topic: "T", SubString: "*", SubVersion: 5, ExpressionType: "TAG"}},
		ConsumeType:       "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"}))

	// 21
	topics := map[string]meta.Topic{
		"A": {Name: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"persistent": "false"}},
		"B": {Name: "B", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true},
	}
	old, _ = json.Marshal(struct {
		TopicConfigTable map[string]meta.Topic `json:"topicConfigTable"`
		DataVersion      meta.DataVersion      `json:"dataVersion"`
	}{topics, meta.DataVersion{Timestamp: 17, Counter: 3}})
	same(t, "21", old, rmq.EncodeTopicConfigBody(rmq.TopicConfigBody{
		TopicConfigTable: map[string]rmq.TopicConfig{
			"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"persistent": "false"}},
			"B": {TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true},
		}, DataVersion: rmq.DataVersion{Timestamp: 17, Counter: 3}}))

	// 201
	g := broker.DefaultGroup("g")
	g.GroupRetryPolicy = &meta.RetryPolicy{Type: "EXPONENTIAL", Exponential: &meta.ExponentialRetry{Initial: 1000, Max: 60000, Multiplier: 2}}
	g.SubscriptionDataSet = []meta.SimpleSubscription{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 1}}
	g.Attributes = map[string]string{"k": "v"}
	h := broker.DefaultGroup("h")
	h.GroupRetryPolicy = &meta.RetryPolicy{Type: "CUSTOMIZED", Customized: &meta.CustomizedRetry{Next: []int64{1000, 5000}}}
	old, err = encodeGroupTable([]meta.Group{g, h}, meta.DataVersion{Timestamp: 5, Counter: 6})
	if err != nil {
		t.Fatal(err)
	}
	wg := rmq.DefaultSubscriptionGroupConfig("g")
	wg.GroupRetryPolicy = &rmq.GroupRetryPolicy{Type: "EXPONENTIAL", Exponential: &rmq.ExponentialRetryPolicy{Initial: 1000, Max: 60000, Multiplier: 2}}
	wg.SubscriptionDataSet = []rmq.SimpleSubscriptionData{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 1}}
	wg.Attributes = map[string]string{"k": "v"}
	wh := rmq.DefaultSubscriptionGroupConfig("h")
	wh.GroupRetryPolicy = &rmq.GroupRetryPolicy{Type: "CUSTOMIZED", Customized: &rmq.CustomizedRetryPolicy{Next: []int64{1000, 5000}}}
	same(t, "201", old, rmq.EncodeSubscriptionGroupTableBody(rmq.SubscriptionGroupTable{
		SubscriptionGroupTable: map[string]rmq.SubscriptionGroupConfig{"g": wg, "h": wh}, DataVersion: rmq.DataVersion{Timestamp: 5, Counter: 6}}))
}

func same(t *testing.T, what string, old, got []byte) {
	t.Helper()
	if string(old) != string(got) {
		t.Fatalf("%s: rmq writes\n%s\nthe front wrote\n%s", what, got, old)
	}
	t.Logf("%s: %s", what, got)
}
