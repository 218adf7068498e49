package nemesis

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// armedClock is a Manual clock that tells the test each time Run arms a
// timer, so that the test advances the clock exactly when Run waits on it:
// no sleeping, no polling.
type armedClock struct {
	*clock.Manual
	armed chan time.Duration
}

func newArmedClock() *armedClock {
	return &armedClock{Manual: clock.NewManual(t0), armed: make(chan time.Duration, 16)}
}

func (c *armedClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	tm := c.Manual.AfterFunc(d, f)
	c.armed <- d
	return tm
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// expectWait fails the test unless Run next waits for d; then it lets d
// pass.
func (c *armedClock) expectWait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case got := <-c.armed:
		if got != d {
			t.Fatalf("Run waits %v, want %v", got, d)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a sync
		t.Fatalf("Run did not wait for %v", d)
	}
	c.Advance(d)
}

// call is one Inject or Heal the fake target saw.
type call struct {
	op     string // "inject" or "heal"
	e      Event
	at     time.Time
	ctxErr error
}

// fakeTarget records its calls and fails those the test asks it to.
type fakeTarget struct {
	clk        clock.Clock
	injectErrs map[int]error // by event At in seconds
	healErrs   map[int]error
	onInject   func(Event)

	mu    sync.Mutex
	calls []call
}

func (f *fakeTarget) record(op string, ctx context.Context, e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{op: op, e: e, at: f.clk.Now(), ctxErr: ctx.Err()})
}

func (f *fakeTarget) Inject(ctx context.Context, e Event) (string, error) {
	f.record("inject", ctx, e)
	if f.onInject != nil {
		f.onInject(e)
	}
	if err := f.injectErrs[int(e.At/time.Second)]; err != nil {
		return "", err
	}
	return "did " + string(e.Kind), nil
}

func (f *fakeTarget) Heal(ctx context.Context, e Event) (string, error) {
	f.record("heal", ctx, e)
	if err := f.healErrs[int(e.At/time.Second)]; err != nil {
		return "", err
	}
	return "undid " + string(e.Kind), nil
}

func (f *fakeTarget) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func newRec(clk clock.Clock) *history.Writer {
	w := history.NewWriter(io.Discard)
	w.Keep()
	w.SetClock(clk.Now)
	return w
}

// run starts Run in the background; the returned func waits for its
// result.
func run(ctx context.Context, plan []Event, tg Target, rec *history.Writer, clk clock.Clock) func(t *testing.T) error {
	res := make(chan error, 1)
	go func() { res <- Run(ctx, plan, tg, rec, clk) }()
	return func(t *testing.T) error {
		t.Helper()
		select {
		case err := <-res:
			return err
		case <-time.After(10 * time.Second): // a bound on a hang, not a sync
			t.Fatal("Run did not return")
			return nil
		}
	}
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestRunWritesFaultAndHealLinesAroundEachFault(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	tg := &fakeTarget{clk: clk}
	plan := []Event{
		{At: 3 * time.Second, Kind: Kill, Target: "broker-a-0"},
		{At: 6 * time.Second, Kind: Pause, Target: "broker-a-0", Hold: time.Second},
		{At: 9 * time.Second, Kind: Partition, Target: "client-1", Hold: 1500 * time.Millisecond},
	}
	wait := run(context.Background(), plan, tg, rec, clk)
	clk.expectWait(t, 3*time.Second) // to the kill; healed at once
	clk.expectWait(t, 3*time.Second) // to the pause
	clk.expectWait(t, time.Second)   // its hold
	clk.expectWait(t, 2*time.Second) // to the partition
	clk.expectWait(t, 1500*time.Millisecond)
	if err := wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	type want struct {
		f      history.Func
		kind   Kind
		target string
		time   time.Time
		value  string
	}
	wants := []want{
		{history.Fault, Kill, "broker-a-0", at(3 * time.Second), ""},
		{history.Heal, Kill, "broker-a-0", at(3 * time.Second), "did kill; undid kill"},
		{history.Fault, Pause, "broker-a-0", at(6 * time.Second), "hold 1s"},
		{history.Heal, Pause, "broker-a-0", at(7 * time.Second), "did pause; undid pause"},
		{history.Fault, Partition, "client-1", at(9 * time.Second), "hold 1.5s"},
		{history.Heal, Partition, "client-1", at(10500 * time.Millisecond), "did partition; undid partition"},
	}
	ops := rec.Ops()
	if len(ops) != len(wants) {
		t.Fatalf("%d lines, want %d: %+v", len(ops), len(wants), ops)
	}
	for i, w := range wants {
		op := ops[i]
		if op.Type != history.Info || op.F != w.f || op.Process != Process || op.Fault != string(w.kind) ||
			op.Target != w.target || !op.Time.Equal(w.time) || op.Value != w.value || op.Error != "" {
			t.Errorf("line %d = %+v, want %+v", i, op, w)
		}
	}
	calls := tg.seen()
	if len(calls) != 6 {
		t.Fatalf("calls %+v", calls)
	}
	for i, c := range calls {
		wantOp := []string{"inject", "heal"}[i%2]
		if c.op != wantOp || c.e != plan[i/2] || c.ctxErr != nil {
			t.Errorf("call %d = %+v, want %s of %v", i, c, wantOp, plan[i/2])
		}
	}
	if !calls[3].at.Equal(at(7 * time.Second)) {
		t.Errorf("pause healed at %v, want after its 1 s hold", calls[3].at)
	}
}

func TestRunStartsALateEventAtOnce(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	tg := &fakeTarget{clk: clk}
	// The first inject takes 5 s of the clock: the second event, due at
	// 4 s, starts as soon as the first is healed.
	tg.onInject = func(e Event) {
		if e.At == time.Second {
			clk.Advance(5 * time.Second)
		}
	}
	plan := []Event{{At: time.Second, Kind: Kill, Target: "a"}, {At: 4 * time.Second, Kind: Kill, Target: "a"}}
	wait := run(context.Background(), plan, tg, rec, clk)
	clk.expectWait(t, time.Second)
	if err := wait(t); err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	if len(ops) != 4 || !ops[2].Time.Equal(at(6*time.Second)) {
		t.Fatalf("lines %+v, want the second fault at 6 s", ops)
	}
}

func TestRunHealsTheActiveFaultWhenCancelled(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	tg := &fakeTarget{clk: clk}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plan := []Event{
		{At: time.Second, Kind: Pause, Target: "a", Hold: 2 * time.Second},
		{At: 4 * time.Second, Kind: Kill, Target: "a"},
	}
	wait := run(ctx, plan, tg, rec, clk)
	clk.expectWait(t, time.Second)
	select {
	case d := <-clk.armed: // Run holds the pause
		if d != 2*time.Second {
			t.Fatalf("hold %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not hold the pause")
	}
	cancel()
	if err := wait(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	calls := tg.seen()
	if len(calls) != 2 || calls[1].op != "heal" || calls[1].ctxErr != nil || !calls[1].at.Equal(at(time.Second)) {
		t.Fatalf("calls %+v, want the pause healed at once, with a live context, and no kill", calls)
	}
	ops := rec.Ops()
	if len(ops) != 2 || ops[1].F != history.Heal || !ops[1].Time.Equal(at(time.Second)) {
		t.Fatalf("lines %+v, want Fault and Heal of the pause", ops)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left armed", clk.Pending())
	}
}

func TestRunCancelledBeforeTheFirstEventDoesNothing(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	tg := &fakeTarget{clk: clk}
	ctx, cancel := context.WithCancel(context.Background())
	wait := run(ctx, []Event{{At: time.Second, Kind: Kill, Target: "a"}}, tg, rec, clk)
	<-clk.armed
	cancel()
	if err := wait(t); err != nil {
		t.Fatal(err)
	}
	if len(tg.seen()) != 0 || rec.Len() != 0 {
		t.Fatalf("calls %+v, lines %+v", tg.seen(), rec.Ops())
	}
}

func TestRunRecordsFailedInjectsAndHeals(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	tg := &fakeTarget{
		clk:        clk,
		injectErrs: map[int]error{1: errors.New("pid gone")},
		healErrs:   map[int]error{2: errors.New("not ready")},
	}
	plan := []Event{
		{At: time.Second, Kind: Pause, Target: "a", Hold: 500 * time.Millisecond},
		{At: 2 * time.Second, Kind: Kill, Target: "a"},
		{At: 3 * time.Second, Kind: Kill, Target: "a"},
	}
	wait := run(context.Background(), plan, tg, rec, clk)
	clk.expectWait(t, time.Second) // no hold after the failed inject
	clk.expectWait(t, time.Second)
	clk.expectWait(t, time.Second)
	err := wait(t)
	if err == nil || !strings.Contains(err.Error(), "not ready") || strings.Contains(err.Error(), "pid gone") {
		t.Fatalf("Run: %v, want the failed heal (only)", err)
	}
	calls := tg.seen()
	if len(calls) != 6 || calls[1].op != "heal" || calls[1].e != plan[0] {
		t.Fatalf("calls %+v, want a heal after the failed inject too", calls)
	}
	ops := rec.Ops()
	if len(ops) != 6 {
		t.Fatalf("lines %+v", ops)
	}
	if ops[1].Error != "inject: pid gone" || ops[1].Value != "undid pause" || !ops[1].Time.Equal(at(time.Second)) {
		t.Errorf("heal line of the failed inject: %+v", ops[1])
	}
	if ops[3].Error != "heal: not ready" || ops[3].Value != "did kill" {
		t.Errorf("heal line of the failed heal: %+v", ops[3])
	}
	if ops[5].Error != "" {
		t.Errorf("the last fault went fine: %+v", ops[5])
	}
}

func TestRunStopsWhenTheHistoryCannotBeWritten(t *testing.T) {
	clk := newArmedClock()
	rec := newRec(clk)
	_ = rec.Close()
	tg := &fakeTarget{clk: clk}
	wait := run(context.Background(), []Event{{At: time.Second, Kind: Kill, Target: "a"}}, tg, rec, clk)
	clk.expectWait(t, time.Second)
	if err := wait(t); err == nil {
		t.Fatal("Run succeeded without a history")
	}
	if len(tg.seen()) != 0 {
		t.Fatalf("a fault was injected that the history does not show: %+v", tg.seen())
	}
}
