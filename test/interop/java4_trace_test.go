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
// finds in RMQ_SYS_TRACE_TOPIC) and then checks that `petrel message
// trace` shows both sides: the send with the producer group, the delivery
// and its successful outcome with the consumer group.
func java4Trace(t *testing.T, p *petrel) {
	createTopics(t, p, "Java4Trace")
	out := string(runJava(t, "client4", "petrel.interop.Scenarios", 3*time.Minute, "trace", p.nsAddr, "Java4Trace", "Java4GroupTrace"))
	m := regexp.MustCompile(`(?m)^ok trace msgId=(\S+) producerGroup=(\S+) consumerGroup=(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("scenario trace did not succeed:\n%s", out)
	}
	id, producerGroup, consumerGroup := m[1], m[2], m[3]
	t.Log(m[0])

	// The scenario saw the records through the Java client; the CLI reads
	// the same ones. Poll anyway: a record's index entry may trail its
	// store by a moment.
	var got string
	var lines map[string][]string
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command(petrelBin, "message", "trace", id, "--namesrv", p.nsAddr)
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
	t.Logf("petrel message trace %s:\n%s", id, got)
	pub := lines["Pub"]
	if pub[3] == "-" || pub[4] == "-" || !strings.HasSuffix(pub[5], "ms") {
		t.Fatalf("Pub line without client, store host or cost: %v", pub)
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
