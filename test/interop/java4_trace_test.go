package interop

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// java4Trace runs the Java 4.x trace scenario (a producer and a push
// consumer with enableMsgTrace, whose trace records the client itself
// finds in the trace topic) and then checks that `petrel message trace`
// shows both sides: the send with the producer group, the delivery and
// its successful outcome with the consumer group. With customTopic the
// clients are given it as their customizedTraceTopic: the records are
// there, read with --trace-topic, and not in RMQ_SYS_TRACE_TOPIC.
func java4Trace(t *testing.T, p *petrel, customTopic string) {
	topic, group := "Java4Trace", "Java4GroupTrace"
	var jvm, cliArgs []string
	wantTraceTopic := "RMQ_SYS_TRACE_TOPIC"
	if customTopic != "" {
		topic, group = "Java4TraceCustom", "Java4GroupTraceCustom"
		createTopics(t, p, customTopic)
		jvm = []string{"-Dpetrel.traceTopic=" + customTopic}
		cliArgs = []string{"--trace-topic", customTopic}
		wantTraceTopic = customTopic
	}
	createTopics(t, p, topic)
	out := string(runJavaWith(t, jvm, "client4", "petrel.interop.Scenarios", 3*time.Minute, "trace", p.nsAddr, topic, group))
	m := regexp.MustCompile(`(?m)^ok trace msgId=(\S+) producerGroup=(\S+) consumerGroup=(\S+) traceTopic=(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("scenario trace did not succeed:\n%s", out)
	}
	id, producerGroup, consumerGroup := m[1], m[2], m[3]
	t.Log(m[0])
	if m[4] != wantTraceTopic {
		t.Fatalf("the clients traced to %s, want %s", m[4], wantTraceTopic)
	}

	// The scenario saw the records through the Java client; the CLI reads
	// the same ones. Poll anyway: a record's index entry may trail its
	// store by a moment.
	var got string
	var lines map[string][]string
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command(petrelBin, append([]string{"message", "trace", id, "--namesrv", p.nsAddr}, cliArgs...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		got = string(b) + stderr.String()
		lines = traceLines(string(b))
		if err == nil && hasTraceLine(lines, "Pub", producerGroup, "success") &&
			hasTraceLine(lines, "SubBefore", consumerGroup, "-") && hasTraceLine(lines, "SubAfter", consumerGroup, "success") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("petrel message trace %s did not show the send and the consumption within a minute; last output:\n%s", id, got)
		}
		time.Sleep(250 * time.Millisecond) // poll interval; the loop awaits the condition above
	}
	t.Logf("petrel message trace %s %s:\n%s", id, strings.Join(cliArgs, " "), got)
	pub := lines["Pub"]
	if pub[3] == "-" || pub[4] == "-" || !strings.HasSuffix(pub[5], "ms") {
		t.Fatalf("Pub line without client, store host or cost: %v", pub)
	}
	if customTopic != "" {
		cmd := exec.Command(petrelBin, "message", "trace", id, "--namesrv", p.nsAddr)
		if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "no trace of message") {
			t.Fatalf("the default trace topic has records of a message traced to %s (%v):\n%s", customTopic, err, b)
		}
	}
}

// traceLines splits `message trace`'s table by type: its columns are
// TYPE TIME GROUP CLIENT STORE-HOST COST STATUS RETRIES.
func traceLines(out string) map[string][]string {
	lines := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 8 && f[0] != "TYPE" {
			lines[f[0]] = f
		}
	}
	return lines
}

func hasTraceLine(lines map[string][]string, typ, group, status string) bool {
	f, ok := lines[typ]
	return ok && f[2] == group && f[6] == status
}
