package brokerfront_test

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func startAdmin(t *testing.T) *front {
	t.Helper()
	c := daemontest.Start(t)
	f := &front{addr: c.Broker.Addr().String(), client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { f.client.Close() })
	return f
}

// TestTopicListAndGroupListAreCheckedWholeThenStored: 18 and 225 create
// every entry; one bad entry refuses the whole list and stores none.
func TestTopicListAndGroupListAreCheckedWholeThenStored(t *testing.T) {
	f := startAdmin(t)
	req := rmq.EncodeCreateTopicList(rmq.CreateTopicListBody{TopicConfigList: []rmq.TopicConfig{
		{TopicName: "L1", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, {TopicName: "L2", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6}}})
	if resp := f.invoke(t, req.Code, nil, req.Body); resp.Code != 0 {
		t.Fatalf("18: code %d remark %q", resp.Code, resp.Remark)
	}
	for _, topic := range []string{"L1", "L2"} {
		if resp := f.invoke(t, rmq.CodeGetTopicConfig, map[string]string{"topic": topic}, nil); resp.Code != 0 {
			t.Fatalf("topic %s not created: %d %q", topic, resp.Code, resp.Remark)
		}
	}
	req = rmq.EncodeCreateTopicList(rmq.CreateTopicListBody{TopicConfigList: []rmq.TopicConfig{
		{TopicName: "L3", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, {TopicName: "bad name!", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}})
	if resp := f.invoke(t, req.Code, nil, req.Body); resp.Code != rmq.RespMessageIllegal || !strings.Contains(resp.Remark, "illegal characters") {
		t.Fatalf("bad list: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeGetTopicConfig, map[string]string{"topic": "L3"}, nil); resp.Code == 0 {
		t.Fatal("L3 of a refused list was created")
	}

	greq := rmq.EncodeSubscriptionGroupList(rmq.SubscriptionGroupList{GroupConfigList: []rmq.SubscriptionGroupConfig{
		rmq.DefaultSubscriptionGroupConfig("G1"), rmq.DefaultSubscriptionGroupConfig("G2")}})
	if resp := f.invoke(t, greq.Code, nil, greq.Body); resp.Code != 0 {
		t.Fatalf("225: code %d remark %q", resp.Code, resp.Remark)
	}
	all := f.invoke(t, rmq.CodeGetAllSubscriptionGroup, nil, nil)
	if !strings.Contains(string(all.Body), `"G1"`) || !strings.Contains(string(all.Body), `"G2"`) {
		t.Fatalf("groups not stored: %s", all.Body)
	}
	bad := rmq.DefaultSubscriptionGroupConfig("G4")
	bad.RetryMaxTimes = -1
	greq = rmq.EncodeSubscriptionGroupList(rmq.SubscriptionGroupList{GroupConfigList: []rmq.SubscriptionGroupConfig{rmq.DefaultSubscriptionGroupConfig("G3"), bad}})
	if resp := f.invoke(t, greq.Code, nil, greq.Body); resp.Code != rmq.RespInvalidParameter {
		t.Fatalf("bad group list: code %d remark %q", resp.Code, resp.Remark)
	}
	if all := f.invoke(t, rmq.CodeGetAllSubscriptionGroup, nil, nil); strings.Contains(string(all.Body), `"G3"`) {
		t.Fatal("G3 of a refused list was stored")
	}
}

// TestCheckClientConfigCompilesSQL92: TAG passes, SQL92 must compile.
func TestCheckClientConfigCompilesSQL92(t *testing.T) {
	f := startAdmin(t)
	check := func(typ, expr string) *remoting.Command {
		req := rmq.EncodeCheckClientConfig(rmq.CheckClientRequest{ClientID: "c", Group: "g", SubscriptionData: &rmq.SubscriptionData{Topic: "T", SubString: expr, ExpressionType: typ}})
		return f.invoke(t, req.Code, nil, req.Body)
	}
	if resp := check("TAG", "a || b"); resp.Code != 0 {
		t.Fatalf("TAG: %d %q", resp.Code, resp.Remark)
	}
	if resp := check("SQL92", "a > 1 AND b = 'x'"); resp.Code != 0 {
		t.Fatalf("good SQL92: %d %q", resp.Code, resp.Remark)
	}
	if resp := check("SQL92", "a >"); resp.Code != rmq.RespSubscriptionParseFailed || resp.Remark == "" {
		t.Fatalf("bad SQL92: %d %q", resp.Code, resp.Remark)
	}
}

// TestConsumeTimeSpanAndSystemTopics: 303 answers each write queue with
// its stored times and the group's lag; an unknown topic is
// TOPIC_NOT_EXIST. 305 lists the broker's own topics.
func TestConsumeTimeSpanAndSystemTopics(t *testing.T) {
	f := startAdmin(t)
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Span", "", nil), []byte("m")); resp.Code != 0 {
		t.Fatalf("send: %d %q", resp.Code, resp.Remark)
	}
	f.settledMaxOffset(t, "Span", 1)
	req := rmq.EncodeQueryConsumeTimeSpan(rmq.QueryConsumeTimeSpanRequest{Topic: "Span", Group: "g"})
	resp := f.invoke(t, req.Code, req.ExtFields, nil)
	b, err := rmq.DecodeQueryConsumeTimeSpanBody(resp.Body)
	if resp.Code != 0 || err != nil || len(b.ConsumeTimeSpanSet) == 0 {
		t.Fatalf("303: code %d remark %q body %s err %v", resp.Code, resp.Remark, resp.Body, err)
	}
	q0 := b.ConsumeTimeSpanSet[0]
	if q0.MessageQueue.QueueID != 0 || q0.MinTimeStamp == 0 || q0.MaxTimeStamp < q0.MinTimeStamp || q0.DelayTime < 0 {
		t.Fatalf("queue 0 span %+v", q0)
	}
	req = rmq.EncodeQueryConsumeTimeSpan(rmq.QueryConsumeTimeSpanRequest{Topic: "Nope", Group: "g"})
	if resp := f.invoke(t, req.Code, req.ExtFields, nil); resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("unknown topic: %d %q", resp.Code, resp.Remark)
	}
	resp = f.invoke(t, rmq.CodeGetSystemTopicListFromBroker, nil, nil)
	l, err := rmq.DecodeTopicListAddr(resp.Body)
	if resp.Code != 0 || err != nil || len(l.TopicList) == 0 {
		t.Fatalf("305: code %d body %s err %v", resp.Code, resp.Body, err)
	}
	for _, topic := range l.TopicList {
		if topic == "Span" {
			t.Fatal("a user topic is listed as a system topic")
		}
	}
}
