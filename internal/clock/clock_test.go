package clock

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestManualRunsTimersInOrderDuringAdvance(t *testing.T) {
	c := NewManual(time.Unix(100, 0))
	var got []string
	c.AfterFunc(3*time.Second, func() { got = append(got, "c") })
	c.AfterFunc(time.Second, func() {
		got = append(got, "a")
		// A timer set by a timer runs in the same Advance when due.
		c.AfterFunc(time.Second, func() { got = append(got, "b") })
	})
	stopped := c.AfterFunc(2500*time.Millisecond, func() { got = append(got, "never") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	c.Advance(2 * time.Second)
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("after 2s ran %v, want [a b]", got)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d timers pending, want 1", c.Pending())
	}
	c.Advance(time.Second)
	if len(got) != 3 || got[2] != "c" || !c.Now().Equal(time.Unix(103, 0)) {
		t.Fatalf("ran %v at %v", got, c.Now())
	}
}

func TestManualTimeSeenByATimerIsItsDueTime(t *testing.T) {
	c := NewManual(time.Unix(0, 0))
	var at time.Time
	c.AfterFunc(time.Minute, func() { at = c.Now() })
	c.Advance(time.Hour)
	if !at.Equal(time.Unix(60, 0)) || !c.Now().Equal(time.Unix(3600, 0)) {
		t.Fatalf("timer saw %v, clock at %v", at, c.Now())
	}
	c.Set(time.Unix(10, 0)) // never backwards
	if !c.Now().Equal(time.Unix(3600, 0)) {
		t.Fatalf("Set moved the clock backwards to %v", c.Now())
	}
}

func TestRealClockFires(t *testing.T) {
	done := make(chan struct{})
	Real.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if Real.Now().IsZero() {
		t.Fatal("zero time")
	}
}

// TestSleep: Sleep returns nil once the clock passed d, and ctx's error
// when ctx ends first, stopping its timer.
func TestSleep(t *testing.T) {
	c := NewManual(time.Unix(100, 0))
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), c, time.Second) }()
	for c.Pending() == 0 {
		runtime.Gosched()
	}
	c.Advance(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v before its time", err)
	default:
	}
	c.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("Sleep after its time: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, c, time.Second) }()
	for c.Pending() == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Sleep with ctx cancelled: %v, want context.Canceled", err)
	}
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d timers pending after a cancelled Sleep, want 0", n)
	}
}
