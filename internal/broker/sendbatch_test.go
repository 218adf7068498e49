package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// batchAnswers collects SendBatch's answers per request.
type batchAnswers struct {
	mu   sync.Mutex
	wg   sync.WaitGroup
	n    []int
	res  []SendResult
	errs []error
}

func newBatchAnswers(n int) *batchAnswers {
	a := &batchAnswers{n: make([]int, n), res: make([]SendResult, n), errs: make([]error, n)}
	a.wg.Add(n)
	return a
}

func (a *batchAnswers) done(i int, res SendResult, err error) {
	a.mu.Lock()
	a.n[i]++
	a.res[i], a.errs[i] = res, err
	first := a.n[i] == 1
	a.mu.Unlock()
	if first {
		a.wg.Done()
	}
}

func (a *batchAnswers) answered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := 0
	for _, c := range a.n {
		if c > 0 {
			k++
		}
	}
	return k
}

// wait waits for every answer and checks each came once.
func (a *batchAnswers) wait(t *testing.T) {
	t.Helper()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range a.n {
		if c != 1 {
			t.Fatalf("request %d answered %d times, want once", i, c)
		}
	}
}

// groupCommits counts the commit log's group commits and their messages.
type groupCommits struct {
	mu      sync.Mutex
	commits []int
}

func (g *groupCommits) observe(c commitlog.GroupCommit) {
	if c.Messages == 0 {
		return // a periodic sync under async flush
	}
	g.mu.Lock()
	g.commits = append(g.commits, c.Messages)
	g.mu.Unlock()
}

func (g *groupCommits) take() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.commits
	g.commits = nil
	return out
}

// TestSendBatchAnswersEachRequest: each request is stored like Send and answered through
// done with its index; a refused request is answered before SendBatch
// returns; a request to a topic that does not exist yet is auto-created
// and stored on the broker's goroutine.
func TestSendBatchAnswersEachRequest(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	bad := sendReq("T", 9, "x")
	reqs := []*SendRequest{sendReq("T", 1, "one"), bad, sendReq("NotYet", 0, "new")}
	a := newBatchAnswers(len(reqs))
	e.b.SendBatch(context.Background(), reqs, a.done)
	a.mu.Lock()
	early := a.n[1]
	a.mu.Unlock()
	if early != 1 {
		t.Fatal("the refused request was not answered before SendBatch returned")
	}
	a.wait(t)
	if err := a.errs[0]; err != nil || a.res[0].Status != SendOK || a.res[0].QueueID != 1 || a.res[0].QueueOffset != 0 {
		t.Fatalf("batch send: %+v %v", a.res[0], err)
	}
	if _, phys, err := message.ParseOffsetID(a.res[0].MsgID); err != nil {
		t.Fatalf("msgId %q: %v", a.res[0].MsgID, err)
	} else if rec, err := e.b.ViewByOffset(phys); err != nil || string(rec.Body()) != "one" {
		t.Fatalf("view by offset: %v", err)
	}
	wantKind(t, a.errs[1], KindSystemError, "queue id 9")
	if a.errs[2] != nil {
		t.Fatalf("send to an auto-created topic: %v", a.errs[2])
	}
	if _, ok := e.b.Topic("NotYet"); !ok {
		t.Fatal("the topic was not auto-created")
	}
	e.waitMax("NotYet", 0, 1)
}

// TestSendBatchIsOneGroupCommit: the sends of one SendBatch — single
// messages to several queues and a batch request — reach the commit log as
// one submission, written by one group commit, under sync and async flush
// and through a Sender.
func TestSendBatchIsOneGroupCommit(t *testing.T) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		for _, how := range []string{"broker", "sender"} {
			t.Run(mode.String()+"/"+how, func(t *testing.T) {
				gc := &groupCommits{}
				e := newDiskEnv(t, func(s *store.Config, _ *Config) { s.FlushMode = mode; s.OnGroupCommit = gc.observe })
				e.createTopic("T", 4)
				e.send("T", 0, "warm-up")
				gc.take()
				batch := sendReq("T", 3, "")
				batch.Batch = true
				batch.Body = message.EncodeBatch([]message.BatchItem{{Body: []byte("b1")}, {Body: []byte("b2")}})
				reqs := []*SendRequest{sendReq("T", 0, "a"), sendReq("T", 1, "b"), sendReq("T", 2, "c"), batch, sendReq("T", 0, "d")}
				a := newBatchAnswers(len(reqs))
				if how == "broker" {
					e.b.SendBatch(context.Background(), reqs, a.done)
				} else {
					e.b.NewSender().SendBatch(context.Background(), reqs, a.done)
					if got := a.answered(); mode == commitlog.FlushAsync && got != len(reqs) {
						t.Fatalf("a Sender under async flush returned with %d of %d answered", got, len(reqs))
					}
				}
				a.wait(t)
				for i, err := range a.errs {
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
				}
				if got := gc.take(); len(got) != 1 || got[0] != 6 {
					t.Fatalf("group commits of %v messages for one SendBatch of 6, want one", got)
				}
				if a.res[0].QueueOffset != 1 || a.res[4].QueueOffset != 2 || strings.Count(a.res[3].MsgID, ",") != 1 {
					t.Fatalf("results %+v", a.res)
				}
			})
		}
	}
}

// TestSendBatchWithAnAutoCreatedTopicInTheMiddle: a request whose topic
// must be created first does not hold up the others of its batch, which
// are stored together; every request is answered once and stored.
func TestSendBatchWithAnAutoCreatedTopicInTheMiddle(t *testing.T) {
	gc := &groupCommits{}
	e := newDiskEnv(t, func(s *store.Config, _ *Config) { s.OnGroupCommit = gc.observe })
	e.createTopic("T", 1)
	reqs := []*SendRequest{sendReq("T", 0, "a"), sendReq("T", 0, "b"), sendReq("Fresh", 0, "new"), sendReq("T", 0, "c"), sendReq("T", 0, "d")}
	a := newBatchAnswers(len(reqs))
	e.b.SendBatch(context.Background(), reqs, a.done)
	a.wait(t)
	for i, err := range a.errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	for i, want := range []int64{0, 1, 0, 2, 3} {
		if a.res[i].QueueOffset != want {
			t.Fatalf("request %d stored at queue offset %d, want %d", i, a.res[i].QueueOffset, want)
		}
	}
	e.waitMax("T", 0, 4)
	e.waitMax("Fresh", 0, 1)
	// The four to T go in one submission; the writer may gather the one to
	// Fresh into the same group commit.
	if got := gc.take(); !(len(got) == 1 && got[0] == 5) && !(len(got) == 2 && (got[0] == 4 || got[1] == 4)) {
		t.Fatalf("group commits of %v messages, want the 4 to T together", got)
	}
}

// TestSendBatchKeepsTheOrderOfATopicsSends: once a send of a topic has
// to wait (its UNIQ_KEY is held by a send being stored), the later sends
// of that topic in the batch wait behind it, so the queue stores them in
// the batch's order; a send to another topic does not wait.
func TestSendBatchKeepsTheOrderOfATopicsSends(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.createTopic("U", 1)
	held, ok := e.b.dedup.TryAcquire("T", "K1") // the original, being stored
	if !ok || !held.Held() {
		t.Fatal("no claim on K1")
	}
	t.Cleanup(held.Release) // before Close, which waits for the send behind it
	reqs := []*SendRequest{sendReq("T", 0, "a", "UNIQ_KEY", "K1"), sendReq("T", 0, "b"), sendReq("U", 0, "u")}
	a := newBatchAnswers(len(reqs))
	e.b.SendBatch(context.Background(), reqs, a.done)
	e.waitMax("U", 0, 1)
	if e.st.MaxOffset("T", 0) != 0 {
		t.Fatal("a send of T was stored before the send it follows")
	}
	held.Release() // the original failed: the resend stores it
	a.wait(t)
	for i, want := range []int64{0, 1, 0} {
		if a.errs[i] != nil || a.res[i].QueueOffset != want {
			t.Fatalf("request %d: offset %d %v, want offset %d", i, a.res[i].QueueOffset, a.errs[i], want)
		}
	}
}

// TestSendBatchResendOfAnItemOfTheSameBatch: a request repeating the
// UNIQ_KEY of an earlier one of its batch (held while that one is stored)
// waits for it on the broker's goroutine and gets its result; one message
// is stored.
func TestSendBatchResendOfAnItemOfTheSameBatch(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	reqs := []*SendRequest{sendReq("T", 0, "one", "UNIQ_KEY", "K1"), sendReq("T", 0, "one", "UNIQ_KEY", "K1")}
	a := newBatchAnswers(len(reqs))
	e.b.SendBatch(context.Background(), reqs, a.done)
	a.wait(t)
	if a.errs[0] != nil || a.errs[1] != nil || a.res[1] != a.res[0] {
		t.Fatalf("answers %+v %v, want the resend to get the original's", a.res, a.errs)
	}
	e.waitMax("T", 0, 1)
	if n := e.st.MaxOffset("T", 0); n != 1 {
		t.Fatalf("topic T holds %d messages, want 1", n)
	}
	if hits := e.b.DedupStats().Hits; hits != 1 {
		t.Fatalf("DedupStats().Hits = %d, want 1", hits)
	}
}

// TestCloseWaitsForTheSendsThatHadToWait: a send finishing on the broker's
// goroutine (its topic's config write is held) is answered before Close
// returns; after Close such sends are refused at once.
func TestCloseWaitsForTheSendsThatHadToWait(t *testing.T) {
	e := newEnv(t)
	hold := make(chan struct{})
	holding := make(chan struct{})
	var once sync.Once
	e.fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "topics.json") {
			once.Do(func() { close(holding); <-hold })
		}
		return nil
	})
	a := newBatchAnswers(1)
	e.b.SendBatch(context.Background(), []*SendRequest{sendReq("New", 0, "x")}, a.done)
	<-holding
	closed := make(chan struct{})
	go func() { e.b.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a send was still on the broker's goroutine")
	case <-time.After(50 * time.Millisecond):
		// Not a synchronisation: only a window in which a wrong Close
		// would return; the test passes either way if Close waits.
	}
	close(hold)
	<-closed
	if a.answered() != 1 {
		t.Fatal("Close returned before the send it waited for was answered")
	}
	a.wait(t)
	e.fs.InjectError(nil)
	late := newBatchAnswers(1)
	e.b.SendBatch(context.Background(), []*SendRequest{sendReq("Newer", 0, "x")}, late.done)
	late.wait(t)
	wantKind(t, late.errs[0], KindServiceUnavailable, "shutting down")
}
