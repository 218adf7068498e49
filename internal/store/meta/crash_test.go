package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func TestCrashAfterPutTopicReturns(t *testing.T) {
	for seed := range int64(20) {
		mem := vfs.NewMem()
		s := openT(t, mem, clock.NewManual(epoch))
		must(t, s.PutTopic(topic("A", 4)))
		must(t, s.PutGroup(Group{Name: "G", RetryMaxTimes: 2}))
		must(t, s.DeleteTopic("A"))
		must(t, s.PutTopic(topic("B", 2)))
		// Whatever else was unsynced, acked changes survive.
		c := openT(t, mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(seed))}), clock.NewManual(epoch))
		if got, want := c.Topics(), []Topic{topic("B", 2)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: after crash Topics() = %+v, want %+v", seed, got, want)
		}
		if _, ok := c.Group("G"); !ok {
			t.Fatalf("seed %d: group lost", seed)
		}
		if got, want := c.TopicsVersion(), s.TopicsVersion(); got != want {
			t.Fatalf("seed %d: version %+v, want %+v", seed, got, want)
		}
		must(t, c.Close())
		must(t, s.Close())
	}
}

func TestCrashAfterSyncOffsetsReturns(t *testing.T) {
	for seed := range int64(20) {
		mem := vfs.NewMem()
		s := openT(t, mem, clock.NewManual(epoch))
		for i := range 10 {
			s.CommitOffset("g", fmt.Sprint("t", i%3), int32(i), int64(i*10))
		}
		must(t, s.SyncOffsets(context.Background()))
		want := allOffsets(s)
		s.CommitOffset("g", "t0", 0, 12345) // not synced: may be lost
		c := openT(t, mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(seed))}), clock.NewManual(epoch))
		if got := allOffsets(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: after crash %v, want %v", seed, got, want)
		}
		must(t, c.Close())
		must(t, s.Close())
	}
}

// TestInjectedWriteErrors fails each step of a file replacement in turn: the
// caller gets the error, memory keeps the change, a crash then shows the old
// file (never a broken one), and the next write or Close persists it. The
// topic change is made to rewrite topics.json (as a compaction does); the
// appends to the change log are TestInjectedAppendErrors.
func TestInjectedWriteErrors(t *testing.T) {
	fail := errors.New("injected")
	steps := []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpSyncDir}
	for _, step := range steps {
		t.Run(step.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			h := &hookFS{FS: mem}
			s := openT(t, h, clock.NewManual(epoch))
			must(t, s.PutTopic(topic("old", 1)))
			s.CommitOffset("g", "t", 0, 1)
			must(t, s.SyncOffsets(context.Background()))

			h.setHook(func(op vfs.Op, name string) error {
				if op == step && !strings.HasSuffix(name, logSuffix) {
					return fail
				}
				return nil
			})
			s.topics.files.compact = true // no writer runs: the next write rewrites topics.json
			if err := s.PutTopic(topic("new", 1)); !errors.Is(err, fail) {
				t.Fatalf("PutTopic with failing %s: %v", step, err)
			}
			if _, ok := s.Topic("new"); !ok {
				t.Fatal("the change left memory")
			}
			s.CommitOffset("g", "t", 0, 2)
			if err := s.SyncOffsets(context.Background()); !errors.Is(err, fail) {
				t.Fatalf("SyncOffsets with failing %s: %v", step, err)
			}
			if off, _ := s.Offset("g", "t", 0); off != 2 {
				t.Fatalf("offset in memory = %d", off)
			}
			c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
			if got := c.Topics(); !reflect.DeepEqual(got, []Topic{topic("old", 1)}) {
				t.Fatalf("after crash Topics() = %+v, want the old file", got)
			}
			if off, _ := c.Offset("g", "t", 0); off != 1 {
				t.Fatalf("after crash offset %d, want the old 1", off)
			}
			must(t, c.Close())

			h.setHook(nil)
			// The store is still usable: no stale error for callers that come
			// after the failure, and the pending changes are written.
			must(t, s.SyncOffsets(context.Background()))
			must(t, s.PutGroup(Group{Name: "G"}))
			must(t, s.Close()) // the failed topic change is still dirty: Close writes it
			c = openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
			defer c.Close()
			if got := len(c.Topics()); got != 2 {
				t.Fatalf("after Close and crash %d topics, want 2", got)
			}
			if off, _ := c.Offset("g", "t", 0); off != 2 {
				t.Fatalf("after retry and crash offset %d, want 2", off)
			}
		})
	}
}

// TestInjectedAppendErrors fails the append of a topic change to the change
// log: the caller gets the error, a crash shows the state before it, and the
// next change rewrites topics.json instead of appending after bytes whose
// fate is unknown; later changes append again.
func TestInjectedAppendErrors(t *testing.T) {
	fail := errors.New("injected")
	for _, step := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
		t.Run(step.String(), func(t *testing.T) {
			mem, h, s, cnt := openFailingLog(t, step, fail)
			if err := s.PutTopic(topic("third", 1)); !errors.Is(err, fail) {
				t.Fatalf("PutTopic with a failing log %s: %v", step, err)
			}
			if n := cnt.renames(topicsFileName); n != 0 {
				t.Fatalf("an append rewrote topics.json %d times", n)
			}
			c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
			if got, want := c.Topics(), []Topic{topic("first", 1), topic("second", 1)}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after crash Topics() = %+v, want %+v", got, want)
			}
			must(t, c.Close())

			rewriteThenAppend(t, mem, h, s, cnt, 1)
		})
	}
}

// TestInjectedLogResetErrors fails the emptying of the change log after a
// compaction wrote topics.json: the change is durable (the caller gets no
// error, a crash keeps it), and the next change compacts again instead of
// appending to a log in an unknown state.
func TestInjectedLogResetErrors(t *testing.T) {
	fail := errors.New("injected")
	for _, step := range []vfs.Op{vfs.OpTruncate, vfs.OpSync} {
		t.Run(step.String(), func(t *testing.T) {
			mem, h, s, cnt := openFailingLog(t, step, fail)
			s.topics.files.compact = true
			must(t, s.PutTopic(topic("third", 1)))
			if n := cnt.renames(topicsFileName); n != 1 {
				t.Fatalf("%d rewrites of topics.json, want 1", n)
			}
			c := openT(t, mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(1))}), clock.NewManual(epoch))
			if got := len(c.Topics()); got != 3 {
				t.Fatalf("after crash %d topics, want 3", got)
			}
			must(t, c.Close())
			rewriteThenAppend(t, mem, h, s, cnt, 2)
		})
	}
}

// openFailingLog opens a store on a hooked MemFS, puts the topics "first"
// (which makes topics.json and the change log) and "second", and then makes
// step fail with fail on the change log; cnt counts every operation from
// then on. The store is closed when the test ends.
func openFailingLog(t *testing.T, step vfs.Op, fail error) (mem *vfs.MemFS, h *hookFS, s *Store, cnt *opCounter) {
	t.Helper()
	mem = vfs.NewMem()
	h = &hookFS{FS: mem}
	s = openT(t, h, clock.NewManual(epoch))
	t.Cleanup(func() { s.Close() })
	must(t, s.PutTopic(topic("first", 1)))
	must(t, s.PutTopic(topic("second", 1)))
	cnt = &opCounter{}
	h.setHook(func(op vfs.Op, name string) error {
		cnt.hook(op, name)
		if op == step && path.Base(name) == topicsFileName+logSuffix {
			return fail
		}
		return nil
	})
	return mem, h, s, cnt
}

// rewriteThenAppend ends a test of a failing change log: with the hook only
// counting, the next change ("fourth") must rewrite topics.json (rewrites
// reach want) and the one after ("fifth") append; a crash then keeps all
// five topics.
func rewriteThenAppend(t *testing.T, mem *vfs.MemFS, h *hookFS, s *Store, cnt *opCounter, want int) {
	t.Helper()
	h.setHook(cnt.hook)
	must(t, s.PutTopic(topic("fourth", 1)))
	if n := cnt.renames(topicsFileName); n != want {
		t.Fatalf("the change after the failure: %d rewrites of topics.json, want %d", n, want)
	}
	must(t, s.PutTopic(topic("fifth", 1)))
	if n := cnt.renames(topicsFileName); n != want {
		t.Fatalf("a later change rewrote topics.json (%d rewrites), want an append", n)
	}
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != 5 {
		t.Fatalf("after crash %d topics, want 5: %+v", got, c.Topics())
	}
}

func TestRetriedPutAfterFailedWrite(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	s := openT(t, h, clock.NewManual(epoch))
	defer s.Close()
	fail := errors.New("injected")
	h.setHook(func(op vfs.Op, name string) error {
		if op == vfs.OpSync {
			return fail
		}
		return nil
	})
	if err := s.PutTopic(topic("A", 1)); !errors.Is(err, fail) {
		t.Fatalf("PutTopic: %v", err)
	}
	h.setHook(nil)
	// Putting the same topic again is no change, but it must not return
	// before the topic is durable.
	must(t, s.PutTopic(topic("A", 1)))
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if _, ok := c.Topic("A"); !ok {
		t.Fatal("topic A not durable after the retried PutTopic returned")
	}
}

func TestNoSpace(t *testing.T) {
	mem := vfs.NewMem()
	s := openT(t, mem, clock.NewManual(epoch))
	defer s.Close()
	must(t, s.PutTopic(topic("A", 1)))
	mem.SetCapacity(1)
	if err := s.PutTopic(topic("B", 1)); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("PutTopic on a full disk: %v", err)
	}
	mem.SetCapacity(0)
	must(t, s.PutTopic(topic("C", 1)))
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != 3 {
		t.Fatalf("%d topics after crash, want 3", got)
	}
}

// TestCrashAtRandomPoints runs random operations while failing random file
// operations, and crash-clones (with random torn unsynced writes) at a
// random file operation. The crashed copy must open, and each table must
// hold a state the store acked as durable or one it reached since. For the
// offsets that is one it tried to write: the last acked one, one whose
// write failed after renaming (a later SyncDir of the directory may make it
// durable), or the one being written at the crash. For topics and groups,
// whose changes are appended to a log, it is the state after any change
// made since the last acked one. Never a broken file, never an older state.
// Half the seeds compact the logs at nearly every change.
func TestCrashAtRandomPoints(t *testing.T) {
	const seeds = 300
	var midRun, unacked int
	for seed := range int64(seeds) {
		m, u := crashAtRandomPoint(t, seed)
		midRun += m
		unacked += u
	}
	t.Logf("%d seeds: %d crashed mid-run, %d files held a state not (yet) acked", seeds, midRun, unacked)
	// The run must exercise both outcomes, or it proves little.
	if midRun < seeds/2 || unacked == 0 {
		t.Fatalf("too few interesting crashes: %d mid-run, %d unacked states", midRun, unacked)
	}
}

// crashAtRandomPoint runs one seed; it reports whether the crash came
// during the run, and how many files held a state other than the last acked.
func crashAtRandomPoint(t *testing.T, seed int64) (midRun, unacked int) {
	r := rand.New(rand.NewSource(seed))
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	var opts Options
	if seed%2 == 0 {
		opts.LogCompactBytes = 1 // compact as soon as the log outgrows the file
	}
	s := openOpts(t, h, opts)

	kinds := []string{topicsFileName, groupsFileName, offsetsFileName}
	stateOf := func(s *Store, kind string) any {
		switch kind {
		case topicsFileName:
			return s.Topics()
		case groupsFileName:
			return s.Groups()
		default:
			return allOffsets(s)
		}
	}
	// Per file: the last acked state, then the states of the writes tried
	// since.
	cands := map[string][]any{}
	ack := func(kind string) { cands[kind] = []any{stateOf(s, kind)} }
	for _, k := range kinds {
		ack(k)
	}
	var (
		crashed     *vfs.MemFS
		crashCands  map[string][]any
		ops, nFails int
	)
	crashAt := 1 + r.Intn(80)
	h.setHook(func(op vfs.Op, name string) error {
		// One goroutine drives the store, so the hook runs on it and the
		// in-memory state is the state being written.
		ops++
		if base := path.Base(name); op == vfs.OpCreate && base == offsetsFileName+tmpSuffix {
			cands[offsetsFileName] = append(cands[offsetsFileName], stateOf(s, offsetsFileName))
		}
		// Every topic or group change is followed by a write, so the state
		// at each file operation covers every state the tables reached.
		for _, kind := range []string{topicsFileName, groupsFileName} {
			st := stateOf(s, kind)
			if c := cands[kind]; !reflect.DeepEqual(c[len(c)-1], st) {
				cands[kind] = append(c, st)
			}
		}
		if ops == crashAt {
			crashed = mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(seed))})
			crashCands = map[string][]any{}
			for k, v := range cands {
				crashCands[k] = slices.Clone(v)
			}
		}
		if r.Intn(12) == 0 {
			nFails++
			return fmt.Errorf("injected at %s %s", op, name)
		}
		return nil
	})

	for range 25 {
		name := fmt.Sprint("t", r.Intn(5))
		switch r.Intn(6) {
		case 0, 1:
			if err := s.PutTopic(topic(name, int32(1+r.Intn(8)))); err == nil {
				ack(topicsFileName)
			}
		case 2:
			if err := s.DeleteTopic(name); err == nil {
				ack(topicsFileName)
			}
		case 3:
			if err := s.PutGroup(Group{Name: fmt.Sprint("g", r.Intn(3)), RetryMaxTimes: int32(r.Intn(16))}); err == nil {
				ack(groupsFileName)
			}
		case 4:
			for range 1 + r.Intn(5) {
				s.CommitOffset(fmt.Sprint("g", r.Intn(3)), name, int32(r.Intn(4)), r.Int63n(1000))
			}
			if r.Intn(3) == 0 {
				s.DeleteTopicOffsets(name)
			}
		case 5:
			if err := s.SyncOffsets(context.Background()); err == nil {
				ack(offsetsFileName)
			}
		}
	}
	h.setHook(nil)
	final := map[string]any{}
	for _, k := range kinds {
		final[k] = stateOf(s, k)
	}
	must(t, s.Close())
	if crashed != nil {
		midRun = 1
	} else { // the run had fewer operations: crash after Close
		crashed = mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewSource(seed))})
		crashCands = map[string][]any{}
		for k, v := range final {
			crashCands[k] = []any{v}
		}
	}

	c, err := Open(crashed, testDir, Options{Clock: clock.NewManual(epoch), LogCompactBytes: opts.LogCompactBytes})
	if err != nil {
		t.Fatalf("seed %d: crashed copy does not open: %v", seed, err)
	}
	for _, k := range kinds {
		got := stateOf(c, k)
		i := slices.IndexFunc(crashCands[k], func(c any) bool { return reflect.DeepEqual(c, got) })
		if i > 0 && !reflect.DeepEqual(crashCands[k][0], got) {
			unacked++
		}
		if i < 0 {
			t.Fatalf("seed %d crash at op %d (%d injected failures): %s holds %+v\nwant one of %+v",
				seed, crashAt, nFails, k, got, crashCands[k])
		}
	}
	must(t, c.Close())

	// Without the crash, Close persisted everything.
	reopened, err := Open(mem, testDir, Options{Clock: clock.NewManual(epoch)})
	must(t, err)
	for _, k := range kinds {
		if got := stateOf(reopened, k); !reflect.DeepEqual(got, final[k]) {
			t.Fatalf("seed %d: reopened %s holds %+v, want %+v", seed, k, got, final[k])
		}
	}
	must(t, reopened.Close())
	return midRun, unacked
}

// TestCrashAtEveryOperation crashes a run of topic changes at each file
// operation in turn (keeping only synced data, and with random torn unsynced
// writes), and separately fails each file operation in turn and crashes at
// the end. Half the runs compact the change log at nearly every change, half
// only append. The crashed copy must open with the state after a change
// made no earlier than the last acked one and no later than the one being
// written, and must take further changes: a change made on it and then
// crashed is there on the next open, with everything it had.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, compactBytes := range []int64{1, DefaultLogCompactBytes} {
		total, compactions := crashRun(t, compactBytes, 0, 0, nil)
		// Both kinds of write must be crashed in, or the run proves little:
		// the first write and Close compact, a small LogCompactBytes makes
		// compactions in between.
		minCompactions := 2
		if compactBytes == 1 {
			minCompactions = 4
		}
		if total < 50 || compactions < minCompactions || compactions > 20 {
			t.Fatalf("the run made %d file operations, %d compactions", total, compactions)
		}
		crashes := 0
		for at := 1; at <= total; at++ {
			for seed := range int64(3) {
				var r *rand.Rand
				if seed > 0 {
					r = rand.New(rand.NewSource(seed*1000 + int64(at)))
				}
				crashRun(t, compactBytes, at, 0, r)
				crashes++
			}
			crashRun(t, compactBytes, 0, at, rand.New(rand.NewSource(int64(at))))
		}
		t.Logf("LogCompactBytes %d: %d file operations, %d compactions, %d crashes, %d injected failures", compactBytes, total, compactions, crashes, total)
	}
}

// crashLedger keeps the bookkeeping of a crash run on mem: it counts the
// file operations, crash-clones mem at operation crashAt and fails
// operation failAt (0: neither), and records the store's state after each
// change, which of them was acknowledged last and the states the crashed
// copy may hold.
type crashLedger[S any] struct {
	mem             *vfs.MemFS
	r               *rand.Rand
	crashAt, failAt int
	stateOf         func() S // the running store's state
	ops             int      // file operations so far
	states          []S      // after each change
	acked           int      // index in states of the last acked one
	crashed         *vfs.MemFS
	allowed         []S // states the crashed copy may hold
}

func newCrashLedger[S any](mem *vfs.MemFS, r *rand.Rand, crashAt, failAt int, stateOf func() S) *crashLedger[S] {
	return &crashLedger[S]{mem: mem, r: r, crashAt: crashAt, failAt: failAt, stateOf: stateOf, states: []S{stateOf()}}
}

// op is the hook's part for one file operation: it crash-clones at
// crashAt and fails at failAt.
func (l *crashLedger[S]) op(op vfs.Op, name string) error {
	l.ops++
	if l.ops == l.crashAt {
		l.crashed = l.mem.CrashClone(vfs.CrashOptions{Rand: l.r})
		// The change being written is in memory already.
		l.allowed = append(slices.Clone(l.states[l.acked:]), l.stateOf())
	}
	if l.ops == l.failAt {
		return fmt.Errorf("injected at %s %s", op, name)
	}
	return nil
}

// do records the state after a change that returned err.
func (l *crashLedger[S]) do(err error) {
	l.states = append(l.states, l.stateOf())
	if err == nil {
		l.acked = len(l.states) - 1
	}
}

// end closes the store by closeStore (which also removes the hook) and,
// when the run did not crash (crashAt 0), clones the closed files; it
// fails t when the run made fewer than crashAt operations.
func (l *crashLedger[S]) end(t *testing.T, closeStore func() error) {
	t.Helper()
	final := l.stateOf()
	closeErr := closeStore()
	if l.crashAt == 0 {
		if l.failAt == 0 {
			must(t, closeErr)
		}
		l.crashed = l.mem.CrashClone(vfs.CrashOptions{Rand: l.r})
		l.allowed = []S{final}
		if closeErr != nil { // Close's fold failed: the log still has everything
			l.allowed = append(slices.Clone(l.states[l.acked:]), final)
		}
	}
	if l.crashed == nil {
		t.Fatalf("crash at %d: the run made only %d operations", l.crashAt, l.ops)
	}
}

// crashRun makes a fixed series of topic changes on a fresh store. It
// crash-clones at file operation crashAt and fails operation failAt (0:
// neither), checks the crashed copy (after Close when crashAt is 0) and
// returns how many file operations the run made and how many times it
// rewrote topics.json.
func crashRun(t *testing.T, compactBytes int64, crashAt, failAt int, r *rand.Rand) (ops, compactions int) {
	t.Helper()
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	opts := Options{LogCompactBytes: compactBytes, Logger: slog.New(slog.DiscardHandler)}
	s := openOpts(t, h, opts)

	type state struct {
		topics  []Topic
		version DataVersion
	}
	stateOf := func(s *Store) state { return state{s.Topics(), s.TopicsVersion()} }
	l := newCrashLedger(mem, r, crashAt, failAt, func() state { return stateOf(s) })
	h.setHook(func(op vfs.Op, name string) error {
		if op == vfs.OpRename && path.Base(name) == topicsFileName+tmpSuffix {
			compactions++
		}
		return l.op(op, name)
	})
	do := l.do
	for i := range 40 {
		name := fmt.Sprintf("topic-%d", i%7)
		switch i % 5 {
		case 0, 1:
			do(s.PutTopic(topic(name, int32(1+i%4))))
		case 2:
			do(s.PutTopics([]Topic{topic(name+"-a", 2), topic(name+"-b", 3)}))
		case 3:
			do(s.DeleteTopic(fmt.Sprintf("topic-%d", (i+3)%7)))
		case 4:
			tp := topic(name, 8)
			tp.Attributes = map[string]string{"i": fmt.Sprint(i)}
			do(s.PutTopic(tp))
		}
	}
	l.end(t, func() error {
		err := s.Close()
		h.setHook(nil)
		return err
	})
	crashed, allowed := l.crashed, l.allowed
	what := fmt.Sprintf("LogCompactBytes %d, crash at %d, fail at %d", compactBytes, crashAt, failAt)
	c, err := Open(crashed, testDir, opts)
	if err != nil {
		t.Fatalf("%s: crashed copy does not open: %v", what, err)
	}
	got := stateOf(c)
	if !slices.ContainsFunc(allowed, func(a state) bool { return reflect.DeepEqual(a, got) }) {
		t.Fatalf("%s: crashed copy holds %+v\nwant one of %+v", what, got, allowed)
	}
	// The copy goes on: a change on it survives the next crash, with what
	// it had (a torn tail of the log must not swallow the new record).
	must(t, c.PutTopic(topic("after-crash", 1)))
	again, err := Open(crashed.CrashClone(vfs.CrashOptions{}), testDir, opts)
	if err != nil {
		t.Fatalf("%s: copy reopened after a change does not open: %v", what, err)
	}
	want := append(slices.Clone(got.topics), topic("after-crash", 1))
	slices.SortFunc(want, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	if got2 := again.Topics(); !reflect.DeepEqual(got2, want) {
		t.Fatalf("%s: after a change and another crash %+v, want %+v", what, got2, want)
	}
	if v := again.TopicsVersion(); v.Counter != got.version.Counter+1 {
		t.Fatalf("%s: after a change and another crash version %+v, want counter %d", what, v, got.version.Counter+1)
	}
	must(t, again.Close())
	must(t, c.Close())
	return l.ops, compactions
}
