package interop

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJava5ProducerSimpleAndPushConsumers: the official Java 5.x client
// (rocketmq-client-java 5.0.8) over gRPC sends tagged messages; a
// SimpleConsumer of one tag receives and acks exactly those, and a
// PushConsumer group of two members consumes every message, both members
// taking part.
func TestJava5ProducerSimpleAndPushConsumers(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	createTopics(t, p, "Java5Topic")
	const count = 20
	out := string(runJava(t, "client5", "petrel.interop.Client5", 4*time.Minute, p.grpcAddr, "Java5Topic", "Java5Group", strconv.Itoa(count)))
	m := regexp.MustCompile(`ok sent=(\d+) simple=(\d+) push member0=(\d+) member1=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the Java 5.x scenario did not succeed:\n%s", out)
	}
	t.Log(strings.TrimSpace(m[0]))
	if m[2] != strconv.Itoa(count/2) {
		t.Fatalf("the simple consumer of tag a received %s messages, want %d", m[2], count/2)
	}
	if m[3] == "0" || m[4] == "0" {
		t.Fatalf("a push consumer member received nothing (member0 %s, member1 %s): the group did not share the queues", m[3], m[4])
	}
}
