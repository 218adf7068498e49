package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/vfs"
)

func TestPutGetByQueueOffsetKeyAndID(t *testing.T) {
	clk := clock.NewManual(t0)
	s := mustOpen(t, smallConfig(vfs.NewMem(), clk))
	defer s.Close()
	var msgs []*message.Message
	for i := range 50 {
		m := newMsg("Orders", int32(i%4), fmt.Sprintf("order-%d", i), fmt.Sprintf("id%d shared", i))
		m.SetProperty(message.PropertyTags, []string{"A", "B", "C"}[i%3])
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		if m.QueueOffset != int64(i/4) {
			t.Fatalf("message %d got queue offset %d, want %d", i, m.QueueOffset, i/4)
		}
		msgs = append(msgs, m)
		clk.Advance(time.Second)
	}
	waitDispatched(t, s)
	for _, m := range msgs {
		got, st := getOne(t, s, m.Topic, m.QueueID, m.QueueOffset)
		if got == nil || string(got.Body) != string(m.Body) || got.StoreHost != s.cfg.StoreHost {
			t.Fatalf("get %s@%d: %v %v", m.Topic, m.QueueOffset, got, st)
		}
		r, err := s.ReadMessage(m.PhysicalOffset)
		if err != nil || string(r.Body()) != string(m.Body) {
			t.Fatalf("read by offset %d: %v", m.PhysicalOffset, err)
		}
	}
	// Batch read with max count and bytes.
	res, err := s.GetMessages("Orders", 1, 0, 5, 0, nil)
	if err != nil || res.Status != Found || res.Count != 5 || res.NextOffset != 5 || res.MaxOffset != 13 {
		t.Fatalf("batch get: %+v %v", res, err)
	}
	res.Release()
	res, _ = s.GetMessages("Orders", 1, 0, 32, 10, nil)
	if res.Count != 1 {
		t.Fatalf("maxBytes 10 returned %d records, want exactly 1", res.Count)
	}
	res.Release()
	// Tag filter by hash.
	want := message.TagHash("B")
	res, _ = s.GetMessages("Orders", 0, 0, 32, 0, func(h int64) bool { return h == want })
	n := 0
	res.Records(func(r message.Record) {
		n++
		if tag, _ := r.Property(message.PropertyTags); string(tag) != "B" {
			t.Fatalf("filter passed tag %q", tag)
		}
	})
	if n == 0 || res.NextOffset != 13 {
		t.Fatalf("filtered read: %d records, next %d", n, res.NextOffset)
	}
	res.Release()
	// Statuses at the edges.
	for _, c := range []struct {
		off  int64
		want GetStatus
		next int64
	}{{13, OffsetOverflowOne, 13}, {20, OffsetOverflowBadly, 0}} {
		res, _ := s.GetMessages("Orders", 0, c.off, 1, 0, nil)
		if res.Status != c.want || res.NextOffset != c.next {
			t.Fatalf("offset %d: status %v next %d, want %v %d", c.off, res.Status, res.NextOffset, c.want, c.next)
		}
	}
	if res, _ := s.GetMessages("Nope", 0, 0, 1, 0, nil); res.Status != NoMessageInQueue {
		t.Fatalf("unknown queue: %v", res.Status)
	}
	// Keys: each own key once, the shared key many times, newest first,
	// within a time range and capped.
	got, err := s.QueryByKey("Orders", "id7", 0, clk.Now().UnixMilli(), 10)
	if err != nil || len(got) != 1 || string(got[0].Body()) != "order-7" {
		t.Fatalf("query id7: %d results, %v", len(got), err)
	}
	got, _ = s.QueryByKey("Orders", "shared", 0, clk.Now().UnixMilli(), 10)
	if len(got) != 10 || string(got[0].Body()) != "order-49" {
		t.Fatalf("query shared: %d results, first %q", len(got), got[0].Body())
	}
	from, to := msgs[10].StoreTimestamp, msgs[19].StoreTimestamp
	got, _ = s.QueryByKey("Orders", "shared", from, to, 100)
	if len(got) != 10 {
		t.Fatalf("time-ranged query returned %d, want 10", len(got))
	}
	if got, _ := s.QueryByKey("Other", "shared", 0, clk.Now().UnixMilli(), 10); len(got) != 0 {
		t.Fatalf("key of another topic matched %d", len(got))
	}
	uniq := msgs[3].Property(message.PropertyUniqKey)
	if got, _ := s.QueryByKey("Orders", strings.ToLower(uniq), 0, clk.Now().UnixMilli(), 10); len(got) != 1 {
		t.Fatalf("unique key lookup (any case) found %d", len(got))
	}
	// Offset by store time.
	if off, err := s.OffsetByTime("Orders", 0, msgs[8].StoreTimestamp); err != nil || off != 2 {
		t.Fatalf("offset by time = %d, %v; want 2", off, err)
	}
	if off, _ := s.OffsetByTime("Orders", 0, clk.Now().Add(time.Hour).UnixMilli()); off != 13 {
		t.Fatalf("offset by future time = %d, want max 13", off)
	}
}

func TestBatchAndAsyncPut(t *testing.T) {
	s := mustOpen(t, smallConfig(vfs.NewMem(), clock.NewManual(t0)))
	defer s.Close()
	batch := []*message.Message{newMsg("T", 0, "a", ""), newMsg("T", 0, "b", ""), newMsg("T", 0, "c", "")}
	if err := s.PutBatch(batch); err != nil {
		t.Fatal(err)
	}
	for i, m := range batch {
		if m.QueueOffset != int64(i) {
			t.Fatalf("batch item %d offset %d", i, m.QueueOffset)
		}
	}
	done := make(chan error, 1)
	m := newMsg("T", 0, "d", "")
	s.PutAsync([]*message.Message{m}, func(err error) { done <- err })
	if err := <-done; err != nil || m.QueueOffset != 3 {
		t.Fatalf("async put: offset %d, %v", m.QueueOffset, err)
	}
}

func TestListenerHearsOfReadableMessages(t *testing.T) {
	s := mustOpen(t, smallConfig(vfs.NewMem(), clock.NewManual(t0)))
	defer s.Close()
	type ev struct {
		topic string
		qid   int32
		max   int64
	}
	evs := make(chan ev, 10)
	s.AddListener(func(topic string, qid int32, max int64) { evs <- ev{topic, qid, max} })
	if err := s.Put(newMsg("T", 2, "x", "")); err != nil {
		t.Fatal(err)
	}
	e := <-evs
	if e != (ev{"T", 2, 1}) {
		t.Fatalf("event %+v", e)
	}
	// By the time the listener runs, the message is readable.
	if m, _ := getOne(t, s, "T", 2, 0); m == nil {
		t.Fatal("message not readable when the listener fired")
	}
}

func TestOversizedMessageRefusedNamingTheLimit(t *testing.T) {
	s := mustOpen(t, smallConfig(vfs.NewMem(), clock.NewManual(t0)))
	defer s.Close()
	err := s.Put(newMsg("T", 0, strings.Repeat("x", 5000), ""))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("err = %v, want ErrTooLarge naming 4096", err)
	}
	if err := s.Put(newMsg("T", 0, "fits", "")); err != nil {
		t.Fatal(err)
	}
}

func TestRetentionDeletesExpiredSegmentsAndFollowers(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clk)
	cfg.FileReservedTime = time.Hour
	cfg.RetentionInterval = 100 * time.Hour // passes run when the test says, until the end
	s := mustOpen(t, cfg)
	defer s.Close()
	body := strings.Repeat("x", 500)
	for i := range 60 { // ~36 KiB: several 8 KiB segments
		if err := s.Put(newMsg("T", 0, body, fmt.Sprint("k", i))); err != nil {
			t.Fatal(err)
		}
	}
	before := len(s.clog.Segments())
	if before < 4 {
		t.Fatalf("only %d segments", before)
	}
	// Not yet expired.
	clk.Advance(30 * time.Minute)
	waitDispatched(t, s)
	if rep, err := s.RunRetention(); err != nil || rep.SegmentsRemoved != 0 {
		t.Fatalf("removed %d segments before the reserve time: %v", rep.SegmentsRemoved, err)
	}
	clk.Advance(2 * time.Hour)
	last := newMsg("T", 0, body, "last")
	if err := s.Put(last); err != nil {
		t.Fatal(err)
	}
	// Fill the current segment so the newest old segment is followed by one
	// started after the reserve time.
	fillIntoNextSegment(t, s, body)
	waitDispatched(t, s)
	rep, err := s.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRemoved != before-1 {
		t.Fatalf("removed %d segments, want %d", rep.SegmentsRemoved, before-1)
	}
	min := s.MinOffset("T", 0)
	if min == 0 {
		t.Fatal("consume queue min offset did not move")
	}
	res, _ := s.GetMessages("T", 0, 0, 1, 0, nil)
	if res.Status != OffsetTooSmall || res.NextOffset != min {
		t.Fatalf("read below min: %v next %d, want OffsetTooSmall %d", res.Status, res.NextOffset, min)
	}
	if m, _ := getOne(t, s, "T", 0, last.QueueOffset); m == nil {
		t.Fatal("message in a kept segment is gone")
	}
	if got, _ := s.QueryByKey("T", "k1", 0, clk.Now().UnixMilli(), 10); len(got) != 0 {
		t.Fatal("key of a deleted message still found")
	}
	// The retention timer runs the same pass on its own.
	clk.Advance(2 * time.Hour)
	fillIntoNextSegment(t, s, body)
	waitDispatched(t, s)
	n := len(s.clog.Segments())
	clk.Advance(cfg.RetentionInterval)
	if len(s.clog.Segments()) >= n {
		t.Fatalf("the retention timer removed nothing: %d segments before, %d after", n, len(s.clog.Segments()))
	}
}

// fillIntoNextSegment puts messages until one lands in a new segment.
func fillIntoNextSegment(t *testing.T, s *Store, body string) {
	t.Helper()
	seg := s.clog.SegmentStart(s.clog.Written())
	for s.clog.SegmentStart(s.clog.Written()) == seg {
		if err := s.Put(newMsg("T", 0, body, "")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiskFullRefusesWritesKeepsDataAndRecovers(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clk)
	s := mustOpen(t, cfg)
	defer s.Close()
	var stored []*message.Message
	for i := range 5 {
		m := newMsg("T", 0, fmt.Sprint("m", i), "")
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, m)
	}
	waitDispatched(t, s)
	u, _ := fsys.Usage("/")
	used := u.TotalBytes - u.FreeBytes
	fsys.SetCapacity(int64(float64(used) / 0.95))
	rep, err := s.RunRetention()
	if err != nil || !rep.WritesRefused {
		t.Fatalf("at 95%% used: %+v %v", rep, err)
	}
	err = s.Put(newMsg("T", 0, "refused", ""))
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "90%") {
		t.Fatalf("put on a full disk: %v, want ErrDiskFull naming 90%%", err)
	}
	for _, m := range stored {
		if got, _ := getOne(t, s, "T", 0, m.QueueOffset); got == nil || string(got.Body) != string(m.Body) {
			t.Fatalf("stored message %d unreadable on a full disk", m.QueueOffset)
		}
	}
	fsys.SetCapacity(int64(used) * 4)
	if rep, _ := s.RunRetention(); rep.WritesRefused {
		t.Fatal("writes still refused after space returned")
	}
	m := newMsg("T", 0, "accepted", "")
	if err := s.Put(m); err != nil || m.QueueOffset != 5 {
		t.Fatalf("put after space returned: %v offset %d", err, m.QueueOffset)
	}
}

func TestDiskHighWaterDeletesOldestEarly(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clk)
	s := mustOpen(t, cfg)
	defer s.Close()
	for range 60 {
		if err := s.Put(newMsg("T", 0, strings.Repeat("y", 500), "")); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	segs := len(s.clog.Segments())
	u, _ := fsys.Usage("/")
	fsys.SetCapacity(int64(float64(u.TotalBytes-u.FreeBytes) / 0.80))
	rep, err := s.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRemoved == 0 || rep.UsedFraction >= cfg.DiskHighWater && len(s.clog.Segments()) > 1 {
		t.Fatalf("at 80%% used with reserve time not reached: %+v (had %d segments)", rep, segs)
	}
	if rep.WritesRefused {
		t.Fatal("writes refused below the hard limit")
	}
}

func TestWriteErrorFailsThePutAndLosesNothing(t *testing.T) {
	fsys := vfs.NewMem()
	s := mustOpen(t, smallConfig(fsys, clock.NewManual(t0)))
	defer s.Close()
	if err := s.Put(newMsg("T", 0, "before", "")); err != nil {
		t.Fatal(err)
	}
	fsys.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.Contains(p, "commitlog") {
			return fmt.Errorf("injected: %w", vfs.ErrNoSpace)
		}
		return nil
	})
	if err := s.Put(newMsg("T", 0, "fails", "")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put with failing writes: %v", err)
	}
	fsys.InjectError(nil)
	m := newMsg("T", 0, "after", "")
	if err := s.Put(m); err != nil || m.QueueOffset != 1 {
		t.Fatalf("put after the fault: offset %d, %v (a failed put must not use up an offset)", m.QueueOffset, err)
	}
	waitDispatched(t, s)
	if got, _ := getOne(t, s, "T", 0, 0); got == nil || string(got.Body) != "before" {
		t.Fatal("message before the fault lost")
	}
}

func TestInMemoryTopic(t *testing.T) {
	fsys := vfs.NewMem()
	clk := clock.NewManual(t0)
	cfg := smallConfig(fsys, clk)
	cfg.MemTopicMaxBytes = 2000
	s := mustOpen(t, cfg)
	if err := s.Meta().PutTopic(meta.Topic{Name: "Ticks", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		Attributes: map[string]string{AttrPersistent: "false"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	heard := 0
	s.AddListener(func(topic string, qid int32, max int64) {
		mu.Lock()
		heard++
		mu.Unlock()
	})
	written := s.clog.Written()
	var last *message.Message
	for i := range 40 {
		last = newMsg("Ticks", int32(i%2), fmt.Sprintf("tick-%03d", i), fmt.Sprint("k", i))
		if err := s.Put(last); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if s.clog.Written() != written {
		t.Fatal("in-memory topic wrote to the commit log")
	}
	if names, _ := fsys.ReadDir("/data/consumequeue"); len(names) != 0 {
		t.Fatalf("in-memory topic created consume queues %v", names)
	}
	mu.Lock()
	if heard != 40 {
		t.Fatalf("listener heard %d of 40", heard)
	}
	mu.Unlock()
	lo, hi := s.MinOffset("Ticks", 1), s.MaxOffset("Ticks", 1)
	if hi != 20 || lo == 0 {
		t.Fatalf("queue 1 bounds [%d,%d): want max 20 and oldest dropped", lo, hi)
	}
	res, _ := s.GetMessages("Ticks", 1, 0, 1, 0, nil)
	if res.Status != OffsetTooSmall || res.NextOffset != lo {
		t.Fatalf("read of a dropped offset: %v %d", res.Status, res.NextOffset)
	}
	got, st := getOne(t, s, "Ticks", 1, 19)
	if got == nil || string(got.Body) != string(last.Body) {
		t.Fatalf("newest in-memory message: %v %v", got, st)
	}
	if r, err := s.ReadMessage(last.PhysicalOffset); err != nil || string(r.Body()) != string(last.Body) {
		t.Fatalf("in-memory message by offset: %v", err)
	}
	if found, _ := s.QueryByKey("Ticks", "k39", 0, clk.Now().UnixMilli(), 5); len(found) != 1 {
		t.Fatalf("in-memory key lookup found %d", len(found))
	}
	if off, _ := s.OffsetByTime("Ticks", 1, last.StoreTimestamp); off != 19 {
		t.Fatalf("in-memory offset by time %d", off)
	}
	s.Close()
	s2 := mustOpen(t, cfg)
	defer s2.Close()
	if s2.MaxOffset("Ticks", 1) != 0 {
		t.Fatal("in-memory messages survived a restart")
	}
}

func TestRebuildWhenCheckpointIsMissing(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	s := mustOpen(t, cfg)
	for i := range 30 {
		if err := s.Put(newMsg("T", int32(i%2), fmt.Sprint(i), fmt.Sprint("k", i))); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := fsys.Remove("/data/" + dispatch.CheckpointFile); err != nil {
		t.Fatal(err)
	}
	if err := fsys.RemoveAll("/data/consumequeue/T/1"); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, cfg)
	defer s2.Close()
	waitDispatched(t, s2)
	if s2.MaxOffset("T", 1) != 15 || s2.MaxOffset("T", 0) != 15 {
		t.Fatalf("rebuilt max offsets %d/%d, want 15/15", s2.MaxOffset("T", 0), s2.MaxOffset("T", 1))
	}
	if got, _ := s2.QueryByKey("T", "k29", 0, 1<<62, 1); len(got) != 1 {
		t.Fatal("index not rebuilt")
	}
}

func TestConsumeQueueLaggingCheckpointIsRebuilt(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clock.NewManual(t0))
	s := mustOpen(t, cfg)
	for i := range 40 {
		if err := s.Put(newMsg("T", 0, fmt.Sprint(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// Lose a consume-queue file the checkpoint says is durable.
	names, _ := fsys.ReadDir("/data/consumequeue/T/0")
	if len(names) < 2 {
		t.Fatalf("expected several consume-queue files, have %v", names)
	}
	if err := fsys.Remove("/data/consumequeue/T/0/" + names[len(names)-1]); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, cfg)
	defer s2.Close()
	waitDispatched(t, s2)
	for off := int64(0); off < 40; off++ {
		if m, st := getOne(t, s2, "T", 0, off); m == nil || string(m.Body) != fmt.Sprint(off) {
			t.Fatalf("offset %d after rebuild: %v", off, st)
		}
	}
}

func TestDeleteTopic(t *testing.T) {
	s := mustOpen(t, smallConfig(vfs.NewMem(), clock.NewManual(t0)))
	defer s.Close()
	if err := s.Put(newMsg("Gone", 0, "x", "")); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s)
	if err := s.DeleteTopic("Gone"); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.GetMessages("Gone", 0, 0, 1, 0, nil); res.Status != NoMessageInQueue {
		t.Fatalf("deleted topic still serves: %v", res.Status)
	}
	if len(s.QueueIDs("Gone")) != 0 {
		t.Fatal("deleted topic still lists queues")
	}
}

// TestGetMessagesFiltered: a record filter drops the records it rejects,
// after the tag filter, for disk and in-memory topics alike; a read whose
// records were all dropped says NoMatchedMessage and where to go on.
func TestGetMessagesFiltered(t *testing.T) {
	clk := clock.NewManual(t0)
	s := mustOpen(t, smallConfig(vfs.NewMem(), clk))
	defer s.Close()
	if err := s.Meta().PutTopic(meta.Topic{Name: "Mem", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6,
		Attributes: map[string]string{AttrPersistent: "false"}}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"Disk", "Mem"} {
		for i := range 20 {
			m := newMsg(topic, 0, fmt.Sprintf("m%d", i), "")
			m.SetProperty("a", fmt.Sprint(i))
			m.SetProperty(message.PropertyTags, []string{"X", "Y"}[i%2])
			if err := s.Put(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	over := func(n int) RecordFilter {
		return func(r message.Record) bool {
			v, _ := r.Property("a")
			i, _ := strconv.Atoi(string(v))
			return i > n
		}
	}
	tagX := message.TagHash("X")
	for _, topic := range []string{"Disk", "Mem"} {
		res, err := s.GetMessagesFiltered(topic, 0, 0, 32, 0, func(h int64) bool { return h == tagX }, over(9))
		if err != nil || res.Status != Found || res.NextOffset != 20 {
			t.Fatalf("%s: %+v %v", topic, res, err)
		}
		var got []string
		res.Records(func(r message.Record) { got = append(got, string(r.Body())) })
		if want := []string{"m10", "m12", "m14", "m16", "m18"}; !slices.Equal(got, want) || res.Count != len(want) {
			t.Fatalf("%s: got %v (count %d), want %v", topic, got, res.Count, want)
		}
		res.Release()
		res, err = s.GetMessagesFiltered(topic, 0, 0, 32, 0, nil, over(100))
		if err != nil || res.Status != NoMatchedMessage || res.Count != 0 || len(res.Body) != 0 || res.NextOffset != 20 {
			t.Fatalf("%s, nothing matching: %+v %v", topic, res, err)
		}
		res.Release()
	}
}

// TestPageCacheBytesReachesTheLog: the store's default keeps 1 GiB of the
// log in the page cache; a negative PageCacheBytes leaves it to the OS.
func TestPageCacheBytesReachesTheLog(t *testing.T) {
	for _, c := range []struct{ cfg, want int64 }{{0, 1 << 30}, {-1, 0}, {8 << 20, 8 << 20}} {
		cfg := smallConfig(vfs.NewMem(), clock.NewManual(t0))
		cfg.PageCacheBytes = c.cfg
		s := mustOpen(t, cfg)
		if got := s.clog.Options().PageCacheBytes; got != c.want {
			t.Errorf("PageCacheBytes %d: the log got %d, want %d", c.cfg, got, c.want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
