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

// TestTopicHookRunsAreSharedAndSerial: while the topic hook runs for one
// create, the creates that finish meanwhile wait, and then share one run
// that sees all of them; runs never overlap.
func TestTopicHookRunsAreSharedAndSerial(t *testing.T) {
	e := newEnv(t)
	var (
		runs, inRun, overlap atomic.Int32
		seen                 atomic.Int32 // topics the last run saw
	)
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
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
	first := make(chan error, 1)
	go func() { first <- e.b.CreateTopic(topicCfg("first", 1, 6)) }()
	select {
	case <-entered:
	case <-time.After(waitLimit):
		t.Fatal("the hook did not run")
	}
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- e.b.CreateTopic(topicCfg(fmt.Sprintf("t%02d", i), 1, 6)) }()
	}
	deadline := time.Now().Add(waitLimit)
	for e.b.topicRuns.waitingCount() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d creates wait for the hook", e.b.topicRuns.waitingCount(), n)
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising
	}
	select {
	case err := <-errs:
		t.Fatalf("a create returned (%v) before a hook run that covers it", err)
	default:
	}
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if r := runs.Load(); r != 2 {
		t.Fatalf("%d hook runs for 1 + %d creates, want 2", r, n)
	}
	if o := overlap.Load(); o != 0 {
		t.Fatalf("hook runs overlapped %d times", o)
	}
	// The template topic, first and the n others.
	if got := seen.Load(); got != n+2 {
		t.Fatalf("the last run saw %d topics, want %d", got, n+2)
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
			cur, err := e.b.ensureTopic(topicCfg("Same", 4, 6))
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
	if v := e.b.TopicsVersion(); v.Counter != 2 { // the template and Same
		t.Fatalf("version counter %d, want 2", v.Counter)
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
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the env's cleanup closes the store
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
	first := make(chan error, 1)
	go func() { first <- e.b.CreateTopic(topicCfg("first", 1, 6)) }()
	select {
	case <-entered:
	case <-time.After(waitLimit):
		t.Fatal("the create did not reach the log's sync")
	}
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- e.b.CreateTopic(topicCfg(fmt.Sprintf("t%02d", i), 1, 6)) }()
	}
	deadline := time.Now().Add(waitLimit)
	for len(e.b.Topics()) != n+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d topics in memory while one sync is held, want %d: creates wait for each other", len(e.b.Topics()), n+2)
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising
	}
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s := syncs.Load(); s > 3 {
		t.Fatalf("%d log syncs for 1 + %d concurrent creates", s, n)
	}
}
