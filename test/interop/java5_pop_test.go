package interop

import (
	"strings"
	"testing"
	"time"
)

// TestJava5RemotingPop runs the official Java 5.x remoting client
// (rocketmq-client 5.3.1, java/remoting5 PopScenario.java) in pop mode: a
// DefaultMQPushConsumer with setClientRebalance(false) after
// SET_MESSAGE_REQUEST_MODE POP gets its queues from QUERY_ASSIGNMENT and
// receives every message once through POP_MESSAGE and ACK_MESSAGE; then
// MQClientAPIImpl's peek, pop, batch ack (OK, then refused for the same
// batch) and notification (hasMsg false after its wait) with Java's own
// header classes.
func TestJava5RemotingPop(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	createTopics(t, p, "Java5PopPush", "Java5PopAPI")
	createGroup(t, p, "Java5PopPushGroup")
	createGroup(t, p, "Java5PopAPIGroup")
	out := string(runJava(t, "remoting5", "petrel.interop.PopScenario", 3*time.Minute,
		p.nsAddr, "Java5PopPush", "Java5PopPushGroup", "Java5PopAPI", "Java5PopAPIGroup", "6"))
	for _, part := range []string{"push", "api"} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "ok "+part+" ") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("part %s of the pop scenario did not succeed:\n%s", part, out)
		}
		t.Log(line)
	}
}
