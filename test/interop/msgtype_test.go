package interop

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestMessageTypeCheckOn4xSends: a topic created with message.type NORMAL
// refuses a 4.x producer's delayed message with MESSAGE_ILLEGAL (13, what
// RocketMQ 5's proxy answers remoting clients) and a remark naming both
// types, while a plain message is stored; under
// --topic-message-type-check=false the delayed one is taken.
func TestMessageTypeCheckOn4xSends(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		var extra []string
		if !check {
			extra = []string{"--topic-message-type-check=false"}
		}
		p := startPetrel(t, serverOptions{extraArgs: extra})
		topic := uniqueName(t, "normal")
		if out, err := exec.Command(petrelBin, "topic", "create", topic, "--queues", "2", "--attr", "message.type=NORMAL", "--namesrv", p.nsAddr).CombinedOutput(); err != nil {
			t.Fatalf("petrel topic create: %v\n%s", err, out)
		}
		waitRoute(t, p.nsAddr, topic)
		prod := newProducer(t, p)
		if res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte("plain"))); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("plain send to a NORMAL topic: %v %v", res, err)
		}
		delayed := primitive.NewMessage(topic, []byte("later"))
		delayed.WithDelayTimeLevel(2)
		res, err := prod.SendSync(context.Background(), delayed)
		if !check {
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("with the check off, a delayed send to a NORMAL topic: %v %v", res, err)
			}
			continue
		}
		// The client renders the broker's refusal as "CODE: 13, DESC: remark".
		if err == nil || !strings.Contains(err.Error(), "CODE: 13,") || !strings.Contains(err.Error(), "accepts NORMAL messages only") ||
			!strings.Contains(err.Error(), "this is a DELAY message") {
			t.Fatalf("delayed send to a NORMAL topic: %v %v; want code 13 (MESSAGE_ILLEGAL) naming NORMAL and DELAY", res, err)
		}
		t.Logf("refused: %v", err)
	}
}
