package dispatch

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// boundedLog is the log with its durable end bounded, as a commit point
// bounds it.
type boundedLog struct {
	*commitlog.Log
	bound atomic.Int64
}

func (b *boundedLog) Durable() int64 { return min(b.Log.Durable(), b.bound.Load()) }

// TestBoundInsideARecordWaits: a bound that cuts a record holds it back
// without stopping the dispatcher, WaitDispatched to the bound returns, and
// the record goes once the bound passes its end.
func TestBoundInsideARecordWaits(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := commitlog.Open(fsys, "/d/log", commitlog.Options{SegmentBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	offs := fill(t, l, 20)
	src := &boundedLog{Log: l}
	src.bound.Store(offs[3] + 7) // inside the fourth record
	sink := &recordingSink{failAt: -1}
	d := New(src, []Sink{sink}, 0, Options{FS: fsys, Dir: "/d", SegmentBytes: 1024, Bounded: func() bool { return true }})
	d.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.WaitDispatched(ctx, src.Durable()); err != nil {
		t.Fatal(err)
	}
	if d.Err() != nil || d.Dispatched() != offs[3] {
		t.Fatalf("dispatched to %d (err %v), want %d", d.Dispatched(), d.Err(), offs[3])
	}
	src.bound.Store(l.Durable())
	d.Notify()
	if err := d.WaitDispatched(ctx, l.Durable()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sink.offsets) != fmt.Sprint(offs) {
		t.Fatalf("dispatched %v, want %v", sink.offsets, offs)
	}
}
