package timer

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"path"
	"slices"
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
//
// Now and then the world also parks the store's checkpoint goroutine at one
// of its syncs, renames or removals for a step or three, so that Adds,
// Cancels and firing run between its capture of the state and its writes
// and removals; then it waits for that checkpoint to finish and checks that
// a crash right then would leave a store that opens.
type crashWorld struct {
	t    testing.TB
	seed int64
	r    *rand.Rand
	clk  *clock.Manual
	fsys *vfs.MemFS
	opts Options
	s    *Store

	ops      []crashOp // ops[src]
	armed    bool
	pr       *rand.Rand // parking decisions, apart from r so that each seed's ops stay the same
	parkFor  int        // steps left before an armed park is released
	hooked   *vfs.MemFS // a crash taken inside the store, not yet switched to
	hookedAt string
	replayed int

	mu       sync.Mutex // guards what Fire and the FS hook touch
	fr       *rand.Rand
	crashFn  func(op vfs.Op, p string) // an armed crash inside the store
	parkLeft int                       // park at the parkLeft-th eligible op of generation parkGen
	parkGen  int
	release  chan struct{} // non-nil while a park is armed; closed to release
	parked   bool
	parkedAt string
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
	w.fsys.InjectError(w.hook)
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
	w.maybePark()
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
		w.unpark(true)
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
		w.unpark(false)
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
			w.disarmCrash()
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
		// Called with w.mu held.
		w.crashFn = func(op vfs.Op, p string) {
			switch op {
			case vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpRemove, vfs.OpSyncDir, vfs.OpTruncate, vfs.OpCreate:
			default:
				return
			}
			if w.gen != armGen { // that store has ended already
				return
			}
			if n--; n == 0 {
				w.hooked = mem.CrashClone(vfs.CrashOptions{Rand: w.fr})
				w.hookedAt = fmt.Sprintf("%v %s", op, p)
				w.endGenLocked(true)
			}
		}
		w.mu.Unlock()
	}
	w.s.settle()
	w.pickUpHookedCrash()
}

// hook is the InjectError hook of the world's FS: it runs an armed crash,
// then parks the calling goroutine if a park is armed and due. It never
// fails an operation.
func (w *crashWorld) hook(op vfs.Op, p string) error {
	w.mu.Lock()
	if w.crashFn != nil {
		w.crashFn(op, p)
	}
	switch op {
	case vfs.OpSync, vfs.OpSyncDir, vfs.OpRename, vfs.OpRemove:
		// While a park is armed only the checkpoint goroutine does these:
		// the world releases the park before it calls Open, Close or
		// Checkpoint. Creates and writes also come from Add and Cancel,
		// under the store's lock: never park those.
	default:
		w.mu.Unlock()
		return nil
	}
	if w.release == nil || w.parked || w.gen != w.parkGen {
		w.mu.Unlock()
		return nil
	}
	if w.parkLeft--; w.parkLeft > 0 {
		w.mu.Unlock()
		return nil
	}
	w.parked, w.parkedAt = true, fmt.Sprintf("%v %s", op, p)
	rel := w.release
	w.mu.Unlock()
	<-rel
	return nil
}

func (w *crashWorld) disarmCrash() {
	w.mu.Lock()
	w.crashFn = nil
	w.mu.Unlock()
	w.armed = false
}

// maybePark arms a park now and then, and releases one that has lasted its
// steps.
func (w *crashWorld) maybePark() {
	w.mu.Lock()
	armed := w.release != nil
	w.mu.Unlock()
	if armed {
		if w.parkFor--; w.parkFor <= 0 {
			w.unpark(true)
		}
		return
	}
	if w.pr.Intn(5) != 0 {
		return
	}
	w.mu.Lock()
	w.release = make(chan struct{})
	w.parked = false
	w.parkLeft = 1 + w.pr.Intn(8)
	w.parkGen = w.gen
	w.mu.Unlock()
	w.parkFor = 1 + w.pr.Intn(3)
}

// unpark releases a parked checkpoint and disarms the park. With check, it
// then waits for that checkpoint to finish and opens what a crash right
// then would leave.
func (w *crashWorld) unpark(check bool) {
	w.mu.Lock()
	rel, parked, at, gen := w.release, w.parked, w.parkedAt, w.gen
	w.release, w.parked = nil, false
	w.mu.Unlock()
	if rel == nil {
		return
	}
	close(rel)
	if !parked {
		return
	}
	w.log = append(w.log, "released checkpoint parked at "+at)
	if !check {
		return
	}
	w.s.ckptMu.Lock() // held by the parked checkpoint until it is done
	img := w.fsys.CrashClone(vfs.CrashOptions{})
	w.s.ckptMu.Unlock()
	w.mu.Lock()
	ended := w.gen != gen // a crash inside the store struck meanwhile: the world goes on from that one
	w.mu.Unlock()
	if !ended {
		w.checkImage(img)
	}
}

// checkImage opens the image of a crash and fails the seed if that does not
// open.
func (w *crashWorld) checkImage(img *vfs.MemFS) {
	o := w.opts
	o.Fire = func([]Entry) error { return errors.New("crash image: never started") }
	s, err := Open(img, "/timer", o)
	if err != nil {
		w.failf("a crash right after a parked checkpoint would leave a store that does not open: %v", err)
		return
	}
	if a := s.Applied(); a > int64(len(w.ops)) {
		w.failf("a crash right after a parked checkpoint would leave Applied %d beyond the %d ops issued", a, len(w.ops))
	}
	if err := s.Close(); err != nil {
		w.failf("crash image: Close: %v", err)
	}
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
	w.unpark(false)
	w.fsys.InjectError(nil)
	w.disarmCrash()
	_ = w.s.Close() // the old store may go on writing to the old FS: harmless
	w.fsys = fsys
	w.log = append(w.log, why)
	w.open()
}

// crashStats sums what the seeds exercised, so a test that passes by doing
// nothing shows.
type crashStats struct {
	crashes, inStore, restarts, timers, fires, refires, cancelled, replayed, parks int
}

func runCrashWorld(t testing.TB, seed int64, steps int, st *crashStats) {
	w := &crashWorld{
		t: t, seed: seed, r: rand.New(rand.NewSource(seed)), fr: rand.New(rand.NewSource(^seed)),
		pr:  rand.New(rand.NewSource(seed * 7919)),
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
	// Let everything come due with Fire healthy, and no crash or park pending.
	w.unpark(true)
	w.fsys.InjectError(nil)
	w.disarmCrash()
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
		if strings.HasPrefix(l, "released checkpoint parked") {
			st.parks++
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
	if st.crashes < seeds/2 || st.inStore < seeds/4 || st.refires == 0 || st.cancelled == 0 || st.replayed == 0 || st.parks < seeds {
		t.Fatalf("the seeds exercised too little: %+v", st)
	}
}

// BenchmarkCrashStress runs many more, longer seeds than TestCrashRandom,
// only when asked (a benchmark, so the normal run leaves it out):
//
//	go test -run '^$' -bench CrashStress -benchtime 1x ./internal/broker/timer
func BenchmarkCrashStress(b *testing.B) {
	t := b
	var st crashStats
	for seed := int64(1000); seed < 4000; seed++ {
		runCrashWorld(t, seed, 400, &st)
	}
	t.Logf("%+v", st)
}

// TestCheckpointKeepsTheLastFileItLists forces an interleaving that
// TestCrashRandom hits only now and then. A checkpoint captures the state
// while the log ends exactly at the end of a full file whose chains are all
// done (that file is the last one the checkpoint lists); while it writes, an
// Add moves the log to a new file. When the checkpoint then removes the
// files it made useless, the file it lists last is no longer the log's last
// file, but Open of that checkpoint still needs it: it must stay until a
// later checkpoint lists the new file.
func TestCheckpointKeepsTheLastFileItLists(t *testing.T) {
	const dir = "/timer"
	mem := vfs.NewMem()
	clk := clock.NewManual(t0)
	opts := Options{Clock: clk, Fire: func([]Entry) error { return nil }, Logger: testLogger(t),
		Span: time.Minute, EntriesPerFile: 8}

	// Fill log file 0 with 8 timers and fire them all.
	s, err := Open(mem, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := s.Add(Entry{DeliverAt: ms(t0) + 1000, Key: uint64(i + 1)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(3 * time.Second)
	s.settle()
	if p := s.Pending(); p != 0 {
		t.Fatalf("Pending = %d after all came due", p)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen without Start: no goroutine checkpoints on its own now.
	if s, err = Open(mem, dir, opts); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if files := logFiles(t, mem, dir); !slices.Equal(files, []string{logName(0)}) {
		t.Fatalf("log files %v, want only %s", files, logName(0))
	}
	reached, hold := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // before the Close above, should the test stop early
	var once sync.Once
	tmp := path.Join(dir, checkpointName+tmpSuffix)
	mem.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && p == tmp {
			once.Do(func() {
				close(reached)
				<-hold
			})
		}
		return nil
	})
	defer mem.InjectError(nil)
	if err := s.Cancel(0, 0, 8); err != nil { // no record, but a new state
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Checkpoint() }()
	<-reached // the state is captured: log end 8, file 0 its last file
	if err := s.Add(Entry{DeliverAt: ms(clk.Now()) + 10_000, Key: 100}, 9); err != nil {
		t.Fatal(err)
	}
	if files := logFiles(t, mem, dir); len(files) != 2 {
		t.Fatalf("log files %v after the Add, want a new one", files)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	mem.InjectError(nil)

	crashed := mem.CrashClone(vfs.CrashOptions{})
	s2, err := Open(crashed, dir, opts)
	if err != nil {
		t.Fatalf("Open after a crash right after the checkpoint: %v", err)
	}
	if a := s2.Applied(); a != 9 {
		t.Errorf("Applied after the crash = %d, want 9", a)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// The next checkpoint lists the new file as the last one: file 0 goes.
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if files := logFiles(t, mem, dir); !slices.Equal(files, []string{logName(8)}) {
		t.Fatalf("log files %v after the next checkpoint, want only %s", files, logName(8))
	}
	crashed = mem.CrashClone(vfs.CrashOptions{})
	if s2, err = Open(crashed, dir, opts); err != nil {
		t.Fatalf("Open after a crash after the next checkpoint: %v", err)
	}
	if a, p := s2.Applied(), s2.Pending(); a != 10 || p != 1 {
		t.Errorf("after the crash: Applied %d Pending %d, want 10 and 1", a, p)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}
