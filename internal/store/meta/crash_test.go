package meta

import (
	"context"
	"errors"
	"fmt"
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
// file (never a broken one), and the next write or Close persists it.
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
				if op == step {
					return fail
				}
				return nil
			})
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
// random file operation. The crashed copy must open, and each file must hold
// a state the store acked as durable or tried to write since: the last
// acked one, one whose write failed after renaming (a later SyncDir of the
// directory may make it durable), or the one being written at the crash.
// Never a broken file, never an older state.
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
	s := openT(t, h, clock.NewManual(epoch))

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
		if base := path.Base(name); op == vfs.OpCreate && strings.HasSuffix(base, tmpSuffix) {
			kind := strings.TrimSuffix(base, tmpSuffix)
			cands[kind] = append(cands[kind], stateOf(s, kind))
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

	c, err := Open(crashed, testDir, Options{Clock: clock.NewManual(epoch)})
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
