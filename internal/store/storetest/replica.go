package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// replica returns the store as a store.Replica; a store of the suite must
// be one.
func (s *suite) replica() store.Replica {
	s.t.Helper()
	r, ok := s.st().(store.Replica)
	if !ok {
		s.t.Fatalf("%T is not a store.Replica", s.st())
	}
	return r
}

// testCommitPoint: once the commit point is enabled, a record above it is
// not in its queue, the key index, ReadMessage or the listeners' news until
// the commit point passes its end (one inside it is not enough), and the
// commit point never moves back.
func testCommitPoint(t *testing.T, s *suite) {
	r := s.replica()
	r.EnableCommitPoint()
	var mu sync.Mutex
	var heard []int64
	s.st().AddListener(func(_ string, _ int32, max int64) {
		mu.Lock()
		heard = append(heard, max)
		mu.Unlock()
	})
	var ms []*message.Message
	for i := range 3 {
		m := s.msg("T", 1, fmt.Sprint("body", i), fmt.Sprint("key", i), "")
		s.put(m)
		ms = append(ms, m)
	}
	end := r.Durable()
	check := func(n int) {
		t.Helper()
		s.sync()
		if got := s.st().MaxOffset("T", 1); got != int64(n) {
			t.Fatalf("commit point %d: MaxOffset %d, want %d", r.CommitPoint(), got, n)
		}
		_, recs := s.get("T", 1, 0, 10, 1<<20, nil, nil)
		if len(recs) != n {
			t.Fatalf("commit point %d: read %d records, want %d", r.CommitPoint(), len(recs), n)
		}
		for i, m := range ms {
			byKey, err := s.st().QueryByKey("T", fmt.Sprint("key", i), 0, 1<<62, 10)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := s.st().ReadMessage(m.PhysicalOffset)
			want := i < n
			if (len(byKey) == 1) != want || (rerr == nil) != want {
				t.Fatalf("commit point %d: message %d found by key %d times, by offset: %v; want readable %v", r.CommitPoint(), i, len(byKey), rerr, want)
			}
			if !want && !errors.Is(rerr, store.ErrNotFound) {
				t.Fatalf("ReadMessage above the commit point: %v, want ErrNotFound", rerr)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(heard) != n {
			t.Fatalf("commit point %d: listeners heard %v, want %d", r.CommitPoint(), heard, n)
		}
	}
	check(0)
	r.SetCommitPoint(ms[1].PhysicalOffset)
	check(1)
	r.SetCommitPoint(ms[2].PhysicalOffset - 1)
	check(1)
	r.SetCommitPoint(3)
	if r.CommitPoint() != ms[2].PhysicalOffset-1 {
		t.Fatalf("the commit point moved back to %d", r.CommitPoint())
	}
	r.SetCommitPoint(end)
	check(3)
	mu.Lock()
	defer mu.Unlock()
	if heard[0] != 1 || heard[1] != 2 || heard[2] != 3 {
		t.Fatalf("listeners heard %v, want 1 2 3", heard)
	}
}

// ship copies master's log to slave in raw chunks of random sizes, from
// the master's oldest byte for an empty slave.
func ship(t *testing.T, master, slave store.Replica, rnd *rand.Rand) {
	t.Helper()
	for {
		from := slave.Written()
		if from == 0 {
			from = master.CommitLogMinOffset()
		}
		if from >= master.Written() {
			return
		}
		b, err := master.ReadRaw(from, 1+rnd.IntN(5000))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("no bytes at %d below the master's end %d", from, master.Written())
		}
		if err := slave.AppendRaw(from, b); err != nil {
			t.Fatal(err)
		}
	}
}

// testRawReplica: a second store, fed from the first's ReadRaw in chunks
// cut anywhere (records across segment ends on the file store), holds the
// same records at the same offsets once its commit point covers them: the
// same queues, reads, keys and message ids.
func testRawReplica(t *testing.T, s *suite) {
	cfg := SuiteConfig(t, clock.NewManual(SuiteT0))
	h2 := s.open(t, cfg)
	t.Cleanup(func() { h2.Close() })
	slave, ok := h2.Store().(store.Replica)
	if !ok {
		t.Fatalf("%T is not a store.Replica", h2.Store())
	}
	slave.EnableCommitPoint()
	master := s.replica()
	rnd := rand.New(rand.NewPCG(5, 5))
	var ms []*message.Message
	for i := range 400 {
		m := s.msg(fmt.Sprint("T", i%2), int32(i%3), fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte("p"), rnd.IntN(400))), fmt.Sprint("key", i), fmt.Sprint("tag", i%4))
		s.put(m)
		ms = append(ms, m)
		if i == 200 {
			ship(t, master, slave, rnd)
		}
	}
	ship(t, master, slave, rnd)
	if slave.Written() != master.Written() || slave.Durable() != master.Durable() {
		t.Fatalf("slave written %d durable %d, master %d %d", slave.Written(), slave.Durable(), master.Written(), master.Durable())
	}
	st2 := h2.Store()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := st2.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if st2.MaxOffset("T0", 0) != 0 {
		t.Fatalf("the slave shows %d messages before its commit point moved", st2.MaxOffset("T0", 0))
	}
	slave.SetCommitPoint(slave.Durable())
	if err := st2.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	// The master's puts returned once durable; its queues may still be
	// behind them until its dispatcher catches up.
	s.sync()
	for _, topic := range []string{"T0", "T1"} {
		for q := range int32(3) {
			mo, so := s.st().MaxOffset(topic, q), st2.MaxOffset(topic, q)
			if mo != so || mo == 0 {
				t.Fatalf("%s/%d: master MaxOffset %d, slave %d", topic, q, mo, so)
			}
			mr, err := s.st().GetMessages(topic, q, 0, 1000, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			sr, err := st2.GetMessages(topic, q, 0, 1000, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			same := bytes.Equal(mr.Body, sr.Body) && mr.NextOffset == sr.NextOffset && mr.NextOffset == mo
			mr.Release()
			sr.Release()
			if !same {
				t.Fatalf("%s/%d: the slave serves other records", topic, q)
			}
		}
	}
	for _, i := range []int{0, 199, 200, 399} {
		m := ms[i]
		rec, err := st2.ReadMessage(m.PhysicalOffset)
		if err != nil || string(rec.Body()) != string(m.Body) || rec.QueueOffset() != m.QueueOffset {
			t.Fatalf("the slave's record at %d: %v", m.PhysicalOffset, err)
		}
		byKey, err := st2.QueryByKey(m.Topic, fmt.Sprint("key", i), 0, 1<<62, 10)
		if err != nil || len(byKey) != 1 {
			t.Fatalf("the slave finds key%d %d times: %v", i, len(byKey), err)
		}
	}
}

// testRawEdges: AppendRaw only at the log's end and of valid records,
// ReadRaw never past the written end, WaitWritten wakes on a put.
func testRawEdges(t *testing.T, s *suite) {
	r := s.replica()
	for i := range 5 {
		s.put(s.msg("T", 0, fmt.Sprint(i), "", ""))
	}
	w := r.Written()
	if b, err := r.ReadRaw(w, 100); err != nil || len(b) != 0 {
		t.Fatalf("ReadRaw at the end: %d bytes, %v", len(b), err)
	}
	if _, err := r.ReadRaw(w+1, 100); !errors.Is(err, store.ErrBadOffset) {
		t.Fatalf("ReadRaw past the end: %v, want ErrBadOffset", err)
	}
	all, err := r.ReadRaw(0, int(w))
	if err != nil || int64(len(all)) != w {
		t.Fatalf("ReadRaw of the log: %d bytes, %v", len(all), err)
	}
	if b, err := r.ReadRaw(10, 20); err != nil || !bytes.Equal(b, all[10:30]) {
		t.Fatalf("ReadRaw from inside a record: %v", err)
	}

	h2 := s.open(t, SuiteConfig(t, clock.NewManual(SuiteT0)))
	t.Cleanup(func() { h2.Close() })
	slave := h2.Store().(store.Replica)
	if err := slave.AppendRaw(0, all[:40]); err != nil {
		t.Fatal(err)
	}
	if slave.Written() != 40 || slave.Durable() != 0 {
		t.Fatalf("after part of a record: written %d durable %d, want 40 and 0", slave.Written(), slave.Durable())
	}
	if err := slave.AppendRaw(0, all); !errors.Is(err, store.ErrBadOffset) {
		t.Fatalf("AppendRaw behind the end: %v, want ErrBadOffset", err)
	}
	bad := bytes.Clone(all[40:])
	second := int(message.Record(all).TotalSize()) // where the second record starts
	bad[second-40+4] ^= 0x55                       // its magic
	if err := slave.AppendRaw(40, bad); !errors.Is(err, store.ErrBadRaw) {
		t.Fatalf("AppendRaw of damaged bytes: %v, want ErrBadRaw", err)
	}
	if slave.Written() != 40 {
		t.Fatalf("a refused append moved the end to %d", slave.Written())
	}
	if err := h2.Store().Put(s.msg("T", 0, "x", "", "")); err == nil {
		t.Fatal("a put after a cut record succeeded")
	}
	if err := slave.AppendRaw(40, all[40:]); err != nil {
		t.Fatal(err)
	}
	if slave.Durable() != w {
		t.Fatalf("slave durable %d, want %d", slave.Durable(), w)
	}

	done := make(chan error, 1)
	go func() { done <- r.WaitWritten(context.Background(), w) }()
	s.put(s.msg("T", 0, "wake", "", ""))
	if err := receive(t, done, "WaitWritten after a put"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitWritten(ctx, r.Written()); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitWritten with a cancelled context: %v", err)
	}
}
