package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
	"github.com/petrelmq/petrel/internal/vfs/vfstest"
)

// logFiles returns the contents of every file of the log directory.
func logFiles(t *testing.T, fsys vfs.FS) map[string][]byte {
	t.Helper()
	names, err := fsys.ReadDir("log")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		f, err := fsys.Open("log/" + n)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		b := make([]byte, size)
		f.ReadAt(b, 0)
		f.Close()
		out[n] = b
	}
	return out
}

// sameSegments reports whether every segment of want is in got with the
// same bytes (got may hold prepared segments of zeros besides).
func sameSegments(want, got map[string][]byte) error {
	for n, b := range want {
		if !bytes.Equal(got[n], b) {
			return fmt.Errorf("segment %s changed", n)
		}
	}
	for n, b := range got {
		if _, ok := want[n]; !ok && bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) {
			return fmt.Errorf("new segment %s holds data", n)
		}
	}
	return nil
}

func msgs(n, size int, tag string) []*message.Message {
	out := make([]*message.Message, n)
	for i := range out {
		out[i] = testMsg("T", 0, fmt.Sprintf("%s%d-%s", tag, i, strings.Repeat("x", size)))
	}
	return out
}

// TestRollOverWithoutSegmentLeavesTheLogAsItWas: a batch that straddles the
// segment end while the next segment cannot be preallocated is refused with
// nothing of it written and its queue offsets not used up; sends are then
// refused at admission until space returns, and the next send gets the
// offsets the refused batch would have had.
func TestRollOverWithoutSegmentLeavesTheLogAsItWas(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			d := vfstest.InstallDisk(fsys, "log/")
			clk := clock.NewManual(time.Unix(1000, 0))
			l := openLog(t, fsys, Options{FlushMode: mode, Clock: clk})
			defer l.Close()
			next := int64(0)
			for l.Written() < 2000 {
				m := testMsg("T", 0, strings.Repeat("a", 100))
				if _, err := l.Append(m); err != nil || m.QueueOffset != next {
					t.Fatalf("append: offset %d, %v", m.QueueOffset, err)
				}
				next++
			}
			d.Full.Store(true)
			before, end := logFiles(t, fsys), l.Written()
			if _, err := l.AppendBatch(msgs(20, 100, "s")); !errors.Is(err, vfs.ErrNoSpace) {
				t.Fatalf("straddling batch: %v, want ErrNoSpace", err)
			}
			if err := sameSegments(before, logFiles(t, fsys)); err != nil || l.Written() != end {
				t.Fatalf("the refused batch changed the log: %v; end %d -> %d", err, end, l.Written())
			}
			if _, err := l.Append(testMsg("T", 0, "small")); !errors.Is(err, vfs.ErrNoSpace) {
				t.Fatalf("append while no segment can be made: %v, want ErrNoSpace at admission", err)
			}
			d.Full.Store(false)
			if _, err := l.Append(testMsg("T", 0, "small")); !errors.Is(err, vfs.ErrNoSpace) {
				t.Fatalf("append before the retry time: %v, want ErrNoSpace", err)
			}
			clk.Advance(spaceRetry)
			batch := msgs(20, 100, "t")
			if _, err := l.AppendBatch(batch); err != nil {
				t.Fatalf("batch after space returned: %v", err)
			}
			for i, m := range batch {
				if m.QueueOffset != next+int64(i) {
					t.Fatalf("message %d of the batch got queue offset %d, want %d", i, m.QueueOffset, next+int64(i))
				}
			}
			if l.SegmentStart(batch[len(batch)-1].PhysicalOffset) != 4096 {
				t.Fatalf("the batch did not roll into the next segment")
			}
		})
	}
}

// TestGroupThatNeedsAMissingSegmentWritesOnlyWhatFits: of a group commit,
// the requests that fit the tail are written and acknowledged, those from
// the first that needs the next segment on are refused whole.
func TestGroupThatNeedsAMissingSegmentWritesOnlyWhatFits(t *testing.T) {
	fsys := vfs.NewMem()
	d := vfstest.InstallDisk(fsys, "log/")
	clk := clock.NewManual(time.Unix(1000, 0))
	l := openLog(t, fsys, Options{Clock: clk})
	for l.Written() < 2000 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("a", 100))); err != nil {
			t.Fatal(err)
		}
	}
	d.Full.Store(true)
	d.Hold.Store(true)
	firstErr := make(chan error, 1)
	l.AppendAsync(msgs(1, 1, "f"), func(_ Result, err error) { firstErr <- err })
	<-d.Entered
	group := msgs(16, 100, "g")
	errs := make([]error, len(group))
	var wg sync.WaitGroup
	for i, m := range group {
		wg.Add(1)
		l.AppendAsync([]*message.Message{m}, func(_ Result, err error) { errs[i] = err; wg.Done() })
	}
	d.Hold.Store(false)
	close(d.Release)
	if err := <-firstErr; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	acked := 0
	for acked < len(errs) && errs[acked] == nil {
		acked++
	}
	if acked == 0 || acked == len(group) {
		t.Fatalf("%d of %d requests acknowledged; want those before the segment end", acked, len(group))
	}
	for i, err := range errs[acked:] {
		if !errors.Is(err, vfs.ErrNoSpace) {
			t.Fatalf("request %d after the first refused one: %v, want ErrNoSpace", acked+i, err)
		}
	}
	for i := 1; i < acked; i++ {
		if group[i].QueueOffset != group[0].QueueOffset+int64(i) {
			t.Fatalf("acknowledged requests have offsets %d and %d", group[0].QueueOffset, group[i].QueueOffset)
		}
	}
	l.Close()
	got := readAllAfterReopen4K(t, fsys.CrashClone(vfs.CrashOptions{}))
	last := got[len(got)-1]
	if string(last.Body) != string(group[acked-1].Body) || last.QueueOffset != group[acked-1].QueueOffset {
		t.Fatalf("the log ends with %.4s@%d, want the last acknowledged request %.4s@%d", last.Body, last.QueueOffset, group[acked-1].Body, group[acked-1].QueueOffset)
	}
}

func readAllAfterReopen4K(t *testing.T, fsys vfs.FS) []*message.Message {
	t.Helper()
	l := openLog(t, fsys, Options{RecoverFrom: -1})
	defer l.Close()
	return readAll(t, l)
}

// TestFailedWriteAfterARollOverIsUndone: when a write of a batch fails after
// the batch has rolled over (and written the old segment's end), that is
// undone: the log, its segments and its tail are as before, and the next
// appends go where the failed batch would have gone.
func TestFailedWriteAfterARollOverIsUndone(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			d := vfstest.InstallDisk(fsys, "log/")
			l := openLog(t, fsys, Options{FlushMode: mode})
			for l.Written() < 1000 {
				if _, err := l.Append(testMsg("T", 0, strings.Repeat("a", 100))); err != nil {
					t.Fatal(err)
				}
			}
			before, end, segs := logFiles(t, fsys), l.Written(), l.Segments()
			// ~9 KiB: spans three segments, three writes; the third fails.
			d.Writes.Store(0)
			d.FailWrite.Store(3)
			if _, err := l.AppendBatch(msgs(40, 200, "b")); err == nil {
				t.Fatal("the batch with a failing write succeeded")
			}
			d.FailWrite.Store(0)
			if err := sameSegments(before, logFiles(t, fsys)); err != nil || l.Written() != end {
				t.Fatalf("the failed batch changed the log: %v; end %d -> %d", err, end, l.Written())
			}
			if got := l.Segments(); len(got) != len(segs) {
				t.Fatalf("segments %v after the failed batch, want %v", got, segs)
			}
			batch := msgs(40, 200, "c")
			if _, err := l.AppendBatch(batch); err != nil {
				t.Fatalf("batch after the failure: %v", err)
			}
			if batch[0].PhysicalOffset != end || batch[0].QueueOffset != int64(len(readAll(t, l))-len(batch)) {
				t.Fatalf("batch after the failure starts at %d (queue offset %d), want %d", batch[0].PhysicalOffset, batch[0].QueueOffset, end)
			}
			l.Close()
			got := readAllAfterReopen4K(t, fsys)
			for i, m := range got {
				if m.QueueOffset != int64(i) || strings.HasPrefix(string(m.Body), "b") {
					t.Fatalf("record %d after reopening: %.4s at queue offset %d", i, m.Body, m.QueueOffset)
				}
			}
		})
	}
}

// TestBatchAcrossSeveralSegments: one request whose records fill several
// segments is written whole, rolling through segments it prepares first.
func TestBatchAcrossSeveralSegments(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{})
	batch := msgs(60, 300, "m")
	res, err := l.AppendBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.End < 4*4096 {
		t.Fatalf("the batch ends at %d, want past 4 segments", res.End)
	}
	l.Close()
	got := readAllAfterReopen4K(t, fsys.CrashClone(vfs.CrashOptions{}))
	if len(got) != len(batch) {
		t.Fatalf("%d records after reopening, want %d", len(got), len(batch))
	}
	for i, m := range got {
		if string(m.Body) != string(batch[i].Body) || m.QueueOffset != int64(i) {
			t.Fatalf("record %d: %.4s at queue offset %d", i, m.Body, m.QueueOffset)
		}
	}
}

// TestOpenOnAFullDisk: recovery that cuts an empty last segment and cannot
// preallocate it again (full disk) opens anyway; appends are refused with
// ErrNoSpace, nothing is written, and they succeed once there is space.
func TestOpenOnAFullDisk(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(time.Unix(1000, 0))
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, Clock: clk})
	for l.Written() < 4096 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("a", 100))); err != nil {
			t.Fatal(err)
		}
	}
	// Only the rolled-over segment was synced: the crash keeps an empty
	// second segment.
	crashed := fsys.CrashClone(vfs.CrashOptions{})
	l.Close()
	u, _ := crashed.Usage("log")
	crashed.SetCapacity(int64(u.TotalBytes - u.FreeBytes))
	l2 := openLog(t, crashed, Options{FlushMode: FlushAsync, Clock: clk, RecoverFrom: -1})
	defer l2.Close()
	if l2.Written() != 4096 {
		t.Fatalf("recovered end %d, want 4096", l2.Written())
	}
	before := logFiles(t, crashed)
	if _, err := l2.Append(testMsg("T", 0, "full")); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("append on the full disk: %v, want ErrNoSpace", err)
	}
	if after := logFiles(t, crashed); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatal("a refused append changed the log files")
	}
	crashed.SetCapacity(0)
	clk.Advance(spaceRetry)
	m := testMsg("T", 0, "room")
	if _, err := l2.Append(m); err != nil || m.PhysicalOffset != 4096 {
		t.Fatalf("append once there is space: at %d, %v", m.PhysicalOffset, err)
	}
}

// TestNextSegmentIsPreparedAheadAndCloseRemovesIt: past three quarters of
// the tail the next segment exists (so the roll-over needs no space), and a
// clean Close leaves no prepared segment behind; after a crash recovery
// removes it.
func TestNextSegmentIsPreparedAheadAndCloseRemovesIt(t *testing.T) {
	fsys := vfs.NewMem()
	l := openLog(t, fsys, Options{})
	for l.Written() < 3200 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("a", 100))); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := fsys.ReadDir("log")
	if len(names) != 2 || names[1] != SegmentName(4096) {
		t.Fatalf("files past the mark: %v, want the tail and the prepared next segment", names)
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments listed, want 1 (the prepared one is not listed)", n)
	}
	crashed := fsys.CrashClone(vfs.CrashOptions{})
	l.Close()
	if names, _ := fsys.ReadDir("log"); len(names) != 1 {
		t.Fatalf("files after Close: %v, want the tail only", names)
	}
	l2 := openLog(t, crashed, Options{RecoverFrom: -1})
	defer l2.Close()
	if names, _ := crashed.ReadDir("log"); len(names) != 1 || len(readAll(t, l2)) == 0 {
		t.Fatalf("files after recovering from a crash: %v, want the tail only", names)
	}
}

// TestAsyncFlushSyncsTheSegmentItReportsFlushed: under async flush a
// periodic sync that runs while the writer is half-way through a roll-over
// (the next segment listed, the end not yet moved) syncs the segment the
// end lies in, so that Flushed never names bytes a crash can lose.
func TestAsyncFlushSyncsTheSegmentItReportsFlushed(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(time.Unix(1000, 0))
	l := openLog(t, fsys, Options{FlushMode: FlushAsync, Clock: clk})
	defer l.Close()
	for l.Written() < 2000 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("a", 100))); err != nil {
			t.Fatal(err)
		}
	}
	end := l.Written()
	// Hold the writer in its write into the next segment.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && p == "log/"+SegmentName(4096) {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { _, err := l.AppendBatch(msgs(20, 100, "r")); done <- err }()
	<-entered
	deadline := time.Now().Add(10 * time.Second)
	for l.Flushed() < end {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("the periodic sync did not run: flushed %d, want %d", l.Flushed(), end)
		}
		// The periodic sync (again, should the flusher not have armed its
		// timer before the clock moved).
		clk.Advance(500 * time.Millisecond)
		runtime.Gosched()
	}
	crashed := fsys.CrashClone(vfs.CrashOptions{})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, crashed, Options{RecoverFrom: -1})
	defer l2.Close()
	if l2.Written() < end {
		t.Fatalf("after a crash the log ends at %d, but %d was reported flushed", l2.Written(), end)
	}
}
