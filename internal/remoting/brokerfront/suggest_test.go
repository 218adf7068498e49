package brokerfront_test

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestPullAnswerCarriesTheBrokersSuggestion: the front encodes the
// broker's suggestWhichBrokerId: with SlaveReadEnable and little memory, a
// pull far behind the write point is told 1 (whichBrokerWhenConsumeSlowly
// of a group not created), one at the write point 0.
func TestPullAnswerCarriesTheBrokersSuggestion(t *testing.T) {
	f := startFrontWith(t, func(c *daemon.BrokerConfig) {
		c.Broker.SlaveReadEnable = true
		c.Broker.PhysicalMemory = 5_000 // 40 %: 2,000 bytes
	})
	body := []byte(strings.Repeat("x", 100))
	for range 50 {
		if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), body); resp.Code != rmq.RespSuccess {
			t.Fatalf("send: code %d remark %q", resp.Code, resp.Remark)
		}
	}
	f.settledMaxOffset(t, "Orders", 50)
	hb := rmq.EncodeHeartbeat(rmq.HeartbeatData{ClientID: "127.0.0.1@7", ConsumerDataSet: []rmq.ConsumerData{{
		GroupName: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "Orders", SubString: "*", SubVersion: 1, ExpressionType: "TAG"}},
	}}})
	if resp := f.invoke(t, hb.Code, hb.ExtFields, hb.Body); resp.Code != rmq.RespSuccess {
		t.Fatalf("heartbeat: code %d remark %q", resp.Code, resp.Remark)
	}
	for _, tc := range []struct{ offset, want string }{{"0", "1"}, {"49", "0"}} {
		pull := map[string]string{"consumerGroup": "cg", "topic": "Orders", "queueId": "0", "queueOffset": tc.offset,
			"maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
		resp := f.invoke(t, rmq.CodePullMessage, pull, nil)
		if resp.Code != rmq.RespSuccess {
			t.Fatalf("pull at %s: code %d remark %q", tc.offset, resp.Code, resp.Remark)
		}
		if got := resp.Ext("suggestWhichBrokerId"); got != tc.want {
			t.Fatalf("pull at %s: suggestWhichBrokerId %q, want %s", tc.offset, got, tc.want)
		}
	}
}
