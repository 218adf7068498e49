package store

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
	"github.com/petrelmq/petrel/internal/vfs/vfstest"
)

// sendLedger records which sends were acknowledged and which refused.
type sendLedger struct {
	mu      sync.Mutex
	acked   map[string]int64 // body -> queue offset
	refused map[string]error
	n       int
}

func newLedger() *sendLedger {
	return &sendLedger{acked: map[string]int64{}, refused: map[string]error{}}
}

func (l *sendLedger) msgs(k, size int) []*message.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*message.Message, k)
	for i := range out {
		l.n++
		id := fmt.Sprintf("m%04d", l.n)
		out[i] = newMsg("T", 0, id, "")
		out[i].Body = []byte(id + "-" + strings.Repeat("x", size))
	}
	return out
}

func (l *sendLedger) record(msgs []*message.Message, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		if err != nil {
			l.refused[string(m.Body)] = err
		} else {
			l.acked[string(m.Body)] = m.QueueOffset
		}
	}
}

// logBodies decodes every record in the commit-log files of fsys, in
// order, the way a recovery scan would meet them.
func logBodies(t *testing.T, fsys vfs.FS, dir string, segBytes int64) []string {
	t.Helper()
	cl := path.Join(dir, "commitlog")
	names, err := fsys.ReadDir(cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if len(name) != 20 {
			continue
		}
		f, err := fsys.Open(path.Join(cl, name))
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, segBytes)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		b = b[:n]
		for len(b) > 8 {
			m, k, err := message.Decode(b)
			if err != nil {
				break
			}
			out = append(out, string(m.Body))
			b = b[k:]
		}
	}
	return out
}

// checkLedger asserts that queue T/0 serves exactly the acknowledged
// messages at their offsets and that no refused message is in the log.
func checkLedger(t *testing.T, s *Store, fsys vfs.FS, led *sendLedger, when string) {
	t.Helper()
	waitDispatched(t, s)
	if err := s.disp.Load().Err(); err != nil {
		t.Fatalf("%s: dispatch stopped: %v", when, err)
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	seen := map[string]bool{}
	lo, hi := s.MinOffset("T", 0), s.MaxOffset("T", 0)
	for off := lo; off < hi; off++ {
		m, st := getOne(t, s, "T", 0, off)
		if m == nil {
			t.Fatalf("%s: T/0@%d in [%d,%d) not readable: %v", when, off, lo, hi, st)
		}
		body := string(m.Body)
		if _, ok := led.refused[body]; ok {
			t.Fatalf("%s: T/0@%d serves %.5s, whose send was refused (%v)", when, off, body, led.refused[body])
		}
		want, ok := led.acked[body]
		if !ok || want != off || m.QueueOffset != off {
			t.Fatalf("%s: T/0@%d serves %.5s (record offset %d), acknowledged at %d (%v)", when, off, body, m.QueueOffset, want, ok)
		}
		seen[body] = true
	}
	for body, off := range led.acked {
		if !seen[body] {
			t.Fatalf("%s: acknowledged %.5s at T/0@%d is not readable (queue holds [%d,%d))", when, body, off, lo, hi)
		}
	}
	for _, body := range logBodies(t, fsys, s.cfg.Dir, s.cfg.SegmentBytes) {
		if err, ok := led.refused[body]; ok {
			t.Fatalf("%s: the commit log holds %.5s, whose send was refused (%v)", when, body, err)
		}
	}
}

// TestFailedRollOverStoresNothingOfARefusedSend: the next segment cannot be
// preallocated (full disk) under sends that straddle the segment end: as one
// batch, as a group of concurrent single sends, and as a connection's
// sends of one read put as one submission (PutBatches). Every acknowledged
// message stays readable at its offset, nothing refused is in the log, dispatch keeps running, the store accepts
// sends again once there is space, and it reopens (after a crash clone
// under sync flush) with the same contents.
func TestFailedRollOverStoresNothingOfARefusedSend(t *testing.T) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		for _, kind := range []string{"batch", "group", "batches"} {
			if kind == "group" && mode == commitlog.FlushAsync {
				continue // only sync flush gathers concurrent appends deterministically
			}
			t.Run(mode.String()+"/"+kind, func(t *testing.T) {
				rollOverScenario(t, mode, kind)
			})
		}
	}
}

func rollOverScenario(t *testing.T, mode commitlog.FlushMode, kind string) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(t0)
	cfg := smallConfig(fsys, clk)
	cfg.FlushMode = mode
	hooks := vfstest.InstallDisk(fsys, path.Join(cfg.Dir, "commitlog")+"/")
	s := mustOpen(t, cfg)
	led := newLedger()
	put := func(msgs []*message.Message) error {
		err := s.PutBatch(msgs)
		led.record(msgs, err)
		return err
	}
	// Fill the first segment to about 55%: below the point where the next
	// segment is prepared, so the straddling send below needs it.
	for s.clog.Written() < cfg.SegmentBytes*55/100 {
		if err := put(led.msgs(1, 200)); err != nil {
			t.Fatal(err)
		}
	}
	hooks.Full.Store(true)
	straddle := led.msgs(14, 200) // ~4 KiB: crosses the 8 KiB segment end
	switch kind {
	case "batch":
		put(straddle)
	case "group":
		// Hold the sync of a small send so that the writer gathers the
		// concurrent sends behind it into one group.
		hooks.Hold.Store(true)
		first := led.msgs(1, 10)
		firstDone := make(chan error, 1)
		s.PutAsync(first, func(err error) { led.record(first, err); firstDone <- err })
		<-hooks.Entered
		var answered sync.WaitGroup
		var submitted sync.WaitGroup
		for _, m := range straddle {
			answered.Add(1)
			submitted.Add(1)
			go func() {
				defer submitted.Done()
				one := []*message.Message{m}
				s.PutAsync(one, func(err error) { led.record(one, err); answered.Done() })
			}()
		}
		submitted.Wait()
		hooks.Hold.Store(false)
		close(hooks.Release)
		if err := <-firstDone; err != nil {
			t.Fatalf("the send before the group: %v", err)
		}
		answered.Wait()
	case "batches":
		// A connection's sends of one read, put through its Appender.
		var answered sync.WaitGroup
		groups := make([][]*message.Message, len(straddle))
		for i, m := range straddle {
			answered.Add(1)
			groups[i] = []*message.Message{m}
		}
		s.NewAppender().PutBatches(groups, func(i int, err error) { led.record(groups[i], err); answered.Done() })
		answered.Wait()
	}
	refusedStraddle := 0
	led.mu.Lock()
	for _, m := range straddle {
		if err, ok := led.refused[string(m.Body)]; ok {
			refusedStraddle++
			if !errors.Is(err, ErrDiskFull) {
				t.Errorf("refused with %v, want ErrDiskFull", err)
			}
		}
	}
	led.mu.Unlock()
	if refusedStraddle == 0 {
		t.Fatalf("no send of the straddling %s was refused: the full disk was not met", kind)
	}
	// While the disk stays full, sends are refused without writing.
	written := s.clog.Written()
	for range 3 {
		if err := put(led.msgs(1, 200)); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("send while the next segment cannot be made: %v, want ErrDiskFull", err)
		}
	}
	if s.clog.Written() != written {
		t.Fatalf("refused sends moved the log end from %d to %d", written, s.clog.Written())
	}
	checkLedger(t, s, fsys, led, "while the disk is full")

	// Space returns: the next send (after the retry interval) succeeds and
	// the queue follows on.
	hooks.Full.Store(false)
	clk.Advance(time.Second)
	for range 3 {
		if err := put(led.msgs(4, 200)); err != nil {
			t.Fatalf("send after space returned: %v", err)
		}
	}
	checkLedger(t, s, fsys, led, "after space returned")

	var reopenFS *vfs.MemFS
	if mode == commitlog.FlushSync {
		reopenFS = fsys.CrashClone(vfs.CrashOptions{})
		s.Close()
	} else {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fsys.InjectError(nil)
		reopenFS = fsys
	}
	cfg.FS = reopenFS
	s2 := mustOpen(t, cfg)
	defer s2.Close()
	checkLedger(t, s2, reopenFS, led, "after reopening")
	if err := func() error { m := led.msgs(1, 10); err := s2.PutBatch(m); led.record(m, err); return err }(); err != nil {
		t.Fatalf("send after reopening: %v", err)
	}
	checkLedger(t, s2, reopenFS, led, "after a send on the reopened store")
}

// TestNextSegmentThatCannotBePreparedRefusesAtAdmission: the next segment is
// prepared once the tail is three quarters full; when that fails for lack
// of space, sends are refused at once with ErrDiskFull (the log does not
// change) instead of failing later at the roll-over; once space returns a
// send succeeds and crosses into the new segment.
func TestNextSegmentThatCannotBePreparedRefusesAtAdmission(t *testing.T) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			clk := clock.NewManual(t0)
			cfg := smallConfig(fsys, clk)
			cfg.FlushMode = mode
			hooks := vfstest.InstallDisk(fsys, path.Join(cfg.Dir, "commitlog")+"/")
			s := mustOpen(t, cfg)
			defer s.Close()
			led := newLedger()
			if err := func() error { m := led.msgs(1, 200); err := s.PutBatch(m); led.record(m, err); return err }(); err != nil {
				t.Fatal(err)
			}
			hooks.Full.Store(true)
			// Sends that fit the first segment succeed; once it passes 75%
			// the next cannot be prepared and sends are refused.
			var refused error
			for refused == nil {
				if s.clog.Written() >= cfg.SegmentBytes*9/10 {
					t.Fatalf("the segment is %d bytes full and sends are still accepted", s.clog.Written())
				}
				m := led.msgs(1, 200)
				refused = s.PutBatch(m)
				led.record(m, refused)
			}
			if !errors.Is(refused, ErrDiskFull) {
				t.Fatalf("refused with %v, want ErrDiskFull", refused)
			}
			end := s.clog.Written()
			if end < cfg.SegmentBytes*3/4 {
				t.Fatalf("refused at %d, before the segment was three quarters full", end)
			}
			before := logBodies(t, fsys, cfg.Dir, cfg.SegmentBytes)
			m := led.msgs(1, 200)
			err := s.PutBatch(m)
			led.record(m, err)
			if !errors.Is(err, ErrDiskFull) {
				t.Fatalf("second send: %v, want ErrDiskFull", err)
			}
			if after := logBodies(t, fsys, cfg.Dir, cfg.SegmentBytes); s.clog.Written() != end || len(after) != len(before) {
				t.Fatalf("a refused send changed the log: end %d -> %d, records %d -> %d", end, s.clog.Written(), len(before), len(after))
			}
			checkLedger(t, s, fsys, led, "while the disk is full")
			hooks.Full.Store(false)
			clk.Advance(time.Second)
			for s.clog.Written() < cfg.SegmentBytes+1024 {
				m := led.msgs(1, 200)
				err := s.PutBatch(m)
				led.record(m, err)
				if err != nil {
					t.Fatalf("send after space returned: %v", err)
				}
			}
			checkLedger(t, s, fsys, led, "after the roll-over")
		})
	}
}

// TestOpenOverALogWithRepeatedQueueOffsets: a log written before failed
// roll-overs were made atomic can hold records that repeat queue offsets
// earlier records of their queue have (the refused records stayed, their
// offsets were handed out again), or that skip offsets (a failed write
// restored its queue's next offset wrongly). Opening it, with a checkpoint and with a
// rebuild, must not fail: the later records follow the earlier ones in the
// queue, with their queue offsets rewritten to match, and new sends follow
// on.
func TestOpenOverALogWithRepeatedQueueOffsets(t *testing.T) {
	for _, first := range []string{"checkpoint", "rebuild"} {
		// 1 repeats offsets 1 and 2; 10 leaves a gap after 2.
		for _, next := range []int64{1, 10} {
			t.Run(fmt.Sprint(first, "/from-", next), func(t *testing.T) { repeatedOffsetsScenario(t, first, next) })
		}
	}
}

func repeatedOffsetsScenario(t *testing.T, first string, next int64) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(t0)
	cfg := smallConfig(fsys, clk)
	s := mustOpen(t, cfg)
	var want []string
	for i := range 3 {
		m := newMsg("T", 0, fmt.Sprint("first-", i), "")
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(m.Body))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the old writer did after a failed roll-over: hand out queue
	// offsets 1, 2, ... again (here across a segment end, as it did).
	clog, err := commitlog.Open(fsys, path.Join(cfg.Dir, "commitlog"), commitlog.Options{
		SegmentBytes:    cfg.SegmentBytes,
		MaxRecordBytes:  cfg.MaxMessageBytes,
		RecoverFrom:     -1,
		NextQueueOffset: func(string, int32) int64 { return next },
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		m := newMsg("T", 0, fmt.Sprint("again-", i, strings.Repeat("y", 300)), "")
		m.StoreHost = cfg.StoreHost
		if _, err := clog.Append(m); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(m.Body))
	}
	if err := clog.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		waitDispatched(t, s)
		if lo, hi := s.MinOffset("T", 0), s.MaxOffset("T", 0); lo != 0 || hi != int64(len(want)) {
			t.Fatalf("%s: queue holds [%d,%d), want [0,%d)", when, lo, hi, len(want))
		}
		for off, body := range want {
			m, st := getOne(t, s, "T", 0, int64(off))
			if m == nil || string(m.Body) != body || m.QueueOffset != int64(off) {
				t.Fatalf("%s: T/0@%d: %v %v, want %.10s with that queue offset", when, off, m, st, body)
			}
		}
	}
	for _, how := range []string{first, "rebuild", "again"} {
		if how == "rebuild" {
			if err := fsys.Remove(path.Join(cfg.Dir, "checkpoint")); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(cfg)
		if err != nil {
			t.Fatalf("open (%s) over a log with repeated queue offsets: %v", how, err)
		}
		check(s, how)
		m := newMsg("T", 0, "new-"+how, "")
		if err := s.Put(m); err != nil || m.QueueOffset != int64(len(want)) {
			t.Fatalf("%s: put after open: offset %d, %v; want %d", how, m.QueueOffset, err, len(want))
		}
		want = append(want, string(m.Body))
		check(s, how+", after a put")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
