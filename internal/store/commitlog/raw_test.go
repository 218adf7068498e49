package commitlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// fillMaster appends n messages of varied sizes to l and returns the end
// of each record (the record boundaries, segment ends included).
func fillMaster(t *testing.T, l *Log, n int) map[int64]bool {
	t.Helper()
	ends := map[int64]bool{l.Written(): true}
	for i := range n {
		res, err := l.Append(testMsg("T", int32(i%3), strings.Repeat("b", 10+(i*37)%400)))
		if err != nil {
			t.Fatal(err)
		}
		ends[res.Offset] = true // a segment end when the record rolled over
		ends[res.End] = true
	}
	return ends
}

// ship copies the master's log to the slave with raw reads of random sizes
// (down to one byte, so records, headers and blanks are cut anywhere),
// checking after every append that the slave's durable end is a record
// boundary.
func ship(t *testing.T, master, slave *Log, ends map[int64]bool, rnd *rand.Rand) {
	t.Helper()
	for slave.Written() < master.Written() {
		max := 1 + rnd.IntN(700)
		if rnd.IntN(4) == 0 {
			max = 1 + rnd.IntN(8)
		}
		b, err := master.ReadRaw(slave.Written(), max)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("no bytes at %d below the master's end %d", slave.Written(), master.Written())
		}
		res, err := slave.AppendRaw(slave.Written(), b)
		if err != nil {
			t.Fatalf("AppendRaw at %d: %v", slave.Written(), err)
		}
		if res.End != res.Offset+int64(len(b)) {
			t.Fatalf("result %+v for %d bytes", res, len(b))
		}
		if d := slave.Durable(); !ends[d] {
			t.Fatalf("the slave's durable end %d is inside a record (written %d)", d, slave.Written())
		}
	}
}

func sameFiles(t *testing.T, a, b vfs.FS, upTo int64, segBytes int64) {
	t.Helper()
	sameFilesFrom(t, a, b, 0, upTo, segBytes)
}

func sameFilesFrom(t *testing.T, a, b vfs.FS, from, upTo int64, segBytes int64) {
	t.Helper()
	for start := from; start < upTo; start += segBytes {
		name := path.Join("log", SegmentName(start))
		x, _, err := vfs.ReadFile(a, name)
		if err != nil {
			t.Fatal(err)
		}
		y, _, err := vfs.ReadFile(b, name)
		if err != nil {
			t.Fatal(err)
		}
		n := min(segBytes, upTo-start)
		if len(x) < int(n) || len(y) < int(n) || !bytes.Equal(x[:n], y[:n]) {
			t.Fatalf("segment %s differs between master and slave", name)
		}
	}
}

func TestRawCopyIsByteIdentical(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			mfs, sfs := vfs.NewMem(), vfs.NewMem()
			master := openLog(t, mfs, Options{FlushMode: mode})
			defer master.Close()
			slave := openLog(t, sfs, Options{FlushMode: mode})
			defer slave.Close()
			ends := fillMaster(t, master, 120)
			if master.Written() < 3*4096 {
				t.Fatalf("the master's log is %d bytes: want several segments", master.Written())
			}
			ship(t, master, slave, ends, rand.New(rand.NewPCG(1, uint64(mode))))
			if slave.Written() != master.Written() || slave.Durable() != master.Durable() {
				t.Fatalf("slave written %d durable %d, master %d %d", slave.Written(), slave.Durable(), master.Written(), master.Durable())
			}
			sameFiles(t, mfs, sfs, master.Written(), 4096)
			got, want := readAll(t, slave), readAll(t, master)
			if len(got) != len(want) || len(got) != 120 {
				t.Fatalf("slave holds %d records, master %d", len(got), len(want))
			}
			for i := range got {
				if got[i].QueueOffset != want[i].QueueOffset || got[i].PhysicalOffset != want[i].PhysicalOffset || !bytes.Equal(got[i].Body, want[i].Body) {
					t.Fatalf("record %d: slave %+v, master %+v", i, got[i], want[i])
				}
			}
			// A slave that takes appends (a promoted one) goes on from the
			// master's queue offsets.
			for q := range int32(3) {
				a, b := testMsg("T", q, "next"), testMsg("T", q, "next")
				if _, err := master.Append(a); err != nil {
					t.Fatal(err)
				}
				if _, err := slave.Append(b); err != nil {
					t.Fatal(err)
				}
				if a.QueueOffset != b.QueueOffset || a.QueueOffset != 40 || a.PhysicalOffset != b.PhysicalOffset {
					t.Fatalf("queue %d: master appends at %d/%d, slave at %d/%d; want queue offset 40", q, a.QueueOffset, a.PhysicalOffset, b.QueueOffset, b.PhysicalOffset)
				}
			}
		})
	}
}

func TestRawAppendRefusesBadBytes(t *testing.T) {
	mfs := vfs.NewMem()
	master := openLog(t, mfs, Options{})
	defer master.Close()
	fillMaster(t, master, 40)
	all, err := master.ReadRaw(0, 4096)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("offset", func(t *testing.T) {
		slave := openLog(t, vfs.NewMem(), Options{})
		defer slave.Close()
		if _, err := slave.AppendRaw(10, all[10:20]); !errors.Is(err, ErrBadOffset) {
			t.Fatalf("AppendRaw past the end: %v, want ErrBadOffset", err)
		}
		if slave.Written() != 0 {
			t.Fatalf("written %d after a refused append", slave.Written())
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		slave := openLog(t, vfs.NewMem(), Options{})
		defer slave.Close()
		bad := bytes.Clone(all[:300])
		bad[100] ^= 0xff // inside the first record's body or header
		if _, err := slave.AppendRaw(0, bad); !errors.Is(err, ErrBadRaw) {
			t.Fatalf("AppendRaw of damaged bytes: %v, want ErrBadRaw", err)
		}
		if slave.Written() != 0 || slave.Durable() != 0 {
			t.Fatalf("written %d durable %d after a refused append", slave.Written(), slave.Durable())
		}
		// The good bytes still go in.
		if _, err := slave.AppendRaw(0, all[:300]); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("segment size", func(t *testing.T) {
		// A slave with bigger segments meets the master's blank padding
		// before its own segment end; one with smaller segments a record
		// across its segment end.
		for _, seg := range []int64{8192, 2048} {
			slave := openLog(t, vfs.NewMem(), Options{SegmentBytes: seg})
			var err error
			for slave.Written() < master.Written() && err == nil {
				var b []byte
				if b, err = master.ReadRaw(slave.Written(), 1000); err == nil {
					_, err = slave.AppendRaw(slave.Written(), b)
				}
			}
			if !errors.Is(err, ErrSegmentMismatch) || !strings.Contains(err.Error(), "--segment-bytes") {
				t.Fatalf("segment bytes %d: %v, want ErrSegmentMismatch naming --segment-bytes", seg, err)
			}
			slave.Close()
		}
	})
	t.Run("message after a cut record", func(t *testing.T) {
		slave := openLog(t, vfs.NewMem(), Options{})
		defer slave.Close()
		if _, err := slave.AppendRaw(0, all[:50]); err != nil {
			t.Fatal(err)
		}
		if slave.Durable() != 0 || slave.Written() != 50 {
			t.Fatalf("after half a record: durable %d written %d, want 0 and 50", slave.Durable(), slave.Written())
		}
		if _, err := slave.Append(testMsg("T", 0, "x")); !errors.Is(err, ErrPartialTail) {
			t.Fatalf("Append after a cut record: %v, want ErrPartialTail", err)
		}
	})
}

func TestRawCrashAfterPartialRecord(t *testing.T) {
	mfs, sfs := vfs.NewMem(), vfs.NewMem()
	master := openLog(t, mfs, Options{})
	defer master.Close()
	ends := fillMaster(t, master, 60)
	slave := openLog(t, sfs, Options{})
	// A whole record and a half.
	b, err := master.ReadRaw(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(0)
	for e := range ends {
		if e > 0 && (first == 0 || e < first) {
			first = e
		}
	}
	cut := first + (first / 2)
	if _, err := slave.AppendRaw(0, b[:cut]); err != nil {
		t.Fatal(err)
	}
	if slave.Durable() != first || slave.Flushed() != first {
		t.Fatalf("durable %d flushed %d, want the first record's end %d", slave.Durable(), slave.Flushed(), first)
	}
	// Power loss: the synced bytes, half a record included, survive.
	crashed := sfs.CrashClone(vfs.CrashOptions{})
	slave.Close()
	again := openLog(t, crashed, Options{})
	defer again.Close()
	if again.Written() != first || again.Durable() != first {
		t.Fatalf("after the crash: written %d durable %d, want the cut at %d", again.Written(), again.Durable(), first)
	}
	ship(t, master, again, ends, rand.New(rand.NewPCG(7, 7)))
	sameFiles(t, mfs, crashed, master.Written(), 4096)
}

func TestWaitWritten(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	if err := l.WaitWritten(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitWritten on an empty log: %v", err)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- l.WaitWritten(context.Background(), 0) }()
	if _, err := l.Append(testMsg("T", 0, "x")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Already past: at once.
	if err := l.WaitWritten(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	go func() { done <- l.WaitWritten(context.Background(), l.Written()) }()
	l.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitWritten across Close: %v, want ErrClosed", err)
	}
}

func TestReadRawBounds(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{})
	defer l.Close()
	fillMaster(t, l, 100)
	w := l.Written()
	if b, err := l.ReadRaw(w, 100); err != nil || len(b) != 0 {
		t.Fatalf("ReadRaw at the end: %d bytes, %v", len(b), err)
	}
	if _, err := l.ReadRaw(w+1, 100); !errors.Is(err, ErrBadOffset) {
		t.Fatalf("ReadRaw past the end: %v", err)
	}
	if b, err := l.ReadRaw(4000, 1000); err != nil || len(b) != 96 {
		t.Fatalf("ReadRaw across a segment end: %d bytes, %v; want the 96 up to it", len(b), err)
	}
	if b, err := l.ReadRaw(w-10, 1000); err != nil || len(b) != 10 {
		t.Fatalf("ReadRaw near the end: %d bytes, %v; want 10", len(b), err)
	}
	if _, err := l.RemoveSegmentsBefore(8192); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadRaw(0, 100); !errors.Is(err, ErrBelowRetention) {
		t.Fatalf("ReadRaw below the oldest segment: %v", err)
	}
	if b, err := l.ReadRaw(8192, 10); err != nil || len(b) != 10 {
		t.Fatalf("ReadRaw at the oldest segment: %d bytes, %v", len(b), err)
	}
}

// startLogAt makes the log in fsys begin at start, as a log whose older
// segments retention removed does: an empty segment file named by start.
func startLogAt(t *testing.T, fsys vfs.FS, start int64) {
	t.Helper()
	if err := vfs.MkdirAllDurable(fsys, "log"); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create(path.Join("log", SegmentName(start)))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestRawAboveFourGiB(t *testing.T) {
	const start = 1<<32 - 2*4096
	mfs, sfs := vfs.NewMem(), vfs.NewMem()
	startLogAt(t, mfs, start)
	master := openLog(t, mfs, Options{})
	defer master.Close()
	if master.Written() != start {
		t.Fatalf("the master's log starts at %d, want %d", master.Written(), start)
	}
	ends := fillMaster(t, master, 120)
	if master.Written() < 1<<32+4096 {
		t.Fatalf("the master's log ends at %d: want it well past 2^32", master.Written())
	}
	slave := openLog(t, sfs, Options{})
	defer slave.Close()
	// A fresh slave starts at the master's oldest byte; not inside a
	// segment.
	if _, err := slave.AppendRaw(start+100, []byte{1}); !errors.Is(err, ErrBadOffset) {
		t.Fatalf("AppendRaw inside a segment on an empty log: %v, want ErrBadOffset", err)
	}
	b, err := master.ReadRaw(master.MinOffset(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slave.AppendRaw(master.MinOffset(), b); err != nil {
		t.Fatal(err)
	}
	if slave.MinOffset() != start {
		t.Fatalf("the slave's log starts at %d, want %d", slave.MinOffset(), start)
	}
	ship(t, master, slave, ends, rand.New(rand.NewPCG(3, 3)))
	if slave.Durable() != master.Durable() {
		t.Fatalf("slave durable %d, master %d", slave.Durable(), master.Durable())
	}
	sameFilesFrom(t, mfs, sfs, start, master.Written(), 4096)
	got := readAll(t, slave)
	if len(got) != 120 || got[119].PhysicalOffset < 1<<32 {
		t.Fatalf("the slave reads %d records, the last at %d", len(got), got[len(got)-1].PhysicalOffset)
	}
}

// AppendRawAsync: chunks handed over back to back, without waiting for
// each one's sync, are written in order, each answered once durable under
// FlushSync (written under FlushAsync), and the copy is byte-identical.
func TestRawAppendAsyncInOrder(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			mfs, sfs := vfs.NewMem(), vfs.NewMem()
			master := openLog(t, mfs, Options{FlushMode: mode})
			defer master.Close()
			slave := openLog(t, sfs, Options{FlushMode: mode})
			defer slave.Close()
			fillMaster(t, master, 120)
			type answer struct {
				res     Result
				err     error
				durable int64
			}
			answers := make(chan answer, 1024)
			var wantEnds []int64
			rnd := rand.New(rand.NewPCG(2, uint64(mode)))
			for off := int64(0); off < master.Written(); {
				b, err := master.ReadRaw(off, 1+rnd.IntN(900))
				if err != nil {
					t.Fatal(err)
				}
				off += int64(len(b))
				wantEnds = append(wantEnds, off)
				slave.AppendRawAsync(off-int64(len(b)), b, func(res Result, err error) {
					answers <- answer{res, err, slave.flushed.Load()}
				})
			}
			for i, end := range wantEnds {
				a := <-answers
				if a.err != nil || a.res.End != end {
					t.Fatalf("answer %d: %+v, %v; want end %d", i, a.res, a.err, end)
				}
				if mode == FlushSync && a.durable < end {
					t.Fatalf("answer %d (end %d) came with the log synced only to %d", i, end, a.durable)
				}
			}
			if slave.Written() != master.Written() {
				t.Fatalf("slave written %d, master %d", slave.Written(), master.Written())
			}
			sameFiles(t, mfs, sfs, master.Written(), 4096)
			if _, err := slave.AppendRaw(0, []byte{1}); !errors.Is(err, ErrBadOffset) {
				t.Fatalf("a raw append behind the end: %v, want ErrBadOffset", err)
			}
			errc := make(chan error, 1)
			slave.AppendRawAsync(5, []byte{1}, func(_ Result, err error) { errc <- err })
			if err := <-errc; !errors.Is(err, ErrBadOffset) {
				t.Fatalf("an async raw append behind the end: %v, want ErrBadOffset", err)
			}
		})
	}
}

// ReadRawInto reads what ReadRaw reads, bounded by the buffer, and fails
// as it does.
func TestReadRawInto(t *testing.T) {
	l := openLog(t, vfs.NewMem(), Options{})
	defer l.Close()
	fillMaster(t, l, 40)
	buf := make([]byte, 300)
	for off := int64(0); off < l.Written(); {
		want, err := l.ReadRaw(off, len(buf))
		if err != nil {
			t.Fatal(err)
		}
		n, err := l.ReadRawInto(off, buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("ReadRawInto at %d: %d bytes, %v; ReadRaw gave %d", off, n, err, len(want))
		}
		off += int64(n)
	}
	if n, err := l.ReadRawInto(l.Written(), buf); n != 0 || err != nil {
		t.Fatalf("at the end: %d, %v; want 0, nil", n, err)
	}
	if _, err := l.ReadRawInto(l.Written()+1, buf); !errors.Is(err, ErrBadOffset) {
		t.Fatalf("past the end: %v, want ErrBadOffset", err)
	}
	if _, err := l.ReadRawInto(0, nil); err == nil {
		t.Fatal("a read into an empty buffer did not fail")
	}
}

// TestReplicaRefusesLocalAppends: a log in replica mode (a slave's) takes
// only its master's bytes: a local append — a demoted master's retried
// state record, say — is refused, so it can never land between the
// replicated bytes and make the replica diverge (found by petrel verify).
// Out of replica mode (promoted) it takes local appends again.
func TestReplicaRefusesLocalAppends(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			mfs, sfs := vfs.NewMem(), vfs.NewMem()
			master := openLog(t, mfs, Options{FlushMode: mode})
			defer master.Close()
			slave := openLog(t, sfs, Options{FlushMode: mode})
			defer slave.Close()
			slave.SetReplica(true)
			if _, err := slave.Append(testMsg("T", 0, "local")); !errors.Is(err, ErrReplica) {
				t.Fatalf("a local append on a replica: %v; want ErrReplica", err)
			}
			if slave.Written() != 0 {
				t.Fatalf("the refused append left %d bytes", slave.Written())
			}
			ends := fillMaster(t, master, 20)
			ship(t, master, slave, ends, rand.New(rand.NewPCG(2, uint64(mode))))
			sameFiles(t, mfs, sfs, master.Written(), 4096)
			slave.SetReplica(false)
			if _, err := slave.Append(testMsg("T", 0, "promoted")); err != nil {
				t.Fatalf("a local append once promoted: %v", err)
			}
		})
	}
}
