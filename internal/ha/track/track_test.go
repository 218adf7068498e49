package track

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/logtest"
)

var t0 = time.Unix(1_000_000, 0)

type fixture struct {
	t    *testing.T
	clk  *clock.Manual
	tr   *Tracker
	logs *logtest.Buffer
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clock.NewManual(t0), logs: &logtest.Buffer{}}
	f.tr = New(cfg, f.clk, slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", f.logs.String())
		}
	})
	return f
}

func (f *fixture) ack(id, written, durable int64) {
	f.t.Helper()
	if err := f.tr.SlaveProgress(id, written, durable); err != nil {
		f.t.Fatalf("SlaveProgress(%d, %d, %d): %v", id, written, durable, err)
	}
}

func (f *fixture) wantHW(want int64) {
	f.t.Helper()
	if got := f.tr.HW(); got != want {
		f.t.Fatalf("HW %d, want %d (stats %+v)", got, want, f.tr.Stats())
	}
}

func (f *fixture) wantInSync(want ...int64) {
	f.t.Helper()
	if want == nil {
		want = []int64{}
	}
	if got := f.tr.InSync(); !slices.Equal(got, want) {
		f.t.Fatalf("in sync %v, want %v (stats %+v)", got, want, f.tr.Stats())
	}
}

// canceled is a context that has already ended: Wait then answers from the
// state alone.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func cfgWith(k int, async bool) Config {
	c := DefaultConfig()
	c.SyncReplicas = k
	c.AsyncFlush = async
	c.MaxLagBytes = 1000
	return c
}

type ack struct{ id, written, durable int64 }

// TestHWArithmetic: HW = min(master contribution, SyncReplicas-th highest
// in-sync slave contribution), on offsets above 2^31 and near MaxInt64.
func TestHWArithmetic(t *testing.T) {
	cases := []struct {
		name         string
		k            int
		async        bool
		leo, durable int64 // master, above the base it started with
		slaves       []ack // above the base
		wantHW       int64 // above the base; ignored when stuck
		stuck        bool  // HW stays 0: too few in sync
		wantInSync   []int64
	}{
		{name: "k0 no slaves: master durable", k: 0, leo: 1000, durable: 900, wantHW: 900},
		{name: "k0 async flush: master LEO", k: 0, async: true, leo: 1000, durable: 900, wantHW: 1000},
		{name: "k0 ignores slaves", k: 0, leo: 1000, durable: 900, slaves: []ack{{1, 600, 50}}, wantHW: 900, wantInSync: []int64{1}},
		{name: "k1 no slave", k: 1, leo: 1000, durable: 900, stuck: true},
		{name: "k1 slave durable counts", k: 1, leo: 1000, durable: 900, slaves: []ack{{1, 800, 700}}, wantHW: 700, wantInSync: []int64{1}},
		{name: "k1 async flush: slave written counts", k: 1, async: true, leo: 1000, durable: 900, slaves: []ack{{1, 800, 700}}, wantHW: 800, wantInSync: []int64{1}},
		{name: "k1 master durable bounds", k: 1, leo: 1000, durable: 900, slaves: []ack{{1, 1000, 1000}}, wantHW: 900, wantInSync: []int64{1}},
		{name: "k1 async master LEO bounds", k: 1, async: true, leo: 1000, durable: 0, slaves: []ack{{1, 1000, 10}}, wantHW: 1000, wantInSync: []int64{1}},
		{name: "k1 two slaves: the best", k: 1, leo: 1000, durable: 1000, slaves: []ack{{1, 700, 600}, {2, 500, 500}}, wantHW: 600, wantInSync: []int64{1, 2}},
		{name: "k2 two slaves: the second best", k: 2, leo: 1000, durable: 1000, slaves: []ack{{1, 700, 600}, {2, 500, 500}}, wantHW: 500, wantInSync: []int64{1, 2}},
		{name: "k2 one slave", k: 2, leo: 1000, durable: 1000, slaves: []ack{{1, 700, 600}}, stuck: true, wantInSync: []int64{1}},
		{name: "k2 three slaves", k: 2, leo: 1000, durable: 1000, slaves: []ack{{1, 300, 300}, {3, 900, 800}, {2, 600, 600}}, wantHW: 600, wantInSync: []int64{1, 2, 3}},
		{name: "k3 three slaves: the slowest", k: 3, leo: 1000, durable: 1000, slaves: []ack{{1, 300, 300}, {3, 900, 800}, {2, 600, 600}}, wantHW: 300, wantInSync: []int64{1, 2, 3}},
		{name: "k1 three slaves async", k: 1, async: true, leo: 1000, durable: 0, slaves: []ack{{1, 300, 0}, {2, 900, 0}, {3, 600, 0}}, wantHW: 900, wantInSync: []int64{1, 2, 3}},
		{name: "a lag of half MaxLagBytes joins", k: 1, leo: 5000, durable: 5000, slaves: []ack{{1, 4000, 4000}}, wantHW: 4000, wantInSync: []int64{1}},
		{name: "a lag above half MaxLagBytes does not join", k: 1, leo: 5000, durable: 5000, slaves: []ack{{1, 3999, 3999}}, stuck: true},
		{name: "k2 a byte-lagging slave does not count", k: 2, leo: 5000, durable: 5000, slaves: []ack{{1, 4500, 4500}, {2, 3000, 3000}}, stuck: true, wantInSync: []int64{1}},
		{name: "k1 the best in-sync, not the best lagging", k: 1, leo: 5000, durable: 5000, slaves: []ack{{1, 4500, 4100}, {2, 3000, 3000}}, wantHW: 4100, wantInSync: []int64{1}},
		{name: "below the start LEO is out by time", k: 1, leo: 10, durable: 10, slaves: []ack{{1, -1, -1}}, stuck: true},
	}
	bases := []int64{1<<31 + 7, 1<<33 + 12345, math.MaxInt64 - 1<<20}
	for _, c := range cases {
		for _, base := range bases {
			t.Run(c.name, func(t *testing.T) {
				cfg := cfgWith(c.k, c.async)
				cfg.MaxLagBytes = 2000
				f := newFixture(t, cfg)
				f.tr.MasterProgress(base, base)
				f.clk.Advance(time.Second)
				f.tr.MasterProgress(base+c.leo, base+c.durable)
				for _, s := range c.slaves {
					f.ack(s.id, base+s.written, base+s.durable)
				}
				want := base + c.wantHW
				if c.stuck {
					want = 0
				}
				f.wantHW(want)
				f.wantInSync(c.wantInSync...)
				if err := f.tr.Wait(canceled(), want); err != nil {
					t.Fatalf("Wait(HW) = %v, want nil", err)
				}
				wantErr := ErrTimeout
				if c.stuck {
					wantErr = ErrNotEnoughReplicas
				}
				if err := f.tr.Wait(canceled(), want+1); err != wantErr {
					t.Fatalf("Wait(HW+1) = %v, want %v", err, wantErr)
				}
				st := f.tr.Stats()
				if st.HW != want || st.MasterLEO != base+c.leo || st.InSync != len(c.wantInSync) || len(st.Slaves) != len(c.slaves) {
					t.Fatalf("stats %+v", st)
				}
				for _, s := range st.Slaves {
					if s.LagBytes != st.MasterLEO-s.Written {
						t.Fatalf("slave %d lag %d, want %d", s.ID, s.LagBytes, st.MasterLEO-s.Written)
					}
				}
			})
		}
	}
}

func TestHWNeverMovesBackWhenSlavesLeave(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(0, 0)
	f.tr.MasterProgress(900, 900)
	f.ack(1, 900, 800)
	f.ack(2, 500, 500)
	f.wantHW(800)
	f.tr.SlaveGone(1)
	f.wantHW(800) // slave 2's 500 would be lower: committed stays committed
	f.wantInSync(2)
	f.ack(2, 850, 850)
	f.wantHW(850)
	f.tr.SlaveGone(2)
	f.wantHW(850)
	f.wantInSync()
	if err := f.tr.Wait(canceled(), 851); err != ErrNotEnoughReplicas {
		t.Fatalf("Wait after every slave left = %v", err)
	}
	if err := f.tr.Wait(canceled(), 850); err != nil {
		t.Fatalf("Wait of a committed offset = %v", err)
	}
}

func TestSlavesJoiningAndLeaving(t *testing.T) {
	base := int64(3 << 31)
	f := newFixture(t, cfgWith(2, false))
	f.tr.MasterProgress(base, base)
	f.tr.MasterProgress(base+600, base+600)
	f.ack(1, base+100, base+100)
	f.wantHW(0) // one of two
	f.ack(2, base+200, base+200)
	f.wantHW(base + 100)
	f.ack(3, base+300, base+300)
	f.wantHW(base + 200)
	f.wantInSync(1, 2, 3)

	f.tr.SlaveGone(3)
	f.wantInSync(1, 2)
	f.wantHW(base + 200)
	f.ack(1, base+400, base+400)
	f.wantHW(base + 200) // 2 holds 200
	f.ack(2, base+500, base+450)
	f.wantHW(base + 400)

	f.tr.SlaveGone(2)
	f.tr.SlaveGone(2) // twice: nothing
	f.tr.SlaveGone(9) // unknown: nothing
	f.wantInSync(1)
	f.ack(1, base+600, base+600)
	f.wantHW(base + 400) // strict: one of two stops the HW

	// Slave 3 comes back on a new connection from below its last ack (a
	// new session), catches up, and the HW moves again.
	f.ack(3, base+250, base+250)
	f.wantInSync(1, 3)
	f.wantHW(base + 400)
	f.ack(3, base+590, base+580)
	f.wantHW(base + 580)

	st := f.tr.Stats()
	if st.CatchUps != 4 || st.FallOuts != 2 {
		t.Fatalf("catch-ups %d fall-outs %d, want 4 and 2", st.CatchUps, st.FallOuts)
	}
	if n := len(f.logs.Lines(`msg="slave out of sync"`)); n != 2 {
		t.Fatalf("%d fall-out lines, want 2:\n%s", n, f.logs)
	}
	if got := f.logs.Lines("reason=gone"); len(got) != 2 || !strings.Contains(got[0], "slave_id=3") {
		t.Fatalf("gone lines %q", got)
	}
}

func TestAsyncFlushCountsWrittenEnds(t *testing.T) {
	for _, async := range []bool{false, true} {
		f := newFixture(t, cfgWith(1, async))
		f.tr.MasterProgress(0, 0)
		f.tr.MasterProgress(1000, 400)
		f.ack(1, 800, 200)
		want := int64(200) // sync flush: what is on the disks (pitfall 6)
		if async {
			want = 800
		}
		f.wantHW(want)
		f.tr.MasterProgress(1000, 1000)
		f.ack(1, 1000, 300)
		if async {
			want = 1000
		} else {
			want = 300
		}
		f.wantHW(want)
	}
}

// TestRefusedAcks: acks above the master's LEO or moving backwards change
// nothing (replication.md pitfall 5).
func TestRefusedAcks(t *testing.T) {
	base := int64(1<<40 + 3)
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(base, base)
	f.tr.MasterProgress(base+1000, base+1000)
	f.ack(1, base+500, base+400)
	f.wantHW(base + 400)
	before := f.tr.Stats()
	bad := []struct {
		name             string
		id, written, dur int64
		want             error
	}{
		{"written above the LEO", 1, base + 1001, base + 400, ErrBadAck},
		{"durable above the LEO", 1, base + 1001, base + 1001, ErrBadAck},
		{"durable above written", 1, base + 600, base + 601, ErrBadAck},
		{"written backwards", 1, base + 499, base + 400, ErrBadAck},
		{"durable backwards", 1, base + 500, base + 399, ErrBadAck},
		{"negative", 2, -1, -1, ErrBadAck},
		{"id 0 (the master)", 0, base, base, ErrBadAck},
		{"near MaxInt64", 1, math.MaxInt64, math.MaxInt64, ErrBadAck},
	}
	for i, b := range bad {
		err := f.tr.SlaveProgress(b.id, b.written, b.dur)
		if !errors.Is(err, b.want) {
			t.Fatalf("%s: err %v, want %v", b.name, err, b.want)
		}
		st := f.tr.Stats()
		if st.HW != before.HW || !slices.Equal(st.Slaves, before.Slaves) || st.RefusedAcks != uint64(i+1) {
			t.Fatalf("%s: state changed: %+v, was %+v", b.name, st, before)
		}
	}
	f.ack(1, base+500, base+400) // the same ack again is fine
	f.ack(1, base+1000, base+1000)
	f.wantHW(base + 1000)
}

func TestMaxSlavesBoundsTheTable(t *testing.T) {
	cfg := cfgWith(1, false)
	cfg.MaxSlaves = 2
	f := newFixture(t, cfg)
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	f.ack(2, 0, 0)
	if err := f.tr.SlaveProgress(3, 0, 0); !errors.Is(err, ErrTooManySlaves) || !strings.Contains(err.Error(), "MaxSlaves 2") {
		t.Fatalf("third slave: %v", err)
	}
	f.tr.SlaveGone(1)
	f.ack(3, 0, 0)
	f.wantInSync(2, 3)
}

func TestMasterProgressIsMonotonicAndDurableCapped(t *testing.T) {
	f := newFixture(t, cfgWith(0, false))
	f.tr.MasterProgress(100, 100)
	f.tr.MasterProgress(200, 500) // durable above the LEO: capped
	f.wantHW(200)
	f.tr.MasterProgress(150, 150) // backwards: ignored
	f.wantHW(200)
	if st := f.tr.Stats(); st.MasterLEO != 200 || st.MasterDurable != 200 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLagBytesFallOutAndCatchUp(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	f.wantInSync(1)
	f.tr.MasterProgress(1000, 1000)
	f.wantInSync(1) // exactly MaxLagBytes
	f.tr.MasterProgress(1001, 1001)
	f.wantInSync()
	if got := f.logs.Lines("reason=lag_bytes"); len(got) != 1 || !strings.Contains(got[0], "slave_id=1") ||
		!strings.Contains(got[0], "lag_bytes=1001") || !strings.Contains(got[0], "master_leo=1001") {
		t.Fatalf("fall-out line %q\n%s", got, f.logs)
	}
	if err := f.tr.Wait(canceled(), 1); err != ErrNotEnoughReplicas {
		t.Fatalf("Wait = %v", err)
	}
	f.ack(1, 500, 500)
	f.wantInSync() // hysteresis: back only within half the bound
	f.ack(1, 501, 501)
	f.wantInSync(1)
	f.wantHW(501)
	if got := f.logs.Lines(`msg="slave in sync"`); len(got) != 2 {
		t.Fatalf("in-sync lines %q", got)
	}
	if st := f.tr.Stats(); st.FallOuts != 1 || st.CatchUps != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLagTimeOnTheManualClock: a slave that stops fetching while the
// master writes falls out once the master has held a byte it lacks for
// MaxLagTime, re-evaluated by Tick.
func TestLagTimeOnTheManualClock(t *testing.T) {
	cfg := cfgWith(1, false)
	cfg.MaxLagBytes = 1 << 30
	f := newFixture(t, cfg)
	base := int64(5 << 31)
	f.tr.MasterProgress(base, base)
	f.ack(1, base, base)
	f.ack(2, base, base)
	f.clk.Advance(time.Minute) // idle: no lag however long
	f.tr.Tick()
	f.wantInSync(1, 2)

	f.tr.MasterProgress(base+10, base+10) // at t0+1m: the slaves lack a byte from now
	f.clk.Advance(cfg.MaxLagTime - time.Nanosecond)
	f.ack(2, base+10, base+10) // slave 2 keeps up
	f.tr.Tick()
	f.wantInSync(1, 2)
	st := f.tr.Stats()
	if st.Slaves[0].LagTime != cfg.MaxLagTime-time.Nanosecond || st.Slaves[1].LagTime != 0 {
		t.Fatalf("lag times %v %v", st.Slaves[0].LagTime, st.Slaves[1].LagTime)
	}
	f.clk.Advance(time.Nanosecond)
	f.wantInSync(1, 2) // nothing re-evaluates without Tick or progress
	f.tr.Tick()
	f.wantInSync(2)
	if got := f.logs.Lines("reason=lag_time"); len(got) != 1 || !strings.Contains(got[0], "slave_id=1") ||
		!strings.Contains(got[0], "lag_time=10s") {
		t.Fatalf("fall-out line %q\n%s", got, f.logs)
	}
	// Slave 1 catches up to a LEO the master reached less than MaxLagTime
	// ago, though not the current one: in sync again.
	f.tr.MasterProgress(base+20, base+20)
	f.clk.Advance(time.Second)
	f.tr.MasterProgress(base+30, base+30) // the slaves lack a byte from now
	f.clk.Advance(time.Second)
	f.ack(1, base+20, base+20)
	f.wantInSync(1, 2)
	if lt := f.tr.Stats().Slaves[0].LagTime; lt != time.Second {
		t.Fatalf("lag time %v, want 1s", lt)
	}
	f.clk.Advance(cfg.MaxLagTime - time.Second)
	f.tr.Tick()
	f.wantInSync() // both lack base+30 since MaxLagTime
}

// TestLagTimeIsBoundedByOneGranule: under steady writes (1 byte per ms,
// a MasterProgress every 2 ms for 25 s: 12.5k samples offered to a ring of
// 64) the time test still errs
// by at most MaxLagTime/32, towards staying in sync.
func TestLagTimeIsBoundedByOneGranule(t *testing.T) {
	cfg := cfgWith(1, false)
	cfg.MaxLagBytes = 1 << 40
	f := newFixture(t, cfg)
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	f.ack(2, 0, 0)
	g := cfg.MaxLagTime / 32
	nearMs := (cfg.MaxLagTime - 3*time.Millisecond).Milliseconds()    // slave 1 holds the LEO of < MaxLagTime ago, also between step and ack
	farMs := (cfg.MaxLagTime + g + 4*time.Millisecond).Milliseconds() // slave 2 beyond one granule more
	var leo int64
	for ms := int64(2); ms <= 25_000; ms += 2 {
		f.clk.Advance(2 * time.Millisecond)
		leo = ms
		f.tr.MasterProgress(leo, leo)
		f.ack(1, max(0, leo-nearMs), max(0, leo-nearMs))
		f.ack(2, max(0, leo-farMs), max(0, leo-farMs))
		if ms > farMs+2 {
			if got := f.tr.InSync(); !slices.Equal(got, []int64{1}) {
				t.Fatalf("at %d ms in sync %v, want [1] (stats %+v)", ms, got, f.tr.Stats())
			}
		}
	}
	if st := f.tr.Stats(); st.FallOuts != 1 || st.CatchUps != 2 {
		t.Fatalf("flapped: %+v", st)
	}
	if lt := f.tr.Stats().Slaves[1].LagTime; lt < cfg.MaxLagTime || lt > time.Duration(farMs)*time.Millisecond {
		t.Fatalf("slave 2 lag time %v, want within [%v, %v]", lt, cfg.MaxLagTime, time.Duration(farMs)*time.Millisecond)
	}
	f.ack(2, leo, leo)
	f.wantInSync(1, 2)
}

// TestStartLogCountsAsHeldLongAgo: a restarted master's log was there
// before; a slave behind it is out until it holds it.
func TestStartLogCountsAsHeldLongAgo(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	start := int64(1<<31 + 100)
	f.tr.MasterProgress(start, start)
	f.ack(1, start-10, start-10)
	f.wantInSync()
	f.ack(1, start, start)
	f.wantInSync(1)
	f.wantHW(start)
}

func TestNewValidatesConfig(t *testing.T) {
	for _, c := range []Config{{SyncReplicas: -1}, {MaxLagBytes: -1}, {MaxLagTime: -time.Second}, {MaxSlaves: -1}, {SyncReplicas: 3, MaxSlaves: 2}} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "track: ") {
			t.Fatalf("%+v: Validate = %v", c, err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%+v: New did not panic", c)
				}
			}()
			New(c, clock.NewManual(t0), nil)
		}()
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	got := New(Config{}, clock.NewManual(t0), nil).Config()
	if got.MaxLagBytes != DefaultMaxLagBytes || got.MaxLagTime != DefaultMaxLagTime || got.MaxSlaves != DefaultMaxSlaves || got.SyncReplicas != 0 {
		t.Fatalf("defaults %+v", got)
	}
	if d := DefaultConfig(); d.SyncReplicas != 1 || d.Validate() != nil {
		t.Fatalf("DefaultConfig %+v", d)
	}
}

// parked waits until n Waits are parked in tr.
func parked(t *testing.T, tr *Tracker, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		got := tr.waiters.Len()
		tr.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters parked, want %d", got, n)
		}
		runtime.Gosched()
	}
}

func TestRestoreRaisesTheHWUpToTheMaster(t *testing.T) {
	base := int64(1<<31 + 9)
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(base+1000, base+900)
	f.ack(1, base+1000, base+100)
	f.wantHW(base + 100)
	w := goWait(context.Background(), f.tr, base+500)
	parked(t, f.tr, 1)
	f.tr.Restore(base + 5000) // above what the master holds: capped
	f.wantHW(base + 900)
	if r := recv(t, w); r.err != nil {
		t.Fatalf("Wait = %v", r.err)
	}
	f.tr.Restore(base) // lower: ignored
	f.wantHW(base + 900)
	f.ack(1, base+1000, base+1000)
	f.wantHW(base + 900) // the master's durable end bounds it
	f.tr.MasterProgress(base+1000, base+1000)
	f.wantHW(base + 1000)
}

func TestManySlavesFallOutAtOnceAllLogged(t *testing.T) {
	f := newFixture(t, cfgWith(3, false))
	f.tr.MasterProgress(0, 0)
	for id := int64(1); id <= 6; id++ {
		f.ack(id, 0, 0)
	}
	f.wantInSync(1, 2, 3, 4, 5, 6)
	f.tr.MasterProgress(5000, 5000) // every slave beyond MaxLagBytes
	f.wantInSync()
	if got := f.logs.Lines("reason=lag_bytes"); len(got) != 6 {
		t.Fatalf("%d fall-out lines, want 6:\n%s", len(got), f.logs)
	}
	if st := f.tr.Stats(); st.FallOuts != 6 || st.InSync != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLagTimeBeyondTheRing: a slave behind for longer than the ring's
// history reports at least that history, growing, not a made-up small lag.
func TestLagTimeBeyondTheRing(t *testing.T) {
	cfg := cfgWith(1, false)
	cfg.MaxLagBytes = 1 << 40
	f := newFixture(t, cfg)
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	var leo int64
	for range 600 { // a minute, a write every 100 ms
		f.clk.Advance(100 * time.Millisecond)
		leo += 1000
		f.tr.MasterProgress(leo, leo)
	}
	lag := f.tr.Stats().Slaves[0].LagTime
	if lag != time.Minute-100*time.Millisecond {
		t.Fatalf("lag time %v, want 59.9s", lag)
	}
	f.ack(1, 1000, 1000) // still far behind: beyond the ring's history
	if got := f.tr.Stats().Slaves[0].LagTime; got < 2*cfg.MaxLagTime || got > lag {
		t.Fatalf("lag time %v, want within [%v, %v]", got, 2*cfg.MaxLagTime, lag)
	}
	f.wantInSync()
	f.ack(1, leo-500, leo-500) // within the last write: exact again
	if got := f.tr.Stats().Slaves[0].LagTime; got != 0 {
		t.Fatalf("lag time %v, want 0 (the master wrote its last byte just now)", got)
	}
}

// TestLogKeysAreSnakeCase: the transition lines carry stable snake_case
// keys (STYLE.md §9).
func TestLogKeysAreSnakeCase(t *testing.T) {
	f := newFixture(t, cfgWith(1, false))
	f.tr.MasterProgress(0, 0)
	f.ack(1, 0, 0)
	f.tr.MasterProgress(5000, 5000)
	f.tr.SlaveGone(1)
	f.ack(1, 5000, 5000)
	lines := f.logs.Lines("component=ha/track")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), f.logs)
	}
	for _, l := range lines {
		for _, kv := range strings.Fields(l) {
			k, _, ok := strings.Cut(kv, "=")
			if !ok {
				continue // part of a quoted message
			}
			for _, r := range k {
				if (r < 'a' || r > 'z') && r != '_' {
					t.Fatalf("key %q in %q", k, l)
				}
			}
		}
	}
}

// TestSetSyncReplicasOnFirstSlave: a master that ran alone (0) requires a
// slave once one joins: the HW stops at what the master had until the slave
// holds more, and a parked wait is told there are too few slaves when the
// requirement rises above the in-sync count.
func TestSetSyncReplicasOnFirstSlave(t *testing.T) {
	base := int64(1<<31 + 7)
	f := newFixture(t, cfgWith(0, false))
	f.tr.MasterProgress(base+100, base+100)
	f.wantHW(base + 100)
	if err := f.tr.SetSyncReplicas(2); err != nil {
		t.Fatal(err)
	}
	f.tr.MasterProgress(base+200, base+200)
	f.wantHW(base + 100) // no slave in sync: stopped, never lowered
	if err := f.tr.Wait(context.Background(), base+200); err != ErrNotEnoughReplicas {
		t.Fatalf("Wait with no slave in sync = %v, want ErrNotEnoughReplicas", err)
	}
	if err := f.tr.SetSyncReplicas(1); err != nil {
		t.Fatal(err)
	}
	f.ack(1, base+200, base+150)
	f.wantHW(base + 150)
	if err := f.tr.SetSyncReplicas(-1); err == nil {
		t.Fatal("SetSyncReplicas(-1) accepted")
	}
}
