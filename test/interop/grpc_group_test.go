package interop

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// 5.x consumer groups behave like 4.x ones: these tests mix the official
// 4.x and 5.x Go clients in one group, and drive a 5.x group with the CLI.
//
// The 4.x member that sends a message back runs in a child process (this
// test binary with sendBackChildEnv set, dispatched by TestMain), so that
// it can be stopped mid-test: the client races itself in Shutdown (see
// startConsumer), which would fail this race-detecting binary. It reports
// on stdout, one line each:
//
//	STARTED                      the consumer started
//	B <body>                     a first delivery, failed: sent back
//	M <reconsumeTimes> <body>    a later delivery, consumed
//	ERROR <text>                 the consumer could not start
const sendBackChildEnv = "PETREL_INTEROP_SENDBACK_CHILD"

// runSendBackChild is the child's main; it returns the exit code.
func runSendBackChild() int {
	return runPushChildWith("_sendback", func(emit func(string, ...any), msgs []*primitive.MessageExt) consumer.ConsumeResult {
		for _, m := range msgs {
			if m.ReconsumeTimes == 0 {
				emit("B %s", m.Body)
				return consumer.ConsumeRetryLater
			}
			emit("M %d %s", m.ReconsumeTimes, m.Body)
		}
		return consumer.ConsumeSuccess
	})
}

// startSendBackChild starts the child for topic and group on p; onLine
// gets every line after STARTED (from one goroutine). The returned
// function stops it (also done when the test ends).
func startSendBackChild(t *testing.T, p *petrel, topic, group string, onLine func(string)) (stop func()) {
	t.Helper()
	return startLineChild(t, "send-back consumer child", onLine, sendBackChildEnv+"=1", "GORACE=exitcode=0",
		"INTEROP_NS="+p.nsAddr, "INTEROP_TOPIC="+topic, "INTEROP_GROUP="+group)
}

// TestGRPC4xSendBackReaches5xSimpleConsumer: a 4.x member of a group fails
// a message and sends it back (CONSUMER_SEND_MSG_BACK to %RETRY%<group>,
// due 10 s later); once that member is gone, a 5.x simple consumer of the
// same group receives the message from the retry topic, as with RocketMQ,
// with a delivery attempt that counts the 4.x one.
func TestGRPC4xSendBackReaches5xSimpleConsumer(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic, group := uniqueName(t, "t"), uniqueName(t, "g")
	prod := newProducer5(t, p, nil, topic)
	body := "send me back " + uniqueName(t, "b")
	id := send5(t, prod, &rmq.Message{Topic: topic, Body: []byte(body)}).MessageID

	sentBack := make(chan struct{}, 1)
	var mu sync.Mutex
	var reconsumed []string
	stop := startSendBackChild(t, p, topic, group, func(line string) {
		switch {
		case line == "B "+body:
			select {
			case sentBack <- struct{}{}:
			default:
			}
		case strings.HasPrefix(line, "M "):
			mu.Lock()
			reconsumed = append(reconsumed, line)
			mu.Unlock()
		}
	})
	select {
	case <-sentBack:
	case <-time.After(consumeTimeout):
		t.Fatalf("the 4.x member did not receive %q within %v", body, consumeTimeout)
	}
	// The send-back is stored once the retry copy waits in the timer.
	metrics := "http://" + httpAddr(t, p) + "/metrics"
	pending := regexp.MustCompile(`(?m)^petrel_timer_pending_messages (\S+)$`)
	waitFor(t, 10*time.Second, "the send-back waiting in the timer", func() (bool, string) {
		_, text := httpGet(t, metrics)
		m := pending.FindStringSubmatch(text)
		return m != nil && m[1] != "0", "pending " + strings.Join(m, " ")
	})
	stop() // before the copy is due, so that the 4.x member cannot take it
	mu.Lock()
	early := slices.Clone(reconsumed)
	mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("the 4.x member consumed the retry copy itself (%v); the test needs it stopped in time", early)
	}

	sc := newSimpleConsumer5(t, p, group, topic, nil)
	var got *rmq.MessageView
	receiveUntil(t, sc, 16, 20*time.Second, "the sent-back message at the 5.x simple consumer", func(mv *rmq.MessageView) {
		if string(mv.GetBody()) == body && mv.GetDeliveryAttempt() >= 2 {
			got = mv
		}
		ack5(t, sc, mv)
	}, func() bool { return got != nil })
	if got.GetMessageId() != id || got.GetTopic() != topic || got.GetDeliveryAttempt() != 2 {
		t.Fatalf("retry delivery: id %s topic %s attempt %d; want %s, %s, 2", got.GetMessageId(), got.GetTopic(), got.GetDeliveryAttempt(), id, topic)
	}
	expectNothing(t, sc, 2*receiveAwait, "the retry copy was acknowledged")
}

// TestGRPCResetOffsetMakes5xConsumerReceiveAgain: `petrel group
// reset-offset --to-earliest` makes a 5.x simple consumer receive an
// acknowledged message again; `group describe` shows the 5.x member with
// its language, version and address, and what it holds in flight.
func TestGRPCResetOffsetMakes5xConsumerReceiveAgain(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	topic, group := uniqueName(t, "t"), uniqueName(t, "g")
	prod := newProducer5(t, p, nil, topic)
	body := "again " + uniqueName(t, "b")
	send5(t, prod, &rmq.Message{Topic: topic, Body: []byte(body)})
	sc := newSimpleConsumer5(t, p, group, topic, nil)

	var first *rmq.MessageView
	receiveUntil(t, sc, 16, 20*time.Second, "the message", func(mv *rmq.MessageView) {
		if string(mv.GetBody()) == body {
			first = mv
		}
	}, func() bool { return first != nil })

	var d struct {
		Members []struct {
			Address  string `json:"address"`
			Language string `json:"language"`
			Version  int    `json:"version"`
		} `json:"members"`
		TotalInFlight int64 `json:"totalInFlight"`
	}
	// The client registers with its first Settings and heartbeat, about 1 s
	// after it started (it may receive before).
	var out string
	waitFor(t, 15*time.Second, "the 5.x member in group describe", func() (bool, string) {
		out = runCLI(t, p, "group", "describe", group, "-o", "json")
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("group describe -o json: %v\n%s", err, out)
		}
		return len(d.Members) > 0, out
	})
	if len(d.Members) != 1 || d.Members[0].Language != "GO" || d.Members[0].Version < 413 || !strings.HasPrefix(d.Members[0].Address, "127.0.0.1:") {
		t.Fatalf("5.x member %+v; want language GO, a 5.x version (≥ 413, V5_0_0) and its 127.0.0.1 address\n%s", d.Members, out)
	}
	if d.TotalInFlight != 1 {
		t.Fatalf("in flight %d while the message is received and not acknowledged, want 1\n%s", d.TotalInFlight, out)
	}
	ack5(t, sc, first)

	runCLI(t, p, "group", "reset-offset", group, "--topic", topic, "--to-earliest")
	var again *rmq.MessageView
	receiveUntil(t, sc, 16, 20*time.Second, "the acknowledged message again after the reset", func(mv *rmq.MessageView) {
		if string(mv.GetBody()) == body {
			again = mv
		}
		ack5(t, sc, mv)
	}, func() bool { return again != nil })
	if again.GetDeliveryAttempt() != 1 {
		t.Fatalf("delivery after the reset has attempt %d, want 1 (a new delivery)", again.GetDeliveryAttempt())
	}
}
