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
