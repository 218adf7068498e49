package pop

import (
	"errors"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestResetQueueMovesTheCursorAndForgetsInFlight: a reset of a known
// queue sets its cursor (back or forward), drops what is in flight (its
// handles no longer acknowledge anything), leaves other queues alone,
// and survives a reopen; an unknown queue stays unknown.
func TestResetQueueMovesTheCursorAndForgetsInFlight(t *testing.T) {
	fsys := vfs.NewMem()
	s, err := Open(fsys, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kB := Key{Group: "g", Topic: "t", QueueID: 1}
	got := popNew(t, s, kA, 3, t0, time.Minute)
	popNew(t, s, kB, 2, t0, time.Minute)
	if n := s.InFlight("g"); n != 5 {
		t.Fatalf("in flight %d, want 5", n)
	}

	tk, ok, err := s.ResetQueue(kA, 0)
	if err != nil || !ok {
		t.Fatalf("reset: ok %v err %v", ok, err)
	}
	if err := s.Sync(tk); err != nil {
		t.Fatal(err)
	}
	v := s.Peek(kA, t0.Add(time.Hour), false, 32)
	if !v.Known || v.Cursor != 0 || len(v.Expired) != 0 {
		t.Fatalf("after the reset: %+v, want cursor 0 and nothing in flight", v)
	}
	if low, _ := s.Low(kA); low != 0 {
		t.Fatalf("low %d after the reset, want 0", low)
	}
	if n := s.InFlight("g"); n != 2 {
		t.Fatalf("in flight %d after the reset, want queue 1's 2", n)
	}
	if _, _, err := s.Ack("g", "t", HandleOf(kA, got[0]), t0.Add(time.Second)); err == nil {
		t.Fatal("a handle issued before the reset still acknowledges")
	}
	if v := s.Peek(kB, t0, false, 32); v.Cursor != 2 {
		t.Fatalf("queue 1 cursor %d, want 2 (not reset)", v.Cursor)
	}
	// Forward too.
	if tk, _, err = s.ResetQueue(kA, 7); err != nil || s.Sync(tk) != nil {
		t.Fatalf("reset forward: %v", err)
	}
	if _, ok, err := s.ResetQueue(Key{Group: "g", Topic: "t", QueueID: 9}, 4); ok || err != nil {
		t.Fatalf("reset of an unknown queue: ok %v err %v, want false and nil", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, fsys, Options{})
	if v := s.Peek(kA, t0, false, 32); !v.Known || v.Cursor != 7 || len(v.Expired) != 0 {
		t.Fatalf("after a reopen: %+v, want cursor 7", v)
	}
	if v := s.Peek(Key{Group: "g", Topic: "t", QueueID: 9}, t0, false, 32); v.Known {
		t.Fatal("the reset of an unknown queue created it")
	}
	if n := s.InFlight("g"); n != 2 {
		t.Fatalf("in flight %d after a reopen, want 2", n)
	}
	if _, _, err := s.ResetQueue(kA, -1); err == nil {
		t.Fatal("a negative cursor was accepted")
	}
	s.Close()
	if _, _, err := s.ResetQueue(kA, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("reset after close: %v, want ErrClosed", err)
	}
}
