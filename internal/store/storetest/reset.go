package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// testReset: a slave whose copy ends below its master's first retained
// byte resets to start empty there (ResetAt): its log, queues and keys are
// gone, the reset listeners hear of it, and the master's log from there
// gives it the master's queues, starting at the master's queue offsets,
// also after a restart.
func testReset(t *testing.T, s *suite) {
	h2 := s.open(t, SuiteConfig(t, clock.NewManual(SuiteT0)))
	t.Cleanup(func() { h2.Close() })
	slave := h2.Store().(store.Replica)
	slave.EnableCommitPoint()
	master := s.replica()
	rnd := rand.New(rand.NewPCG(7, 7))
	var old []*message.Message
	for i := range 100 {
		m := s.msg("T", int32(i%2), fmt.Sprintf("old-%d", i), fmt.Sprint("key", i), "")
		s.put(m)
		old = append(old, m)
	}
	ship(t, master, slave, rnd)
	slave.SetCommitPoint(slave.Durable())
	waitAll(t, h2.Store())
	if h2.Store().MaxOffset("T", 0) != 50 {
		t.Fatalf("the slave's copy has %d records of T/0, want 50", h2.Store().MaxOffset("T", 0))
	}
	// The slave is away while the master stores more and its retention
	// removes all of it.
	for i := range 10 {
		s.put(s.msg("T", int32(i%2), fmt.Sprintf("gap-%d", i), "", ""))
	}
	s.h.Expire(t, false)
	for i := range 60 {
		s.put(s.msg("T", int32(i%2), fmt.Sprintf("new-%d", i), fmt.Sprint("key-new", i), ""))
	}
	start := master.CommitLogMinOffset()
	if start <= slave.Written() {
		t.Fatalf("the master's log starts at %d, not past the slave's end %d", start, slave.Written())
	}

	var heard atomic.Int64
	heard.Store(-1)
	slave.AddResetListener(func(at int64) { heard.Store(at) })
	if err := slave.ResetAt(start); err != nil {
		t.Fatal(err)
	}
	if got := heard.Load(); got != start {
		t.Fatalf("the reset listener heard %d, want %d", got, start)
	}
	if w, d, m := slave.Written(), slave.Durable(), slave.CommitLogMinOffset(); w != start || d != start || m != start {
		t.Fatalf("after ResetAt(%d): written %d, durable %d, min offset %d", start, w, d, m)
	}
	if cp := slave.CommitPoint(); cp < start {
		t.Fatalf("commit point %d below the new log start %d", cp, start)
	}
	st2 := h2.Store()
	for q := range int32(2) {
		if mx := st2.MaxOffset("T", q); mx != 0 {
			t.Fatalf("T/%d has max offset %d after the reset", q, mx)
		}
		res, err := st2.GetMessages("T", q, 0, 10, 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.NoMessageInQueue {
			t.Fatalf("T/%d reads as %v after the reset, want NoMessageInQueue", q, res.Status)
		}
		res.Release()
	}
	if _, err := st2.ReadMessage(old[0].PhysicalOffset); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a record of the old log by offset after the reset: %v, want ErrNotFound", err)
	}
	if rs, err := st2.QueryByKey("T", "key1", 0, 1<<62, 10); err != nil || len(rs) != 0 {
		t.Fatalf("the old keys find %d records after the reset (%v)", len(rs), err)
	}

	ship(t, master, slave, rnd)
	slave.SetCommitPoint(slave.Durable())
	check := func(st store.MessageStore) {
		t.Helper()
		// Both sides must have made readable what they hold before they
		// are compared: the slave what its commit point covers, and the
		// master its own puts, which return once durable while its
		// dispatcher puts them into their queues afterwards.
		waitAll(t, st)
		waitAll(t, s.st())
		for q := range int32(2) {
			lo, hi := st.MinOffset("T", q), st.MaxOffset("T", q)
			if lo != s.st().MinOffset("T", q) || hi != s.st().MaxOffset("T", q) || lo < 50 || hi != lo+30 {
				t.Fatalf("T/%d on the slave is [%d, %d), on the master [%d, %d)", q, lo, hi, s.st().MinOffset("T", q), s.st().MaxOffset("T", q))
			}
			mr, err := s.st().GetMessages("T", q, lo, 100, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			sr, err := st.GetMessages("T", q, lo, 100, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			same := string(mr.Body) == string(sr.Body) && sr.Count == 30
			mr.Release()
			sr.Release()
			if !same {
				t.Fatalf("T/%d: the reset slave serves other records than its master", q)
			}
			res, err := st.GetMessages("T", q, 0, 1, 1<<20, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != store.OffsetTooSmall || res.NextOffset != lo {
				t.Fatalf("T/%d at 0 after the reset: %v next %d, want OffsetTooSmall next %d", q, res.Status, res.NextOffset, lo)
			}
			res.Release()
		}
		if rs, err := st.QueryByKey("T", "key-new1", 0, 1<<62, 10); err != nil || len(rs) != 1 {
			t.Fatalf("the new keys find %d records (%v)", len(rs), err)
		}
	}
	check(st2)
	h2.Restart(t)
	r2 := h2.Store().(store.Replica)
	if r2.Written() != master.Written() || r2.CommitLogMinOffset() != start {
		t.Fatalf("after a restart the slave's log is [%d, %d), want [%d, %d)", r2.CommitLogMinOffset(), r2.Written(), start, master.Written())
	}
	r2.SetCommitPoint(r2.Durable())
	check(h2.Store())
}

// waitAll waits until everything durable in st is readable.
func waitAll(t *testing.T, st store.MessageStore) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := st.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
}
