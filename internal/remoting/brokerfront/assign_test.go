package brokerfront_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func assignment(t *testing.T, f *front, clientID string) ([]int32, string, bool) {
	t.Helper()
	req := rmq.EncodeQueryAssignment(rmq.QueryAssignmentRequest{Topic: "T", ConsumerGroup: "cg", ClientID: clientID, StrategyName: "AVG", MessageModel: "CLUSTERING"})
	resp := f.invoke(t, req.Code, nil, req.Body)
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("400: code %d remark %q", resp.Code, resp.Remark)
	}
	a, err := rmq.DecodeQueryAssignmentResponse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if a.MessageQueueAssignments == nil {
		return nil, "", false
	}
	var qs []int32
	mode := ""
	for _, m := range a.MessageQueueAssignments {
		qs = append(qs, m.MessageQueue.QueueID)
		mode = m.Mode
	}
	return qs, mode, true
}

// TestQueryAssignmentSplitsQueuesAmongLiveMembers: two live members of
// a group split the topic's queues under AVG in PULL mode; after 401
// sets POP, each gets every queue (-1); the mode survives an update of
// the group (it is stored with the group's config).
func TestQueryAssignmentSplitsQueuesAmongLiveMembers(t *testing.T) {
	c := daemontest.Start(t)
	addr := c.Broker.Addr().String()
	f := &front{addr: addr, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { f.client.Close() })
	if resp := f.invoke(t, rmq.CodeUpdateAndCreateTopic, map[string]string{"topic": "T", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil); resp.Code != 0 {
		t.Fatalf("create topic: %d %q", resp.Code, resp.Remark)
	}
	if _, _, ok := assignment(t, f, "a@host"); ok {
		t.Fatal("a group without live members got an assignment, want null")
	}
	newPushClient(t, addr).heartbeat(t, "a@host", "", "cg")
	newPushClient(t, addr).heartbeat(t, "b@host", "", "cg")
	qa, mode, _ := assignment(t, f, "a@host")
	qb, _, _ := assignment(t, f, "b@host")
	if len(qa) != 2 || len(qb) != 2 || qa[0] == qb[0] || mode != "PULL" {
		t.Fatalf("a %v b %v mode %q, want two queues each, PULL", qa, qb, mode)
	}

	set := func(body rmq.SetMessageRequestModeRequest) *remoting.Command {
		req := rmq.EncodeSetMessageRequestMode(body)
		return f.invoke(t, req.Code, nil, req.Body)
	}
	if resp := set(rmq.SetMessageRequestModeRequest{Topic: "T", ConsumerGroup: "ghost", Mode: "POP"}); resp.Code != rmq.RespSubscriptionGroupNotExist {
		t.Fatalf("401 without a group config: code %d remark %q", resp.Code, resp.Remark)
	}
	g, _ := json.Marshal(map[string]any{"groupName": "cg"})
	if resp := f.invoke(t, rmq.CodeUpdateAndCreateSubscriptionGroup, nil, g); resp.Code != 0 {
		t.Fatalf("create group: %d %q", resp.Code, resp.Remark)
	}
	if resp := set(rmq.SetMessageRequestModeRequest{Topic: "T", ConsumerGroup: "cg", Mode: "POP"}); resp.Code != 0 {
		t.Fatalf("401: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeUpdateAndCreateSubscriptionGroup, nil, g); resp.Code != 0 {
		t.Fatalf("update group: %d %q", resp.Code, resp.Remark)
	}
	qa, mode, _ = assignment(t, f, "a@host")
	if len(qa) != 1 || qa[0] != -1 || mode != "POP" {
		t.Fatalf("after POP: %v %q, want [-1] POP", qa, mode)
	}
	if resp := set(rmq.SetMessageRequestModeRequest{Topic: "%RETRY%cg", ConsumerGroup: "cg", Mode: "POP"}); resp.Code != rmq.RespNoPermission {
		t.Fatalf("retry topic: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := set(rmq.SetMessageRequestModeRequest{Topic: "Nope", ConsumerGroup: "cg", Mode: "POP"}); resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("unknown topic: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeSetMessageRequestMode, nil, []byte(`{"topic":"T","consumerGroup":"cg","mode":"PUSH"}`)); resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "mode") {
		t.Fatalf("bad mode: code %d remark %q", resp.Code, resp.Remark)
	}
}
