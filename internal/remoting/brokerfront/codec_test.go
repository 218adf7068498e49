package brokerfront_test

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestClientRequestsThroughTheCodec: a heartbeat registers its client (the
// consumer list names it), a lock answers the queues now held, and bodies
// or headers that do not decode are refused with a remark that says why.
func TestClientRequestsThroughTheCodec(t *testing.T) {
	f := startFront(t)
	hb := rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "127.0.0.1@7", ConsumerDataSet: []rmq.ConsumerData{{
		GroupName: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "Orders", SubString: "*", SubVersion: 1, ExpressionType: "TAG"}},
	}}})
	if resp := f.invoke(t, hb.Code, hb.ExtFields, hb.Body); resp.Code != rmq.RespSuccess {
		t.Fatalf("heartbeat: code %d remark %q", resp.Code, resp.Remark)
	}
	lr := rmq.EncodeGetConsumerListRequest(rmq.ConsumerGroupRequest{ConsumerGroup: "cg"})
	list, err := rmq.DecodeConsumerListResponse(f.invoke(t, lr.Code, lr.ExtFields, nil))
	if err != nil || len(list.ConsumerIDList) != 1 || list.ConsumerIDList[0] != "127.0.0.1@7" {
		t.Fatalf("consumer list %+v, %v", list, err)
	}
	mq := rmq.MessageQueue{Topic: "Orders", BrokerName: "broker-a", QueueID: 1}
	lk := rmq.EncodeLockBatchRequest(rmq.LockBatchBody{ConsumerGroup: "cg", ClientID: "127.0.0.1@7", MQSet: []rmq.MessageQueue{mq}})
	held, err := rmq.DecodeLockBatchResponse(f.invoke(t, lk.Code, nil, lk.Body))
	if err != nil || len(held.LockOKMQSet) != 1 || held.LockOKMQSet[0] != mq {
		t.Fatalf("lock answer %+v, %v", held, err)
	}
	for _, tc := range []struct {
		name   string
		code   int16
		ext    map[string]string
		body   string
		remark string
	}{
		{"heartbeat", rmq.CodeHeartBeat, nil, `{"clientID":`, "heartbeat body is not valid JSON: "},
		{"lock", rmq.CodeLockBatchMQ, nil, `[`, "lock body is not valid JSON: "},
		{"unlock", rmq.CodeUnlockBatchMQ, nil, `{"mqSet":{}}`, "unlock body is not valid JSON: "},
		{"unregister", rmq.CodeUnregisterClient, map[string]string{"producerGroup": "pg"}, "", "request header field clientID is missing"},
		{"consumer list", rmq.CodeGetConsumerListByGroup, nil, "", "request header field consumerGroup is missing"},
	} {
		resp := f.invoke(t, tc.code, tc.ext, []byte(tc.body))
		if resp.Code != rmq.RespSystemError || !strings.HasPrefix(resp.Remark, tc.remark) {
			t.Errorf("%s: code %d remark %q, want %d starting %q", tc.name, resp.Code, resp.Remark, rmq.RespSystemError, tc.remark)
		}
	}
}
