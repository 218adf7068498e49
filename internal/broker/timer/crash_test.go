package timer

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// crashWorld drives a store with random adds, cancels, clock moves, Fire
// failures, checkpoints, clean restarts and crashes (MemFS CrashClone with
// random torn writes), replaying like the broker does: every operation
// with src >= Applied() after each Open. A model of the timers checks the
// contract.
type crashWorld struct {
	t    *testing.T
	seed int64
	r    *rand.Rand
	clk  *clock.Manual
	fsys *vfs.MemFS
	opts Options
	s    *Store

	ops      []crashOp // ops[src]
	armed    bool
	hooked   *vfs.MemFS // a crash taken inside the store, not yet switched to
	hookedAt string
	replayed int

	mu       sync.Mutex // guards what Fire touches
	fr       *rand.Rand
	failPct  int
	gen      int // store generation; a crash starts the next
	seq      int // event counter
	timers   map[uint64]*crashTimer
	ckptSeqs []int // seq of each successful explicit Checkpoint or Close
	endSeq   []int // endSeq[g]: seq at which generation g ended
	crashed  []bool
	log      []string
	failures []string
}

type crashOp struct {
	cancel bool
	e      Entry
}

type crashTimer struct {
	e         Entry
	cancelSeq int // 0: not cancelled
	fires     []crashFire
}

type crashFire struct{ gen, seq int }

func (w *crashWorld) failf(format string, args ...any) {
	w.failures = append(w.failures, fmt.Sprintf(format, args...))
}

func (w *crashWorld) fireFor(gen int) func([]Entry) error {
	return func(due []Entry) error {
		now := ms(w.clk.Now())
		w.mu.Lock()
		defer w.mu.Unlock()
		if gen != w.gen {
			return errors.New("this store has crashed")
		}
		if w.fr.Intn(100) < w.failPct {
			return errors.New("fire failed on purpose")
		}
		w.seq++
		for i, e := range due {
			tm := w.timers[e.Key]
			switch {
			case tm == nil:
				w.failf("fired unknown timer %+v", e)
				continue
			case e.DeliverAt > now:
				w.failf("timer %d fired %d ms early", e.Key, e.DeliverAt-now)
			case tm.e != e:
				w.failf("timer %d fired as %+v, added as %+v", e.Key, e, tm.e)
			case tm.cancelSeq != 0:
				w.failf("timer %d fired (gen %d) after its cancel", e.Key, gen)
			case i > 0 && due[i-1].DeliverAt > e.DeliverAt:
				w.failf("batch out of order")
			}
			for _, f := range tm.fires {
				if f.gen == gen {
					w.failf("timer %d fired twice in generation %d", e.Key, gen)
				} else if w.checkpointedBetween(f.seq, w.endSeq[f.gen]) {
					w.failf("timer %d fired again in gen %d although its firing in gen %d (seq %d) was checkpointed before that store ended (seq %d)",
						e.Key, gen, f.gen, f.seq, w.endSeq[f.gen])
				}
			}
			tm.fires = append(tm.fires, crashFire{gen, w.seq})
		}
		return nil
	}
}

func (w *crashWorld) checkpointedBetween(a, b int) bool {
	for _, c := range w.ckptSeqs {
		if c > a && c < b {
			return true
		}
	}
	return false
}

func (w *crashWorld) open() {
	w.t.Helper()
	w.mu.Lock()
	gen := w.gen
	w.mu.Unlock()
	o := w.opts
	o.Fire = w.fireFor(gen)
	s, err := Open(w.fsys, "/timer", o)
	if err != nil {
		w.t.Fatalf("seed %d: Open (gen %d): %v\n%s", w.seed, gen, err, strings.Join(w.log, "\n"))
	}
	w.s = s
	applied := s.Applied()
	if applied > int64(len(w.ops)) {
		w.t.Fatalf("seed %d: Applied %d beyond the %d ops issued", w.seed, applied, len(w.ops))
	}
	for src := applied; src < int64(len(w.ops)); src++ {
		op := w.ops[src]
		if op.cancel {
			err = s.Cancel(op.e.Key, op.e.DeliverAt, src)
		} else {
			err = s.Add(op.e, src)
		}
		if err != nil {
			w.t.Fatalf("seed %d: replay of src %d: %v", w.seed, src, err)
		}
	}
	w.replayed += len(w.ops) - int(applied)
	w.log = append(w.log, fmt.Sprintf("open gen %d (now %d): applied %d, replayed %d", gen, w.gen, applied, int64(len(w.ops))-applied))
	if err := s.Start(); err != nil {
		w.t.Fatalf("seed %d: Start: %v", w.seed, err)
	}
	s.settle()
}

func (w *crashWorld) endGen(crash bool) {
	w.mu.Lock()
	w.endGenLocked(crash)
	w.mu.Unlock()
}

func (w *crashWorld) endGenLocked(crash bool) {
	w.seq++
	w.endSeq = append(w.endSeq, w.seq)
	w.crashed = append(w.crashed, crash)
	w.gen++
}

func (w *crashWorld) step() {
	w.pickUpHookedCrash()
	s := w.s
	now := ms(w.clk.Now())
	switch k := w.r.Intn(100); {
	case k < 45: // add: some already due, some beyond the span
		var at int64
		switch w.r.Intn(6) {
		case 0:
			at = now - w.r.Int63n(5000)
		case 1:
			at = now + 60_000 + w.r.Int63n(400_000) // rolls round the 60 s wheel
		default:
			at = now + w.r.Int63n(20_000)
		}
		src := int64(len(w.ops))
		e := Entry{DeliverAt: at, Offset: src * 10, Size: int32(src%100 + 1), Key: uint64(src + 1)}
		w.ops = append(w.ops, crashOp{e: e})
		w.mu.Lock()
		w.timers[e.Key] = &crashTimer{e: e}
		w.mu.Unlock()
		if err := s.Add(e, src); err != nil {
			w.t.Fatalf("seed %d: Add: %v", w.seed, err)
		}
		w.log = append(w.log, fmt.Sprintf("add %d at +%d", e.Key, at-now))
	case k < 55: // cancel a random timer, fired or not
		if len(w.ops) == 0 {
			return
		}
		op := w.ops[w.r.Intn(len(w.ops))]
		if op.cancel {
			return
		}
		src := int64(len(w.ops))
		w.ops = append(w.ops, crashOp{cancel: true, e: op.e})
		w.mu.Lock()
		w.seq++
		tm := w.timers[op.e.Key]
		if tm.cancelSeq == 0 && len(tm.fires) == 0 {
			tm.cancelSeq = w.seq
		}
		w.mu.Unlock()
		if err := s.Cancel(op.e.Key, op.e.DeliverAt, src); err != nil {
			w.t.Fatalf("seed %d: Cancel: %v", w.seed, err)
		}
		w.log = append(w.log, fmt.Sprintf("cancel %d", op.e.Key))
	case k < 80:
		d := time.Duration(w.r.Intn(3000)) * time.Millisecond
		w.clk.Advance(d)
		w.log = append(w.log, fmt.Sprintf("advance %v", d))
	case k < 86:
		if err := s.Checkpoint(); err != nil {
			w.t.Fatalf("seed %d: Checkpoint: %v", w.seed, err)
		}
		w.mu.Lock()
		w.seq++
		w.ckptSeqs = append(w.ckptSeqs, w.seq)
		w.mu.Unlock()
		w.log = append(w.log, "checkpoint")
	case k < 90:
		w.mu.Lock()
		w.failPct = []int{0, 0, 30, 100}[w.r.Intn(4)]
		w.mu.Unlock()
	case k < 93: // clean restart (unless an armed crash strikes inside Close)
		if err := s.Close(); err != nil {
			w.t.Fatalf("seed %d: Close: %v", w.seed, err)
		}
		w.mu.Lock()
		hooked := w.hooked != nil
		if !hooked {
			w.seq++
			w.ckptSeqs = append(w.ckptSeqs, w.seq)
			w.endGenLocked(false)
		}
		w.mu.Unlock()
		if !hooked {
			w.fsys.InjectError(nil)
			w.armed = false
			w.log = append(w.log, "restart")
			w.open()
		}
	case k < 97: // crash now, torn unsynced writes included
		w.mu.Lock() // no Fire between the crash and the end of the generation
		if w.hooked != nil {
			w.mu.Unlock()
			break
		}
		clone := w.fsys.CrashClone(vfs.CrashOptions{Rand: w.r})
		w.endGenLocked(true)
		w.mu.Unlock()
		w.switchTo(clone, "crash")
	default: // crash inside the store, at its n-th write, sync, rename or remove
		if w.armed {
			return
		}
		w.armed = true
		n := 1 + w.r.Intn(40)
		w.log = append(w.log, fmt.Sprintf("arm crash at op %d", n))
		mem := w.fsys
		w.mu.Lock()
		armGen := w.gen
		w.mu.Unlock()
		mem.InjectError(func(op vfs.Op, p string) error {
			switch op {
			case vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpRemove, vfs.OpSyncDir, vfs.OpTruncate, vfs.OpCreate:
			default:
				return nil
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.gen != armGen { // that store has ended already
				return nil
			}
			if n--; n == 0 {
				w.hooked = mem.CrashClone(vfs.CrashOptions{Rand: w.fr})
				w.hookedAt = fmt.Sprintf("%v %s", op, p)
				w.endGenLocked(true)
			}
			return nil
		})
	}
	w.s.settle()
	w.pickUpHookedCrash()
}

// pickUpHookedCrash switches to the crash an armed hook took, if any.
func (w *crashWorld) pickUpHookedCrash() {
	w.mu.Lock()
	clone, at := w.hooked, w.hookedAt
	w.hooked = nil
	w.mu.Unlock()
	if clone != nil {
		w.switchTo(clone, "crash inside the store at "+at)
		w.s.settle()
	}
}

// switchTo replaces the running store (whose generation has ended) by one
// opened on fsys.
func (w *crashWorld) switchTo(fsys *vfs.MemFS, why string) {
	w.fsys.InjectError(nil)
	w.armed = false
	_ = w.s.Close() // the old store may go on writing to the old FS: harmless
	w.fsys = fsys
	w.log = append(w.log, why)
	w.open()
}

// crashStats sums what the seeds exercised, so a test that passes by doing
// nothing shows.
type crashStats struct {
	crashes, inStore, restarts, timers, fires, refires, cancelled, replayed int
}

func runCrashWorld(t *testing.T, seed int64, steps int, st *crashStats) {
	w := &crashWorld{
		t: t, seed: seed, r: rand.New(rand.NewSource(seed)), fr: rand.New(rand.NewSource(^seed)),
		clk: clock.NewManual(t0), fsys: vfs.NewMem(), timers: map[uint64]*crashTimer{},
	}
	w.opts = Options{
		Clock: w.clk, Span: 60 * time.Second, MaxDelay: time.Hour, FireBatch: 1 + int(seed%5),
		EntriesPerFile: 8 + int(seed%3)*8, LoadLimit: 3 + int(seed%7), SnapshotEvery: 5 + int(seed%40),
		Logger: slog.New(slog.DiscardHandler),
	}
	w.open()
	for range steps {
		w.step()
		if len(w.failures) > 0 {
			break
		}
	}
	// Let everything come due with Fire healthy, and no crash pending.
	w.fsys.InjectError(nil)
	w.s.settle()
	w.pickUpHookedCrash()
	w.mu.Lock()
	w.failPct = 0
	w.mu.Unlock()
	for range 30 {
		w.clk.Advance(20 * time.Second)
		w.s.settle()
	}
	if err := w.s.Checkpoint(); err != nil {
		t.Fatalf("seed %d: final Checkpoint: %v", seed, err)
	}
	w.mu.Lock()
	for key, tm := range w.timers {
		if tm.cancelSeq == 0 && len(tm.fires) == 0 {
			w.failf("timer %d (due %d) was never fired", key, tm.e.DeliverAt-ms(t0))
		}
	}
	w.mu.Unlock()
	if p := w.s.Pending(); p != 0 {
		w.failf("Pending = %d after everything came due", p)
	}
	if a := w.s.Applied(); a != int64(len(w.ops)) {
		w.failf("Applied = %d after the final checkpoint, want %d", a, len(w.ops))
	}
	if files := logFiles(t, w.fsys, "/timer"); len(files) > 1 {
		w.failf("log files %v remain after everything fired", files)
	}
	if err := w.s.Close(); err != nil {
		t.Fatalf("seed %d: Close: %v", seed, err)
	}
	for _, c := range w.crashed {
		if c {
			st.crashes++
		} else {
			st.restarts++
		}
	}
	for _, tm := range w.timers {
		st.timers++
		st.fires += len(tm.fires)
		st.refires += max(0, len(tm.fires)-1)
		if tm.cancelSeq != 0 {
			st.cancelled++
		}
	}
	st.replayed += w.replayed
	for _, l := range w.log {
		if strings.HasPrefix(l, "crash inside") {
			st.inStore++
		}
	}
	if len(w.failures) > 0 {
		tail := w.log
		if len(tail) > 800 {
			tail = tail[len(tail)-80:]
		}
		t.Fatalf("seed %d: %s\nlast steps:\n%s", seed, strings.Join(w.failures, "\n"), strings.Join(tail, "\n"))
	}
}

func TestCrashRandom(t *testing.T) {
	seeds := 250
	if testing.Short() {
		seeds = 50
	}
	var st crashStats
	for seed := range int64(seeds) {
		runCrashWorld(t, seed, 150, &st)
	}
	t.Logf("%d seeds: %+v", seeds, st)
	if st.crashes < seeds/2 || st.inStore < seeds/4 || st.refires == 0 || st.cancelled == 0 || st.replayed == 0 {
		t.Fatalf("the seeds exercised too little: %+v", st)
	}
}

// TestCrashStress runs many more, longer seeds:
//
//	PETREL_TIMER_STRESS=1 go test -run TestCrashStress ./internal/broker/timer
func TestCrashStress(t *testing.T) {
	if os.Getenv("PETREL_TIMER_STRESS") == "" {
		t.Skip("set PETREL_TIMER_STRESS=1")
	}
	var st crashStats
	for seed := int64(1000); seed < 4000; seed++ {
		runCrashWorld(t, seed, 400, &st)
	}
	t.Logf("%+v", st)
}
