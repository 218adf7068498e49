package interop

// Subscription-group administration with the petrel CLI (requests 200,
// 201 and 207, as mqadmin updateSubGroup / deleteSubGroup send them)
// against official 5.x clients.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
