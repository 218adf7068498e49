package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// fastRetryLevels keeps levels 1 and 2 at RocketMQ's 1 s and 5 s (the delay
// test uses level 2) and makes the retry levels 3.. short.
var fastRetryLevels = []string{"--delay-levels", "1s 5s" + strings.Repeat(" 200ms", 16)}

// attemptLog records the reconsume times seen per body.
type attemptLog struct {
	mu      sync.Mutex
	seen    map[string][]int32
	changed chan struct{}
}

func newAttemptLog() *attemptLog {
	return &attemptLog{seen: map[string][]int32{}, changed: make(chan struct{}, 1)}
}

func (a *attemptLog) add(m *primitive.MessageExt) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[string(m.Body)] = append(a.seen[string(m.Body)], m.ReconsumeTimes)
	select {
	case a.changed <- struct{}{}:
	default:
	}
	return len(a.seen[string(m.Body)])
}

func (a *attemptLog) get(body string) []int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int32(nil), a.seen[body]...)
}

func (a *attemptLog) wait(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-a.changed:
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

// prepareGroupTopics creates the retry and dead-letter topics of a group,
// as a group that ran before has them. The broker creates them itself (the
// retry topic at the first heartbeat, the DLQ at the first dead letter),
// but the client looks up a topic's route when it starts and then only
// every 30 s, so a test that starts with a fresh group would wait that long.
func prepareGroupTopics(t *testing.T, p *petrel, group string) {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(p.resolver()))
	if err != nil {
		t.Fatalf("new admin: %v", err)
	}
	defer adm.Close()
	for _, topic := range []string{"%RETRY%" + group, "%DLQ%" + group} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(p.brAddr),
			admin.WithReadQueueNums(1), admin.WithWriteQueueNums(1))
		cancel()
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		waitRoute(t, p.nsAddr, topic)
	}
}

// TestRetryReconsumeTimes: a consumer that fails a message twice and then
// succeeds sees it with RECONSUME_TIME 0, 1, 2, from its original topic,
// and not again.
func TestRetryReconsumeTimes(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{extraArgs: fastRetryLevels})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	log := newAttemptLog()
	group := uniqueName(t, "cg")
	prepareGroupTopics(t, p, group)
	c := newPushConsumer(t, p, group)
	err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if string(m.Body) == warmupBody {
				continue
			}
			if m.Topic != topic {
				t.Errorf("retry delivered with topic %q, want %q", m.Topic, topic)
			}
			if log.add(m) <= 2 {
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, c)
	sendAllSync(t, prod, topic, []string{"flaky"}, nil)
	log.wait(t, consumeTimeout, "third delivery", func() bool { return len(log.get("flaky")) >= 3 })
	got := log.get("flaky")
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("reconsume times seen %v, want [0 1 2]", got)
	}
}

// TestDeadLetterQueueAndResend: with max reconsume times 2 a message that
// always fails lands in %DLQ%<group> after 3 deliveries, can be read there,
// and the Petrel admin call puts it back in its topic.
func TestDeadLetterQueueAndResend(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{extraArgs: fastRetryLevels})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	group := uniqueName(t, "cg")
	prepareGroupTopics(t, p, group)
	log := newAttemptLog()
	var failing sync.Map // body -> keep failing
	failing.Store("poison", true)
	c := newPushConsumer(t, p, group, consumer.WithMaxReconsumeTimes(2))
	err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if string(m.Body) == warmupBody {
				continue
			}
			log.add(m)
			if _, fail := failing.Load(string(m.Body)); fail {
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, c)
	sendAllSync(t, prod, topic, []string{"poison"}, nil)
	log.wait(t, consumeTimeout, "three deliveries", func() bool { return len(log.get("poison")) >= 3 })

	// The DLQ is a topic like any other: read it with a consumer.
	dlq := "%DLQ%" + group
	col := newCollector()
	dc := newPushConsumer(t, p, uniqueName(t, "ops"))
	startPushConsumer(t, dc, dlq, consumer.MessageSelector{}, col, "ops")
	col.waitAll(t, consumeTimeout, "the dead letter", []string{"poison"})
	if n := len(log.get("poison")); n != 3 {
		t.Fatalf("the failing message was delivered %d times, want 3 (max reconsume times 2)", n)
	}
	d := col.snapshot()[0]

	// Resend it to its topic, where it now succeeds.
	failing.Delete("poison")
	rc, err := dialRaw(p.brAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	resp, err := rc.call(10101, map[string]string{"group": group, "msgId": d.offsetMsgID}, nil, 5*time.Second)
	if err != nil || resp.Code != 0 {
		t.Fatalf("resend from the DLQ: %+v %v", resp, err)
	}
	log.wait(t, consumeTimeout, "the resent message", func() bool { return len(log.get("poison")) >= 4 })
	if got := log.get("poison"); got[3] != 0 {
		t.Fatalf("the resent message carries reconsume times %d, want 0", got[3])
	}
}

// TestDelayLevel2: a level-2 message (5 s) arrives no earlier than 5 s and
// within 6.5 s of its send.
func TestDelayLevel2(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	testDelayed(t, p, func(m *primitive.Message) { m.WithDelayTimeLevel(2) }, 5*time.Second, 6500*time.Millisecond)
}

// TestDeliverAt: a message with an absolute delivery time 3 s ahead arrives
// in [3 s, 4.5 s].
func TestDeliverAt(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	testDelayed(t, p, func(m *primitive.Message) {
		m.WithProperty(primitive.PropertyTimerDeliverMS, strconv.FormatInt(time.Now().Add(3*time.Second).UnixMilli(), 10))
	}, 3*time.Second, 4500*time.Millisecond)
}

func testDelayed(t *testing.T, p *petrel, decorate func(*primitive.Message), lo, hi time.Duration) {
	t.Helper()
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	arrived := make(chan time.Time, 1)
	ready := make(chan struct{}, 1)
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			ch := ready
			if string(m.Body) == "later" {
				ch = nil
				select {
				case arrived <- time.Now():
				default:
				}
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, c)
	// The consumer is pulling once it got the warm-up message.
	select {
	case <-ready:
	case <-time.After(consumeTimeout):
		t.Fatal("the consumer did not start consuming")
	}
	m := primitive.NewMessage(topic, []byte("later"))
	decorate(m)
	sent := time.Now()
	if _, err := prod.SendSync(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-arrived:
		if d := at.Sub(sent); d < lo || d > hi {
			t.Fatalf("arrived %v after the send, want within [%v, %v]", d, lo, hi)
		}
	case <-time.After(hi + 10*time.Second):
		t.Fatalf("not delivered within %v", hi+10*time.Second)
	}
}

// TestDelaysAndRetriesSurviveRestart: delayed messages acknowledged under
// sync flush and a retry stored by a consumer's send-back are all delivered
// after the broker is stopped with SIGTERM or killed with SIGKILL and
// started again — none before its time.
func TestDelaysAndRetriesSurviveRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := map[bool]string{false: "SIGTERM", true: "SIGKILL"}[kill]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Level 2 is 5 s; retries (levels 3..) wait 3 s.
			p := startPetrel(t, serverOptions{extraArgs: []string{"--delay-levels", "1s 5s" + strings.Repeat(" 3s", 16)}})
			prod := newProducer(t, p)
			topic := uniqueName(t, "t")
			prepareTopic(t, p, prod, topic)
			group := uniqueName(t, "cg")
			prepareGroupTopics(t, p, group)

			// A retry pending at the restart: the consumer fails "again"
			// once; its send-back is stored before the broker stops.
			log := newAttemptLog()
			c := newPushConsumer(t, p, group)
			err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					if string(m.Body) == "again" && log.add(m) == 1 {
						return consumer.ConsumeRetryLater, nil
					}
				}
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			startConsumer(t, c)
			sendAllSync(t, prod, topic, []string{"again"}, nil)
			log.wait(t, consumeTimeout, "the first delivery", func() bool { return len(log.get("again")) >= 1 })
			waitFor(t, 20*time.Second, "the retry stored in the timer topic", func() (bool, string) {
				n, err := maxOffset(p.brAddr, "rmq_sys_wheel_timer", 0)
				return err == nil && n >= 1, fmt.Sprintf("max offset %d, %v", n, err)
			})

			// Delayed messages acknowledged just before the stop.
			delayed := bodies(t, "late", 10)
			sendAllSync(t, prod, topic, delayed, func(_ int, m *primitive.Message) { m.WithDelayTimeLevel(2) })
			if kill {
				p.kill()
			} else {
				p.stop()
			}
			p.restart()
			waitRoute(t, p.nsAddr, topic)

			col := drain(t, p, topic, delayed)
			for _, d := range col.snapshot() {
				if strings.HasPrefix(d.body, "late") && d.stored-d.born < 5000 {
					t.Fatalf("%s delivered %d ms after its send, before its 5 s delay", d.body, d.stored-d.born)
				}
			}
			log.wait(t, restartTimeout, "the retry after the restart", func() bool { return len(log.get("again")) >= 2 })
			if got := log.get("again"); got[1] != 1 {
				t.Fatalf("the retry carries reconsume times %v, want 1 on the second delivery", got)
			}
		})
	}
}

// TestCancelDelayedByID: a delayed message cancelled with Petrel's admin
// request (10102, by the msgId its send returned) is never consumed, while
// one sent with it is.
func TestCancelDelayedByID(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{extraArgs: fastRetryLevels})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)
	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "c")
	res := sendAllSync(t, prod, topic, []string{"cancel-me", "keep-me"}, func(_ int, m *primitive.Message) { m.WithDelayTimeLevel(2) })
	resp, err := rawCall(p.brAddr, 10102, map[string]string{"msgId": res[0].MsgID}, 5*time.Second)
	if err != nil || resp.Code != 0 {
		t.Fatalf("cancel %s: %+v %v", res[0].MsgID, resp, err)
	}
	col.waitAll(t, consumeTimeout, "the delayed message not cancelled", []string{"keep-me"})
	sendAllSync(t, prod, topic, []string{"marker"}, func(_ int, m *primitive.Message) { m.WithDelayTimeLevel(2) })
	col.waitAll(t, consumeTimeout, "a later delayed message", []string{"marker"})
	for _, d := range col.snapshot() {
		if d.body == "cancel-me" {
			t.Fatal("the cancelled delayed message was consumed")
		}
	}
	if resp, err := rawCall(p.brAddr, 10102, map[string]string{"msgId": "no-such-id"}, 5*time.Second); err != nil || resp.Code != 22 {
		t.Fatalf("cancel of an unknown id: %+v %v, want code 22", resp, err)
	}
}
