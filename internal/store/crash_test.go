package store

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

type ackedMsg struct {
	topic  string
	qid    int32
	body   string
	key    string
	qoff   int64
	phys   int64
	stored int64
}

// crashIterations is the number of seeded crash scenarios in a normal run.
const crashIterations = 1000

// TestCrashKeepsEveryAcknowledgedMessage runs random workloads of puts
// under sync flush from concurrent producers, simulates a power loss at a
// random moment (MemFS.CrashClone keeps what was synced plus a random, maybe
// torn, prefix of what was not), reopens and checks that every acknowledged
// message is readable through its consume queue, by offset and by key, and
// that nothing but whole submitted messages is ever served.
func TestCrashKeepsEveryAcknowledgedMessage(t *testing.T) {
	cuts := 0
	for seed := int64(1); seed <= crashIterations; seed++ {
		ok, cut := crashScenario(t, seed)
		if !ok {
			return
		}
		if cut {
			cuts++
		}
	}
	// The scenarios must really crash mid-write: some recoveries have to cut
	// a commit-log tail that was written but not synced.
	t.Logf("%d of %d recoveries cut an unsynced commit-log tail", cuts, crashIterations)
	if cuts < crashIterations/20 {
		t.Fatalf("only %d of %d scenarios lost an unsynced tail; the crash points do not exercise recovery", cuts, crashIterations)
	}
}

// crashScenario runs one seeded scenario. It reports whether every check
// passed and whether recovery cut commit-log bytes written before the crash.
func crashScenario(t *testing.T, seed int64) (ok, cut bool) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	fsys := vfs.NewMem()
	clk := clock.NewManual(t0)
	cfg := smallConfig(fsys, clk)
	topics := []string{"A", "B"}
	s := mustOpen(t, cfg)

	var mu sync.Mutex
	var acked []ackedMsg
	submitted := map[string]bool{}
	crashAt := -1 // when len(acked) reaches it, reached is closed
	reached := make(chan struct{})
	var reachOnce sync.Once
	put := func(m *message.Message) {
		if err := s.Put(m); err != nil {
			t.Errorf("seed %d: put: %v", seed, err)
			reachOnce.Do(func() { close(reached) })
			return
		}
		mu.Lock()
		acked = append(acked, ackedMsg{m.Topic, m.QueueID, string(m.Body), m.Property(message.PropertyKeys), m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp})
		if len(acked) == crashAt {
			reachOnce.Do(func() { close(reached) })
		}
		mu.Unlock()
	}
	// Phase 1: a sequential prefix, with checkpoints and maybe a clean reopen.
	n1 := rng.Intn(40)
	for i := range n1 {
		body := fmt.Sprintf("s%d-%d-%s", seed, i, string(make([]byte, rng.Intn(300))))
		m := newMsg(topics[rng.Intn(2)], int32(rng.Intn(3)), body, fmt.Sprintf("k%d", i))
		submitted[m.Topic+"|"+body] = true
		put(m)
		if rng.Intn(10) == 0 {
			clk.Advance(cfg.CheckpointInterval)
		}
	}
	if rng.Intn(4) == 0 {
		if err := s.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
		s = mustOpen(t, cfg)
	}
	// Phase 2: concurrent producers; the crash happens while they run.
	producers := 1 + rng.Intn(4)
	perProducer := rng.Intn(20)
	bodies := make([][]*message.Message, producers)
	for p := range producers {
		for i := range perProducer {
			body := fmt.Sprintf("c%d-%d-%d", seed, p, i)
			m := newMsg(topics[(p+i)%2], int32((p*7+i)%3), body, fmt.Sprintf("p%d-%d", p, i))
			submitted[m.Topic+"|"+body] = true
			bodies[p] = append(bodies[p], m)
		}
	}
	// The crash comes either right before a random commit-log fsync (so
	// written but unsynced records are on the "disk", maybe torn), or once
	// a random number of puts have been acknowledged.
	var (
		crashOnce   sync.Once
		crashed     *vfs.MemFS
		mustSurvive []ackedMsg
		written     int64
	)
	crash := func() {
		crashOnce.Do(func() {
			mu.Lock()
			mustSurvive = append([]ackedMsg(nil), acked...)
			mu.Unlock()
			written = s.clog.Written()
			crashed = fsys.CrashClone(vfs.CrashOptions{Rand: rng})
			reachOnce.Do(func() { close(reached) })
		})
	}
	total := producers * perProducer
	mu.Lock()
	crashAt = n1 + rng.Intn(total+1)
	if rng.Intn(2) == 0 {
		crashAt = n1 + total // the sync trigger below decides
		syncAt := int32(1 + rng.Intn(total/2+1))
		var syncs atomic.Int32
		fsys.InjectError(func(op vfs.Op, p string) error {
			if op == vfs.OpSync && strings.Contains(p, "/commitlog/") && syncs.Add(1) == syncAt {
				crash()
			}
			return nil
		})
	}
	if len(acked) >= crashAt {
		reachOnce.Do(func() { close(reached) })
	}
	mu.Unlock()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range bodies[p] {
				put(m)
			}
		}()
	}
	<-reached
	crash()
	wg.Wait()
	fsys.InjectError(nil)
	s.Close()

	// Reopen on what the disk held at the crash.
	cfg.FS = crashed
	s2, err := Open(cfg)
	if err != nil {
		t.Errorf("seed %d: reopen after crash: %v", seed, err)
		return false, false
	}
	defer s2.Close()
	waitDispatched(t, s2)
	cut = s2.clog.Written() < written
	for _, a := range mustSurvive {
		m, st := getOne(t, s2, a.topic, a.qid, a.qoff)
		if m == nil {
			t.Errorf("seed %d: acknowledged %s/%d@%d lost (status %v)", seed, a.topic, a.qid, a.qoff, st)
			return false, cut
		}
		if string(m.Body) != a.body || m.PhysicalOffset != a.phys {
			t.Errorf("seed %d: %s/%d@%d holds %q at %d, want %q at %d", seed, a.topic, a.qid, a.qoff, m.Body, m.PhysicalOffset, a.body, a.phys)
			return false, cut
		}
		r, err := s2.ReadMessage(a.phys)
		if err != nil || string(r.Body()) != a.body {
			t.Errorf("seed %d: read by offset %d: %v", seed, a.phys, err)
			return false, cut
		}
		found, err := s2.QueryByKey(a.topic, a.key, 0, a.stored+1, 64)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, r := range found {
			ok = ok || r.PhysicalOffset() == a.phys
		}
		if !ok {
			t.Errorf("seed %d: key %q of %s@%d not found in the index", seed, a.key, a.topic, a.phys)
			return false, cut
		}
	}
	// Everything served is a whole message that was submitted, with dense
	// queue offsets.
	for _, topic := range topics {
		for qid := int32(0); qid < 3; qid++ {
			lo, hi := s2.MinOffset(topic, qid), s2.MaxOffset(topic, qid)
			for off := lo; off < hi; off++ {
				m, st := getOne(t, s2, topic, qid, off)
				if m == nil {
					t.Errorf("seed %d: %s/%d@%d inside [%d,%d) not readable: %v", seed, topic, qid, off, lo, hi, st)
					return false, cut
				}
				if !submitted[topic+"|"+string(m.Body)] || m.QueueOffset != off || m.Topic != topic || m.QueueID != qid {
					t.Errorf("seed %d: %s/%d@%d serves a message never submitted there: %+v", seed, topic, qid, off, m)
					return false, cut
				}
			}
		}
	}
	// The store keeps working: the next message of a queue follows on.
	m := newMsg("A", 0, "after", "")
	want := s2.MaxOffset("A", 0)
	if err := s2.Put(m); err != nil || m.QueueOffset != want {
		t.Errorf("seed %d: put after recovery: offset %d want %d, err %v", seed, m.QueueOffset, want, err)
		return false, cut
	}
	return true, cut
}

// TestAsyncCrashServesOnlyWholeMessages: under async flush acknowledged
// messages may be lost in a crash, but recovery must still leave a
// consistent store.
func TestAsyncCrashServesOnlyWholeMessages(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		fsys := vfs.NewMem()
		clk := clock.NewManual(t0)
		cfg := smallConfig(fsys, clk)
		cfg.FlushMode = commitlog.FlushAsync
		s := mustOpen(t, cfg)
		n := rng.Intn(80)
		for i := range n {
			if err := s.Put(newMsg("A", int32(i%2), fmt.Sprint("m", i), "")); err != nil {
				t.Fatal(err)
			}
			if rng.Intn(8) == 0 {
				clk.Advance(cfg.FlushInterval)
			}
		}
		crashed := fsys.CrashClone(vfs.CrashOptions{Rand: rng})
		s.Close()
		cfg.FS = crashed
		s2 := mustOpen(t, cfg)
		waitDispatched(t, s2)
		for qid := int32(0); qid < 2; qid++ {
			for off := s2.MinOffset("A", qid); off < s2.MaxOffset("A", qid); off++ {
				m, st := getOne(t, s2, "A", qid, off)
				if m == nil || m.QueueOffset != off {
					t.Fatalf("seed %d: A/%d@%d: %v %v", seed, qid, off, m, st)
				}
			}
		}
		s2.Close()
	}
}
