package brokerfront_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// GET_TOPIC_CONFIG, QUERY_TOPIC_CONSUME_BY_WHO and QUERY_TOPICS_BY_CONSUMER
// answer with RocketMQ's body shapes: the topic's config, the groups with
// an offset on a topic, the topics a group has offsets on; an unknown
// topic is TOPIC_NOT_EXIST and a missing field a refusal naming it.
func TestTopicAndGroupLookups(t *testing.T) {
	f := startFront(t)
	create := map[string]string{"topic": "Looked", "readQueueNums": "2", "writeQueueNums": "3", "perm": "6", "topicFilterType": "SINGLE_TAG"}
	if r := f.invoke(t, rmq.CodeUpdateAndCreateTopic, create, nil); r.Code != rmq.RespSuccess {
		t.Fatalf("create: %d %q", r.Code, r.Remark)
	}
	r := f.invoke(t, rmq.CodeGetTopicConfig, map[string]string{"topic": "Looked"}, nil)
	if r.Code != rmq.RespSuccess {
		t.Fatalf("351: %d %q", r.Code, r.Remark)
	}
	tc, err := rmq.DecodeTopicConfigAndMapping(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if tc.TopicName != "Looked" || tc.ReadQueueNums != 2 || tc.WriteQueueNums != 3 || tc.Perm != 6 || !strings.Contains(string(r.Body), `"mappingDetail":null`) {
		t.Fatalf("351 body %s", r.Body)
	}
	if r := f.invoke(t, rmq.CodeGetTopicConfig, map[string]string{"topic": "Nowhere"}, nil); r.Code != rmq.RespTopicNotExist {
		t.Fatalf("351 of an unknown topic: %d %q", r.Code, r.Remark)
	}

	commit := map[string]string{"consumerGroup": "LookGroup", "topic": "Looked", "queueId": "1", "commitOffset": "0"}
	if r := f.invoke(t, rmq.CodeUpdateConsumerOffset, commit, nil); r.Code != rmq.RespSuccess {
		t.Fatalf("commit: %d %q", r.Code, r.Remark)
	}
	r = f.invoke(t, rmq.CodeQueryTopicConsumeByWho, map[string]string{"topic": "Looked"}, nil)
	gl, err := rmq.DecodeGroupListBody(r.Body)
	if r.Code != rmq.RespSuccess || err != nil || !slices.Equal(gl.GroupList, []string{"LookGroup"}) {
		t.Fatalf("300: %d %q %s %v", r.Code, r.Remark, r.Body, err)
	}
	r = f.invoke(t, rmq.CodeQueryTopicConsumeByWho, map[string]string{"topic": "Nowhere"}, nil)
	if gl, err := rmq.DecodeGroupListBody(r.Body); r.Code != rmq.RespSuccess || err != nil || len(gl.GroupList) != 0 || !strings.Contains(string(r.Body), `"groupList":[]`) {
		t.Fatalf("300 of a topic nobody consumes: %d %s %v", r.Code, r.Body, err)
	}
	r = f.invoke(t, rmq.CodeQueryTopicsByConsumer, map[string]string{"group": "LookGroup"}, nil)
	tl, err := rmq.DecodeTopicListAddr(r.Body)
	if r.Code != rmq.RespSuccess || err != nil || !slices.Equal(tl.TopicList, []string{"Looked"}) || tl.BrokerAddr == "" {
		t.Fatalf("301: %d %q %s %v", r.Code, r.Remark, r.Body, err)
	}
	for code, field := range map[int16]string{rmq.CodeGetTopicConfig: "topic", rmq.CodeQueryTopicConsumeByWho: "topic", rmq.CodeQueryTopicsByConsumer: "group"} {
		if r := f.invoke(t, code, nil, nil); r.Code != rmq.RespSystemError || !strings.Contains(r.Remark, field+" is missing") {
			t.Errorf("%d without %s: %d %q", code, field, r.Code, r.Remark)
		}
	}
}
