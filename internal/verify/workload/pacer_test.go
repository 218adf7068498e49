package workload

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// TestPacerSpacesSends: at 10 sends/s the second send waits 100 ms on the
// injected clock, and a producer that fell behind does not burst.
func TestPacerSpacesSends(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	p := &pacer{env: &Env{Clock: clk}, rate: 10}
	ctx := context.Background()
	if !p.wait(ctx) {
		t.Fatal("the first send waited")
	}
	done := make(chan bool, 1)
	go func() { done <- p.wait(ctx) }()
	await(t, "the second send's timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(99 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("the second send went before 100 ms")
	default:
	}
	clk.Advance(time.Millisecond)
	if !<-done {
		t.Fatal("wait reported an ended ctx")
	}
	clk.Advance(time.Second) // the producer was slow: a second without sends
	if !p.wait(ctx) {        // goes at once (a timer would block here)
		t.Fatal("wait reported an ended ctx")
	}
	go func() { done <- p.wait(ctx) }() // spaced again: no burst of ten
	await(t, "the paced send's timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(100 * time.Millisecond)
	<-done
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if p.wait(cctx) {
		t.Fatal("wait on an ended ctx went on")
	}
}
