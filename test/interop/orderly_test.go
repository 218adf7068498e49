package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestOrderlyTwoMembersAcrossRebalance: an orderly group of two members
// keeps each key's order while a member joins and another leaves (the
// broker's queue locks let one member at a time consume a queue), and a
// poison message — failed every time — goes to the dead-letter queue after
// the maximum attempts instead of blocking its queue.
func TestOrderlyTwoMembersAcrossRebalance(t *testing.T) {
	t.Parallel()
	// The Go client does not unlock the queues a rebalance takes away from
	// a member (push_consumer.go, removeUnnecessaryMessageQueue leaves
	// orderly consumers as they are); the new owner gets them
	// when the old lock expires. The children renew their locks every 2 s,
	// so a 5 s expiry keeps the test short.
	p := startPetrel(t, serverOptions{extraArgs: []string{"--lock-expiry", "5s"}})
	prod := newProducer(t, p, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	topic := uniqueName(t, "t")
	route := prepareTopic(t, p, prod, topic)
	nq := route.writeQueues()
	group := uniqueName(t, "cg")

	const perKey = 30
	var keys []string
	for i := 0; len(keys) < 2*nq; i++ {
		keys = append(keys, fmt.Sprintf("k-%s-%d", runID, i))
	}
	poison := keys[0] + "-5"

	var (
		mu       sync.Mutex
		seq      = map[string][]int{}
		poisoned []string
		problems []string
		changed  = make(chan struct{}, 1)
	)
	onLine := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		defer func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}()
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "OVERLAP":
			problems = append(problems, "two callbacks at once for queue "+f[1])
		case len(f) == 4 && f[0] == "POISON":
			poisoned = append(poisoned, f[3])
		case len(f) == 3 && f[0] == "M":
			b := f[2]
			i := strings.LastIndexByte(b, '-')
			n, err := strconv.Atoi(b[i+1:])
			if b == warmupBody || i < 0 || err != nil {
				return
			}
			seq[b[:i]] = append(seq[b[:i]], n)
		default:
			problems = append(problems, "unexpected line: "+line)
		}
	}
	env := func(instance string) []string {
		return []string{"INTEROP_INSTANCE=" + instance, "INTEROP_POISON=" + poison}
	}
	send := func(from, to int) {
		for n := from; n < to; n++ {
			for _, key := range keys {
				m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", key, n)))
				m.WithShardingKey(key)
				if _, err := prod.SendSync(context.Background(), m); err != nil {
					t.Fatalf("ordered send %s-%d: %v", key, n, err)
				}
			}
		}
	}
	waitConsumed := func(upTo int, what string) {
		t.Helper()
		deadline := time.NewTimer(consumeTimeout)
		defer deadline.Stop()
		for {
			mu.Lock()
			done := true
			for _, k := range keys {
				if len(seq[k]) == 0 || maxOf(seq[k]) < upTo-1 {
					done = false
				}
			}
			mu.Unlock()
			if done {
				return
			}
			select {
			case <-changed:
			case <-deadline.C:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: not consumed within %v: %v", what, consumeTimeout, seq)
			}
		}
	}

	stopA := startOrderlyChild(t, p, topic, group, onLine, env(group+"_a")...)
	send(0, 10)
	waitConsumed(10, "phase 1, one member")
	startOrderlyChild(t, p, topic, group, onLine, env(group+"_b")...)
	send(10, 20)
	waitConsumed(20, "phase 2, a second member joined")
	stopA()
	send(20, perKey)
	waitConsumed(perKey, "phase 3, the first member left")

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("orderly consumption problems: %v", head(problems, 10))
	}
	for _, key := range keys {
		high := -1
		for _, n := range seq[key] {
			if n > high+1 && !(key+"-"+strconv.Itoa(high+1) == poison && n == high+2) {
				t.Fatalf("key %s consumed out of order: %v (saw %d right after %d)", key, seq[key], n, high)
			}
			high = max(high, n)
		}
	}
	if len(poisoned) < 3 {
		t.Fatalf("the poison message was tried %d times, want 3 (max reconsume times 2)", len(poisoned))
	}
	waitFor(t, 20*time.Second, "the poison message in the dead-letter queue", func() (bool, string) {
		n, err := maxOffset(p.brAddr, "%DLQ%"+group, 0)
		return err == nil && n >= 1, fmt.Sprintf("max offset %d, %v", n, err)
	})
}

func maxOf(s []int) int {
	m := -1
	for _, v := range s {
		m = max(m, v)
	}
	return m
}
