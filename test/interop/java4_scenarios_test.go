package interop

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJava4Scenarios runs the official Java 4.x client's scenarios
// (java/client4 Scenarios.java) one after the other against one server:
// ordered sends with a selector and an orderly consumer, a delay level,
// transactions with a check-back, broadcasting, a SQL92 selector, retries
// into the DLQ, the lite pull consumer (assign with seek, subscribe), a
// compressed body and a clustering group of three push members that
// share the queues and rebalance when one leaves; then the sync/async/oneway/batch scenario again with
// RocketMQ's binary header (-Drocketmq.serialize.type=ROCKETMQ).
func TestJava4Scenarios(t *testing.T) {
	t.Parallel()
	// Level 2 is 2 s; retries wait level 3 + attempts, 1 s here; a
	// transaction is checked back 2 s after its half message.
	p := startPetrel(t, serverOptions{extraArgs: []string{
		"--delay-levels", "1s 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s",
		"--transaction-timeout", "2s", "--transaction-check-interval", "2s"}})
	scenarios := []string{"ordered", "delay", "transaction", "broadcast", "sql", "retrydlq", "litepull", "compressed", "cluster"}
	for _, s := range scenarios {
		createTopics(t, p, "Java4"+s)
	}
	afterMS := regexp.MustCompile(`after_ms=(\d+)`)
	t.Run("trace", func(t *testing.T) { java4Trace(t, p, "") })
	t.Run("trace-custom-topic", func(t *testing.T) { java4Trace(t, p, "Java4TraceRecords") })
	for _, s := range scenarios {
		t.Run(s, func(t *testing.T) {
			out := string(runJava(t, "client4", "petrel.interop.Scenarios", 3*time.Minute,
				s, p.nsAddr, "Java4"+s, "Java4Group"+s))
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "ok "+s+" ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("scenario %s did not succeed:\n%s", s, out)
			}
			t.Log(line)
			if s == "delay" {
				m := afterMS.FindStringSubmatch(line)
				if ms, _ := strconv.Atoi(m[1]); m == nil || ms < 1900 {
					t.Fatalf("a level 2 (2 s) message arrived after %s ms", m[1])
				}
			}
		})
	}
	t.Run("binary-header", func(t *testing.T) {
		createTopics(t, p, "Java4Binary")
		const count = 4
		out := string(runJavaWith(t, []string{"-Drocketmq.serialize.type=ROCKETMQ"}, "client4", "petrel.interop.ProduceConsume", 3*time.Minute,
			p.nsAddr, "Java4Binary", "Java4BinaryGroup", fmt.Sprint(count)))
		if !strings.Contains(out, fmt.Sprintf("received %d", 2*count)) {
			t.Fatalf("with the binary header the scenario did not end well:\n%s", out)
		}
	})
}
