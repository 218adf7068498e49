package interop

import (
	"os/exec"
	"strings"
	"testing"
)

// createTopics creates topics with the CLI (4 queues each, as petrel
// auto-creates them). A 5.x client needs its topics to exist before it
// starts: a route query never creates a topic, as with RocketMQ's proxy.
// A topic that exists already (created by the test with other queues) is
// left as it is.
func createTopics(t testing.TB, p *petrel, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		cmd := exec.Command(petrelBin, "topic", "create", topic, "--queues", "4", "--namesrv", p.nsAddr)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil {
			if strings.Contains(stderr.String(), "already exists") {
				continue // the test created it itself, with its own queues
			}
			t.Fatalf("petrel topic create %s: %v\nstdout:\n%s\nstderr:\n%s", topic, err, out, stderr.String())
		}
	}
}
