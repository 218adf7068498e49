package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
)

// statsSettleTime is how long after its first consumption the Go
// client's statistics can still hold one sample (two 10 s periods and a
// margin); see awaitRunningInfo.
const statsSettleTime = 25 * time.Second

// Request codes of the broker → client forwards.
const (
	reqGetConsumerListByGroup = 38
	reqGetConsumerRunningInfo = 307
)

// TestConsumerRunningInfoFromALiveGoConsumer: GET_CONSUMER_RUNNING_INFO
// (307, what mqadmin consumerStatus sends) sent to the broker reaches a
// live official Go push consumer over its own connection, and the
// client's own ConsumerRunningInfo comes back: its subscription of the
// topic and its consume type.
func TestConsumerRunningInfoFromALiveGoConsumer(t *testing.T) {
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic, group := uniqueName(t, "T"), uniqueName(t, "cg")
	prepareTopic(t, p, prod, topic)
	c := newPushConsumer(t, p, group)
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, newCollector(), "m1")

	body := awaitRunningInfo(t, p, group)
	if !strings.Contains(body, topic) || !strings.Contains(body, "CONSUME_PASSIVELY") {
		t.Fatalf("running info names neither the subscription of %s nor the consume type: %.2000s", topic, body)
	}

	cl, err := dialRaw(p.brAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.call(reqGetConsumerRunningInfo, map[string]string{"consumerGroup": group, "clientId": "nobody@nowhere"}, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != 1 || !strings.Contains(resp.Remark, "not online") {
		t.Fatalf("absent client: code %d remark %q", resp.Code, resp.Remark)
	}
}

// awaitRunningInfo waits until the group's one member answers 307
// through the broker with its running info, and returns that body.
//
// The official Go client (v2.1.3) samples its consume statistics every
// 10 s and computes a rate over the samples of the last minute: with one
// sample that is 0/0, and it answers SUCCESS with no body and "json
// marshal error: ... NaN" until the second sample, up to 20 s after its
// first consumption. So the member counts as ready once it answered with
// a body after such a NaN answer, or, if none came, after
// statsSettleTime: then its statistics were past that window already.
func awaitRunningInfo(t testing.TB, p *petrel, group string) string {
	t.Helper()
	var body string
	start, sawNaN := time.Now(), false
	waitFor(t, 60*time.Second, "the member's running info through the broker", func() (bool, string) {
		cl, err := dialRaw(p.brAddr)
		if err != nil {
			return false, err.Error()
		}
		defer cl.Close()
		resp, err := cl.call(reqGetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil, 3*time.Second)
		if err != nil {
			return false, err.Error()
		}
		var ids struct {
			ConsumerIDList []string `json:"consumerIdList"`
		}
		if resp.Code != codeSuccess || json.Unmarshal(resp.Body, &ids) != nil || len(ids.ConsumerIDList) != 1 {
			return false, fmt.Sprintf("consumer list: code %d remark %q body %s", resp.Code, resp.Remark, resp.Body)
		}
		resp, err = cl.call(reqGetConsumerRunningInfo, map[string]string{"consumerGroup": group, "clientId": ids.ConsumerIDList[0], "jstackEnable": "false"}, nil, 15*time.Second)
		if err != nil {
			return false, err.Error()
		}
		if resp.Code != codeSuccess || len(resp.Body) == 0 {
			sawNaN = sawNaN || strings.Contains(resp.Remark, "NaN")
			return false, fmt.Sprintf("307: code %d remark %q", resp.Code, resp.Remark)
		}
		body = string(resp.Body)
		if !sawNaN && time.Since(start) < statsSettleTime {
			return false, "the client's statistics may still be within their first sample"
		}
		return true, ""
	})
	return body
}
