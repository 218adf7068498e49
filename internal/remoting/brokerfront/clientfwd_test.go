package brokerfront_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// answeringConsumer is a consumer client on its own connection whose
// handler answers what the broker forwards with answer.
func answeringConsumer(t *testing.T, addr, clientID, group string, answer func(req *remoting.Command) *remoting.Command) *pushClient {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Handler: func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		return answer(req)
	}})
	t.Cleanup(func() { cl.Close() })
	p := &pushClient{addr: addr, cl: cl, got: make(chan pushed, 16)}
	p.heartbeat(t, clientID, "", group)
	return p
}

// TestConsumerRunningInfoIsForwardedToTheMember: 307 reaches the named
// member over its own connection with the admin's fields, and the
// member's answer (code, remark, ext fields, body) comes back as is; a
// member that is not connected is SYSTEM_ERROR "not online".
func TestConsumerRunningInfoIsForwardedToTheMember(t *testing.T) {
	c := daemontest.Start(t)
	addr := c.Broker.Addr().String()
	var seen atomic.Value
	answeringConsumer(t, addr, "c1@host", "cg", func(req *remoting.Command) *remoting.Command {
		if req.Code != rmq.CodeGetConsumerRunningInfo {
			return nil
		}
		seen.Store(req.Ext("clientId") + "|" + req.Ext("consumerGroup") + "|" + req.Ext("jstackEnable"))
		resp := remoting.NewResponse(req, rmq.RespSuccess, "from the client")
		resp.SetExt("k", "v")
		resp.Body = []byte(`{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"}}`)
		return resp
	})
	admin := &front{addr: addr, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { admin.client.Close() })

	resp := admin.invoke(t, rmq.CodeGetConsumerRunningInfo, map[string]string{"consumerGroup": "cg", "clientId": "c1@host", "jstackEnable": "true"}, nil)
	if resp.Code != rmq.RespSuccess || resp.Remark != "from the client" || resp.Ext("k") != "v" || !strings.Contains(string(resp.Body), "PROP_CONSUME_TYPE") {
		t.Fatalf("relayed answer: code %d remark %q k=%q body %s", resp.Code, resp.Remark, resp.Ext("k"), resp.Body)
	}
	if got, _ := seen.Load().(string); got != "c1@host|cg|true" {
		t.Fatalf("the client saw %q, want the admin's fields", got)
	}

	resp = admin.invoke(t, rmq.CodeGetConsumerRunningInfo, map[string]string{"consumerGroup": "cg", "clientId": "gone@host"}, nil)
	if resp.Code != rmq.RespSystemError || resp.Remark != "The Consumer <cg> <gone@host> not online" {
		t.Fatalf("absent member: code %d remark %q", resp.Code, resp.Remark)
	}
	resp = admin.invoke(t, rmq.CodeGetConsumerRunningInfo, map[string]string{"consumerGroup": "cg"}, nil)
	if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "clientId") {
		t.Fatalf("no clientId: code %d remark %q", resp.Code, resp.Remark)
	}
}

// TestForwardedCallTimesOut: a member that does not answer within the
// bound is CONSUME_MSG_TIMEOUT (207), and the remark names the member
// and no internal cause.
func TestForwardedCallTimesOut(t *testing.T) {
	c := daemontest.Start(t, func(cfg *daemon.BrokerConfig) { cfg.ClientCallTimeout = 200 * time.Millisecond })
	addr := c.Broker.Addr().String()
	release := make(chan struct{})
	answeringConsumer(t, addr, "slow@host", "cg", func(req *remoting.Command) *remoting.Command {
		if req.Code == rmq.CodeGetConsumerRunningInfo {
			<-release
		}
		return nil
	})
	t.Cleanup(func() { close(release) }) // before the client's Close (cleanups run last first)
	admin := &front{addr: addr, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { admin.client.Close() })
	resp := admin.invoke(t, rmq.CodeGetConsumerRunningInfo, map[string]string{"consumerGroup": "cg", "clientId": "slow@host"}, nil)
	if resp.Code != rmq.RespConsumeMsgTimeout || !strings.Contains(resp.Remark, "<cg> <slow@host> Timeout") || strings.Contains(resp.Remark, "remoting:") {
		t.Fatalf("code %d remark %q, want 207 naming the member", resp.Code, resp.Remark)
	}
}

// TestConsumeMessageDirectlyCarriesTheStoredMessage: 309 reaches the
// member with the stored message as its body and the broker's name
// added; an unknown message id is refused before the client is asked.
func TestConsumeMessageDirectlyCarriesTheStoredMessage(t *testing.T) {
	c := daemontest.Start(t)
	addr := c.Broker.Addr().String()
	admin := &front{addr: addr, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { admin.client.Close() })
	sent := admin.invoke(t, rmq.CodeSendMessage, sendExt("T", "", nil), []byte("hello directly"))
	if sent.Code != rmq.RespSuccess {
		t.Fatalf("send: %d %q", sent.Code, sent.Remark)
	}
	msgID := sent.Ext("msgId") // the offset message id, as RocketMQ's send answer
	var asked atomic.Int32
	answeringConsumer(t, addr, "c1@host", "cg", func(req *remoting.Command) *remoting.Command {
		if req.Code != rmq.CodeConsumeMessageDirectly {
			return nil
		}
		asked.Add(1)
		rec := message.Record(req.Body)
		result := "CR_FAILED"
		if len(req.Body) >= message.MinRecordLen && string(rec.Body()) == "hello directly" && req.Ext("brokerName") == "broker-a" {
			result = "CR_SUCCESS"
		}
		resp := remoting.NewResponse(req, rmq.RespSuccess, "")
		resp.Body = []byte(`{"order":false,"autoCommit":true,"consumeResult":"` + result + `","remark":"","spentTimeMills":1}`)
		return resp
	})
	resp := admin.invoke(t, rmq.CodeConsumeMessageDirectly, map[string]string{"consumerGroup": "cg", "clientId": "c1@host", "msgId": msgID, "topic": "T"}, nil)
	if resp.Code != rmq.RespSuccess || !strings.Contains(string(resp.Body), "CR_SUCCESS") {
		t.Fatalf("code %d remark %q body %s", resp.Code, resp.Remark, resp.Body)
	}
	resp = admin.invoke(t, rmq.CodeConsumeMessageDirectly, map[string]string{"consumerGroup": "cg", "clientId": "c1@host", "msgId": "not-an-id"}, nil)
	if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "not an offset message id") {
		t.Fatalf("bad id: code %d remark %q", resp.Code, resp.Remark)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the client was asked %d times, want once (the bad id refused at the broker)", n)
	}
}

// TestConsumerStatusGathersEveryMember: 223 asks each member with 221
// and answers their queue offsets by client id; naming one member asks
// only it; a group without members is SYSTEM_ERROR.
func TestConsumerStatusGathersEveryMember(t *testing.T) {
	c := daemontest.Start(t)
	addr := c.Broker.Addr().String()
	for i, id := range []string{"a@host", "b@host"} {
		answeringConsumer(t, addr, id, "cg", func(req *remoting.Command) *remoting.Command {
			if req.Code != rmq.CodeGetConsumerStatusFromClient || req.Ext("topic") != "T" || req.Ext("group") != "cg" {
				return nil
			}
			resp := remoting.NewResponse(req, rmq.RespSuccess, "")
			resp.Body = []byte(`{"messageQueueTable":{{"brokerName":"broker-a","queueId":` + strconv.Itoa(i) + `,"topic":"T"}:` + strconv.Itoa(10+i) + `}}`)
			return resp
		})
	}
	admin := &front{addr: addr, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { admin.client.Close() })
	resp := admin.invoke(t, rmq.CodeInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "cg"}, nil)
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	got, err := rmq.DecodeConsumerStatusBody(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a, b := got["a@host"], got["b@host"]
	if len(got) != 2 || a[rmq.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}] != 10 || b[rmq.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}] != 11 {
		t.Fatalf("consumer table %v (body %s)", got, resp.Body)
	}
	resp = admin.invoke(t, rmq.CodeInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "cg", "clientAddr": "b@host"}, nil)
	if got, _ := rmq.DecodeConsumerStatusBody(resp.Body); len(got) != 1 || got["b@host"] == nil {
		t.Fatalf("one member named: %v", got)
	}
	resp = admin.invoke(t, rmq.CodeInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "nobody"}, nil)
	if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "No Any Consumer online") {
		t.Fatalf("empty group: code %d remark %q", resp.Code, resp.Remark)
	}
}
