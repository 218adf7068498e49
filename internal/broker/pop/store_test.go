package pop

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const dir = "/data/pop"

func mustOpen(t *testing.T, fsys vfs.FS, opts Options) *Store {
	t.Helper()
	s, err := Open(fsys, dir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var kA = Key{Group: "g", Topic: "t", QueueID: 0}

// popNew claims n new offsets from the cursor of k.
func popNew(t *testing.T, s *Store, k Key, n int, now time.Time, inv time.Duration) []Entry {
	t.Helper()
	v := s.Peek(k, now, false, 32)
	from := v.Cursor
	var offs []int64
	for i := range n {
		offs = append(offs, from+int64(i))
	}
	got, tk, err := s.Claim(Claim{Key: k, From: from, To: from + int64(n), New: offs, Until: now.Add(inv)})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return got
}

func TestClaimAckAndHandleErrors(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	got := popNew(t, s, kA, 3, t0, 30*time.Second)
	if len(got) != 3 || got[0].Offset != 0 || got[2].Offset != 2 || got[0].Attempt != 1 {
		t.Fatalf("claimed %+v", got)
	}
	if n := s.InFlight("g"); n != 3 {
		t.Fatalf("in flight %d, want 3", n)
	}
	h := HandleOf(kA, got[1])
	if _, _, err := s.Ack("other", "t", h, t0); !errors.Is(err, ErrOtherGroup) {
		t.Fatalf("ack by another group: %v", err)
	}
	if _, _, err := s.Ack("g", "other", h, t0); !errors.Is(err, ErrOtherTopic) {
		t.Fatalf("ack for another topic: %v", err)
	}
	if _, _, err := s.Ack("g", "t", "garbage", t0); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("garbage: %v", err)
	}
	k, tk, err := s.Ack("g", "t", h, t0.Add(time.Second))
	if err != nil || k != kA {
		t.Fatalf("ack: %v %v", k, err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Ack("g", "t", h, t0.Add(2*time.Second)); !errors.Is(err, ErrAcked) {
		t.Fatalf("second ack: %v", err)
	}
	if low, _ := s.Low(kA); low != 0 {
		t.Fatalf("low %d, want 0 (offset 0 in flight)", low)
	}
	// A handle for an offset never popped.
	fake := HandleOf(kA, Entry{Offset: 10, Until: ms(t0.Add(time.Minute)), Attempt: 1, Gen: 1})
	if _, _, err := s.Ack("g", "t", fake, t0); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("never delivered: %v", err)
	}
	// Expired: the invisible time passed.
	if _, _, err := s.Ack("g", "t", HandleOf(kA, got[0]), t0.Add(30*time.Second)); !errors.Is(err, ErrExpired) {
		t.Fatalf("late ack: %v", err)
	}
}

func TestExpiredEntriesAreOfferedAgain(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	got := popNew(t, s, kA, 2, t0, 10*time.Second)
	if v := s.Peek(kA, t0.Add(9*time.Second), false, 32); len(v.Expired) != 0 || v.Cursor != 2 {
		t.Fatalf("before expiry: %+v", v)
	}
	if at, ok := s.NextVisible("g", "t", t0); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("next visible %v %v", at, ok)
	}
	now := t0.Add(10 * time.Second)
	v := s.Peek(kA, now, false, 32)
	if len(v.Expired) != 2 {
		t.Fatalf("after expiry: %+v", v)
	}
	again, tk, err := s.Claim(Claim{Key: kA, From: v.Cursor, To: v.Cursor, Again: v.Expired[:1], Drop: v.Expired[1:], Until: now.Add(10 * time.Second)})
	if err != nil || s.Sync(tk) != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Attempt != 2 || again[0].Gen == got[0].Gen {
		t.Fatalf("redelivered %+v", again)
	}
	// The old handle of the redelivered message is expired; the dropped
	// one counts as done.
	if _, _, err := s.Ack("g", "t", HandleOf(kA, got[0]), now); !errors.Is(err, ErrExpired) {
		t.Fatalf("old handle: %v", err)
	}
	if s.InFlight("g") != 1 {
		t.Fatalf("in flight %d, want 1", s.InFlight("g"))
	}
	// A stale claim conflicts.
	if _, _, err := s.Claim(Claim{Key: kA, From: v.Cursor, To: v.Cursor, Again: v.Expired[:1], Until: now}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale claim: %v", err)
	}
	if _, _, err := s.Claim(Claim{Key: kA, From: 0, To: 5, Until: now}); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim from an old cursor: %v", err)
	}
}

func TestChangeInvisibleReplacesTheHandle(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	got := popNew(t, s, kA, 1, t0, 10*time.Second)
	old := HandleOf(kA, got[0])
	h2, e, tk, err := s.Change("g", "t", old, t0.Add(time.Minute), t0.Add(5*time.Second))
	if err != nil || s.Sync(tk) != nil {
		t.Fatal(err)
	}
	if e.Attempt != 1 || e.Until != ms(t0.Add(time.Minute)) {
		t.Fatalf("changed entry %+v", e)
	}
	if _, _, err := s.Ack("g", "t", old, t0.Add(6*time.Second)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("old handle: %v", err)
	}
	// Past the first invisible time, not visible: the change holds.
	if v := s.Peek(kA, t0.Add(30*time.Second), false, 32); len(v.Expired) != 0 {
		t.Fatalf("expired after change: %+v", v)
	}
	if _, _, err := s.Ack("g", "t", h2, t0.Add(30*time.Second)); err != nil {
		t.Fatalf("new handle: %v", err)
	}
}

func TestFIFOPeekBlocksWhileInFlight(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	got := popNew(t, s, kA, 2, t0, 10*time.Second)
	if v := s.Peek(kA, t0, true, 32); !v.Blocked {
		t.Fatalf("fifo peek with messages in flight: %+v", v)
	}
	if _, tk, err := s.Ack("g", "t", HandleOf(kA, got[0]), t0); err != nil || s.Sync(tk) != nil {
		t.Fatal(err)
	}
	if v := s.Peek(kA, t0, true, 32); !v.Blocked {
		t.Fatal("fifo peek with one message in flight not blocked")
	}
	if v := s.Peek(kA, t0.Add(10*time.Second), true, 32); v.Blocked || len(v.Expired) != 1 || v.Expired[0].Offset != 1 {
		t.Fatalf("fifo peek after expiry: %+v", v)
	}
}

// model is the expected state of one queue.
type model struct {
	cursor   int64
	inflight map[int64]Entry
}

func (m *model) check(t *testing.T, s *Store, k Key, when string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		if m.cursor != 0 || len(m.inflight) != 0 {
			t.Fatalf("%s: queue missing, want cursor %d, %d in flight", when, m.cursor, len(m.inflight))
		}
		return
	}
	if q.cursor != m.cursor || len(q.inflight) != len(m.inflight) {
		t.Fatalf("%s: cursor %d with %d in flight, want %d with %d", when, q.cursor, len(q.inflight), m.cursor, len(m.inflight))
	}
	for o, e := range m.inflight {
		if got := q.inflight[o]; got == nil || *got != e {
			t.Fatalf("%s: offset %d: %+v, want %+v", when, o, got, e)
		}
	}
}

// TestRestartKeepsState runs random claims, acks and changes, restarting
// (with compaction now and then) and checks the state against a model.
func TestRestartKeepsState(t *testing.T) {
	fsys := vfs.NewMem()
	rng := rand.New(rand.NewSource(1))
	opts := Options{CompactBytes: 2 << 10}
	s := mustOpen(t, fsys, opts)
	m := &model{inflight: map[int64]Entry{}}
	now := t0
	compactions := 0
	for i := range 600 {
		now = now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
		switch r := rng.Intn(10); {
		case r < 4:
			n := rng.Intn(4)
			got := popNew(t, s, kA, n, now, 5*time.Second)
			for _, e := range got {
				m.inflight[e.Offset] = e
			}
			m.cursor += int64(n)
		case r < 7 && len(m.inflight) > 0:
			for o, e := range m.inflight {
				_, tk, err := s.Ack("g", "t", HandleOf(kA, e), now)
				if e.Until <= ms(now) {
					if !errors.Is(err, ErrExpired) {
						t.Fatalf("step %d: ack of an expired entry: %v", i, err)
					}
					break
				}
				if err != nil || s.Sync(tk) != nil {
					t.Fatalf("step %d: ack: %v", i, err)
				}
				delete(m.inflight, o)
				break
			}
		case r < 8:
			v := s.Peek(kA, now, false, 32)
			got, tk, err := s.Claim(Claim{Key: kA, From: v.Cursor, To: v.Cursor, Again: v.Expired, Until: now.Add(5 * time.Second)})
			if err != nil || s.Sync(tk) != nil {
				t.Fatalf("step %d: redeliver: %v", i, err)
			}
			for _, e := range got {
				m.inflight[e.Offset] = e
			}
		case r < 9 && len(m.inflight) > 0:
			for _, e := range m.inflight {
				if e.Until <= ms(now) {
					break
				}
				_, ne, tk, err := s.Change("g", "t", HandleOf(kA, e), now.Add(20*time.Second), now)
				if err != nil || s.Sync(tk) != nil {
					t.Fatalf("step %d: change: %v", i, err)
				}
				m.inflight[e.Offset] = ne
				break
			}
		default:
			before := s.logGen
			s.Close()
			s = mustOpen(t, fsys, opts)
			m.check(t, s, kA, fmt.Sprintf("step %d after restart", i))
			if s.logGen != before {
				t.Fatalf("restart changed the log generation %d -> %d", before, s.logGen)
			}
		}
		m.check(t, s, kA, fmt.Sprintf("step %d", i))
		if s.logGen > 1 {
			compactions = int(s.logGen - 1)
		}
	}
	if compactions < 2 {
		t.Fatalf("only %d compactions; the test does not exercise snapshots", compactions)
	}
}

// TestCrashKeepsSyncedChanges: concurrent claimers and ackers, a crash at
// a random moment; every change whose Sync returned is in the reopened
// state, and no delivered offset is lost.
func TestCrashKeepsSyncedChanges(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		fsys := vfs.NewMem()
		opts := Options{CompactBytes: 4 << 10}
		s, err := Open(fsys, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		synced := map[int64]bool{} // offset -> acked (true) or in flight (false)
		rng := rand.New(rand.NewSource(seed))
		target := 20 + rng.Intn(200)
		reached := make(chan struct{})
		var once sync.Once
		note := func(id int64, acked bool) {
			mu.Lock()
			synced[id] = acked
			if len(synced) >= target {
				once.Do(func() { close(reached) })
			}
			mu.Unlock()
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := Key{Group: "g", Topic: "t", QueueID: int32(w)}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					v := s.Peek(k, t0, false, 1)
					got, tk, err := s.Claim(Claim{Key: k, From: v.Cursor, To: v.Cursor + 1, New: []int64{v.Cursor}, Until: t0.Add(time.Hour)})
					if err == nil {
						err = s.Sync(tk)
					}
					if err != nil {
						return // closed under us
					}
					note(int64(w)<<32|got[0].Offset, false)
					if i%2 == 0 {
						_, tk, err := s.Ack("g", "t", HandleOf(k, got[0]), t0)
						if err == nil {
							err = s.Sync(tk)
						}
						if err != nil {
							return
						}
						note(int64(w)<<32|got[0].Offset, true)
					}
				}
			}()
		}
		<-reached
		mu.Lock()
		crash := fsys.CrashClone(vfs.CrashOptions{Rand: rng})
		want := map[int64]bool{}
		for k, v := range synced {
			want[k] = v
		}
		mu.Unlock()
		close(stop)
		s.Close()
		wg.Wait()

		r, err := Open(crash, dir, opts)
		if err != nil {
			t.Fatalf("seed %d: reopen after crash: %v", seed, err)
		}
		for id, acked := range want {
			k := Key{Group: "g", Topic: "t", QueueID: int32(id >> 32)}
			off := id & (1<<32 - 1)
			r.mu.Lock()
			q := r.queues[k]
			var inflight bool
			var cursor int64
			if q != nil {
				inflight = q.inflight[off] != nil
				cursor = q.cursor
			}
			r.mu.Unlock()
			if cursor <= off {
				t.Fatalf("seed %d: queue %d cursor %d after crash; offset %d was delivered", seed, k.QueueID, cursor, off)
			}
			// An offset recorded as in flight may have been acked durably
			// without its Sync returning yet; an acked one must stay acked.
			if acked && inflight {
				t.Fatalf("seed %d: queue %d offset %d was acked before the crash and is in flight again", seed, k.QueueID, off)
			}
		}
		r.Close()
	}
}

// TestConcurrentChangesShareOneSync holds the first log sync until every
// other claim is logged: all of them then go out with one more sync.
func TestConcurrentChangesShareOneSync(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, Options{})
	const n = 50
	var syncs sync.Map
	count := func() int {
		c := 0
		syncs.Range(func(any, any) bool { c++; return true })
		return c
	}
	var seq int64
	var seqMu sync.Mutex
	hold := make(chan struct{})
	first := make(chan struct{})
	var firstOnce sync.Once
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op != vfs.OpSync || p != dir+"/"+logName(1) {
			return nil
		}
		seqMu.Lock()
		seq++
		syncs.Store(seq, true)
		seqMu.Unlock()
		firstOnce.Do(func() { close(first); <-hold })
		return nil
	})
	var logged, done sync.WaitGroup
	errs := make(chan error, n+1)
	claim := func(q int32) {
		defer done.Done()
		k := Key{Group: "g", Topic: "t", QueueID: q}
		_, tk, err := s.Claim(Claim{Key: k, From: 0, To: 1, New: []int64{0}, Until: t0.Add(time.Minute)})
		logged.Done()
		if err == nil {
			err = s.Sync(tk)
		}
		errs <- err
	}
	logged.Add(1)
	done.Add(1)
	go claim(0)
	<-first // the first claim's sync is under way and held
	logged.Add(n)
	done.Add(n)
	for q := int32(1); q <= n; q++ {
		go claim(q)
	}
	logged.Wait()
	close(hold)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := count(); c != 2 {
		t.Fatalf("%d log syncs for %d concurrent claims, want 2 (the held one and one shared)", c, n+1)
	}
	if s.InFlight("g") != n+1 {
		t.Fatalf("in flight %d, want %d", s.InFlight("g"), n+1)
	}
}

// TestFailedSyncIsSticky: after a failed fsync every change is refused
// and the waiting caller gets the error.
func TestFailedSyncIsSticky(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, Options{})
	boom := errors.New("disk on fire")
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync {
			return boom
		}
		return nil
	})
	_, tk, err := s.Claim(Claim{Key: kA, From: 0, To: 1, New: []int64{0}, Until: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(tk); !errors.Is(err, boom) || !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("sync: %v, want the injected error as ErrWriteFailed", err)
	}
	fsys.InjectError(nil)
	if _, _, err := s.Claim(Claim{Key: kA, From: 1, To: 2, New: []int64{1}, Until: t0.Add(time.Minute)}); !errors.Is(err, boom) || !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("claim after a failed sync: %v", err)
	}
}

func TestTornTailIsCut(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, Options{})
	popNew(t, s, kA, 2, t0, time.Minute)
	s.Close()
	f, err := fsys.Open(dir + "/" + logName(1))
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	if _, err := f.WriteAt([]byte{0, 0, 0, 40, 1, 2, 3}, size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := mustOpen(t, fsys, Options{})
	if v := r.Peek(kA, t0, false, 1); v.Cursor != 2 {
		t.Fatalf("cursor %d after reopening, want 2", v.Cursor)
	}
	popNew(t, r, kA, 1, t0, time.Minute)
	r.Close()
	r2 := mustOpen(t, fsys, Options{})
	if v := r2.Peek(kA, t0, false, 1); v.Cursor != 3 {
		t.Fatalf("cursor %d, want 3: the record after the cut tail was lost", v.Cursor)
	}
}

func TestCorruptSnapshotIsRefused(t *testing.T) {
	fsys := vfs.NewMem()
	if err := vfs.MkdirAllDurable(fsys, dir); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fsys, dir, snapshotName, []byte("PPOPSNP1 but not really a snapshot")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fsys, dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v, want ErrCorrupt", err)
	}
}

// TestBookkeepingStaysBounded: with one message held in flight and many
// delivered and acknowledged after it, the per-queue bookkeeping does not
// grow with the acknowledged ones.
func TestBookkeepingStaysBounded(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	popNew(t, s, kA, 1, t0, time.Hour) // held
	for range 100 {
		got := popNew(t, s, kA, 10, t0, time.Hour)
		for _, e := range got {
			if _, tk, err := s.Ack("g", "t", HandleOf(kA, e), t0); err != nil || s.Sync(tk) != nil {
				t.Fatal(err)
			}
		}
	}
	s.mu.Lock()
	q := s.queues[kA]
	order, due := len(q.order)-q.head, len(q.due)
	s.mu.Unlock()
	if order > 200 || due > 200 {
		t.Fatalf("1 entry in flight, bookkeeping holds %d offsets and %d heap items", order, due)
	}
	if low, _ := s.Low(kA); low != 0 {
		t.Fatalf("low %d, want 0 (the held message)", low)
	}
}

// FuzzReadFrame: a log record decoder never panics, and what it accepts
// encodes back to the same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, &change{key: kA, cursor: 5, put: []Entry{{Offset: 4, Until: 9, Attempt: 1, Gen: 2}}, del: []int64{3}}))
	f.Add(appendFrame(nil, &change{key: Key{Group: "group", Topic: "topic", QueueID: 3}, cursor: -1}))
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n := readFrame(b)
		if n == 0 {
			return
		}
		if again := appendFrame(nil, &c); string(again) != string(b[:n]) {
			t.Fatalf("record %x re-encodes to %x", b[:n], again)
		}
		_, _ = decodeSnapshot(b) // must not panic either
	})
}

// TestPeekWorkIsBoundedByTheLimit: with thousands of expired entries (a
// consumer that died holding them), a Peek takes the limit's worth, the
// earliest due, without walking the others under the store's lock (its
// allocations do not grow with them); NextVisible and FIFO peeks still
// see past the expired entries.
func TestPeekWorkIsBoundedByTheLimit(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	const n = 5000
	for i := range n {
		// Due from t0+1s on, the later offsets first, then one invisible
		// for an hour.
		until := t0.Add(time.Second + time.Duration(n-i)*time.Millisecond)
		if _, tk, err := s.Claim(Claim{Key: kA, From: int64(i), To: int64(i + 1), New: []int64{int64(i)}, Until: until}); err != nil || s.Sync(tk) != nil {
			t.Fatal(err)
		}
	}
	held := popNew(t, s, kA, 1, t0, time.Hour)[0]
	now := t0.Add(time.Minute)
	v := s.Peek(kA, now, false, 3)
	if len(v.Expired) != 3 || v.Expired[0].Offset != n-3 || v.Expired[2].Offset != n-1 {
		t.Fatalf("peek of 3 gave %+v, want the 3 earliest due (offsets %d..%d) by offset", v.Expired, n-3, n-1)
	}
	if allocs := testing.AllocsPerRun(20, func() { s.Peek(kA, now, false, 3) }); allocs > 20 {
		t.Fatalf("a peek of 3 among %d expired entries made %v allocations; its work grows with the expired entries", n, allocs)
	}
	if at, ok := s.NextVisible("g", "t", now); !ok || at.UnixMilli() != held.Until {
		t.Fatalf("next visible %v %v, want the held entry's %v", at, ok, time.UnixMilli(held.Until))
	}
	if v := s.Peek(kA, now, true, 3); !v.Blocked {
		t.Fatalf("fifo peek with one entry invisible: %+v", v)
	}
	v = s.Peek(kA, now.Add(time.Hour), true, 2)
	if v.Blocked || len(v.Expired) != 2 || v.Expired[0].Offset != 0 || v.Expired[1].Offset != 1 {
		t.Fatalf("fifo peek when all expired: %+v, want offsets 0 and 1", v)
	}
}

// TestForgetGroupDropsItsQueuesDurably: ForgetGroup removes every queue of
// the group (cursor, in-flight, count) and nothing of other groups; the
// removal survives a reopen that replays the log and one that loads a
// snapshot.
func TestForgetGroupDropsItsQueuesDurably(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, Options{})
	kB := Key{Group: "g", Topic: "u", QueueID: 1}
	kOther := Key{Group: "h", Topic: "t", QueueID: 0}
	popNew(t, s, kA, 3, t0, time.Minute)
	popNew(t, s, kB, 2, t0, time.Minute)
	popNew(t, s, kOther, 1, t0, time.Minute)
	tk, err := s.ForgetGroup("g")
	if err != nil || tk == 0 {
		t.Fatalf("ForgetGroup: ticket %d, %v", tk, err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		if got := dump(s); !strings.HasPrefix(got, "h/t/0 cursor=1 ") || strings.Contains(got, "\n") {
			t.Fatalf("%s: state\n%s\nwant only the queue of group h", when, got)
		}
		if n := s.InFlight("g"); n != 0 {
			t.Fatalf("%s: group g holds %d in flight, want 0", when, n)
		}
		if n := s.InFlight("h"); n != 1 {
			t.Fatalf("%s: group h holds %d in flight, want 1", when, n)
		}
		if v := s.Peek(kA, t0, false, 32); v.Known {
			t.Fatalf("%s: the forgotten queue is still known: %+v", when, v)
		}
	}
	check(s, "after ForgetGroup")
	if tk, err := s.ForgetGroup("g"); err != nil || tk != 0 {
		t.Fatalf("forgetting a group without state: ticket %d, %v", tk, err)
	}
	s.Close()
	s = mustOpen(t, fsys, Options{})
	check(s, "after a reopen that replays the log")
	// A new pop of the group starts as a fresh group's.
	popNew(t, s, kA, 1, t0, time.Minute)
	if v := s.Peek(kA, t0, false, 32); v.Cursor != 1 {
		t.Fatalf("cursor after a fresh pop %d, want 1", v.Cursor)
	}
	s.Close()

	s = mustOpen(t, fsys, Options{CompactBytes: 1})
	tk, err = s.ForgetGroup("g")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatal(err)
	}
	gen := s.logGen
	s.Close()
	s = mustOpen(t, fsys, Options{})
	if gen == 1 {
		t.Fatal("the store did not compact; the snapshot path is not tested")
	}
	check(s, "after a reopen from a snapshot")
}

// TestAckAtNamesTheDeliveryByItsUntil: an acknowledgement by queue,
// offset and visible-again time takes the delivery with that Until, and
// is refused for an offset never popped, a stale Until (a change of
// invisible time replaced it), a passed one, and a second time; the
// acknowledgement survives a restart.
func TestAckAtNamesTheDeliveryByItsUntil(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, Options{})
	got := popNew(t, s, kA, 3, t0, 30*time.Second)
	until := got[0].Until
	if _, err := s.AckAt(kA, 3, until, t0); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("an offset never popped: %v", err)
	}
	if _, err := s.AckAt(Key{Group: "g", Topic: "t", QueueID: 1}, 0, until, t0); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("a queue never popped: %v", err)
	}
	if _, err := s.AckAt(kA, 0, until+1, t0); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("another until: %v", err)
	}
	tk, err := s.AckAt(kA, 0, until, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AckAt(kA, 0, until, t0.Add(2*time.Second)); !errors.Is(err, ErrAcked) {
		t.Fatalf("second ack: %v", err)
	}
	if _, err := s.AckAt(kA, 0, until, t0.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("acked, and its time passed: %v", err)
	}
	// A change gives offset 1 a new Until: the old one no longer names it.
	_, ne, tk, err := s.Change("g", "t", HandleOf(kA, got[1]), t0.Add(time.Hour), t0)
	if err != nil || s.Sync(tk) != nil {
		t.Fatal(err)
	}
	if _, err := s.AckAt(kA, 1, until, t0); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("the Until a change replaced: %v", err)
	}
	if _, err := s.AckAt(kA, 2, until, t0.Add(31*time.Second)); !errors.Is(err, ErrExpired) {
		t.Fatalf("past its Until: %v", err)
	}
	if tk, err = s.AckAt(kA, 1, ne.Until, t0.Add(time.Minute)); err != nil || s.Sync(tk) != nil {
		t.Fatalf("ack by the changed Until: %v", err)
	}
	if n := s.InFlight("g"); n != 1 {
		t.Fatalf("in flight %d, want 1 (offset 2)", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, fsys, Options{})
	if n := s2.InFlight("g"); n != 1 {
		t.Fatalf("after a restart %d in flight, want 1", n)
	}
}
