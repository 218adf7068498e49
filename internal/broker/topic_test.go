package broker

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/vfs"
)

func (r *hookRuns) waitingCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}

// gate holds whatever waits on release until unblock; unblock runs at the
// latest when the test ends (before the env's cleanup closes the store).
func gate(t *testing.T) (entered, release chan struct{}, unblock func()) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock = func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	return entered, release, unblock
}

// heldCreates is a create of topic "first" held at a gate and n creates of
// t00, t01, ... started while it is held.
type heldCreates struct {
	first, errs chan error
	n           int
}

// createWhileHeld creates "first", waits until entered is closed (failing
// with notEntered), then starts n more creates.
func createWhileHeld(t *testing.T, e *env, entered <-chan struct{}, notEntered string, n int) *heldCreates {
	t.Helper()
	h := &heldCreates{first: make(chan error, 1), errs: make(chan error, n), n: n}
	go func() { h.first <- e.b.CreateTopic(topicCfg("first", 1, 6)) }()
	select {
	case <-entered:
	case <-time.After(waitLimit):
		t.Fatal(notEntered)
	}
	for i := range n {
		go func() { h.errs <- e.b.CreateTopic(topicCfg(fmt.Sprintf("t%02d", i), 1, 6)) }()
	}
	return h
}

// pollUntil polls cond until it holds, failing with what it says after
// waitLimit.
func pollUntil(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising
	}
}

// finish unblocks the gate and fails the test unless every create succeeded.
func (h *heldCreates) finish(t *testing.T, unblock func()) {
	t.Helper()
	unblock()
	if err := <-h.first; err != nil {
		t.Fatal(err)
	}
	for range h.n {
		if err := <-h.errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestTopicHookRunsAreSharedAndSerial: while the topic hook runs for one
// create, the creates that finish meanwhile wait, and then share one run
// that sees all of them; runs never overlap.
func TestTopicHookRunsAreSharedAndSerial(t *testing.T) {
	e := newEnv(t)
	var (
		runs, inRun, overlap atomic.Int32
		seen                 atomic.Int32 // topics the last run saw
	)
	entered, release, unblock := gate(t)
	e.b.OnTopicsChanged(func() {
		if inRun.Add(1) > 1 {
			overlap.Add(1)
		}
		defer inRun.Add(-1)
		if runs.Add(1) == 1 {
			close(entered)
			<-release
		}
		seen.Store(int32(len(e.b.Topics())))
	})
	const n = 20
	h := createWhileHeld(t, e, entered, "the hook did not run", n)
	pollUntil(t, func() (bool, string) {
		w := e.b.topicRuns.waitingCount()
		return w == n, fmt.Sprintf("%d of %d creates wait for the hook", w, n)
	})
	select {
	case err := <-h.errs:
		t.Fatalf("a create returned (%v) before a hook run that covers it", err)
	default:
	}
	h.finish(t, unblock)
	if r := runs.Load(); r != 2 {
		t.Fatalf("%d hook runs for 1 + %d creates, want 2", r, n)
	}
	if o := overlap.Load(); o != 0 {
		t.Fatalf("hook runs overlapped %d times", o)
	}
	// The template, reply and trace topics, first and the n others.
	if got := seen.Load(); got != n+4 {
		t.Fatalf("the last run saw %d topics, want %d", got, n+4)
	}
}

// TestTopicHookPanicDoesNotWedgeLaterChanges: a front that recovers a
// panicking hook can go on creating topics.
func TestTopicHookPanicDoesNotWedgeLaterChanges(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int32
	e.b.OnTopicsChanged(func() {
		if calls.Add(1) == 1 {
			panic("hook failure")
		}
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the hook's panic did not reach the caller")
			}
		}()
		_ = e.b.CreateTopic(topicCfg("A", 1, 6))
	}()
	done := make(chan error, 1)
	go func() { done <- e.b.CreateTopic(topicCfg("B", 1, 6)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("a create after a panicking hook hangs")
	}
	if c := calls.Load(); c != 2 {
		t.Fatalf("hook ran %d times, want 2", c)
	}
}

// TestConcurrentCreatesOfOneTopic: of concurrent creates of the same new
// topic (admin and auto-create), the topic is stored once and the hook
// runs for it; every caller gets the stored config.
func TestConcurrentCreatesOfOneTopic(t *testing.T) {
	e := newEnv(t)
	var hooks atomic.Int32
	e.b.OnTopicsChanged(func() { hooks.Add(1) })
	const n = 30
	var wg sync.WaitGroup
	got := make([]meta.Topic, n)
	for i := range n {
		wg.Go(func() {
			cur, err := e.b.ensureTopic(topicCfg("Same", 4, 6).meta())
			if err != nil {
				t.Error(err)
			}
			got[i] = cur
		})
	}
	wg.Wait()
	if h := hooks.Load(); h != 1 {
		t.Fatalf("hook ran %d times for one new topic, want 1", h)
	}
	for i, c := range got {
		if c.Name != "Same" || c.WriteQueueNums != 4 {
			t.Fatalf("caller %d got %+v", i, c)
		}
	}
	if v := e.b.TopicsVersion(); v.Counter != 4 { // the template, the reply and trace topics, and Same
		t.Fatalf("version counter %d, want 4", v.Counter)
	}
}

// TestConcurrentCreatesShareWrites: creates in flight while the topic log's
// sync is held are all applied in memory and then made durable by about
// one more sync, not one each behind a lock.
func TestConcurrentCreatesShareWrites(t *testing.T) {
	e := newEnv(t)
	var (
		syncs   atomic.Int32
		blocked atomic.Bool
	)
	entered, release, unblock := gate(t)
	e.fs.InjectError(func(op vfs.Op, name string) error {
		if op != vfs.OpSync || !strings.HasSuffix(name, "/topics.json.log") {
			return nil
		}
		syncs.Add(1)
		if blocked.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return nil
	})
	defer e.fs.InjectError(nil)
	const n = 50
	h := createWhileHeld(t, e, entered, "the create did not reach the log's sync", n)
	pollUntil(t, func() (bool, string) {
		got := len(e.b.Topics())
		// Besides the n + 1 creates: the template, reply and trace topics.
		return got == n+4, fmt.Sprintf("%d topics in memory while one sync is held, want %d: creates wait for each other", got, n+4)
	})
	h.finish(t, unblock)
	if s := syncs.Load(); s > 3 {
		t.Fatalf("%d log syncs for 1 + %d concurrent creates", s, n)
	}
}
