package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// arrivals records what store listeners are told.
type arrivals struct {
	mu    sync.Mutex
	calls []string
}

func (a *arrivals) listen(topic string, qid int32, max int64) {
	a.mu.Lock()
	a.calls = append(a.calls, fmt.Sprintf("%s/%d:%d", topic, qid, max))
	a.mu.Unlock()
}

func (a *arrivals) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.calls, " ")
}

// holdCommitLogSyncs holds the fsyncs of the store's commit-log segments
// (not those of queues, index or metadata) until the test ends or the
// hold is released.
func holdCommitLogSyncs(t *testing.T, fsys *vfs.MemFS, dir string) *vfs.SyncHold {
	prefix := strings.TrimSuffix(dir, "/") + "/commitlog/"
	h := fsys.HoldSync(func(name string) bool { return strings.HasPrefix(name, prefix) })
	t.Cleanup(h.Release)
	return h
}

// TestNothingIsVisibleBeforeItsFsyncUnderSyncFlush: under sync flush a put
// becomes visible to readers only once its fsync returned (RocketMQ #8239;
// replication will rely on it). While a group's fsync is held the
// messages are written (the commit log's written end passed them) but no
// read by queue offset, by commit-log offset or by key finds them, the
// max offsets do not count them, listeners (long polls, timers,
// transactions) are not told, and a crash at that moment loses them; once
// the fsync returns they appear everywhere.
func TestNothingIsVisibleBeforeItsFsyncUnderSyncFlush(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	s := mustOpen(t, cfg)
	t.Cleanup(func() { s.Close() })
	heard := &arrivals{}
	s.AddListener(heard.listen)
	if err := s.Put(newMsg("T", 0, "synced", "k-synced")); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s)
	before := s.Written()
	heardBefore := heard.String()

	hold := holdCommitLogSyncs(t, fsys, cfg.Dir)
	group := []*message.Message{newMsg("T", 0, "held-T", "k-held"), newMsg("U", 0, "held-U", "k-held")}
	done := make(chan error, 1)
	s.PutAsync(group, func(err error) { done <- err })
	if err := hold.WaitBlocked(ctx, 1); err != nil {
		t.Fatalf("the group's fsync never started: %v", err)
	}
	if s.Written() <= before {
		t.Fatalf("fsync held but the commit log's written end %d has not passed %d", s.Written(), before)
	}
	// Let the dispatcher feed everything it takes as durable; the checks
	// below then see all it would ever do before the fsync returns.
	if err := s.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	held := fmt.Sprintf("while the fsync of [%d, %d) is held", before, s.Written())
	if got := s.Durable(); got != before {
		t.Errorf("Durable() = %d %s, want %d", got, held, before)
	}
	if got := s.Dispatched(); got != before {
		t.Errorf("Dispatched() = %d %s, want %d", got, held, before)
	}
	if got := s.MaxOffset("T", 0); got != 1 {
		t.Errorf("max offset of T/0 = %d %s, want 1", got, held)
	}
	if got := s.MaxOffset("U", 0); got != 0 || len(s.QueueIDs("U")) != 0 {
		t.Errorf("topic U has max offset %d and queues %v %s, want none", got, s.QueueIDs("U"), held)
	}
	res, err := s.GetMessages("T", 0, 0, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 1 || res.MaxOffset != 1 || res.NextOffset != 1 {
		t.Errorf("a read of T/0 from 0 got %d records, max %d, next %d %s; want 1, 1, 1", res.Count, res.MaxOffset, res.NextOffset, held)
	}
	res.Release()
	if m, st := getOne(t, s, "T", 0, 1); m != nil || st != OffsetOverflowOne {
		t.Errorf("a read of T/0 at 1 %s: status %v, want %v and no message", held, st, OffsetOverflowOne)
	}
	if _, err := s.ReadMessage(before); !errors.Is(err, ErrNotFound) {
		t.Errorf("read by commit-log offset %d %s: err %v, want ErrNotFound", before, held, err)
	}
	for _, key := range []string{"k-held", "UT0held-T"} {
		if recs, err := s.QueryByKey("T", key, 0, math.MaxInt64, 16); err != nil || len(recs) != 0 {
			t.Errorf("query T by key %q %s: %d records (%v), want none", key, held, len(recs), err)
		}
	}
	if got := heard.String(); got != heardBefore {
		t.Errorf("listeners heard %q %s, want only %q", got, held, heardBefore)
	}
	select {
	case err := <-done:
		t.Fatalf("put answered (%v) before its fsync returned", err)
	default:
	}

	// A crash now loses the group, and no reader saw it above: the queue
	// offsets it had are given again without anyone having seen two
	// messages at one offset.
	crashCfg := cfg
	crashCfg.FS = fsys.CrashClone(vfs.CrashOptions{})
	c := mustOpen(t, crashCfg)
	waitDispatched(t, c)
	if c.MaxOffset("T", 0) != 1 || c.MaxOffset("U", 0) != 0 {
		t.Errorf("after a crash during the held fsync: max offsets T/0 %d U/0 %d, want 1 0", c.MaxOffset("T", 0), c.MaxOffset("U", 0))
	}
	if recs, _ := c.QueryByKey("T", "k-held", 0, math.MaxInt64, 16); len(recs) != 0 {
		t.Errorf("after a crash the index finds %d held messages, want none", len(recs))
	}
	again := newMsg("T", 0, "after-crash", "")
	if err := c.Put(again); err != nil || again.QueueOffset != 1 {
		t.Errorf("put after the crash: offset %d (%v), want 1", again.QueueOffset, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// The fsync returns: the put is answered and the group appears.
	hold.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("put after the fsync: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("put not answered after the fsync was released")
	}
	waitDispatched(t, s)
	if s.MaxOffset("T", 0) != 2 || s.MaxOffset("U", 0) != 1 {
		t.Fatalf("after the fsync: max offsets T/0 %d U/0 %d, want 2 1", s.MaxOffset("T", 0), s.MaxOffset("U", 0))
	}
	if m, st := getOne(t, s, "T", 0, 1); m == nil || string(m.Body) != "held-T" {
		t.Fatalf("after the fsync T/0 at 1: status %v, want held-T", st)
	}
	if r, err := s.ReadMessage(before); err != nil || string(r.Body()) != "held-T" {
		t.Fatalf("after the fsync, read by offset %d: %v", before, err)
	}
	if recs, err := s.QueryByKey("U", "k-held", 0, math.MaxInt64, 16); err != nil || len(recs) != 1 || string(recs[0].Body()) != "held-U" {
		t.Fatalf("after the fsync, query U by key: %d records (%v), want held-U", len(recs), err)
	}
	if got, want := heard.String(), heardBefore+" T/0:2 U/0:1"; got != want {
		t.Fatalf("after the fsync listeners heard %q, want %q", got, want)
	}
}

// TestRestartAfterKillServesOnlyDurableRecords: after kill -9 the restarted
// store finds in the OS page cache records whose fsync never returned. It
// may serve them only once they are durable: whatever the restarted store
// serves must survive a power loss after the restart. The group here
// straddles a segment end, so recovery scans a rolled segment that the
// writer had not synced and a new one.
func TestRestartAfterKillServesOnlyDurableRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	s := mustOpen(t, cfg)
	t.Cleanup(func() { s.Close() })
	for i := 0; s.Written() < cfg.SegmentBytes-3<<10; i++ {
		if err := s.Put(sizedMsg(fmt.Sprintf("synced-%d", i), 500)); err != nil {
			t.Fatal(err)
		}
	}
	// The first record fits before the segment end, the second does not.
	room := cfg.SegmentBytes - s.Written()
	first := sizedMsg("tail", int(room)/2)
	second := sizedMsg("next", int(room))

	hold := holdCommitLogSyncs(t, fsys, cfg.Dir)
	s.PutAsync([]*message.Message{first, second}, func(error) {})
	if err := hold.WaitBlocked(ctx, 1); err != nil {
		t.Fatalf("the group's fsync never started: %v", err)
	}
	if s.Written() <= cfg.SegmentBytes {
		t.Fatalf("the group ends at %d, within the first segment of %d bytes: it does not straddle", s.Written(), cfg.SegmentBytes)
	}

	// kill -9 now, and restart.
	restartCfg := cfg
	restartCfg.FS = fsys.KillClone()
	r := mustOpen(t, restartCfg)
	t.Cleanup(func() { r.Close() })
	waitDispatched(t, r)
	served := map[int64]string{}
	for off := int64(0); off < r.MaxOffset("T", 0); off++ {
		if m, _ := getOne(t, r, "T", 0, off); m != nil {
			served[off] = string(m.Body)
		}
	}

	// A power loss after the restart keeps everything the restarted store
	// served.
	lossCfg := cfg
	lossCfg.FS = restartCfg.FS.(*vfs.MemFS).CrashClone(vfs.CrashOptions{})
	p := mustOpen(t, lossCfg)
	defer p.Close()
	waitDispatched(t, p)
	for off := range int64(len(served) + 1) {
		body, ok := served[off]
		if !ok {
			continue
		}
		if got := readBody(t, p, "T", 0, off); got != body {
			t.Errorf("T/0 at %d (%.12s…) was served after the restart; after a power loss that followed it: %s", off, body, got)
		}
	}
	if p.MaxOffset("T", 0) < r.MaxOffset("T", 0) {
		t.Errorf("max offset of T/0: %d after the restart, %d after a power loss that followed it", r.MaxOffset("T", 0), p.MaxOffset("T", 0))
	}
}

// sizedMsg is a message of T/0 whose body is name and n more bytes.
func sizedMsg(name string, n int) *message.Message {
	m := newMsg("T", 0, name+strings.Repeat("-", n), "")
	m.SetProperty(message.PropertyUniqKey, name)
	return m
}

// readBody returns the body of the message at off of a queue, or says
// what the read found instead.
func readBody(t *testing.T, s *Store, topic string, qid int32, off int64) string {
	t.Helper()
	res, err := s.GetMessages(topic, qid, off, 1, 0, nil)
	if err != nil {
		return fmt.Sprintf("read error %v", err)
	}
	defer res.Release()
	if res.Status != Found {
		return fmt.Sprintf("status %v", res.Status)
	}
	m, _, err := message.Decode(res.Body)
	if err != nil {
		return fmt.Sprintf("a record that does not decode (%v)", err)
	}
	return string(m.Body)
}
