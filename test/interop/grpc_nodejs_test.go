package interop

import (
	"context"
	"encoding/json"
	"fmt"
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
	cmd := exec.CommandContext(ctx, "node", "simple.js", grpcAddr, "NodeTopic", "NodeGroup", fmt.Sprint(count))
	cmd.Dir = nodeClientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node simple.js: %v\nstdout:\n%s\nstderr:\n%s", err, out, tail(stderr.String(), 4000))
	}
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
	cmd := exec.CommandContext(ctx, "node", "props.js", p.grpcAddr, topic, uniqueName(t, "g"), missing)
	cmd.Dir = nodeClientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node props.js: %v\nstdout:\n%s\nstderr:\n%s", err, out, tail(stderr.String(), 4000))
	}
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
