package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

type recordingSink struct {
	offsets []int64
	failAt  int64
	flushes int
}

func (s *recordingSink) Dispatch(r message.Record) error {
	if r.PhysicalOffset() == s.failAt {
		return errors.New("sink refused")
	}
	s.offsets = append(s.offsets, r.PhysicalOffset())
	return nil
}

func (s *recordingSink) Flush() error { s.flushes++; return nil }

func fill(t *testing.T, l *commitlog.Log, n int) []int64 {
	t.Helper()
	var offs []int64
	for i := range n {
		m := &message.Message{Topic: "T", Body: []byte(fmt.Sprint("body-", i)), BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
		if _, err := l.Append(m); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, m.PhysicalOffset)
	}
	return offs
}

func TestDispatchFeedsSinksInLogOrderAcrossSegments(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := commitlog.Open(fsys, "/d/log", commitlog.Options{SegmentBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := fill(t, l, 40) // many segments, each ending in a blank
	sink := &recordingSink{failAt: -1}
	d := New(l, []Sink{sink}, 0, Options{FS: fsys, Dir: "/d", SegmentBytes: 1024})
	var heard int
	d.AddListener(func(message.Record) { heard++ })
	d.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.WaitDispatched(ctx, l.Durable()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sink.offsets) != fmt.Sprint(want) || heard != len(want) {
		t.Fatalf("dispatched %v (heard %d), want %v", sink.offsets, heard, want)
	}
	cp, err := ReadCheckpoint(fsys, "/d")
	if err != nil || cp.Dispatched != l.Durable() || sink.flushes == 0 {
		t.Fatalf("checkpoint %+v (%v), flushes %d", cp, err, sink.flushes)
	}
}

func TestDispatchStopsAtASinkErrorAndReportsIt(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := commitlog.Open(fsys, "/d/log", commitlog.Options{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	offs := fill(t, l, 5)
	sink := &recordingSink{failAt: offs[3]}
	d := New(l, []Sink{sink}, 0, Options{FS: fsys, Dir: "/d", SegmentBytes: 4096})
	if err := d.Replay(); err == nil {
		t.Fatal("replay past a failing sink succeeded")
	}
	if len(sink.offsets) != 3 || d.Dispatched() != offs[3] {
		t.Fatalf("dispatched %d records up to %d, want 3 up to %d", len(sink.offsets), d.Dispatched(), offs[3])
	}
}
