package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJava4ProduceConsume: the official Java 4.x client (rocketmq-client
// 4.9.8) sends synchronously, asynchronously, one way and as a batch, and
// a clustering DefaultMQPushConsumer with a tag filter receives exactly
// the tagged messages, with their keys and bodies.
func TestJava4ProduceConsume(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	createTopics(t, p, "Java4Topic")
	const count = 10
	out := string(runJava(t, "client4", "petrel.interop.ProduceConsume", 3*time.Minute,
		p.nsAddr, "Java4Topic", "Java4Group", fmt.Sprint(count)))
	got := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "got" {
			if f[2] != "a" || f[3] != "body-"+f[1] {
				t.Errorf("received %q: want tag a and body body-KEY", line)
			}
			got[f[1]] = true
		}
	}
	for _, mode := range []string{"sync", "async", "oneway", "batch"} {
		for i := range count {
			key := fmt.Sprintf("%s-%d", mode, i)
			if tagged := i%2 == 0; got[key] != tagged {
				t.Errorf("message %s: received %v, want %v (tag a only)", key, got[key], tagged)
			}
		}
	}
	if !strings.Contains(out, "received 20") {
		t.Fatalf("the Java client's summary is missing:\n%s", out)
	}
}
