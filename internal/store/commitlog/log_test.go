package commitlog

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

func testMsg(topic string, q int32, body string) *message.Message {
	return &message.Message{
		Topic:         topic,
		QueueID:       q,
		Body:          []byte(body),
		BornTimestamp: 1,
		BornHost:      netip.MustParseAddrPort("127.0.0.1:5000"),
		StoreHost:     netip.MustParseAddrPort("127.0.0.1:10911"),
		Properties:    "TAGS\x01a\x02",
	}
}

func openLog(t *testing.T, fsys vfs.FS, opts Options) *Log {
	t.Helper()
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = 4096
	}
	l, err := Open(fsys, "log", opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readAll(t *testing.T, l *Log) []*message.Message {
	t.Helper()
	var out []*message.Message
	pos := l.MinOffset()
	end := l.Durable()
	buf := make([]byte, l.opts.SegmentBytes)
	for pos < end {
		segEnd := l.SegmentStart(pos) + l.opts.SegmentBytes
		n := min(segEnd, end) - pos
		if err := l.ReadAt(buf[:n], pos); err != nil {
			t.Fatal(err)
		}
		b := buf[:n]
		for len(b) > 0 {
			m, k, err := message.Decode(b)
			if errors.Is(err, message.ErrBlank) {
				break
			}
			if err != nil {
				t.Fatalf("decode at %d: %v", pos+int64(n)-int64(len(b)), err)
			}
			out = append(out, m)
			b = b[k:]
		}
		pos = min(segEnd, end)
	}
	return out
}

func TestAppendAssignsOffsetsAndRollsSegments(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			l := openLog(t, fsys, Options{FlushMode: mode})
			var want []string
			for i := range 100 {
				m := testMsg("T", int32(i%3), strings.Repeat("x", i*3))
				res, err := l.Append(m)
				if err != nil {
					t.Fatal(err)
				}
				if m.PhysicalOffset != res.Offset || m.QueueOffset != int64(i/3) {
					t.Fatalf("msg %d: phys %d res %d queue offset %d", i, m.PhysicalOffset, res.Offset, m.QueueOffset)
				}
				want = append(want, string(m.Body))
			}
			got := readAll(t, l)
			if len(got) != len(want) {
				t.Fatalf("read %d records, want %d", len(got), len(want))
			}
			for i, m := range got {
				if string(m.Body) != want[i] {
					t.Fatalf("record %d body mismatch", i)
				}
			}
			if len(l.Segments()) < 3 {
				t.Fatalf("expected segment roll-over, have %d segments", len(l.Segments()))
			}
			end := l.Written()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, fsys, Options{FlushMode: mode, RecoverFrom: -1})
			defer l2.Close()
			if l2.Written() != end {
				t.Fatalf("reopened end %d, want %d", l2.Written(), end)
			}
			if got := readAll(t, l2); len(got) != len(want) {
				t.Fatalf("after reopen read %d records, want %d", len(got), len(want))
			}
		})
	}
}

func TestRecordOverLimitIsRefusedNamingTheLimit(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{MaxRecordBytes: 1000})
	defer l.Close()
	_, err := l.Append(testMsg("T", 0, strings.Repeat("x", 2000)))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1000") {
		t.Fatalf("err = %v, want ErrTooLarge naming 1000", err)
	}
	if l.Written() != 0 {
		t.Fatalf("written %d after refused append", l.Written())
	}
}

// countOps installs an InjectError hook on fsys that counts the calls of
// op from now on and fails none.
func countOps(fsys *vfs.MemFS, op vfs.Op) *atomic.Int64 {
	var n atomic.Int64
	fsys.InjectError(func(o vfs.Op, _ string) error {
		if o == op {
			n.Add(1)
		}
		return nil
	})
	return &n
}

func TestConcurrentAppendsGroupCommit(t *testing.T) {
	fsys := vfs.NewMem()
	syncs := countOps(fsys, vfs.OpSync)
	l := openLog(t, fsys, Options{SegmentBytes: 1 << 20})
	var wg sync.WaitGroup
	const writers, per = 16, 50
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, err := l.Append(testMsg("T", int32(w), fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAllAfterReopen(t, fsys)
	if len(got) != writers*per {
		t.Fatalf("got %d records, want %d", len(got), writers*per)
	}
	next := map[int32]int64{}
	for _, m := range got {
		if m.QueueOffset != next[m.QueueID] {
			t.Fatalf("queue %d offset %d, want %d", m.QueueID, m.QueueOffset, next[m.QueueID])
		}
		next[m.QueueID]++
	}
	if n := syncs.Load(); n >= writers*per {
		t.Fatalf("%d syncs for %d appends: no group commit", n, writers*per)
	}
}

func readAllAfterReopen(t *testing.T, fsys vfs.FS) []*message.Message {
	l := openLog(t, fsys, Options{SegmentBytes: 1 << 20, RecoverFrom: -1})
	defer l.Close()
	return readAll(t, l)
}

func TestSyncFailureRefusesWrites(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{})
	if _, err := l.Append(testMsg("T", 0, "ok")); err != nil {
		t.Fatal(err)
	}
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync {
			return errors.New("injected")
		}
		return nil
	})
	if _, err := l.Append(testMsg("T", 0, "lost")); !errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v, want ErrFailed", err)
	}
	if _, err := l.Append(testMsg("T", 0, "after")); !errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v, want ErrFailed", err)
	}
	fsys.InjectError(nil)
	l.Close()
}

func TestFlushTimeoutAnswersSlowSync(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(time.Unix(1000, 0))
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.Contains(p, "log/") {
			once.Do(func() { close(entered) })
			<-release
		}
		return nil
	})
	l := openLog(t, fsys, Options{Clock: clk, SyncFlushTimeout: time.Second})
	errc := make(chan error, 1)
	go func() {
		_, err := l.Append(testMsg("T", 0, "slow"))
		errc <- err
	}()
	<-entered
	clk.Advance(2 * time.Second)
	if err := <-errc; !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("err = %v, want ErrFlushTimeout", err)
	}
	close(release)
	fsys.InjectError(nil)
	l.Close()
}

func TestRecoveryCutsTornTail(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{})
	var ends []int64
	for i := range 10 {
		res, err := l.Append(testMsg("T", 0, fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, res.End)
	}
	l.Close()
	// Corrupt the 8th record's body.
	f, err := fsys.Open("log/" + SegmentName(0))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("ZZ"), ends[7]-10)
	f.Sync()
	f.Close()
	l2 := openLog(t, fsys, Options{RecoverFrom: -1})
	defer l2.Close()
	if l2.Written() != ends[6] {
		t.Fatalf("recovered end %d, want %d", l2.Written(), ends[6])
	}
	if n := len(readAll(t, l2)); n != 7 {
		t.Fatalf("%d records after cut, want 7", n)
	}
	m := testMsg("T", 0, "new")
	if _, err := l2.Append(m); err != nil || m.PhysicalOffset != ends[6] {
		t.Fatalf("append after cut at %d: %v", m.PhysicalOffset, err)
	}
}

func TestAllocsPerAppend(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{SegmentBytes: 64 << 20, FlushMode: FlushAsync})
	defer l.Close()
	m := testMsg("T", 0, strings.Repeat("x", 1024))
	l.Append(m)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per append, want <= 1", allocs)
	}
}

// TestBusyWhileTheDiskStalls: while a sync has been stuck for BusyAfter,
// new appends fail at once with ErrBusy instead of queueing; once the disk
// catches up they are accepted again.
func TestBusyWhileTheDiskStalls(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(time.Unix(1000, 0))
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.Contains(p, "log/") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	})
	l := openLog(t, fsys, Options{Clock: clk, SyncFlushTimeout: 4 * time.Second, BusyAfter: time.Second})
	defer l.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Append(testMsg("T", 0, "stuck"))
		errc <- err
	}()
	<-entered
	if l.busy.Load() {
		t.Fatal("busy before any append waited BusyAfter")
	}
	clk.Advance(time.Second) // the sweeper sees a waiter 1 s old
	_, err := l.Append(testMsg("T", 0, "refused"))
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "1s") {
		t.Fatalf("append while the disk stalls: %v, want ErrBusy naming 1s", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("the stuck append: %v", err)
	}
	clk.Advance(time.Second) // nothing waits any more
	if _, err := l.Append(testMsg("T", 0, "after")); err != nil {
		t.Fatalf("append after the disk caught up: %v", err)
	}
}
