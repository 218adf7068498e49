package brokerfront_test

import (
	"context"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// replAnswer is a broker.Replicator that answers every wait with err.
type replAnswer struct{ err error }

func (r replAnswer) WaitReplicated(context.Context, int64) error { return r.err }

func startFrontWith(t *testing.T, edit func(*daemon.BrokerConfig)) *front {
	t.Helper()
	c := daemontest.Start(t, edit)
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	return &front{addr: c.Broker.Addr().String(), client: cl, core: c.Broker.Core()}
}

// TestSendUnderSyncReplicationAnswersTheRocketMQCodes: a send the slaves
// did not confirm in time is code 12 FLUSH_SLAVE_TIMEOUT, one without
// enough in-sync slaves code 11 SLAVE_NOT_AVAILABLE — both with the
// stored message's id and queue offset, as RocketMQ answers them (the
// clients read them as send statuses) — and a confirmed one code 0.
func TestSendUnderSyncReplicationAnswersTheRocketMQCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{nil, rmq.RespSuccess},
		{broker.ErrReplicationTimeout, rmq.RespFlushSlaveTimeout},
		{broker.ErrNotEnoughReplicas, rmq.RespSlaveNotAvailable},
	} {
		f := startFrontWith(t, func(c *daemon.BrokerConfig) { c.Broker.Replicator = replAnswer{tc.err} })
		resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x"))
		if resp.Code != tc.want || resp.Ext("msgId") == "" || resp.Ext("queueOffset") != "0" {
			t.Fatalf("replicator answer %v: code %d remark %q msgId %q queueOffset %q, want code %d with the stored message",
				tc.err, resp.Code, resp.Remark, resp.Ext("msgId"), resp.Ext("queueOffset"), tc.want)
		}
	}
}

// TestSlaveRefusesSendsAndAdminWrites: on a slave a send is
// SERVICE_NOT_AVAILABLE (RocketMQ's answer to a put on a slave, which
// producers retry elsewhere) and a topic create SYSTEM_ERROR (its admin
// processor's), each with a remark naming the slave; reads are served.
func TestSlaveRefusesSendsAndAdminWrites(t *testing.T) {
	f := startFrontWith(t, func(c *daemon.BrokerConfig) { c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave })
	resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("x"))
	if resp.Code != rmq.RespServiceNotAvailable || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("send to a slave: code %d remark %q", resp.Code, resp.Remark)
	}
	resp = f.invoke(t, rmq.CodeUpdateAndCreateTopic, map[string]string{"topic": "Orders", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	if resp.Code != rmq.RespSystemError || !strings.Contains(resp.Remark, "slave") {
		t.Fatalf("topic create on a slave: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := f.maxOffset(t, "TBW102"); got != "0" {
		t.Fatalf("max offset read from the slave: %q", got)
	}
}

// TestPullSuggestsTheMasterFromMasterAndSlave: pull answers carry
// suggestWhichBrokerId 0 on a master and on a slave, so that the official
// clients read from the master whenever the route lists it and fall back to
// a slave only while it does not (broker/suggest.go: SlaveReadEnable is off).
func TestPullSuggestsTheMasterFromMasterAndSlave(t *testing.T) {
	pull := map[string]string{"consumerGroup": "cg", "topic": "TBW102", "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
	for _, tc := range []struct {
		name string
		edit func(*daemon.BrokerConfig)
	}{
		{"master", func(*daemon.BrokerConfig) {}},
		{"slave", func(c *daemon.BrokerConfig) { c.Broker.BrokerID, c.Broker.Role = 1, broker.RoleSlave }},
	} {
		f := startFrontWith(t, tc.edit)
		hb := rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "127.0.0.1@7", ConsumerDataSet: []rmq.ConsumerData{{
			GroupName: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
			SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "TBW102", SubString: "*", SubVersion: 1, ExpressionType: "TAG"}},
		}}})
		if resp := f.invoke(t, hb.Code, hb.ExtFields, hb.Body); resp.Code != rmq.RespSuccess {
			t.Fatalf("%s: heartbeat: code %d remark %q", tc.name, resp.Code, resp.Remark)
		}
		resp := f.invoke(t, rmq.CodePullMessage, pull, nil)
		if resp.Code == rmq.RespSystemError {
			t.Fatalf("%s: pull refused: %q", tc.name, resp.Remark)
		}
		if resp.Code != rmq.RespPullNotFound {
			t.Fatalf("%s: pull of an empty queue: code %d remark %q", tc.name, resp.Code, resp.Remark)
		}
		if got := resp.Ext("suggestWhichBrokerId"); got != "0" {
			t.Fatalf("%s: pull answer suggestWhichBrokerId %q, want 0", tc.name, got)
		}
	}
}
