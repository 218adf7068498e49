package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeClientDir holds the Node.js script and the pinned client
// (rocketmq-client-nodejs 1.0.8, package-lock.json).
const nodeClientDir = "nodejs"

// ensureNodeClient installs the Node.js client from the lock file unless it
// is installed already (.ci/run installs it before the suite).
func ensureNodeClient(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "rocketmq-client-nodejs", "package.json")); err == nil {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("the Node.js interop test needs node and npm on PATH (apt-get install nodejs npm): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = nodeClientDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing the Node.js client (npm ci in test/interop/nodejs) failed: %v\n%s", err, tail(string(out), 4000))
	}
}

// runNode runs a script of the Node.js client directory with args until
// ctx ends, and returns its standard output; it fails the test when the
// script fails.
func runNode(t *testing.T, ctx context.Context, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = nodeClientDir
	return commandOutput(t, cmd)
}

// commandOutput runs cmd and returns its standard output; when it fails,
// the test fails with both outputs (the end of its standard error).
func commandOutput(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(cmd.Path), strings.Join(cmd.Args[1:], " "), err, out, tail(stderr.String(), 4000))
	}
	return out
}

// TestNodeClientProduceReceiveAck: the official Node.js 5.x client
// produces to petrel's gRPC front (plaintext: the Node client does not
// accept a self-signed certificate), receives with a SimpleConsumer and
// acknowledges; the tag filter holds and nothing comes back after the
// acknowledgements.
func TestNodeClientProduceReceiveAck(t *testing.T) {
	ensureNodeClient(t)
	p := startPetrel(t, serverOptions{extraArgs: []string{"--grpc-plaintext"}})
	grpcAddr := p.grpcAddr

	const count = 20
	createTopics(t, p, "NodeTopic")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := runNode(t, ctx, "simple.js", grpcAddr, "NodeTopic", "NodeGroup", fmt.Sprint(count))
	var res struct {
		Sent     []string `json:"sent"`
		Received []struct {
			ID      string   `json:"id"`
			Body    string   `json:"body"`
			Tag     string   `json:"tag"`
			Keys    []string `json:"keys"`
			Attempt int      `json:"attempt"`
		} `json:"received"`
		After int `json:"after"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output is not the expected JSON: %v\n%s", err, out)
	}
	if len(res.Sent) != count {
		t.Fatalf("sent %d ids, want %d", len(res.Sent), count)
	}
	var ids, bodies []string
	for _, m := range res.Received {
		if m.Tag != "node" {
			t.Errorf("received %s with tag %q; the subscription asks for tag node only", m.ID, m.Tag)
		}
		if m.Attempt != 1 {
			t.Errorf("message %s: delivery attempt %d, want 1", m.ID, m.Attempt)
		}
		ids = append(ids, m.ID)
		bodies = append(bodies, m.Body)
	}
	slices.Sort(ids)
	sent := slices.Sorted(slices.Values(res.Sent))
	if !slices.Equal(ids, sent) {
		t.Fatalf("received ids %v\nwant the sent ids %v", ids, sent)
	}
	for i := range count {
		if !slices.Contains(bodies, fmt.Sprintf("node-%d", i)) {
			t.Errorf("body node-%d never received", i)
		}
	}
	if res.After != 0 {
		t.Fatalf("a receive after acknowledging everything returned %d messages", res.After)
	}
}

// TestNodeClientSeesRocketMQsAnswers: what the Node.js client's own live
// tests check of RocketMQ's proxy. A normal send's receipt carries its
// message id as transaction id; a FIFO message arrives with the
// __SHARDINGKEY user property and a committed transactional one with
// __transactionId__ (its message id); a producer started for a topic that
// does not exist fails with TOPIC_NOT_FOUND (40402) and RocketMQ's text,
// although the server auto-creates topics on send.
func TestNodeClientSeesRocketMQsAnswers(t *testing.T) {
	ensureNodeClient(t)
	p := startPetrel(t, serverOptions{extraArgs: []string{"--grpc-plaintext"}})
	topic, missing := uniqueName(t, "node"), uniqueName(t, "missing")
	createTopics(t, p, topic)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out := runNode(t, ctx, "props.js", p.grpcAddr, topic, uniqueName(t, "g"), missing)
	type receipt struct {
		MessageID     string `json:"messageId"`
		TransactionID string `json:"transactionId"`
	}
	var res struct {
		Missing struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"missing"`
		Normal   receipt `json:"normal"`
		Txn      receipt `json:"txn"`
		Received []struct {
			ID           string            `json:"id"`
			Body         string            `json:"body"`
			MessageGroup string            `json:"messageGroup"`
			Properties   map[string]string `json:"properties"`
		} `json:"received"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output is not the expected JSON: %v\n%s", err, out)
	}
	if res.Missing.Code != 40402 || !strings.Contains(res.Missing.Message, "No topic route info in name server for the topic: "+missing) {
		t.Errorf("producer for a missing topic: code %d %q; want 40402 (TOPIC_NOT_FOUND) with RocketMQ's text", res.Missing.Code, res.Missing.Message)
	}
	if res.Normal.MessageID == "" || res.Normal.TransactionID != res.Normal.MessageID {
		t.Errorf("normal send receipt %+v: the transaction id must be the message id", res.Normal)
	}
	if res.Txn.MessageID == "" || res.Txn.TransactionID != res.Txn.MessageID {
		t.Errorf("transactional send receipt %+v: the transaction id must be the message id", res.Txn)
	}
	byBody := map[string]int{}
	for i, m := range res.Received {
		byBody[m.Body] = i
	}
	if len(res.Received) != 3 || len(byBody) != 3 {
		t.Fatalf("received %+v, want the normal, FIFO and committed messages once each", res.Received)
	}
	if i, ok := byBody["fifo"]; !ok || res.Received[i].MessageGroup != "order-1" || res.Received[i].Properties["__SHARDINGKEY"] != "order-1" {
		t.Errorf("FIFO delivery %+v: want message group order-1 and user property __SHARDINGKEY=order-1", res.Received[byBody["fifo"]])
	}
	if i, ok := byBody["txn"]; !ok || res.Received[i].ID != res.Txn.MessageID || res.Received[i].Properties["__transactionId__"] != res.Txn.MessageID {
		t.Errorf("committed delivery %+v: want user property __transactionId__=%s", res.Received[byBody["txn"]], res.Txn.MessageID)
	}
	if i, ok := byBody["normal"]; !ok || len(res.Received[i].Properties) != 0 {
		t.Errorf("normal delivery %+v: want no user properties", res.Received[byBody["normal"]])
	}
}

// nodePushMember is one PushConsumer process of push.js: the events it
// printed, read as they come.
type nodePushMember struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan nodePushEvent
	stderr *strings.Builder
	done   chan struct{} // closed when stdout is read to its end
}

type nodePushEvent struct {
	Event             string            `json:"event"`
	ID                string            `json:"id"`
	Body              string            `json:"body"`
	Tag               string            `json:"tag"`
	Keys              []string          `json:"keys"`
	Properties        map[string]string `json:"properties"`
	Type              string            `json:"type"`
	DeliveryTimestamp int64             `json:"deliveryTimestamp"`
	Attempt           int               `json:"attempt"`
}

// startNodePushMember starts node push.js consume; it is killed when the
// test ends.
func startNodePushMember(t *testing.T, ctx context.Context, endpoint, topic, group string) *nodePushMember {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", "push.js", "consume", endpoint, topic, group)
	cmd.Dir = nodeClientDir
	m := &nodePushMember{cmd: cmd, events: make(chan nodePushEvent, 1024), stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = m.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node push.js: %v", err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev nodePushEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = nodePushEvent{Event: "garbage", Body: sc.Text()}
			}
			m.events <- ev
		}
		close(m.events)
	}()
	t.Cleanup(func() {
		// Killed, not shut down by closing stdin: the client's graceful
		// shutdown waits out its parked receive (its long-polling timeout,
		// 30 s; 1.0.8 ignores the longPollingTimeout option).
		_ = cmd.Process.Kill()
		m.stdin.Close()
		<-m.done
		_ = cmd.Wait()
	})
	return m
}

// TestNodePushConsumersShareAGroup: two Node.js PushConsumer processes of
// one clustering group consume 200 messages sent to a 4-queue topic.
// Every message is consumed at least once, both members get some, each
// arrives with its tag, keys and property; a message sent with a delivery
// timestamp arrives no earlier, typed DELAY with that timestamp.
func TestNodePushConsumersShareAGroup(t *testing.T) {
	ensureNodeClient(t)
	p := startPetrel(t, serverOptions{extraArgs: []string{"--grpc-plaintext"}})
	topic, group := uniqueName(t, "nodepush"), uniqueName(t, "g")
	createTopics(t, p, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	members := []*nodePushMember{
		startNodePushMember(t, ctx, p.grpcAddr, topic, group),
		startNodePushMember(t, ctx, p.grpcAddr, topic, group),
	}
	for i, m := range members {
		select {
		case ev, ok := <-m.events:
			if !ok || ev.Event != "started" {
				t.Fatalf("member %d did not start (first event %+v)\nstderr:\n%s", i, ev, tail(m.stderr.String(), 4000))
			}
		case <-ctx.Done():
			t.Fatalf("member %d did not start\nstderr:\n%s", i, tail(m.stderr.String(), 4000))
		}
	}

	const count = 200
	const delay = 3 * time.Second
	out := runNode(t, ctx, "push.js", "produce", p.grpcAddr, topic, fmt.Sprint(count), fmt.Sprint(delay.Milliseconds()))
	var sent struct {
		Sent    []string `json:"sent"`
		Delayed struct {
			ID                string `json:"id"`
			DeliveryTimestamp int64  `json:"deliveryTimestamp"`
		} `json:"delayed"`
	}
	if err := json.Unmarshal(out, &sent); err != nil || len(sent.Sent) != count || sent.Delayed.ID == "" {
		t.Fatalf("producer output %s (%v); want %d ids and the delayed one", out, err, count)
	}
	index := map[string]int{}
	for i, id := range sent.Sent {
		index[id] = i
	}

	// Collect from both members until every message (and the delayed one)
	// has been consumed.
	type consumed struct {
		member int
		ev     nodePushEvent
		at     time.Time
	}
	merged := make(chan consumed, 1024)
	for i, m := range members {
		go func() {
			for ev := range m.events {
				merged <- consumed{member: i, ev: ev, at: time.Now()}
			}
		}()
	}
	perMember := [2]int{}
	seen := map[string]bool{}
	var delayed *consumed
	for len(seen) < count || delayed == nil {
		select {
		case c := <-merged:
			ev := c.ev
			if ev.Event != "message" {
				t.Fatalf("member %d printed %+v while consuming\nstderr:\n%s", c.member, ev, tail(members[c.member].stderr.String(), 4000))
			}
			if ev.ID == sent.Delayed.ID {
				delayed = &c
				continue
			}
			i, ok := index[ev.ID]
			if !ok {
				t.Fatalf("member %d consumed %s (%q), which was not sent", c.member, ev.ID, ev.Body)
			}
			if ev.Body != fmt.Sprintf("push-%d", i) || ev.Tag != "push" || !slices.Equal(ev.Keys, []string{fmt.Sprintf("key-%d", i)}) ||
				ev.Properties["seq"] != fmt.Sprint(i) || ev.Type != "NORMAL" {
				t.Errorf("message %d arrived as %+v; want body push-%d, tag push, key key-%d, property seq=%d, type NORMAL", i, ev, i, i, i)
			}
			seen[ev.ID] = true
			perMember[c.member]++
		case <-ctx.Done():
			var missing []string
			for _, id := range sent.Sent {
				if !seen[id] {
					missing = append(missing, id)
				}
			}
			t.Fatalf("consumed %d of %d messages (per member %v), delayed consumed %v; missing %d, e.g. %v",
				len(seen), count, perMember, delayed != nil, len(missing), missing[:min(len(missing), 5)])
		}
	}
	if perMember[0] == 0 || perMember[1] == 0 {
		t.Errorf("per member consumed %v; both members of the group must get some", perMember)
	}
	want := time.UnixMilli(sent.Delayed.DeliveryTimestamp)
	if ev := delayed.ev; ev.Type != "DELAY" || ev.DeliveryTimestamp != sent.Delayed.DeliveryTimestamp || ev.Body != "delayed" || ev.Tag != "later" {
		t.Errorf("the delayed message arrived as %+v; want type DELAY, deliveryTimestamp %d (%v)", ev, sent.Delayed.DeliveryTimestamp, want)
	}
	// Node and this test share the clock; the broker fires no earlier
	// than the delivery time (a few ms of scheduling slack allowed for).
	if delayed.at.Before(want.Add(-50 * time.Millisecond)) {
		t.Errorf("the delayed message was consumed at %v, before its delivery time %v", delayed.at, want)
	}
	t.Logf("per member consumed %v of %d; delayed message consumed %v after its delivery time", perMember, count, delayed.at.Sub(want))
}

// TestNodeClientRecallsADelayedMessage: the Node.js client's send receipt
// of a delayed message carries a recall handle (SendResultEntry field 5)
// and Producer.recallMessage with it succeeds, naming the message; the
// recalled message is never received while a control message due at the
// same time is; a recall with a made-up handle fails with the broker's
// refusal.
func TestNodeClientRecallsADelayedMessage(t *testing.T) {
	ensureNodeClient(t)
	p := startPetrel(t, serverOptions{extraArgs: []string{"--grpc-plaintext"}})
	topic := uniqueName(t, "recall")
	createTopics(t, p, topic)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out := runNode(t, ctx, "recall.js", p.grpcAddr, topic, uniqueName(t, "g"), "4000")
	type receipt struct {
		MessageID    string `json:"messageId"`
		RecallHandle string `json:"recallHandle"`
	}
	var res struct {
		Recalled receipt `json:"recalled"`
		Control  receipt `json:"control"`
		Recall   struct {
			MessageID string `json:"messageId"`
		} `json:"recall"`
		Bogus    string `json:"bogus"`
		Received []struct {
			ID   string `json:"id"`
			Body string `json:"body"`
		} `json:"received"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output is not the expected JSON: %v\n%s", err, out)
	}
	if res.Recalled.RecallHandle == "" || res.Control.RecallHandle == "" {
		t.Fatalf("delayed send receipts %+v, %+v: want recall handles", res.Recalled, res.Control)
	}
	if res.Recall.MessageID != res.Recalled.MessageID {
		t.Errorf("recall receipt names %q, want the recalled message %q", res.Recall.MessageID, res.Recalled.MessageID)
	}
	if !strings.Contains(res.Bogus, "recall handle is invalid") {
		t.Errorf("a recall with a made-up handle: %q; want the broker's refusal", res.Bogus)
	}
	var control int
	for _, m := range res.Received {
		switch {
		case m.Body == "recalled" || m.ID == res.Recalled.MessageID:
			t.Errorf("the recalled message %s was delivered", m.ID)
		case m.Body == "control":
			control++
		}
	}
	if control != 1 {
		t.Fatalf("received %+v; want the control message once", res.Received)
	}
}
