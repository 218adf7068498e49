package pop

import (
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
	"github.com/petrelmq/petrel/internal/vfs/vfstest"
)

// mirrorScript drives s through every kind of change — claims of new
// offsets, redeliveries of expired entries, drops, acks, changes of
// invisible time (some with stale handles), queue and topic resets and a
// group's removal — over several queues, calling after(i) once change i
// was made and synced. The same seed gives the same script.
func mirrorScript(t *testing.T, s *Store, seed int64, n int, after func(i int)) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	keys := []Key{kA, {Group: "g", Topic: "t", QueueID: 1}, {Group: "g", Topic: "u", QueueID: 0}, {Group: "h", Topic: "t", QueueID: 0}}
	type held struct {
		k Key
		e Entry
	}
	var handles []held
	now := t0
	sync := func(tk Ticket, err error) bool {
		if err != nil {
			return false
		}
		if err := s.Sync(tk); err != nil {
			t.Fatalf("sync: %v", err)
		}
		return true
	}
	for i := 0; i < n; {
		now = now.Add(time.Duration(rng.Intn(1500)) * time.Millisecond)
		k := keys[rng.Intn(len(keys))]
		var ok bool
		switch r := rng.Intn(20); {
		case r < 7: // pop: expired ones again (some dropped), then new ones
			v := s.Peek(k, now, false, 4)
			c := Claim{Key: k, From: v.Cursor, To: v.Cursor + int64(rng.Intn(4)), Until: now.Add(time.Duration(1+rng.Intn(3)) * time.Second)}
			for j, e := range v.Expired {
				if j%3 == 2 {
					c.Drop = append(c.Drop, e)
				} else {
					c.Again = append(c.Again, e)
				}
			}
			for o := c.From; o < c.To; o++ {
				if o%5 != 3 { // some filtered out
					c.New = append(c.New, o)
				}
			}
			got, tk, err := s.Claim(c)
			if ok = sync(tk, err) && tk != 0; ok {
				for _, e := range got {
					handles = append(handles, held{k, e})
				}
			}
		case r < 13 && len(handles) > 0: // ack
			h := handles[rng.Intn(len(handles))]
			_, tk, err := s.Ack(h.k.Group, h.k.Topic, HandleOf(h.k, h.e), now)
			ok = sync(tk, err)
		case r < 17 && len(handles) > 0: // change
			j := rng.Intn(len(handles))
			h := handles[j]
			_, ne, tk, err := s.Change(h.k.Group, h.k.Topic, HandleOf(h.k, h.e), now.Add(time.Duration(rng.Intn(4))*time.Second), now)
			if ok = sync(tk, err); ok {
				handles[j].e = ne
			}
		case r == 17:
			tk, found, err := s.ResetQueue(k, int64(rng.Intn(6)))
			ok = sync(tk, err) && found
		case r == 18:
			tk, err := s.ResetTopic(k.Topic)
			ok = sync(tk, err) && tk != 0
		case r == 19 && rng.Intn(3) == 0:
			tk, err := s.ForgetGroup(k.Group)
			ok = sync(tk, err) && tk != 0
		}
		if ok {
			after(i)
			i++
		}
	}
}

// recordOps runs mirrorScript on a fresh mirroring store and returns the
// ops of each change (in order, one slice per change), the master's state
// after each change and the store.
func recordOps(t *testing.T, seed int64, n int) (ops [][][]byte, states []string, m *Store) {
	t.Helper()
	m = mustOpen(t, vfs.NewMem(), Options{})
	m.SetMirror(true)
	mirrorScript(t, m, seed, n, func(int) {
		var batch [][]byte
		m.TakeOps(func(op []byte) { batch = append(batch, op) })
		if len(batch) == 0 {
			t.Fatalf("a change gave no op")
		}
		ops = append(ops, batch)
		states = append(states, dump(m))
	})
	return ops, states, m
}

func mirrorAll(t *testing.T, s *Store, ops [][][]byte) {
	t.Helper()
	for _, batch := range ops {
		for _, op := range batch {
			tk, err := s.Mirror(op)
			if err != nil {
				t.Fatalf("mirror: %v", err)
			}
			if err := s.Sync(tk); err != nil {
				t.Fatalf("sync: %v", err)
			}
		}
	}
}

// TestMirrorFollowsTheMaster: a store that applies a master's ops has the
// master's state after each change (cursors, in-flight entries with their
// generations, attempts and invisible times), and the master's handles
// work on it once it takes over.
func TestMirrorFollowsTheMaster(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		ops, states, m := recordOps(t, seed, 300)
		sl := mustOpen(t, vfs.NewMem(), Options{CompactBytes: 2048})
		for i, batch := range ops {
			mirrorAll(t, sl, [][][]byte{batch})
			if got := dump(sl); got != states[i] {
				t.Fatalf("seed %d, change %d: mirror\n%s\nmaster\n%s", seed, i, got, states[i])
			}
		}
		if sl.nextGen != m.nextGen {
			t.Fatalf("seed %d: mirror's next generation %d, master's %d", seed, sl.nextGen, m.nextGen)
		}
		// A restart of the mirror keeps what it applied.
		sl.Close()
		r := mustOpen(t, sl.fsys, Options{})
		if got := dump(r); got != states[len(states)-1] {
			t.Fatalf("seed %d: mirror after a restart\n%s\nwant\n%s", seed, got, states[len(states)-1])
		}
		// Promoted, it takes the master's handles: each in-flight entry is
		// acknowledged with the handle the master gave out.
		now := t0.Add(-time.Hour) // before every invisible time
		for _, q := range r.Queues() {
			for _, e := range q.InFlight {
				if _, tk, err := r.Ack(q.Key.Group, q.Key.Topic, HandleOf(q.Key, e), now); err != nil || r.Sync(tk) != nil {
					t.Fatalf("seed %d: ack of the master's handle %v on the promoted mirror: %v", seed, e, err)
				}
			}
		}
		// And its new generations do not repeat the master's.
		got := popNew(t, r, Key{Group: "new", Topic: "t"}, 1, t0, time.Minute)
		if got[0].Gen < m.nextGen {
			t.Fatalf("seed %d: promoted mirror hands out generation %d, the master gave out up to %d", seed, got[0].Gen, m.nextGen-1)
		}
	}
}

// TestMirrorReplayChangesNothing: applying again the ops from any earlier
// point (a slave restarting from its last persisted position), or the
// whole log twice, leaves the state as it is.
func TestMirrorReplayChangesNothing(t *testing.T) {
	ops, states, _ := recordOps(t, 7, 250)
	want := states[len(states)-1]
	sl := mustOpen(t, vfs.NewMem(), Options{})
	mirrorAll(t, sl, ops)
	mirrorAll(t, sl, ops)
	if got := dump(sl); got != want {
		t.Fatalf("after the ops twice\n%s\nwant\n%s", got, want)
	}
	for from := 0; from < len(ops); from += 17 {
		mirrorAll(t, sl, ops[from:])
		if got := dump(sl); got != want {
			t.Fatalf("after replaying from change %d\n%s\nwant\n%s", from, got, want)
		}
	}
	// Replaying from a point onto the state of that point's past (the
	// slave's state at any earlier change) ends in the same state.
	for from := 0; from < len(ops); from += 23 {
		s2 := mustOpen(t, vfs.NewMem(), Options{})
		mirrorAll(t, s2, ops[:from+1])
		mirrorAll(t, s2, ops[max(from-5, 0):])
		if got := dump(s2); got != want {
			t.Fatalf("state of change %d, replayed from %d\n%s\nwant\n%s", from, max(from-5, 0), got, want)
		}
	}
}

// TestSnapshotOpsRebuildTheState: a store with other state, cleared and
// given a master's SnapshotOps, has the master's state, also for a queue
// with more in flight than one op holds; a store not mirroring queues no
// ops.
func TestSnapshotOpsRebuildTheState(t *testing.T) {
	_, states, m := recordOps(t, 3, 120)
	big := Key{Group: "big", Topic: "t", QueueID: 2}
	popNew(t, m, big, 2*snapshotChunk+5, t0, time.Hour)
	m.TakeOps(func([]byte) {})

	sl := mustOpen(t, vfs.NewMem(), Options{})
	popNew(t, sl, Key{Group: "stale", Topic: "x"}, 3, t0, time.Hour)
	popNew(t, sl, kA, 9, t0, time.Hour)
	var n int
	var snap [][]byte
	m.SnapshotOps(func(op []byte) { snap = append(snap, op); n++ })
	if n < len(m.Queues())+2 {
		t.Fatalf("%d snapshot ops for %d queues, one with %d in flight", n, len(m.Queues()), 2*snapshotChunk+5)
	}
	tk, err := sl.Clear()
	if err != nil || sl.Sync(tk) != nil {
		t.Fatalf("clear: %v", err)
	}
	if got := dump(sl); got != "" {
		t.Fatalf("cleared store holds\n%s", got)
	}
	mirrorAll(t, sl, [][][]byte{snap})
	if got, want := dump(sl), dump(m); got != want {
		t.Fatalf("after the snapshot\n%s\nwant\n%s", got, want)
	}
	if sl.nextGen != m.nextGen || sl.InFlight("big") != 2*snapshotChunk+5 {
		t.Fatalf("next generation %d (master %d), in flight %d", sl.nextGen, m.nextGen, sl.InFlight("big"))
	}
	_ = states

	quiet := mustOpen(t, vfs.NewMem(), Options{})
	popNew(t, quiet, kA, 3, t0, time.Hour)
	quiet.TakeOps(func([]byte) { t.Fatal("a store not mirroring queued an op") })
	quiet.SetMirror(true)
	popNew(t, quiet, kA, 1, t0, time.Hour)
	quiet.SetMirror(false)
	quiet.TakeOps(func([]byte) { t.Fatal("SetMirror(false) kept queued ops") })
}

// TestMirrorCrashAtEveryStep crashes the mirror's disk at each file
// operation while it applies a master's ops (log writes and syncs and the
// compactions among them): the reopened store has the state after the last
// op whose Sync returned, or after the one under way, and re-applying from
// that op (where a slave's persisted position would be at most) ends in
// the master's state.
func TestMirrorCrashAtEveryStep(t *testing.T) {
	ops, _, m := recordOps(t, 11, 80)
	var flat [][]byte
	for _, b := range ops {
		flat = append(flat, b...)
	}
	want := dump(m)
	opts := Options{CompactBytes: 400}
	fsys := vfs.NewMem()
	dry := mustOpen(t, fsys, opts)
	var count atomic.Int64
	fsys.InjectError(func(vfs.Op, string) error { count.Add(1); return nil })
	states := []string{dump(dry)}
	for _, op := range flat {
		mirrorAll(t, dry, [][][]byte{{op}})
		states = append(states, dump(dry))
	}
	fsys.InjectError(nil)
	if dry.logGen < 3 {
		t.Fatalf("the mirror compacted %d times; it must compact", dry.logGen-1)
	}
	total := count.Load()
	for target := int64(1); target <= total; target++ {
		fsys := vfs.NewMem()
		s, err := Open(fsys, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		crashed := vfstest.CrashAt(fsys, target)
		done := 0 // ops whose Sync returned
		for _, op := range flat {
			tk, err := s.Mirror(op)
			if err == nil {
				err = s.Sync(tk)
			}
			if err != nil {
				break
			}
			done++
		}
		fsys.InjectError(nil)
		s.Close()
		if crashed() == nil {
			t.Fatalf("operation %d: no crash", target)
		}
		r, err := Open(crashed(), dir, opts)
		if err != nil {
			t.Fatalf("crash at operation %d: reopen: %v", target, err)
		}
		got := dump(r)
		if got != states[done] && (done+1 >= len(states) || got != states[done+1]) {
			t.Fatalf("crash at operation %d after %d ops: reopened\n%s\nwant\n%s", target, done, got, states[done])
		}
		for _, op := range flat[done:] {
			tk, err := r.Mirror(op)
			if err != nil || r.Sync(tk) != nil {
				t.Fatalf("crash at operation %d: re-apply: %v", target, err)
			}
		}
		if got := dump(r); got != want {
			t.Fatalf("crash at operation %d: after re-applying\n%s\nwant\n%s", target, got, want)
		}
		r.Close()
	}
}

// TestMirrorRefusesBadOps: an op that does not decode changes nothing.
func TestMirrorRefusesBadOps(t *testing.T) {
	s := mustOpen(t, vfs.NewMem(), Options{})
	good := encodeOp(&change{key: kA, cursor: 4, put: []Entry{{Offset: 2, Until: 9, Attempt: 1, Gen: 3}}}, 4)
	for _, bad := range [][]byte{nil, good[:5], good[:len(good)-1], append([]byte{2}, good[1:]...), append(append([]byte{}, good...), 0)} {
		if _, err := s.Mirror(bad); err == nil {
			t.Fatalf("op %x taken", bad)
		}
	}
	if got := dump(s); got != "" {
		t.Fatalf("bad ops changed the state:\n%s", got)
	}
	if _, err := s.Mirror(good); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeOp: the op decoder never panics, allocates no more than its
// input implies, and what it accepts encodes back to the same bytes.
func FuzzDecodeOp(f *testing.F) {
	f.Add(encodeOp(&change{key: kA, cursor: 5, put: []Entry{{Offset: 4, Until: 9, Attempt: 1, Gen: 2}}, del: []int64{3}}, 7))
	f.Add(encodeOp(&change{key: Key{Group: "group", Topic: "topic", QueueID: 3}, cursor: cursorForget}, 1))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, gen, err := decodeOp(b)
		if err != nil {
			return
		}
		if len(c.put)*entryBytes+len(c.del)*8 > len(b) {
			t.Fatalf("%d bytes decoded to %d entries and %d offsets", len(b), len(c.put), len(c.del))
		}
		if again := encodeOp(&c, gen); string(again) != string(b) {
			t.Fatalf("op %x re-encodes to %x", b, again)
		}
	})
}
