package interop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// The orderly push consumer of the client races with itself (see
// TestOrderedPerKey), so it runs in a child process: this test binary, started
// again with orderlyChildEnv set, which TestMain hands to runOrderlyChild
// instead of running tests. The child reports on stdout, one line each:
//
//	STARTED            the consumer started
//	M <queueId> <body> one consumed message, in consumption order
//	OVERLAP <queueId>  two callbacks ran at once for one queue
//	ERROR <text>       the consumer could not start
//
// and shuts the consumer down when its stdin closes.
const orderlyChildEnv = "PETREL_INTEROP_ORDERLY_CHILD"

// runOrderlyChild is the child's main; it returns the exit code.
func runOrderlyChild() int {
	ns, topic, group := os.Getenv("INTEROP_NS"), os.Getenv("INTEROP_TOPIC"), os.Getenv("INTEROP_GROUP")
	instance, poison := os.Getenv("INTEROP_INSTANCE"), os.Getenv("INTEROP_POISON")
	if instance == "" {
		instance = group + "_child"
	}
	emit := childEmitter()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		// A poison message is retried twice locally, then sent to the DLQ.
		consumer.WithMaxReconsumeTimes(2),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
		// Orderly consumers pull a queue only after a periodic lock request
		// succeeded; renew every 2 s instead of 20 s.
		consumer.WithRebalanceLockInterval(2*time.Second))
	if err != nil {
		emit("ERROR new consumer: %v", err)
		return 1
	}
	var mu sync.Mutex // guards busy
	busy := map[int]bool{}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if len(msgs) == 0 {
			return consumer.ConsumeSuccess, nil
		}
		q := msgs[0].Queue.QueueId
		mu.Lock()
		overlap := busy[q]
		busy[q] = true
		mu.Unlock()
		if overlap {
			emit("OVERLAP %d", q)
		}
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			if poison != "" && string(m.Body) == poison {
				emit("POISON %d %s %d", m.Queue.QueueId, m.Body, m.ReconsumeTimes)
				result = consumer.SuspendCurrentQueueAMoment
				continue
			}
			emit("M %d %s", m.Queue.QueueId, m.Body)
		}
		mu.Lock()
		busy[q] = false
		mu.Unlock()
		return result, nil
	})
	if err != nil {
		emit("ERROR subscribe: %v", err)
		return 1
	}
	return runChildConsumer(c, emit)
}

// childEmitter returns the child's reporter: one line on stdout a call,
// flushed at once, safe from any goroutine.
func childEmitter() func(format string, a ...any) {
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	return func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", a...)
		_ = out.Flush()
	}
}

// runPushChildWith is the main of a child push consumer of INTEROP_GROUP
// (client instance INTEROP_GROUP+suffix, from the first offset, pulling
// without pause) on INTEROP_TOPIC of the name server INTEROP_NS: consume
// handles each delivery and reports with emit. It returns the exit code.
func runPushChildWith(suffix string, consume func(emit func(format string, a ...any), msgs []*primitive.MessageExt) consumer.ConsumeResult) int {
	ns, topic, group := os.Getenv("INTEROP_NS"), os.Getenv("INTEROP_TOPIC"), os.Getenv("INTEROP_GROUP")
	emit := childEmitter()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group),
		consumer.WithInstance(group+suffix),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullInterval(0))
	if err != nil {
		emit("ERROR new consumer: %v", err)
		return 1
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return consume(emit, msgs), nil
	})
	if err != nil {
		emit("ERROR subscribe: %v", err)
		return 1
	}
	return runChildConsumer(c, emit)
}

// runChildConsumer starts the child's consumer, reports STARTED, and shuts
// it down once the parent closes stdin; it returns the exit code.
func runChildConsumer(c rocketmq.PushConsumer, emit func(format string, a ...any)) int {
	if err := c.Start(); err != nil {
		emit("ERROR start: %v", err)
		return 1
	}
	emit("STARTED")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	_ = c.Shutdown()
	return 0
}

// startOrderlyChild starts the child consumer for topic and group on p and
// calls onLine (from one goroutine) for every line it reports after STARTED.
// The child is stopped when the test ends, or when the returned function
// is called. env adds INTEROP_INSTANCE (the client instance, for a second
// member of the group) and INTEROP_POISON (a body the child always fails).
func startOrderlyChild(t *testing.T, p *petrel, topic, group string, onLine func(string), env ...string) (stop func()) {
	t.Helper()
	env = append([]string{orderlyChildEnv + "=1", "INTEROP_NS=" + p.nsAddr, "INTEROP_TOPIC=" + topic, "INTEROP_GROUP=" + group}, env...)
	return startLineChild(t, "orderly consumer child", onLine, env...)
}

// childProcess is this test binary run again as a child, with env added
// to the test's environment: the child's TestMain sees its variable and
// runs the client there instead of the tests.
type childProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *lockedBuffer
}

// startChildProcess starts the child; what names it in failures.
func startChildProcess(t *testing.T, what string, env ...string) *childProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	c := &childProcess{cmd: exec.Command(exe), stderr: &lockedBuffer{}}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if c.stdout, err = c.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the %s: %v", what, err)
	}
	return c
}

// startLineChild starts a child consumer (see runChildConsumer) and waits
// until its first line says STARTED; onLine gets every later line (from one
// goroutine). The returned function closes the child's stdin and waits for
// it to exit (killing it after 20 s); it is also called when the test ends.
func startLineChild(t *testing.T, what string, onLine func(string), env ...string) (stop func()) {
	t.Helper()
	c := startChildProcess(t, what, env...)
	exited := make(chan struct{})
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(c.stdout)
		first := true
		for sc.Scan() {
			if first {
				started <- sc.Text()
				first = false
				continue
			}
			onLine(sc.Text())
		}
		_ = c.cmd.Wait()
		close(exited)
	}()
	var stopOnce sync.Once
	stop = func() {
		stopOnce.Do(func() {
			_ = c.stdin.Close()
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				_ = c.cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s stderr (tail; data races of the client are expected here):\n%s", what, tail(c.stderr.String(), 6000))
		}
	})
	select {
	case line := <-started:
		if line != "STARTED" {
			t.Fatalf("%s: %s", what, line)
		}
	case <-exited:
		t.Fatalf("%s exited before starting:\n%s", what, tail(c.stderr.String(), 4000))
	case <-time.After(startupTimeout):
		t.Fatalf("%s did not start within %v", what, startupTimeout)
	}
	return stop
}
