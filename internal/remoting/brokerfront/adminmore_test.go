package brokerfront_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// sendTagged stores n messages with tag TagA on queue 0 of topic.
func sendTagged(t *testing.T, f *front, topic string, n int) {
	t.Helper()
	for range n {
		r := f.invoke(t, rmq.CodeSendMessage, sendExt(topic, "TAGS\x01TagA", nil), []byte("m"))
		if r.Code != rmq.RespSuccess {
			t.Fatalf("send: %d %q", r.Code, r.Remark)
		}
	}
	f.settledMaxOffset(t, topic, int64(n))
}

// TestProducerConnectionAndAllProducers: 204 lists the connections whose
// heartbeats name the group, 328 every producer by group; a group with
// no producer is SYSTEM_ERROR, as in RocketMQ.
func TestProducerConnectionAndAllProducers(t *testing.T) {
	c := daemontest.Start(t)
	p := newPushClient(t, c.Broker.Addr().String())
	p.heartbeat(t, "client-1", "PG", "")
	f := &front{addr: p.addr, client: p.cl}

	r := f.invoke(t, rmq.CodeGetProducerConnectionList, map[string]string{"producerGroup": "PG"}, nil)
	if r.Code != rmq.RespSuccess {
		t.Fatalf("204: %d %q", r.Code, r.Remark)
	}
	pc, err := rmq.DecodeProducerConnectionBody(r.Body)
	if err != nil || len(pc.ConnectionSet) != 1 {
		t.Fatalf("204 body %s: %v", r.Body, err)
	}
	conn := pc.ConnectionSet[0]
	if conn.ClientID != "client-1" || !strings.HasPrefix(conn.ClientAddr, "127.0.0.1:") || conn.Language == "" || conn.Version != remoting.DefaultVersion {
		t.Fatalf("204 connection %+v", conn)
	}
	if r := f.invoke(t, rmq.CodeGetProducerConnectionList, map[string]string{"producerGroup": "Nobody"}, nil); r.Code != rmq.RespSystemError || !strings.Contains(r.Remark, "the producer group[Nobody] not exist") {
		t.Fatalf("204 of an unknown group: %d %q", r.Code, r.Remark)
	}
	if r := f.invoke(t, rmq.CodeGetProducerConnectionList, nil, nil); r.Code == rmq.RespSuccess || !strings.Contains(r.Remark, "producerGroup") {
		t.Fatalf("204 without producerGroup: %d %q", r.Code, r.Remark)
	}

	r = f.invoke(t, rmq.CodeGetAllProducerInfo, nil, nil)
	table, err := rmq.DecodeProducerTableBody(r.Body)
	if r.Code != rmq.RespSuccess || err != nil {
		t.Fatalf("328: %d %q %v", r.Code, r.Remark, err)
	}
	ps := table.Data["PG"]
	if len(ps) != 1 || ps[0].ClientID != "client-1" || ps[0].RemoteIP != "127.0.0.1" || ps[0].LastUpdateTimestamp <= 0 {
		t.Fatalf("328 body %s", r.Body)
	}
}

// TestCleanRequestsSucceed: 306, 316 and 329 answer success (Petrel's
// store has nothing left for them) and the broker keeps serving.
func TestCleanRequestsSucceed(t *testing.T) {
	f := startFront(t)
	sendTagged(t, f, "Kept", 1)
	for _, code := range []int16{rmq.CodeCleanExpiredConsumeQueue, rmq.CodeCleanUnusedTopic, rmq.CodeDeleteExpiredCommitLog} {
		if r := f.invoke(t, code, nil, nil); r.Code != rmq.RespSuccess {
			t.Fatalf("code %d: %d %q", code, r.Code, r.Remark)
		}
	}
	if got := f.maxOffset(t, "Kept"); got != "1" {
		t.Fatalf("after cleaning, queue 0 of Kept holds %s messages, want 1", got)
	}
}

// TestQueryConsumeQueue: 321 answers the entries from index, each with
// its record's position, size and tag hash, and the queue's bounds.
func TestQueryConsumeQueue(t *testing.T) {
	f := startFront(t)
	sendTagged(t, f, "Cq", 3)
	r := f.invoke(t, rmq.CodeQueryConsumeQueue, map[string]string{"topic": "Cq", "queueId": "0", "index": "1", "count": "5"}, nil)
	if r.Code != rmq.RespSuccess {
		t.Fatalf("321: %d %q", r.Code, r.Remark)
	}
	body, err := rmq.DecodeQueryConsumeQueueBody(r.Body)
	if err != nil {
		t.Fatalf("321 body %s: %v", r.Body, err)
	}
	if body.MinQueueIndex != 0 || body.MaxQueueIndex != 3 || len(body.QueueData) != 2 {
		t.Fatalf("321 body %s", r.Body)
	}
	a, b := body.QueueData[0], body.QueueData[1]
	if a.TagsCode != message.TagHash("TagA") || a.PhysicSize <= 0 || b.PhysicOffset != a.PhysicOffset+int64(a.PhysicSize) {
		t.Fatalf("321 entries %+v", body.QueueData)
	}
	view := f.invoke(t, rmq.CodeViewMessageByID, map[string]string{"offset": strconv.FormatInt(a.PhysicOffset, 10)}, nil)
	if view.Code != rmq.RespSuccess || !strings.Contains(string(view.Body), "Cq") {
		t.Fatalf("the record at the entry's physicOffset: %d %q", view.Code, view.Remark)
	}
	r = f.invoke(t, rmq.CodeQueryConsumeQueue, map[string]string{"topic": "Cq", "queueId": "0", "index": "0", "count": "1", "consumerGroup": "Away"}, nil)
	if body, _ := rmq.DecodeQueryConsumeQueueBody(r.Body); len(body.QueueData) != 1 || body.FilterData != "Away@Cq is not online!" || body.SubscriptionData != nil {
		t.Fatalf("321 with an offline group: %s", r.Body)
	}
	if r := f.invoke(t, rmq.CodeQueryConsumeQueue, map[string]string{"topic": "NoSuchTopic", "queueId": "0", "index": "0", "count": "1"}, nil); r.Code == rmq.RespSuccess {
		t.Fatalf("321 of an unknown topic succeeded: %s", r.Body)
	}
	if r := f.invoke(t, rmq.CodeQueryConsumeQueue, map[string]string{"topic": "Cq", "queueId": "0", "index": "0", "count": "0"}, nil); r.Code == rmq.RespSuccess || !strings.Contains(r.Remark, "count") {
		t.Fatalf("321 with count 0: %d %q", r.Code, r.Remark)
	}
}

// TestBrokerConsumeStatsAndAllOffsets: 317 lists each group's consume
// stats per topic, keyed by message queue as fastjson writes them, with
// the lag summed; 43 the committed offsets by topic@group; 45 an empty
// table (Petrel has no per-level delay queues).
func TestBrokerConsumeStatsAndAllOffsets(t *testing.T) {
	c := daemontest.Start(t)
	p := newPushClient(t, c.Broker.Addr().String())
	f := &front{addr: p.addr, client: p.cl}
	sendTagged(t, f, "T", 3)
	p.heartbeat(t, "client-1", "", "CG")
	commit := map[string]string{"consumerGroup": "CG", "topic": "T", "queueId": "0", "commitOffset": "1"}
	if r := f.invoke(t, rmq.CodeUpdateConsumerOffset, commit, nil); r.Code != rmq.RespSuccess {
		t.Fatalf("commit: %d %q", r.Code, r.Remark)
	}

	r := f.invoke(t, rmq.CodeGetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)
	if r.Code != rmq.RespSuccess {
		t.Fatalf("317: %d %q", r.Code, r.Remark)
	}
	s := string(r.Body)
	for _, want := range []string{`{"CG":[{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":1,`,
		`"totalDiff":2,`, `"totalInflightDiff":0}`, `"brokerAddr":"`} {
		if !strings.Contains(s, want) {
			t.Errorf("317 body %s lacks %s", s, want)
		}
	}
	if r := f.invoke(t, rmq.CodeGetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil); strings.Contains(string(r.Body), `"topic":"T"`) {
		t.Errorf("317 for ordered topics lists the unordered T: %s", r.Body)
	}
	if r := f.invoke(t, rmq.CodeGetBrokerConsumeStats, map[string]string{"isOrder": "maybe"}, nil); r.Code == rmq.RespSuccess {
		t.Errorf("317 with isOrder maybe succeeded")
	}

	r = f.invoke(t, rmq.CodeGetAllConsumerOffset, nil, nil)
	if r.Code != rmq.RespSuccess || !strings.Contains(string(r.Body), `"T@CG":{0:1}`) || !strings.Contains(string(r.Body), `},"dataVersion":{"timestamp":`) {
		t.Fatalf("43: %d %s", r.Code, r.Body)
	}
	r = f.invoke(t, rmq.CodeGetAllDelayOffset, nil, nil)
	if r.Code != rmq.RespSuccess || !strings.HasPrefix(string(r.Body), `{"offsetTable":{},"dataVersion":{"timestamp":`) {
		t.Fatalf("45: %d %s", r.Code, r.Body)
	}
}

// TestViewBrokerStatsData: 315 answers a topic's puts, a group's gets of
// a topic and the broker's from Petrel's traffic windows, and refuses
// stats Petrel does not keep and a group that got nothing.
func TestViewBrokerStatsData(t *testing.T) {
	f := startFront(t)
	sendTagged(t, f, "Counted", 3)
	stats := func(name, key string) (rmq.BrokerStatsData, *remoting.Command) {
		r := f.invoke(t, rmq.CodeViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
		var d rmq.BrokerStatsData
		if r.Code == rmq.RespSuccess {
			if err := json.Unmarshal(r.Body, &d); err != nil {
				t.Fatalf("315 body %s: %v", r.Body, err)
			}
		}
		return d, r
	}
	d, r := stats("TOPIC_PUT_NUMS", "Counted")
	if r.Code != rmq.RespSuccess || d.StatsDay.Sum != 3 || d.StatsHour.Sum != 3 || d.StatsMinute.TPS <= 0 {
		t.Fatalf("TOPIC_PUT_NUMS: %d %q %s", r.Code, r.Remark, r.Body)
	}
	if d, r := stats("TOPIC_PUT_SIZE", "Counted"); r.Code != rmq.RespSuccess || d.StatsDay.Sum <= 3 {
		t.Fatalf("TOPIC_PUT_SIZE: %d %s", r.Code, r.Body)
	}
	if d, r := stats("BROKER_PUT_NUMS", "DefaultCluster"); r.Code != rmq.RespSuccess || d.StatsDay.Sum < 3 {
		t.Fatalf("BROKER_PUT_NUMS: %d %q %s", r.Code, r.Remark, r.Body)
	}
	hb := rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "127.0.0.1@7", ConsumerDataSet: []rmq.ConsumerData{{
		GroupName: "g", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "Counted", SubString: "*", SubVersion: 1, ExpressionType: "TAG"}},
	}}})
	if r := f.invoke(t, hb.Code, hb.ExtFields, hb.Body); r.Code != rmq.RespSuccess {
		t.Fatalf("heartbeat: %d %q", r.Code, r.Remark)
	}
	pull := map[string]string{"consumerGroup": "g", "topic": "Counted", "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
	if r := f.invoke(t, rmq.CodePullMessage, pull, nil); r.Code != rmq.RespSuccess {
		t.Fatalf("pull: %d %q", r.Code, r.Remark)
	}
	if d, r := stats("GROUP_GET_NUMS", "Counted@g"); r.Code != rmq.RespSuccess || d.StatsDay.Sum != 3 || d.StatsMinute.Sum != 3 {
		t.Fatalf("GROUP_GET_NUMS Counted@g after a pull of 3: %d %q %s", r.Code, r.Remark, r.Body)
	}
	if d, r := stats("GROUP_GET_SIZE", "Counted@g"); r.Code != rmq.RespSuccess || d.StatsDay.Sum <= 3 {
		t.Fatalf("GROUP_GET_SIZE: %d %q %s", r.Code, r.Remark, r.Body)
	}
	for _, tc := range [][2]string{{"GROUP_GET_NUMS", "Counted@nobody"}, {"GROUP_GET_NUMS", "Counted"}, {"TOPIC_PUT_NUMS", "NoSuchTopic"}, {"BROKER_PUT_NUMS", "OtherCluster"}, {"SNDBCK_PUT_NUMS", "Counted@g"}} {
		if _, r := stats(tc[0], tc[1]); r.Code != rmq.RespSystemError || !strings.Contains(r.Remark, "The stats <"+tc[0]+"> <"+tc[1]+"> not exist") {
			t.Errorf("%s %s: %d %q", tc[0], tc[1], r.Code, r.Remark)
		}
	}
}

// TestSystemTopicsAndDayTotals: 305 lists the broker's system topics;
// runtime info carries the midnight totals exportMetrics reads (0 for a
// broker started since the last midnight).
func TestSystemTopicsAndDayTotals(t *testing.T) {
	f := startFront(t)
	r := f.invoke(t, rmq.CodeGetSystemTopicListFromBroker, nil, nil)
	var tl rmq.TopicListBody
	if err := json.Unmarshal(r.Body, &tl); r.Code != rmq.RespSuccess || err != nil || len(tl.TopicList) == 0 {
		t.Fatalf("305: %d %q %s %v", r.Code, r.Remark, r.Body, err)
	}
	for _, name := range tl.TopicList {
		if name == "" || strings.HasPrefix(name, "%RETRY%") {
			t.Errorf("305 lists %q", name)
		}
	}
	if !slices.Contains(tl.TopicList, "RMQ_SYS_TRACE_TOPIC") {
		t.Errorf("305 lacks the message trace topic: %v", tl.TopicList)
	}
	r = f.invoke(t, rmq.CodeGetBrokerRuntimeInfo, nil, nil)
	for _, key := range []string{"msgPutTotalTodayMorning", "msgGetTotalTodayMorning"} {
		if !strings.Contains(string(r.Body), `"`+key+`":"0"`) {
			t.Errorf("runtime info lacks %s=0: %s", key, r.Body)
		}
	}
}
