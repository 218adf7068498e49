package pop

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
	"github.com/petrelmq/petrel/internal/vfs/vfstest"
)

// dump renders the whole state (cursor and in-flight entries per queue) in
// a stable order.
func dump(s *Store) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	for k, q := range s.queues {
		line := fmt.Sprintf("%s/%s/%d cursor=%d", k.Group, k.Topic, k.QueueID, q.cursor)
		for _, e := range q.entries() {
			line += fmt.Sprintf(" %+v", e)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// crashScript runs a fixed sequence of claims, acks and changes over two
// queues, calling step before each change. It ends at the first failed
// Sync.
func crashScript(t *testing.T, s *Store, step func()) {
	now := t0
	keys := []Key{kA, {Group: "g", Topic: "t", QueueID: 1}}
	var held []Entry // in flight on kA
	for i := range 24 {
		k := keys[i%2]
		now = now.Add(time.Second)
		step()
		from := s.Peek(k, now, false, 0).Cursor
		got, tk, err := s.Claim(Claim{Key: k, From: from, To: from + 3, New: []int64{from, from + 2}, Until: now.Add(time.Hour)})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if s.Sync(tk) != nil {
			return
		}
		if k == kA {
			held = append(held, got[1])
		}
		step()
		_, tk, err = s.Ack(k.Group, k.Topic, HandleOf(k, got[0]), now)
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if s.Sync(tk) != nil {
			return
		}
		if i%3 == 2 {
			step()
			_, ne, tk, err := s.Change(kA.Group, kA.Topic, HandleOf(kA, held[0]), now.Add(2*time.Hour), now)
			if err != nil {
				t.Fatalf("change %d: %v", i, err)
			}
			if s.Sync(tk) != nil {
				return
			}
			held[0] = ne
		}
	}
	step()
}

// TestCrashAtEveryStepKeepsSyncedState crashes the disk at each file
// operation of a run that compacts several times (log writes and syncs,
// snapshot write, rename, new log, removal of the old one, directory
// syncs): reopening gives the state after the last change whose Sync
// returned, or after the change whose sync was under way, and the
// reopened store takes changes and keeps them across another restart.
func TestCrashAtEveryStepKeepsSyncedState(t *testing.T) {
	opts := Options{CompactBytes: 300}
	// A dry run records the state before each change and counts the
	// operations.
	fsys := vfs.NewMem()
	s := mustOpen(t, fsys, opts)
	var ops atomic.Int64
	fsys.InjectError(func(vfs.Op, string) error { ops.Add(1); return nil })
	var states []string
	crashScript(t, s, func() { states = append(states, dump(s)) })
	fsys.InjectError(nil)
	if s.logGen < 4 {
		t.Fatalf("the script compacted %d times; it must compact several times", s.logGen-1)
	}
	total := ops.Load()
	s.Close()

	for target := int64(1); target <= total; target++ {
		fsys := vfs.NewMem()
		s, err := Open(fsys, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		crashed := vfstest.CrashAt(fsys, target)
		steps := 0
		crashScript(t, s, func() { steps++ })
		fsys.InjectError(nil)
		s.Close()
		if crashed() == nil || steps == 0 || steps >= len(states) {
			t.Fatalf("operation %d: crashed %v after %d of %d steps", target, crashed() != nil, steps, len(states))
		}
		r, err := Open(crashed(), dir, opts)
		if err != nil {
			t.Fatalf("crash at operation %d: reopen: %v", target, err)
		}
		// The change after step steps was under way: its record may or
		// may not have reached the disk.
		if got := dump(r); got != states[steps-1] && got != states[steps] {
			t.Fatalf("crash at operation %d: reopened state\n%s\nwant the last synced state\n%s\nor the next one\n%s", target, got, states[steps-1], states[steps])
		}
		popNew(t, r, kA, 1, t0.Add(time.Hour), time.Minute)
		after := dump(r)
		r.Close()
		r2, err := Open(crashed(), dir, opts)
		if err != nil {
			t.Fatalf("crash at operation %d: second reopen: %v", target, err)
		}
		if again := dump(r2); again != after {
			t.Fatalf("crash at operation %d: state after a restart\n%s\nwant\n%s", target, again, after)
		}
		r2.Close()
	}
}
