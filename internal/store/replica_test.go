package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

func waitVisible(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitDispatched(ctx); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}
}

type heard struct {
	mu   sync.Mutex
	maxs []int64
}

func (h *heard) listen(topic string, qid int32, max int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.maxs = append(h.maxs, max)
}

func (h *heard) get() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.maxs...)
}

// TestCommitPointBoundsWhatIsVisible: a record above the commit point is
// not in the consume queue, the index, ReadMessage or the listeners until
// the commit point passes it — also when the commit point lies inside it.
func TestCommitPointBoundsWhatIsVisible(t *testing.T) {
	for _, atOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("atOpen=%v", atOpen), func(t *testing.T) {
			cfg := smallConfig(vfs.NewMem(), clock.NewManual(t0))
			cfg.CommitPoint = atOpen
			s := mustOpen(t, cfg)
			defer s.Close()
			if !atOpen {
				s.EnableCommitPoint()
			}
			var h heard
			s.AddListener(h.listen)
			var msgs []*message.Message
			for i := range 3 {
				m := newMsg("T", 0, fmt.Sprintf("body-%d", i), fmt.Sprintf("k%d", i))
				if err := s.Put(m); err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			end := s.Durable()
			visible := func(n int64) {
				t.Helper()
				waitVisible(t, s)
				if got := s.MaxOffset("T", 0); got != n {
					t.Fatalf("commit point %d: MaxOffset %d, want %d", s.CommitPoint(), got, n)
				}
				res, err := s.GetMessages("T", 0, 0, 10, 1<<20, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := 0
				res.Records(func(message.Record) { got++ })
				res.Release()
				if int64(got) != n {
					t.Fatalf("commit point %d: GetMessages read %d records, want %d", s.CommitPoint(), got, n)
				}
				for i, m := range msgs {
					recs, err := s.QueryByKey("T", fmt.Sprintf("k%d", i), 0, 1<<62, 10)
					if err != nil {
						t.Fatal(err)
					}
					_, rerr := s.ReadMessage(m.PhysicalOffset)
					if want := int64(i) < n; (len(recs) == 1) != want || (rerr == nil) != want {
						t.Fatalf("commit point %d: message %d found by key %d, by offset err %v; want visible %v", s.CommitPoint(), i, len(recs), rerr, want)
					}
				}
				if hs := h.get(); int64(len(hs)) != n {
					t.Fatalf("commit point %d: listeners heard %v, want %d messages", s.CommitPoint(), hs, n)
				}
			}
			visible(0)
			s.SetCommitPoint(msgs[1].PhysicalOffset) // the end of the first
			visible(1)
			s.SetCommitPoint(msgs[2].PhysicalOffset - 5) // inside the second
			visible(1)
			s.SetCommitPoint(10) // never back
			if s.CommitPoint() != msgs[2].PhysicalOffset-5 {
				t.Fatalf("the commit point moved back to %d", s.CommitPoint())
			}
			visible(1)
			s.SetCommitPoint(end + 1000) // past the durable end: bounded by it
			visible(3)
			if got := h.get(); got[0] != 1 || got[1] != 2 || got[2] != 3 {
				t.Fatalf("listeners heard %v, want 1 2 3", got)
			}
		})
	}
}

// twoOfFourCommitted opens a store with Config.CommitPoint on a new
// file system, puts 4 messages on T:1 and sets the commit point after the
// second (and waits until they are visible).
func twoOfFourCommitted(t *testing.T) (Config, *Store, []*message.Message) {
	t.Helper()
	cfg := smallConfig(vfs.NewMem(), clock.NewManual(t0))
	cfg.CommitPoint = true
	s := mustOpen(t, cfg)
	var ms []*message.Message
	for i := range 4 {
		m := newMsg("T", 1, fmt.Sprint(i), "")
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	s.SetCommitPoint(ms[2].PhysicalOffset)
	waitVisible(t, s)
	return cfg, s, ms
}

// TestCommitPointSurvivesRestart: with Config.CommitPoint a restart does
// not replay records above the commit point that was in force.
func TestCommitPointSurvivesRestart(t *testing.T) {
	cfg, s, ms := twoOfFourCommitted(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	waitVisible(t, s)
	if got := s.MaxOffset("T", 1); got != 2 {
		t.Fatalf("after a restart MaxOffset %d, want the 2 below the commit point", got)
	}
	if s.CommitPoint() != ms[2].PhysicalOffset {
		t.Fatalf("after a restart the commit point is %d, want %d", s.CommitPoint(), ms[2].PhysicalOffset)
	}
	// A put goes on after the records the queue does not show yet.
	m := newMsg("T", 1, "after", "")
	if err := s.Put(m); err != nil {
		t.Fatal(err)
	}
	if m.QueueOffset != 4 {
		t.Fatalf("a put after the restart got queue offset %d, want 4", m.QueueOffset)
	}
	s.SetCommitPoint(s.Durable())
	waitVisible(t, s)
	if got := s.MaxOffset("T", 1); got != 5 {
		t.Fatalf("MaxOffset %d, want 5", got)
	}
}

// TestOffsetsAboveTheCommitPointAfterARestartAreTheQueuesEnd: a restart
// resumes the commit point from the last checkpoint, which may lie below
// records consumers read before it. A read at such an offset — past the
// visible queue, within what the log holds — is OffsetOverflowOne at that
// offset (the consumer waits there), not OffsetOverflowBadly or
// NoMessageInQueue, which send a consumer back to the first message (the
// replicated master's kill in verify: every queue read again from 0).
func TestOffsetsAboveTheCommitPointAfterARestartAreTheQueuesEnd(t *testing.T) {
	cfg, s, _ := twoOfFourCommitted(t) // T:1 shows 2 of its 4
	for i := range 2 {
		if err := s.Put(newMsg("U", 0, fmt.Sprint(i), "")); err != nil { // U:0 shows none of its 2
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	waitVisible(t, s)
	for _, c := range []struct {
		topic  string
		qid    int32
		offset int64
		status GetStatus
		next   int64
	}{
		{"T", 1, 3, OffsetOverflowOne, 3},
		{"T", 1, 4, OffsetOverflowOne, 4},
		{"T", 1, 5, OffsetOverflowBadly, 0}, // past the log: as RocketMQ answers (min offset 0)
		{"U", 0, 2, OffsetOverflowOne, 2},
		{"U", 0, 3, NoMessageInQueue, 0},
	} {
		res, err := s.GetMessages(c.topic, c.qid, c.offset, 10, 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		if res.Status != c.status || res.NextOffset != c.next {
			t.Errorf("%s:%d at offset %d: status %v next %d, want %v next %d", c.topic, c.qid, c.offset, res.Status, res.NextOffset, c.status, c.next)
		}
	}
}

// TestWithoutCommitPointNothingChanges: SetCommitPoint alone bounds
// nothing.
func TestWithoutCommitPointNothingChanges(t *testing.T) {
	s := mustOpen(t, smallConfig(vfs.NewMem(), clock.NewManual(t0)))
	defer s.Close()
	s.SetCommitPoint(1)
	if err := s.Put(newMsg("T", 0, "x", "")); err != nil {
		t.Fatal(err)
	}
	waitVisible(t, s)
	if s.MaxOffset("T", 0) != 1 || s.CommitPointEnabled() {
		t.Fatalf("MaxOffset %d enabled %v", s.MaxOffset("T", 0), s.CommitPointEnabled())
	}
}

// shipRaw copies the master's log to the slave in raw chunks of random
// sizes, up to limit.
func shipRaw(t *testing.T, master, slave *Store, limit int64, rnd *rand.Rand) {
	t.Helper()
	for {
		from := slave.Written()
		if from == 0 {
			// A fresh slave copies from the master's oldest byte.
			from = master.CommitLogMinOffset()
		}
		if from >= limit {
			return
		}
		b, err := master.ReadRaw(from, 1+rnd.IntN(3000))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) > limit-from {
			b = b[:limit-from]
		}
		if err := slave.AppendRaw(from, b); err != nil {
			t.Fatal(err)
		}
	}
}

var replTopics = []string{"A", "B", "C"}

// TestReplicaFedByRawMatchesMaster feeds a slave store from a master
// store's ReadRaw, cut anywhere, with the commit point of both at the
// slave's durable end (as the tracker sets it with one sync slave), a
// slave crash in the middle, segments rolling over, and once with the logs
// starting below 2^32 and growing past it. The slave ends byte-identical
// with the same consume queues and index, and the master never shows a
// record the slave does not hold.
func TestReplicaFedByRawMatchesMaster(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  commitlog.FlushMode
		start int64
	}{
		{"sync", commitlog.FlushSync, 0},
		{"async", commitlog.FlushAsync, 0},
		{"sync-above-4GiB", commitlog.FlushSync, 1<<32 - 2*8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			mfs, sfs := vfs.NewMem(), vfs.NewMem()
			if tc.start > 0 {
				dir := path.Join("/data", "commitlog")
				if err := vfs.MkdirAllDurable(mfs, dir); err != nil {
					t.Fatal(err)
				}
				f, err := mfs.Create(path.Join(dir, commitlog.SegmentName(tc.start)))
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			mcfg := smallConfig(mfs, clk)
			mcfg.FlushMode, mcfg.CommitPoint = tc.mode, true
			scfg := smallConfig(sfs, clk)
			scfg.FlushMode, scfg.CommitPoint = tc.mode, true
			master := mustOpen(t, mcfg)
			defer func() { master.Close() }()
			slave := mustOpen(t, scfg)
			defer func() { slave.Close() }()
			if master.Written() != tc.start {
				t.Fatalf("the master's log starts at %d, want %d", master.Written(), tc.start)
			}
			rnd := rand.New(rand.NewPCG(uint64(tc.mode), uint64(tc.start)))
			n := 0
			for round := range 12 {
				for range 10 + rnd.IntN(20) {
					topic := replTopics[rnd.IntN(len(replTopics))]
					m := newMsg(topic, int32(rnd.IntN(3)), fmt.Sprintf("m%d-%s", n, bytes.Repeat([]byte("x"), rnd.IntN(300))), fmt.Sprintf("key%d", n))
					n++
					if err := master.Put(m); err != nil {
						t.Fatal(err)
					}
				}
				// Ship part of it, cut anywhere.
				limit := master.Written()
				if round%3 != 2 {
					limit = slave.Written() + rnd.Int64N(limit-slave.Written()+1)
				}
				shipRaw(t, master, slave, limit, rnd)
				if round == 5 {
					// Power loss on the slave, half a record in its log
					// perhaps; it goes on from what it kept.
					crashed := sfs.CrashClone(vfs.CrashOptions{Rand: mrand.New(mrand.NewSource(int64(round)))})
					slave.Close()
					sfs = crashed
					scfg.FS = crashed
					slave = mustOpen(t, scfg)
				}
				hw := min(master.Durable(), slave.Durable())
				master.SetCommitPoint(hw)
				slave.SetCommitPoint(min(hw, slave.Durable()))
				waitVisible(t, master)
				waitVisible(t, slave)
				for _, topic := range replTopics {
					for q := range int32(3) {
						mo, so := master.MaxOffset(topic, q), slave.MaxOffset(topic, q)
						if mo != so {
							t.Fatalf("round %d %s/%d: master MaxOffset %d, slave %d (commit point %d)", round, topic, q, mo, so, hw)
						}
						if mo > 0 {
							res, err := master.GetMessages(topic, q, mo-1, 1, 0, nil)
							if err != nil || res.Status != Found {
								t.Fatalf("read %s/%d@%d: %v %v", topic, q, mo-1, res.Status, err)
							}
							var end int64
							res.Records(func(r message.Record) { end = r.PhysicalOffset() + int64(r.TotalSize()) })
							res.Release()
							if end > hw || end > slave.Durable() {
								t.Fatalf("the master serves a record ending at %d above the commit point %d (slave durable %d)", end, hw, slave.Durable())
							}
						}
					}
				}
			}
			shipRaw(t, master, slave, master.Written(), rnd)
			master.SetCommitPoint(master.Durable())
			slave.SetCommitPoint(slave.Durable())
			waitVisible(t, master)
			waitVisible(t, slave)
			if slave.Written() != master.Written() || slave.Durable() != master.Durable() || slave.CommitLogMinOffset() != master.CommitLogMinOffset() {
				t.Fatalf("slave written %d durable %d min %d; master %d %d %d", slave.Written(), slave.Durable(), slave.CommitLogMinOffset(), master.Written(), master.Durable(), master.CommitLogMinOffset())
			}
			if segs := (master.Written() - tc.start) / mcfg.SegmentBytes; segs < 4 {
				t.Fatalf("the log spans %d segments; want roll-overs", segs)
			}
			if tc.start > 0 && master.Written() < 1<<32+8192 {
				t.Fatalf("the log ends at %d, not past 2^32", master.Written())
			}
			for start := tc.start; start < master.Written(); start += mcfg.SegmentBytes {
				name := path.Join("/data", "commitlog", commitlog.SegmentName(start))
				x, _, err := vfs.ReadFile(mfs, name)
				if err != nil {
					t.Fatal(err)
				}
				y, _, err := vfs.ReadFile(sfs, name)
				if err != nil {
					t.Fatal(err)
				}
				k := min(mcfg.SegmentBytes, master.Written()-start)
				if !bytes.Equal(x[:k], y[:k]) {
					t.Fatalf("segment %s differs", name)
				}
			}
			total := int64(0)
			for _, topic := range replTopics {
				for q := range int32(3) {
					mo := master.MaxOffset(topic, q)
					total += mo
					if so := slave.MaxOffset(topic, q); so != mo {
						t.Fatalf("%s/%d: master MaxOffset %d, slave %d", topic, q, mo, so)
					}
					mr, err := master.GetMessages(topic, q, 0, 1000, 1<<24, nil)
					if err != nil {
						t.Fatal(err)
					}
					sr, err := slave.GetMessages(topic, q, 0, 1000, 1<<24, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(mr.Body, sr.Body) || mr.NextOffset != mo {
						t.Fatalf("%s/%d: the slave serves other records (next %d, %d)", topic, q, mr.NextOffset, sr.NextOffset)
					}
					mr.Release()
					sr.Release()
				}
			}
			if total != int64(n) {
				t.Fatalf("the queues hold %d messages, %d were put", total, n)
			}
			for _, k := range []int{0, n / 2, n - 1} {
				key := fmt.Sprintf("key%d", k)
				var found int
				for _, topic := range replTopics {
					recs, err := slave.QueryByKey(topic, key, 0, 1<<62, 10)
					if err != nil {
						t.Fatal(err)
					}
					found += len(recs)
				}
				if found != 1 {
					t.Fatalf("the slave's index finds %s %d times", key, found)
				}
			}
		})
	}
}

func TestRawErrors(t *testing.T) {
	clk := clock.NewManual(t0)
	master := mustOpen(t, smallConfig(vfs.NewMem(), clk))
	defer master.Close()
	for i := range 200 {
		if err := master.Put(newMsg("T", 0, fmt.Sprint(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	cfg := smallConfig(vfs.NewMem(), clk)
	cfg.SegmentBytes = 16 << 10
	slave := mustOpen(t, cfg)
	defer slave.Close()
	var err error
	for err == nil && slave.Written() < master.Written() {
		var b []byte
		if b, err = master.ReadRaw(slave.Written(), 4096); err == nil {
			err = slave.AppendRaw(slave.Written(), b)
		}
	}
	if !errors.Is(err, ErrSegmentMismatch) {
		t.Fatalf("a slave with other segment bytes: %v, want ErrSegmentMismatch", err)
	}
	if _, err := master.ReadRaw(master.Written()+1, 10); err == nil {
		t.Fatal("ReadRaw past the end succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	end := master.Written() // read before the Put: the goroutine may start after it
	go func() { done <- master.WaitWritten(ctx, end) }()
	if err := master.Put(newMsg("T", 0, "more", "")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitWritten: %v", err)
	}
	cancel()
	if err := master.WaitWritten(ctx, master.Written()); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitWritten with a cancelled context: %v", err)
	}
}
