package brokerfront_test

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon"
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

// TestQueryAssignmentCoversTheWholeRoute: as RocketMQ's broker, 400
// assigns over every broker of the topic's route, not only the asked
// broker's queues: with T on broker-a and broker-b (two queues each) two
// members asking broker-a split all four queues, broker-b's among them;
// in POP mode each gets both brokers (queue -1 of each); a topic the name
// servers do not know is null.
func TestQueryAssignmentCoversTheWholeRoute(t *testing.T) {
	c := daemontest.Start(t)
	cfg := daemontest.Config()
	cfg.Broker.BrokerName, cfg.NameServers = "broker-b", []string{c.NameServerAddr()}
	bb, err := daemon.StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bb.Close() })
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	fa := &front{addr: c.Broker.Addr().String(), client: cl}
	fb := &front{addr: bb.Addr().String(), client: cl}
	for _, f := range []*front{fa, fb} {
		if resp := f.invoke(t, rmq.CodeUpdateAndCreateTopic, map[string]string{"topic": "T", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil); resp.Code != 0 {
			t.Fatalf("create topic on %s: %d %q", f.addr, resp.Code, resp.Remark)
		}
	}
	newPushClient(t, fa.addr).heartbeat(t, "a@host", "", "cg")
	newPushClient(t, fa.addr).heartbeat(t, "b@host", "", "cg")
	queues := func(clientID string) ([]rmq.MessageQueue, string) {
		t.Helper()
		req := rmq.EncodeQueryAssignment(rmq.QueryAssignmentRequest{Topic: "T", ConsumerGroup: "cg", ClientID: clientID, StrategyName: "AVG", MessageModel: "CLUSTERING"})
		resp := fa.invoke(t, req.Code, nil, req.Body)
		a, err := rmq.DecodeQueryAssignmentResponse(resp.Body)
		if resp.Code != rmq.RespSuccess || err != nil || a.MessageQueueAssignments == nil {
			t.Fatalf("400 for %s: code %d remark %q, %v, assignments %v", clientID, resp.Code, resp.Remark, err, a.MessageQueueAssignments)
		}
		var out []rmq.MessageQueue
		mode := ""
		for _, m := range a.MessageQueueAssignments {
			out, mode = append(out, m.MessageQueue), m.Mode
		}
		slices.SortFunc(out, func(x, y rmq.MessageQueue) int {
			return cmp.Or(strings.Compare(x.BrokerName, y.BrokerName), int(x.QueueID-y.QueueID))
		})
		return out, mode
	}
	qa, mode := queues("a@host")
	qb, _ := queues("b@host")
	want := []rmq.MessageQueue{{Topic: "T", BrokerName: "broker-a", QueueID: 0}, {Topic: "T", BrokerName: "broker-a", QueueID: 1}}
	wantB := []rmq.MessageQueue{{Topic: "T", BrokerName: "broker-b", QueueID: 0}, {Topic: "T", BrokerName: "broker-b", QueueID: 1}}
	if !slices.Equal(qa, want) || !slices.Equal(qb, wantB) || mode != "PULL" {
		t.Fatalf("a %v, b %v (%s); want a broker-a's two queues and b broker-b's (AVG over the sorted route), PULL", qa, qb, mode)
	}

	g, _ := json.Marshal(map[string]any{"groupName": "cg"})
	if resp := fa.invoke(t, rmq.CodeUpdateAndCreateSubscriptionGroup, nil, g); resp.Code != 0 {
		t.Fatalf("create group: %d %q", resp.Code, resp.Remark)
	}
	set := rmq.EncodeSetMessageRequestMode(rmq.SetMessageRequestModeRequest{Topic: "T", ConsumerGroup: "cg", Mode: "POP"})
	if resp := fa.invoke(t, set.Code, nil, set.Body); resp.Code != 0 {
		t.Fatalf("401: code %d remark %q", resp.Code, resp.Remark)
	}
	qa, mode = queues("a@host")
	every := []rmq.MessageQueue{{Topic: "T", BrokerName: "broker-a", QueueID: -1}, {Topic: "T", BrokerName: "broker-b", QueueID: -1}}
	if !slices.Equal(qa, every) || mode != "POP" {
		t.Fatalf("POP: %v %q, want queue -1 of both brokers", qa, mode)
	}

	req := rmq.EncodeQueryAssignment(rmq.QueryAssignmentRequest{Topic: "Unrouted", ConsumerGroup: "cg", ClientID: "a@host", StrategyName: "AVG", MessageModel: "CLUSTERING"})
	resp := fa.invoke(t, req.Code, nil, req.Body)
	if a, err := rmq.DecodeQueryAssignmentResponse(resp.Body); err != nil || a.MessageQueueAssignments != nil {
		t.Fatalf("a topic without a route: %v %v, want null", a.MessageQueueAssignments, err)
	}
}
