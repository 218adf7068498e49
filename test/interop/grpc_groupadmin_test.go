package interop

// Subscription-group administration with the petrel CLI (requests 200,
// 201 and 207, as mqadmin updateSubGroup / deleteSubGroup send them)
// against official 5.x clients.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// createGroup runs `petrel group create GROUP args...` against p; the
// consumers of the group start afterwards, so they get its settings from
// their first Settings reply.
func createGroup(t *testing.T, p *petrel, group string, args ...string) {
	t.Helper()
	out := runCLI(t, p, append([]string{"group", "create", group}, args...)...)
	if !strings.Contains(out, "group "+group+" created on ") {
		t.Fatalf("petrel group create %s: %s", group, out)
	}
}

// groupNames returns the groups `petrel group list -o json` shows.
func groupNames(t *testing.T, p *petrel) []string {
	t.Helper()
	var list struct {
		Groups []struct {
			Group string `json:"group"`
		} `json:"groups"`
	}
	out := runCLI(t, p, "group", "list", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("group list -o json: %v\n%s", err, out)
	}
	var names []string
	for _, g := range list.Groups {
		names = append(names, g.Group)
	}
	return names
}

// TestGroupDeleteRemovesGroupAndOffsets: a 5.x group that consumed and
// acked 3 messages is deleted with `petrel group delete --clean-offset`
// after its consumer stopped: `group list` no longer shows it, its
// committed offset is gone, and a consumer of the same group name starts
// afresh and receives the 3 messages again. (The stopped Go client stays
// registered until the broker's client expiry, 60 s: it never sends
// NotifyClientTermination; it no longer heartbeats, so it does not bring
// the config back.)
func TestGroupDeleteRemovesGroupAndOffsets(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	group, topic := uniqueName(t, "g"), uniqueName(t, "t")
	createGroup(t, p, group, "--retry-max", "3")
	runCLI(t, p, "topic", "create", topic, "--queues", "1")
	prod := newProducer5(t, p, nil, topic)
	for _, b := range []string{"one", "two", "three"} {
		send5(t, prod, &rmq.Message{Topic: topic, Body: []byte(b)})
	}
	sc, err := startSimpleConsumer5(p, group, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	receiveUntil(t, sc, 4, 20*time.Second, "the 3 messages", func(mv *rmq.MessageView) { got++; ack5(t, sc, mv) }, func() bool { return got == 3 })
	waitFor(t, 20*time.Second, "the group's committed offset to reach 3", func() (bool, string) {
		off, err := committedOffset(p.brAddr, group, topic, 0)
		if err != nil {
			return false, err.Error()
		}
		return off == 3, fmt.Sprintf("offset %d", off)
	})
	if err := sc.GracefulStop(); err != nil {
		t.Fatalf("stop the consumer: %v", err)
	}
	if !slices.Contains(groupNames(t, p), group) {
		t.Fatalf("group list does not show %s before the delete", group)
	}

	out := runCLI(t, p, "group", "delete", group, "--clean-offset")
	if !strings.Contains(out, "group "+group+" deleted on ") || !strings.Contains(out, "config and offsets") {
		t.Fatalf("group delete: %s", out)
	}
	if slices.Contains(groupNames(t, p), group) {
		t.Fatalf("group list still shows %s after the delete", group)
	}
	if off, err := committedOffset(p.brAddr, group, topic, 0); err != nil || off != 0 {
		t.Fatalf("committed offset after the delete: %d %v, want a fresh group's 0", off, err)
	}

	// A consumer under the same name is a new group: it starts at the
	// queue's beginning (nothing was ever removed from it) and receives
	// all three again.
	again := newSimpleConsumer5(t, p, group, topic, nil)
	bodies := map[string]bool{}
	receiveUntil(t, again, 4, 20*time.Second, "the 3 messages again", func(mv *rmq.MessageView) {
		bodies[string(mv.GetBody())] = true
		ack5(t, again, mv)
	}, func() bool { return len(bodies) == 3 })
}

// TestGroupUpdateReachesRunning5xConsumer: `petrel group update` while a
// 5.x simple consumer runs: --retry-max 1 makes the next message
// dead-letter after 2 deliveries (the consumer was started with 5), and
// --consume-enable=false makes its receives fail with FORBIDDEN until the
// group is enabled again. The new settings are also pushed to the client
// over its Telemetry stream.
func TestGroupUpdateReachesRunning5xConsumer(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	group, topic := uniqueName(t, "g"), uniqueName(t, "t")
	createGroup(t, p, group, "--retry-max", "5")
	runCLI(t, p, "topic", "create", topic, "--queues", "1")
	// A 4.x producer: the 5.x one races with its own heartbeat when it
	// sends seconds after its start (producer.go takeMessageQueues).
	prod := newProducer(t, p)
	send := func(body string) string {
		t.Helper()
		res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
		return res.MsgID
	}
	sc := newSimpleConsumer5(t, p, group, topic, nil)
	expectNothing(t, sc, time.Second, "nothing was sent yet")

	out := runCLI(t, p, "group", "update", group, "--retry-max", "1")
	if !strings.Contains(out, "retry max 1") {
		t.Fatalf("group update: %s", out)
	}
	id := send("short-lived")
	for attempt := int32(1); attempt <= 2; attempt++ {
		var mv *rmq.MessageView
		receiveUntil(t, sc, 1, time.Second, fmt.Sprintf("delivery %d", attempt), func(m *rmq.MessageView) { mv = m }, func() bool { return mv != nil })
		if mv.GetMessageId() != id || mv.GetDeliveryAttempt() != attempt {
			t.Fatalf("delivery %d: %s attempt %d", attempt, mv.GetMessageId(), mv.GetDeliveryAttempt())
		}
	}
	expectNothing(t, sc, 4*time.Second, "retry-max 1 allows 2 deliveries")
	waitFor(t, 20*time.Second, "the message in %DLQ%"+group, func() (bool, string) {
		n, err := maxOffset(p.brAddr, "%DLQ%"+group, 0)
		if err != nil {
			return false, err.Error()
		}
		return n == 1, fmt.Sprintf("max offset %d", n)
	})

	runCLI(t, p, "group", "update", group, "--consume-enable=false")
	send("held")
	ctx, cancel := context.WithTimeout(context.Background(), receiveAwait+10*time.Second)
	_, err := sc.Receive(ctx, 1, 10*time.Second)
	cancel()
	if st, ok := rmq.AsErrRpcStatus(err); !ok || st.GetCode() != 40300 /* FORBIDDEN */ {
		t.Fatalf("receive of a disabled group: %v, want FORBIDDEN", err)
	}
	runCLI(t, p, "group", "update", group, "--consume-enable=true")
	var got *rmq.MessageView
	receiveUntil(t, sc, 1, 10*time.Second, "the held message once enabled", func(m *rmq.MessageView) { got = m }, func() bool { return got != nil })
	if string(got.GetBody()) != "held" {
		t.Fatalf("received %q, want held", got.GetBody())
	}
}
