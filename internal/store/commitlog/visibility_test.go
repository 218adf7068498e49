package commitlog

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// durableRecorder keeps what OnDurable reported.
type durableRecorder struct {
	mu    sync.Mutex
	calls []int64
}

func (r *durableRecorder) observe(off int64) {
	r.mu.Lock()
	r.calls = append(r.calls, off)
	r.mu.Unlock()
}

// max returns the highest offset reported so far (0 without a call).
func (r *durableRecorder) max() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := int64(0)
	for _, c := range r.calls {
		m = max(m, c)
	}
	return m
}

// TestFlushSyncDurableWaitsForTheFsync is the commit log's half of the rule
// that nothing is visible before it is durable (RocketMQ #8239): under
// FlushSync, while a group's fsync is held, the group is written (Written
// passed it) but Durable, Flushed and OnDurable stay where the last fsync
// left them, the appenders are not answered, and a crash loses the group.
// Once the fsync returns, all of them move to the group's end.
func TestFlushSyncDurableWaitsForTheFsync(t *testing.T) {
	fsys := vfs.NewMem()
	rec := &durableRecorder{}
	opts := Options{SegmentBytes: 64 << 10, FlushMode: FlushSync, OnDurable: rec.observe, Clock: clock.NewManual(time.Unix(1e9, 0))}
	l := openLog(t, fsys, opts)
	t.Cleanup(func() { l.Close() })
	if _, err := l.Append(testMsg("T", 0, "synced")); err != nil {
		t.Fatal(err)
	}
	before := l.Written()
	if l.Durable() != before || rec.max() != before {
		t.Fatalf("after a synced append: written %d durable %d on-durable %d, want all equal", before, l.Durable(), rec.max())
	}

	hold := fsys.HoldSync(func(name string) bool { return strings.HasPrefix(name, "log/") })
	t.Cleanup(hold.Release) // before l.Close, which would wait for the fsync
	group := []*message.Message{testMsg("T", 0, "held-0"), testMsg("T", 1, "held-1"), testMsg("U", 0, "held-2")}
	type answer struct {
		res Result
		err error
	}
	answered := make(chan answer, 1)
	l.AppendAsync(group, func(res Result, err error) { answered <- answer{res, err} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hold.WaitBlocked(ctx, 1); err != nil {
		t.Fatalf("the group's fsync never started: %v", err)
	}

	// The group is written: a reader of the OS bytes would find it.
	if l.Written() <= before {
		t.Fatalf("fsync held but written %d has not passed %d: the group was not written", l.Written(), before)
	}
	if got := l.Durable(); got != before {
		t.Errorf("Durable() = %d while the fsync of [%d, %d) is held, want %d: unsynced records would be served", got, before, l.Written(), before)
	}
	if got := l.Flushed(); got != before {
		t.Errorf("Flushed() = %d while the fsync is held, want %d", got, before)
	}
	if got := rec.max(); got != before {
		t.Errorf("OnDurable reported %d while the fsync of [%d, %d) is held, want at most %d: the dispatcher would be woken for unsynced records", got, before, l.Written(), before)
	}
	select {
	case a := <-answered:
		t.Fatalf("append answered (%+v, %v) before its fsync returned", a.res, a.err)
	default:
	}
	// A crash now loses the group and keeps what was synced.
	crashed := openLog(t, fsys.CrashClone(vfs.CrashOptions{}), Options{SegmentBytes: opts.SegmentBytes, RecoverFrom: -1})
	if got := readAll(t, crashed); len(got) != 1 || string(got[0].Body) != "synced" {
		t.Errorf("after a crash during the held fsync the log holds %d records, want only the synced one", len(got))
	}
	if crashed.Written() != before {
		t.Errorf("after a crash the log ends at %d, want %d", crashed.Written(), before)
	}
	crashed.Close()

	hold.Release()
	var a answer
	select {
	case a = <-answered:
	case <-ctx.Done():
		t.Fatal("append not answered after the fsync was released")
	}
	if a.err != nil {
		t.Fatalf("append after the release: %v", a.err)
	}
	if a.res.Offset != before || a.res.End != l.Written() {
		t.Fatalf("append result %+v, want offset %d end %d", a.res, before, l.Written())
	}
	if l.Durable() != a.res.End || l.Flushed() != a.res.End || rec.max() != a.res.End {
		t.Fatalf("after the fsync: durable %d flushed %d on-durable %d, want %d", l.Durable(), l.Flushed(), rec.max(), a.res.End)
	}
	if got := readAll(t, l); len(got) != 4 {
		t.Fatalf("after the fsync %d records are readable below Durable, want 4", len(got))
	}
}

// TestRecoveryMakesWhatItAdoptsDurable: after kill -9 the page cache holds
// a group whose fsync never returned, here straddling a segment end.
// Recovery adopts it (Durable covers it), so it must be on disk: a power
// loss after the restart keeps every record the restarted log serves.
func TestRecoveryMakesWhatItAdoptsDurable(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 4096, FlushMode: FlushSync, Clock: clock.NewManual(time.Unix(1e9, 0))}
	l := openLog(t, fsys, opts)
	t.Cleanup(func() { l.Close() })
	for l.Written() < opts.SegmentBytes-1500 {
		if _, err := l.Append(testMsg("T", 0, strings.Repeat("s", 300))); err != nil {
			t.Fatal(err)
		}
	}
	hold := fsys.HoldSync(func(name string) bool { return strings.HasPrefix(name, "log/") })
	t.Cleanup(hold.Release)
	l.AppendAsync([]*message.Message{testMsg("T", 0, strings.Repeat("a", 600)), testMsg("T", 0, strings.Repeat("b", 1200))}, func(Result, error) {})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hold.WaitBlocked(ctx, 1); err != nil {
		t.Fatalf("the group's fsync never started: %v", err)
	}
	if l.Written() <= opts.SegmentBytes {
		t.Fatalf("the group ends at %d, inside the first segment: it does not straddle", l.Written())
	}

	killed := fsys.KillClone()
	r := openLog(t, killed, Options{SegmentBytes: opts.SegmentBytes, RecoverFrom: 0})
	defer r.Close()
	served := readAll(t, r)
	if r.Durable() != l.Written() {
		t.Fatalf("the restarted log is durable to %d, want the written end %d (the page cache kept it all)", r.Durable(), l.Written())
	}
	lost := openLog(t, killed.CrashClone(vfs.CrashOptions{}), Options{SegmentBytes: opts.SegmentBytes, RecoverFrom: 0})
	defer lost.Close()
	if got := readAll(t, lost); len(got) != len(served) || lost.Written() != r.Durable() {
		t.Fatalf("the restarted log served %d records up to %d; after a power loss that followed, %d up to %d remain",
			len(served), r.Durable(), len(got), lost.Written())
	}
}
