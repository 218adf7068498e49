package interop

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// restartTimeout bounds the waits that span a broker restart. After a
// restart the client needs up to one heartbeat period (30 s) before the new
// broker process knows the consumer's subscription, a pull that was in
// flight on the dropped connection waits for its own 30 s deadline, and
// failed pulls are retried after 3 s: these are the dominant waits of the
// suite.
const restartTimeout = 90 * time.Second

// committedOffsets waits until the broker reports, for every queue in ends,
// a committed offset of group at least ends[q], and returns what it reports.
func committedOffsets(t *testing.T, p *petrel, group, topic string, ends map[int]int64) map[int]int64 {
	t.Helper()
	got := map[int]int64{}
	for q, end := range ends {
		waitFor(t, 30*time.Second, fmt.Sprintf("committed offset of group %s on queue %d to reach %d (the client commits every 5 s)", group, q, end), func() (bool, string) {
			off, err := committedOffset(p.brAddr, group, topic, q)
			if err != nil {
				return false, err.Error()
			}
			got[q] = off
			return off >= end, "broker reports " + strconv.FormatInt(off, 10)
		})
	}
	return got
}

// TestRestartSIGTERMResumes stops the broker with SIGTERM while a producer
// and a consumer are running, starts it again on the same ports and data
// directory, and checks that committed consumer offsets survived, that the
// consumer resumes without going back before them, and that every message
// whose send succeeded is consumed.
func TestRestartSIGTERMResumes(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	group := uniqueName(t, "cg")
	col := newCollector()
	c := newPushConsumer(t, p, group)
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "c")

	// Phase 1: consumed and committed before the restart.
	phase1 := bodies(t, "p1", 100)
	ends := queueEnds(sendAllSync(t, prod, topic, phase1, nil))
	col.waitAll(t, consumeTimeout, "phase 1 (before the restart)", phase1)
	t0 := time.Now()
	before := committedOffsets(t, p, group, topic, ends)
	t.Logf("phase-1 offsets committed after %v", time.Since(t0).Round(time.Millisecond))
	col.mu.Lock()
	phase1Deliveries := map[string]int{}
	for _, b := range phase1 {
		phase1Deliveries[b] = col.byBody[b]
	}
	col.mu.Unlock()

	// Phase 2: a producer keeps sending, retrying each message until a send
	// of it succeeds; the broker is stopped and restarted under it.
	phase2 := bodies(t, "p2", 300)
	var acked atomic.Int64
	var nonOK atomic.Int64
	prodDone := make(chan error, 1)
	go func() {
		for i, b := range phase2 {
			m := primitive.NewMessage(topic, []byte(b))
			give := time.Now().Add(restartTimeout)
			for {
				res, err := prod.SendSync(context.Background(), m)
				if err == nil && res.Status == primitive.SendOK {
					break
				}
				if err == nil {
					nonOK.Add(1)
				}
				if time.Now().After(give) {
					prodDone <- fmt.Errorf("message %d of phase 2 never sent within %v: last result %v, error %v", i, restartTimeout, res, err)
					return
				}
				// Pace the retries while the broker is down.
				<-time.After(100 * time.Millisecond)
			}
			acked.Add(1)
		}
		prodDone <- nil
	}()

	waitFor(t, 30*time.Second, "100 phase-2 sends to succeed before the stop", func() (bool, string) {
		return acked.Load() >= 100, fmt.Sprintf("%d acknowledged", acked.Load())
	})
	p.stop()
	stoppedAt := acked.Load()
	p.restart()
	restarted := time.Now()

	// Committed offsets are read right after the restart, before the consumer
	// (which reconnects after a 3 s back-off at best) can commit again.
	for q, off := range before {
		now, err := committedOffset(p.brAddr, group, topic, q)
		if err != nil {
			t.Fatalf("query committed offset after restart: %v", err)
		}
		if now < off {
			t.Fatalf("committed offset of group %s on queue %d was %d before the restart and is %d after it", group, q, off, now)
		}
	}

	select {
	case err := <-prodDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(restartTimeout + 10*time.Second):
		t.Fatalf("producer did not finish phase 2 (acked %d of %d)", acked.Load(), len(phase2))
	}
	t.Logf("broker stopped after %d of %d phase-2 sends; %d sends answered with a status other than SEND_OK", stoppedAt, len(phase2), nonOK.Load())

	t.Logf("producer done %v after the restart", time.Since(restarted).Round(time.Millisecond))
	col.waitAll(t, restartTimeout, "phase 2 (across the restart)", phase2)
	t.Logf("phase 2 fully consumed %v after the restart", time.Since(restarted).Round(time.Millisecond))

	// The running consumer continues from where it was; its committed
	// offsets covered phase 1 before the stop, so no phase-1 message may come
	// again.
	col.mu.Lock()
	var again []string
	for _, b := range phase1 {
		if col.byBody[b] > phase1Deliveries[b] {
			again = append(again, b)
		}
	}
	col.mu.Unlock()
	if len(again) > 0 {
		t.Fatalf("%d phase-1 messages, all committed before the restart, were delivered again after it (first: %v): consumption did not resume from the committed offsets",
			len(again), head(again, 5))
	}
}

// TestSIGKILLLosesNoAcknowledgedMessage kills the broker with SIGKILL while
// four producers send concurrently under --flush sync, restarts it, and
// checks that every message whose send returned SEND_OK is consumed.
func TestSIGKILLLosesNoAcknowledgedMessage(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p, producer.WithRetry(0))
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	const senders, perSender = 4, 2000
	var (
		mu       sync.Mutex
		acked    []string
		failures []string // errors before the kill
		killed   atomic.Bool
		wg       sync.WaitGroup
	)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range bodies(t, fmt.Sprintf("s%d", s), perSender) {
				if killed.Load() {
					return
				}
				res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b)))
				mu.Lock()
				switch {
				case err == nil && res.Status == primitive.SendOK:
					acked = append(acked, b)
				case !killed.Load():
					failures = append(failures, fmt.Sprintf("%s: result %v error %v", b, res, err))
				}
				mu.Unlock()
				if err != nil && killed.Load() {
					return
				}
			}
		}()
	}
	waitFor(t, 30*time.Second, "200 acknowledged sends before the kill", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200, fmt.Sprintf("%d acknowledged", len(acked))
	})
	killed.Store(true)
	p.kill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("senders still running 30 s after the kill")
	}
	mu.Lock()
	want := append([]string(nil), acked...)
	fails := append([]string(nil), failures...)
	mu.Unlock()
	if len(fails) > 0 {
		t.Fatalf("%d sends failed before the kill, first: %v", len(fails), head(fails, 3))
	}
	t.Logf("%d sends acknowledged with SEND_OK before SIGKILL", len(want))

	p.restart()
	// The restarted name server knows the topic once the broker has
	// registered with it.
	waitRoute(t, p.nsAddr, topic)
	drain(t, p, topic, want)
}
