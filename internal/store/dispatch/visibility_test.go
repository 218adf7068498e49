package dispatch

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// lockedSink records the bodies it is fed; safe to read while the
// dispatcher runs.
type lockedSink struct {
	mu     sync.Mutex
	bodies []string
}

func (s *lockedSink) Dispatch(r message.Record) error {
	s.mu.Lock()
	s.bodies = append(s.bodies, string(r.Body()))
	s.mu.Unlock()
	return nil
}

func (s *lockedSink) Flush() error { return nil }

func (s *lockedSink) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.bodies, ",")
}

// syncLog is a FlushSync commit log on fsys whose durable hook notifies
// the dispatcher d holds (as the store wires it).
func syncLog(t *testing.T, fsys vfs.FS, clk clock.Clock, d *atomic.Pointer[Dispatcher]) *commitlog.Log {
	t.Helper()
	l, err := commitlog.Open(fsys, "/d/log", commitlog.Options{
		SegmentBytes: 64 << 10, FlushMode: commitlog.FlushSync, Clock: clk,
		OnDurable: func(int64) {
			if x := d.Load(); x != nil {
				x.Notify()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func visMsg(body string) *message.Message {
	return &message.Message{Topic: "T", Body: []byte(body), BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
}

// appendHeld appends body while the log's fsyncs are held and returns once
// the append is written and its fsync waits; the channel gets its answer.
func appendHeld(t *testing.T, ctx context.Context, fsys *vfs.MemFS, l *commitlog.Log, body string) (*vfs.SyncHold, <-chan error) {
	t.Helper()
	before := l.Written()
	hold := fsys.HoldSync(func(name string) bool { return strings.HasPrefix(name, "/d/log/") })
	t.Cleanup(hold.Release)
	done := make(chan error, 1)
	l.AppendAsync([]*message.Message{visMsg(body)}, func(_ commitlog.Result, err error) { done <- err })
	if err := hold.WaitBlocked(ctx, 1); err != nil {
		t.Fatalf("the fsync of %q never started: %v", body, err)
	}
	if l.Written() <= before {
		t.Fatalf("fsync held but written %d has not passed %d", l.Written(), before)
	}
	return hold, done
}

func awaitAppend(t *testing.T, ctx context.Context, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("append after the fsync was released: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("append not answered after the fsync was released")
	}
}

// TestDispatchFeedsOnlySyncedRecordsUnderSyncFlush: under sync flush the
// dispatcher feeds consume queues, the index and listeners only with
// records whose fsync returned. While a group's fsync is held, a running
// dispatcher (woken or not), its final pass at Close and its checkpoint
// all stop before the group; once the fsync returns the group is fed.
func TestDispatchFeedsOnlySyncedRecordsUnderSyncFlush(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fsys := vfs.NewMem()
	clk := clock.NewManual(time.Unix(1e9, 0))
	var dp atomic.Pointer[Dispatcher]
	l := syncLog(t, fsys, clk, &dp)
	t.Cleanup(func() { l.Close() })
	if _, err := l.Append(visMsg("synced")); err != nil {
		t.Fatal(err)
	}
	sink := &lockedSink{}
	var heard atomic.Int64
	opts := Options{FS: fsys, Dir: "/d", SegmentBytes: 64 << 10, Clock: clk}
	d := New(l, []Sink{sink}, 0, opts)
	d.AddListener(func(message.Record) { heard.Add(1) })
	dp.Store(d)
	if err := d.Replay(); err != nil { // as the store's recovery does
		t.Fatal(err)
	}
	d.Start()
	synced := l.Written()
	if d.Dispatched() != synced || sink.got() != "synced" {
		t.Fatalf("replay dispatched to %d (fed %q), want %d", d.Dispatched(), sink.got(), synced)
	}

	// A running dispatcher, woken, stops at the last fsync.
	hold, done := appendHeld(t, ctx, fsys, l, "held")
	d.Notify()
	// Returns once the dispatcher has fed everything it takes as durable.
	if err := d.WaitDispatched(ctx, l.Durable()); err != nil {
		t.Fatal(err)
	}
	if got := d.Dispatched(); got != synced {
		t.Errorf("dispatched to %d while the fsync of [%d, %d) is held, want %d", got, synced, l.Written(), synced)
	}
	if got := sink.got(); got != "synced" || heard.Load() != 1 {
		t.Errorf("sink fed %q, listeners heard %d records, while the fsync is held; want only \"synced\", 1", got, heard.Load())
	}
	hold.Release()
	awaitAppend(t, ctx, done)
	if err := d.WaitDispatched(ctx, l.Written()); err != nil {
		t.Fatalf("the record was not dispatched after its fsync: %v", err)
	}
	if got := sink.got(); got != "synced,held" || heard.Load() != 2 {
		t.Fatalf("after the fsync: sink fed %q, listeners heard %d; want \"synced,held\", 2", got, heard.Load())
	}

	// Close during a held fsync: its final pass and checkpoint stop before
	// the group too.
	synced = l.Written()
	hold, done = appendHeld(t, ctx, fsys, l, "held-at-close")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Dispatched(); got != synced {
		t.Errorf("Close dispatched to %d while the fsync of [%d, %d) is held, want %d", got, synced, l.Written(), synced)
	}
	cp, err := ReadCheckpoint(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Dispatched != synced || cp.LogFlushed != synced {
		t.Errorf("checkpoint %+v written during the held fsync, want dispatched and flushed %d", cp, synced)
	}
	if got := sink.got(); got != "synced,held" {
		t.Errorf("sink fed %q by Close during the held fsync, want \"synced,held\"", got)
	}
	hold.Release()
	awaitAppend(t, ctx, done)
	d2 := New(l, []Sink{sink}, cp.Dispatched, opts)
	dp.Store(d2)
	if err := d2.Replay(); err != nil {
		t.Fatal(err)
	}
	if got := sink.got(); got != "synced,held,held-at-close" || d2.Dispatched() != l.Written() {
		t.Fatalf("after the fsync a replay fed %q up to %d, want all three up to %d", got, d2.Dispatched(), l.Written())
	}
}
