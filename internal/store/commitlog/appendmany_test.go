package commitlog

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// manyGroups makes n one-message groups with numbered bodies of ~100 bytes.
func manyGroups(n int) [][]*message.Message {
	groups := make([][]*message.Message, n)
	for i := range groups {
		groups[i] = []*message.Message{testMsg("T", 0, fmt.Sprintf("m%02d-%s", i, strings.Repeat("x", 100)))}
	}
	return groups
}

// answers counts AppendMany's callbacks per group.
type answers struct {
	mu   sync.Mutex
	wg   sync.WaitGroup
	per  []int
	errs []error
}

func newAnswers(n int) *answers {
	a := &answers{per: make([]int, n), errs: make([]error, n)}
	a.wg.Add(n)
	return a
}

func (a *answers) done(i int, _ Result, err error) {
	a.mu.Lock()
	a.per[i]++
	a.errs[i] = err
	first := a.per[i] == 1
	a.mu.Unlock()
	if first {
		a.wg.Done()
	}
}

func (a *answers) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.per {
		if c > 0 {
			n++
		}
	}
	return n
}

func (a *answers) check(t *testing.T, want error) {
	t.Helper()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range a.per {
		if c != 1 {
			t.Fatalf("group %d answered %d times, want once", i, c)
		}
		if !errors.Is(a.errs[i], want) {
			t.Fatalf("group %d answered %v, want %v", i, a.errs[i], want)
		}
	}
}

// TestAppendManyIsOneSubmissionAndOneGroup: AppendMany hands its groups
// to the writer as one submission, written as one group (one write, one
// group commit) while they fit MaxBatchBytes; an Appender does the same
// and under FlushAsync has answered every group when it returns. The
// records are in order and every callback runs once.
func TestAppendManyIsOneSubmissionAndOneGroup(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		for _, how := range []string{"log", "appender"} {
			t.Run(mode.String()+"/"+how, func(t *testing.T) {
				rec := &commitRecorder{}
				l := openLog(t, vfs.NewMem(), Options{FlushMode: mode, SegmentBytes: 1 << 20, OnGroupCommit: rec.observe})
				defer l.Close()
				const n = 50
				a := newAnswers(n)
				before := l.Submissions()
				if how == "log" {
					l.AppendMany(manyGroups(n), a.done)
				} else {
					l.NewAppender().AppendMany(manyGroups(n), a.done)
					if got := a.count(); mode == FlushAsync && got != n {
						t.Fatalf("the Appender returned with %d of %d groups answered under async flush", got, n)
					}
				}
				a.check(t, nil)
				if got := l.Submissions() - before; got != 1 {
					t.Fatalf("%d submissions for one AppendMany, want 1", got)
				}
				msgs, calls, _ := rec.totals()
				if msgs != n || calls != 1 {
					t.Fatalf("%d group commits of %d messages for one AppendMany of %d, want one", calls, msgs, n)
				}
				got := readAll(t, l)
				if len(got) != n {
					t.Fatalf("read %d records, want %d", len(got), n)
				}
				for i, m := range got {
					if m.QueueOffset != int64(i) || string(m.Body[:3]) != fmt.Sprintf("m%02d", i) {
						t.Fatalf("record %d: queue offset %d body %q", i, m.QueueOffset, m.Body[:3])
					}
				}
			})
		}
	}
}

// TestAppendManySplitsAtMaxBatchBytes: a submission larger than
// MaxBatchBytes is written in several groups, cut between appends, in
// order (one write each: one group commit each under FlushAsync); a
// refused group fails alone.
func TestAppendManySplitsAtMaxBatchBytes(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		t.Run(mode.String(), func(t *testing.T) {
			rec := &commitRecorder{}
			l := openLog(t, vfs.NewMem(), Options{FlushMode: mode, SegmentBytes: 1 << 20, MaxRecordBytes: 1024, MaxBatchBytes: 1024, OnGroupCommit: rec.observe})
			defer l.Close()
			const n = 50
			groups := manyGroups(n)
			groups[7] = []*message.Message{{Topic: ""}} // invalid: refused alone
			a := newAnswers(n)
			l.NewAppender().AppendMany(groups, a.done)
			a.wg.Wait()
			for i, err := range a.errs {
				if (i == 7) != (err != nil) {
					t.Fatalf("group %d answered %v", i, err)
				}
			}
			// Under FlushSync the flusher may cover the writes with one
			// fsync, so only async flush counts one commit per write.
			msgs, calls, _ := rec.totals()
			if msgs != n-1 || (mode == FlushAsync && calls < 2) {
				t.Fatalf("%d group commits of %d messages, want several of %d in all", calls, msgs, n-1)
			}
			if got := readAll(t, l); len(got) != n-1 || string(got[7].Body[:3]) != "m08" {
				t.Fatalf("read %d records, want %d in order", len(got), n-1)
			}
		})
	}
}

// TestCloseWritesSubmittedAppends: appends submitted before Close are not
// lost; after Close AppendMany and an Appender refuse with ErrClosed.
func TestCloseWritesSubmittedAppends(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	a := newAnswers(3)
	l.AppendMany(manyGroups(3), a.done)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	a.check(t, nil)
	late := newAnswers(2)
	l.AppendMany(manyGroups(2), late.done)
	late.check(t, ErrClosed)
	late = newAnswers(2)
	l.NewAppender().AppendMany(manyGroups(2), late.done)
	late.check(t, ErrClosed)
	l = openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	defer l.Close()
	if got := readAll(t, l); len(got) != 3 {
		t.Fatalf("after reopening: %d records, want 3", len(got))
	}
}

// TestCloseWaitsForAnAppenderWriting: an Appender writing on its caller's
// goroutine when Close starts finishes before Close stops the writer and
// closes the segments, so the appends it answers as stored are on disk.
func TestCloseWaitsForAnAppenderWriting(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	writing, release := make(chan struct{}), make(chan struct{})
	var blocked atomic.Bool
	fsys.InjectError(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite && blocked.CompareAndSwap(false, true) {
			close(writing)
			<-release
		}
		return nil
	})
	a := newAnswers(1)
	go l.NewAppender().AppendMany(manyGroups(1), a.done)
	<-writing
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	// Wait until Close waits for the Appender (it then holds off every
	// new reader of closeMu), or has wrongly finished without it.
	for {
		select {
		case err := <-closed:
			close(release)
			t.Fatalf("Close returned %v while an Appender was still writing", err)
		default:
		}
		if !l.closeMu.TryRLock() {
			break
		}
		l.closeMu.RUnlock()
		runtime.Gosched()
	}
	close(release)
	a.check(t, nil)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	fsys.InjectError(nil)
	l = openLog(t, fsys, Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	defer l.Close()
	if got := readAll(t, l); len(got) != 1 {
		t.Fatalf("after reopening: %d records, want the one the Appender wrote", len(got))
	}
}

// TestAppenderRefusesASecondCallWhileOneRuns: a call of an Appender from
// its own callback (which would wait for itself on the tail) panics
// instead of deadlocking; the Appender works again afterwards.
func TestAppenderRefusesASecondCallWhileOneRuns(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{FlushMode: FlushAsync, SegmentBytes: 1 << 20})
	defer l.Close()
	app := l.NewAppender()
	var recovered any
	app.AppendMany(manyGroups(1), func(int, Result, error) {
		defer func() { recovered = recover() }()
		app.AppendMany(manyGroups(1), func(int, Result, error) {})
	})
	if recovered == nil {
		t.Fatal("a call of an Appender from its own callback did not panic")
	}
	a := newAnswers(2)
	app.AppendMany(manyGroups(2), a.done)
	a.check(t, nil)
}
