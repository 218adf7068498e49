package brokerfront_test

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestAdminHeadersWithABadFieldAreRefusedByName: the front refuses a
// malformed or missing header field of an admin request with a remark
// naming it, and changes nothing (readQueueNums "x" used to become 0).
func TestAdminHeadersWithABadFieldAreRefusedByName(t *testing.T) {
	f := startFront(t)
	create := map[string]string{"topic": "Bad", "defaultTopic": "TBW102", "readQueueNums": "x", "writeQueueNums": "4",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
	r := f.invoke(t, rmq.CodeUpdateAndCreateTopic, create, nil)
	if r.Code != rmq.RespSystemError || !strings.Contains(r.Remark, "readQueueNums") || !strings.Contains(r.Remark, `"x"`) {
		t.Fatalf("17 with readQueueNums x: %d %q", r.Code, r.Remark)
	}
	all := f.invoke(t, rmq.CodeGetAllTopicConfig, nil, nil)
	body, err := rmq.DecodeTopicConfigBody(all.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := body.TopicConfigTable["Bad"]; ok {
		t.Fatal("the refused topic was created")
	}
	create["readQueueNums"] = "4"
	if r := f.invoke(t, rmq.CodeUpdateAndCreateTopic, create, nil); r.Code != rmq.RespSuccess {
		t.Fatalf("17 with good fields: %d %q", r.Code, r.Remark)
	}
	for _, c := range []struct {
		code  int16
		ext   map[string]string
		field string
	}{
		{rmq.CodeDeleteTopicInBroker, nil, "topic"},
		{rmq.CodeGetTopicStatsInfo, nil, "topic"},
		{rmq.CodeGetConsumerConnectionList, nil, "consumerGroup"},
		{rmq.CodeGetConsumeStats, map[string]string{"topic": "Bad"}, "consumerGroup"},
	} {
		if r := f.invoke(t, c.code, c.ext, nil); r.Code != rmq.RespSystemError || !strings.Contains(r.Remark, c.field+" is missing") {
			t.Errorf("%d without %s: %d %q", c.code, c.field, r.Code, r.Remark)
		}
	}
	if r := f.invoke(t, rmq.CodeDeleteSubscriptionGroup, map[string]string{"groupName": "g", "cleanOffset": "maybe"}, nil); r.Code != rmq.RespInvalidParameter ||
		!strings.Contains(r.Remark, "cleanOffset") {
		t.Errorf("207 with cleanOffset maybe: %d %q", r.Code, r.Remark)
	}
}
