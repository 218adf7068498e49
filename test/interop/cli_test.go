package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// runCLI runs the petrel binary's operator command line against p and
// returns its standard output.
func runCLI(t *testing.T, p *petrel, args ...string) string {
	t.Helper()
	cmd := exec.Command(petrelBin, append(args, "--namesrv", p.nsAddr)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("petrel %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// The client's handling of RESET_CONSUMER_CLIENT_OFFSET (220) races with
// its own pull loop (processQueue.clear against pullMessage, both in the
// client), so the push consumer of the reset test runs in a child process:
// this test binary started again with pushChildEnv set, with GORACE
// exitcode=0 so the client's race does not fail it. It reports on stdout:
//
//	STARTED                    the consumer started
//	M <storeTimestamp> <body>  one consumed message
//	ERROR <text>               the consumer could not start
//
// and shuts the consumer down when its stdin closes.
const pushChildEnv = "PETREL_INTEROP_PUSH_CHILD"

// runPushChild is the child's main; it returns the exit code.
func runPushChild() int {
	return runPushChildWith("_child", func(emit func(string, ...any), msgs []*primitive.MessageExt) consumer.ConsumeResult {
		for _, m := range msgs {
			emit("M %d %s", m.StoreTimestamp, m.Body)
		}
		return consumer.ConsumeSuccess
	})
}

// startPushChild starts the child consumer of topic for group and records
// what it consumes into col. It stops when the test ends.
func startPushChild(t *testing.T, p *petrel, topic, group string, col *collector) {
	t.Helper()
	c := startChildProcess(t, "push consumer child", pushChildEnv+"=1", "GORACE=exitcode=0",
		"INTEROP_NS="+p.nsAddr, "INTEROP_TOPIC="+topic, "INTEROP_GROUP="+group)
	cmd, stdin, stdout, stderr := c.cmd, c.stdin, c.stdout, c.stderr
	started := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if f := strings.SplitN(line, " ", 3); len(f) == 3 && f[0] == "M" {
				stored, _ := strconv.ParseInt(f[1], 10, 64)
				col.add("child", &primitive.MessageExt{Message: primitive.Message{Body: []byte(f[2])}, StoreTimestamp: stored})
				continue
			}
			select {
			case started <- line:
			default:
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("push consumer child stderr (tail):\n%s", tail(stderr.String(), 4000))
		}
	})
	select {
	case line := <-started:
		if line != "STARTED" {
			t.Fatalf("push consumer child: %s\nstderr:\n%s", line, tail(stderr.String(), 4000))
		}
	case <-exited:
		t.Fatalf("push consumer child exited before starting\nstderr:\n%s", tail(stderr.String(), 4000))
	case <-time.After(startupTimeout):
		t.Fatalf("push consumer child did not start within %v", startupTimeout)
	}
}

// TestCLIResetOffsetMakesRunningPushConsumerReconsume: `petrel group
// describe` shows a running official push consumer and zero lag once it
// consumed everything; `petrel group reset-offset --to-time` then makes it
// consume again every message stored from that time on, and none before.
func TestCLIResetOffsetMakesRunningPushConsumerReconsume(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	group := uniqueName(t, "cg")
	col := newCollector()
	startPushChild(t, p, topic, group, col)

	old := bodies(t, "old", 20)
	sendAllSync(t, prod, topic, old, nil)
	col.waitAll(t, consumeTimeout, "messages before the mark", old)
	var mark int64
	for _, d := range col.snapshot() {
		mark = max(mark, d.stored+1)
	}
	// Store times are in milliseconds: the new messages must be stored
	// from the mark on, so wait until the broker's clock (this host's) has
	// reached it; the old ones can be consumed within the millisecond of
	// the last store.
	for time.Now().UnixMilli() < mark {
		time.Sleep(time.Millisecond)
	}
	fresh := bodies(t, "new", 20)
	sendAllSync(t, prod, topic, fresh, nil)
	col.waitAll(t, consumeTimeout, "messages after the mark", fresh)
	for _, d := range col.snapshot() {
		if strings.HasPrefix(d.body, "new") && d.stored < mark {
			t.Fatalf("message %s stored at %d, before the mark %d taken after the old ones were consumed", d.body, d.stored, mark)
		}
	}

	// The running member shows in group describe, and once it has
	// committed what it consumed (every 5 s) the lag is zero.
	type describe struct {
		Online  bool `json:"online"`
		Members []struct {
			ClientID string `json:"clientId"`
			Language string `json:"language"`
		} `json:"members"`
		TotalLag int64 `json:"totalLag"`
	}
	var d describe
	waitFor(t, consumeTimeout, "group describe shows zero lag after the member consumed everything", func() (bool, string) {
		d = describe{}
		if err := json.Unmarshal([]byte(runCLI(t, p, "group", "describe", group, "-o", "json")), &d); err != nil {
			return false, err.Error()
		}
		return d.TotalLag == 0, fmt.Sprintf("total lag %d", d.TotalLag)
	})
	if !d.Online || len(d.Members) != 1 || d.Members[0].Language != "GO" || d.Members[0].ClientID == "" {
		t.Fatalf("group describe: %+v", d)
	}

	out := runCLI(t, p, "group", "reset-offset", group, "--topic", topic,
		"--to-time", time.UnixMilli(mark).UTC().Format(time.RFC3339Nano), "-o", "json")
	var res struct {
		Group  string `json:"group"`
		Queues []struct {
			QueueID int   `json:"queueId"`
			Offset  int64 `json:"offset"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Group != group || len(res.Queues) == 0 {
		t.Fatalf("reset-offset answer %q: %v", out, err)
	}

	// The client pauses about 10 s before it moves to the new offsets.
	again := func(c *collector) bool {
		for _, b := range fresh {
			if c.byBody[b] < 2 {
				return false
			}
		}
		return true
	}
	if !col.waitUntil(consumeTimeout, again) {
		col.mu.Lock()
		var short []string
		for _, b := range fresh {
			if col.byBody[b] < 2 {
				short = append(short, b)
			}
		}
		col.mu.Unlock()
		t.Fatalf("after reset-offset to the mark, %d of %d messages stored after it were not consumed again within %v: %v",
			len(short), len(fresh), consumeTimeout, head(short, 10))
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, b := range old {
		if n := col.byBody[b]; n != 1 {
			t.Fatalf("message %s, stored before the mark, was consumed %d times; a reset to the mark must not repeat it", b, n)
		}
	}
}
