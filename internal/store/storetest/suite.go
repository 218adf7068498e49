package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Harness is one store under the conformance suite, and what the suite
// needs done to it beyond the MessageStore interface.
type Harness interface {
	// Store is the store as it is now (Restart replaces it).
	Store() store.MessageStore
	// Restart closes the store and opens it again over the same data.
	Restart(t *testing.T)
	// Expire removes, as retention does once their reserve time is over,
	// every message stored so far; the store may first store messages of
	// FillerTopic. With lagQueues the consume queues are left pointing at
	// the removed messages, as when their trim failed or has not run yet.
	Expire(t *testing.T, lagQueues bool)
	// Close closes the store. Idempotent.
	Close() error
}

// Opener opens an empty store with cfg (SuiteConfig: an in-memory FS,
// cfg.Clock a *clock.Manual the suite advances) for one test; the suite
// closes it when the test ends.
type Opener func(t *testing.T, cfg store.Config) Harness

// FillerTopic is the topic a Harness may fill to make retention possible;
// the suite never reads it.
const FillerTopic = "storetest-filler"

// SuiteT0 is the suite clock's start.
var SuiteT0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// SuiteConfig is the configuration the suite opens stores with: SmallConfig
// with 64 KiB segments, 16 KiB messages, consume-queue files of 4 entries,
// a FileReservedTime of an hour and retention only when the suite says.
func SuiteConfig(t testing.TB, clk clock.Clock) store.Config {
	cfg := SmallConfig(vfs.NewMem(), clk, Logger(t))
	cfg.SegmentBytes = 64 << 10
	cfg.MaxMessageBytes = 16 << 10
	cfg.ConsumeQueueEntriesPerFile = 4
	cfg.FileReservedTime = time.Hour
	cfg.RetentionInterval = 1000 * time.Hour
	return cfg
}

// Run runs the conformance suite of store.MessageStore against the stores
// open makes: what the broker relies on of a message store, which the file
// store and its in-memory twin must both do.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"PutSetsOffsetsAndReadsReturnTheRecord", testPutAndRead},
		{"BatchAndAsyncPutsAreConsecutive", testBatchPuts},
		{"FailedPutsUseUpNothing", testFailedPuts},
		{"GetStatusesAtTheEdges", testGetStatuses},
		{"CountAndByteLimits", testGetLimits},
		{"TagFilterAndNoMatchedMessage", testTagFilter},
		{"RecordFilter", testRecordFilter},
		{"OffsetByTime", testOffsetByTime},
		{"QueryByKey", testQueryByKey},
		{"ListenersHearReadableMessagesInOrder", testListeners},
		{"WaitDispatched", testWaitDispatched},
		{"QueueIDsAndDeleteTopic", testDeleteTopic},
		{"RestartKeepsEverything", testRestart},
		{"RetentionMovesMinOffsets", testRetention},
		{"RemovedRecordsReadAsOffsetFoundNull", testFoundNull},
		{"ConcurrentPutsToOneQueue", testConcurrentPuts},
		{"PutAfterCloseIsRefused", testClosed},
		{"CommitPointBoundsWhatIsReadable", testCommitPoint},
		{"ReplicaFedByRawReadsMatchesItsMaster", testRawReplica},
		{"RawAppendAndReadEdges", testRawEdges},
		{"ResetStartsOverAtTheMastersLogStart", testReset},
		{"TruncateCutsAboveTheCommitPoint", testTruncate},
		{"PrepareMasterCutsATornTailAndGoesOnFromTheLog", testPrepareMaster},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(SuiteT0)
			cfg := SuiteConfig(t, clk)
			h := open(t, cfg)
			t.Cleanup(func() {
				if err := h.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tc.fn(t, &suite{t: t, h: h, clk: clk, cfg: cfg, open: open})
		})
	}
}

// waitLimit bounds each wait of the suite.
const waitLimit = 10 * time.Second

// receive waits for a value on ch, failing t after waitLimit.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("%s: nothing within %v", what, waitLimit)
	}
	var zero T
	return zero
}

type suite struct {
	t    *testing.T
	h    Harness
	clk  *clock.Manual
	cfg  store.Config
	seq  int
	open Opener // for a second store
}

func (s *suite) st() store.MessageStore { return s.h.Store() }

// msg is a message of topic/qid with body, KEYS keys (if any), TAGS tag (if
// any) and a UNIQ_KEY of its own.
func (s *suite) msg(topic string, qid int32, body, keys, tag string) *message.Message {
	s.seq++
	m := &message.Message{Topic: topic, QueueID: qid, Body: []byte(body), Flag: 3, SysFlag: 0,
		BornTimestamp: SuiteT0.UnixMilli() - 5, BornHost: netip.MustParseAddrPort("10.1.2.3:40000"), ReconsumeTimes: 2}
	if keys != "" {
		m.SetProperty(message.PropertyKeys, keys)
	}
	if tag != "" {
		m.SetProperty(message.PropertyTags, tag)
	}
	m.SetProperty(message.PropertyUniqKey, fmt.Sprintf("Uniq%04d", s.seq))
	return m
}

func (s *suite) put(m *message.Message) {
	s.t.Helper()
	if err := s.st().Put(m); err != nil {
		s.t.Fatalf("put %s/%d %q: %v", m.Topic, m.QueueID, m.Body, err)
	}
}

// sync waits until what is durable is readable.
func (s *suite) sync() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.st().WaitDispatched(ctx); err != nil {
		s.t.Fatalf("wait dispatched: %v", err)
	}
}

// get reads and copies out the records.
func (s *suite) get(topic string, qid int32, off int64, maxCount, maxBytes int, f store.TagFilter, rf store.RecordFilter) (store.GetResult, []message.Record) {
	s.t.Helper()
	res, err := s.st().GetMessagesFiltered(topic, qid, off, maxCount, maxBytes, f, rf)
	if err != nil {
		s.t.Fatalf("get %s/%d@%d: %v", topic, qid, off, err)
	}
	var recs []message.Record
	res.Records(func(r message.Record) { recs = append(recs, slices.Clone(r)) })
	if len(recs) != res.Count {
		s.t.Fatalf("get %s/%d@%d: body holds %d records, Count is %d", topic, qid, off, len(recs), res.Count)
	}
	out := *res
	out.Body = nil
	res.Release()
	return out, recs
}

func (s *suite) wantStatus(topic string, qid int32, off int64, status store.GetStatus, next int64) {
	s.t.Helper()
	res, recs := s.get(topic, qid, off, 1, 0, nil, nil)
	if res.Status != status || res.NextOffset != next {
		s.t.Fatalf("get %s/%d@%d: status %v next %d (%d records), want %v next %d", topic, qid, off, res.Status, res.NextOffset, len(recs), status, next)
	}
	if status != store.Found && len(recs) != 0 {
		s.t.Fatalf("get %s/%d@%d: %v with %d records", topic, qid, off, res.Status, len(recs))
	}
}

func bodies(recs []message.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Body()))
	}
	return out
}

// testPutAndRead: a put sets the queue offset (consecutive per queue), the
// commit-log offset, the store time and host; GetMessages and ReadMessage
// return exactly the record the message encodes to, ReadMessage a copy.
func testPutAndRead(t *testing.T, s *suite) {
	var msgs []*message.Message
	for i := range 12 {
		m := s.msg("Orders", int32(i%3), fmt.Sprintf("order-%d", i), "", "")
		s.put(m)
		if want := int64(i / 3); m.QueueOffset != want {
			t.Fatalf("message %d: queue offset %d, want %d", i, m.QueueOffset, want)
		}
		if m.StoreTimestamp != s.clk.Now().UnixMilli() || m.StoreHost != s.cfg.StoreHost {
			t.Fatalf("message %d: store time %d host %v, want %d %v", i, m.StoreTimestamp, m.StoreHost, s.clk.Now().UnixMilli(), s.cfg.StoreHost)
		}
		if i > 0 && m.PhysicalOffset <= msgs[i-1].PhysicalOffset {
			t.Fatalf("message %d: commit-log offset %d not after %d", i, m.PhysicalOffset, msgs[i-1].PhysicalOffset)
		}
		if end := m.PhysicalOffset + int64(m.EncodedLen()); s.st().Durable() < end {
			t.Fatalf("message %d: Durable %d after the put answered, want at least its end %d", i, s.st().Durable(), end)
		}
		msgs = append(msgs, m)
		s.clk.Advance(time.Second)
	}
	s.sync()
	if got := s.st().Config().StoreHost; got != s.cfg.StoreHost {
		t.Fatalf("Config().StoreHost = %v, want %v", got, s.cfg.StoreHost)
	}
	for _, m := range msgs {
		want := m.Encode()
		res, recs := s.get(m.Topic, m.QueueID, m.QueueOffset, 1, 0, nil, nil)
		if res.Status != store.Found || len(recs) != 1 || !bytes.Equal(recs[0], want) {
			t.Fatalf("get %s/%d@%d: %v, record equal to the encoded message: %v", m.Topic, m.QueueID, m.QueueOffset, res.Status, len(recs) == 1 && bytes.Equal(recs[0], want))
		}
		if res.NextOffset != m.QueueOffset+1 || res.MinOffset != 0 || res.MaxOffset != 4 {
			t.Fatalf("get %s/%d@%d: next %d min %d max %d, want %d 0 4", m.Topic, m.QueueID, m.QueueOffset, res.NextOffset, res.MinOffset, res.MaxOffset, m.QueueOffset+1)
		}
		r, err := s.st().ReadMessage(m.PhysicalOffset)
		if err != nil || !bytes.Equal(r, want) {
			t.Fatalf("read at %d: %v (equal %v)", m.PhysicalOffset, err, bytes.Equal(r, want))
		}
		d, _, err := message.Decode(r)
		if err != nil || d.Flag != 3 || d.ReconsumeTimes != 2 || d.BornHost != m.BornHost || d.Property(message.PropertyUniqKey) != m.Property(message.PropertyUniqKey) {
			t.Fatalf("decoded record %+v, %v", d, err)
		}
		r[len(r)-1] ^= 0xFF // the caller's copy
	}
	for _, m := range msgs {
		if r, _ := s.st().ReadMessage(m.PhysicalOffset); !bytes.Equal(r, m.Encode()) {
			t.Fatalf("changing a returned record changed the stored one at %d", m.PhysicalOffset)
		}
	}
	for q := range int32(3) {
		if lo, hi := s.st().MinOffset("Orders", q), s.st().MaxOffset("Orders", q); lo != 0 || hi != 4 {
			t.Fatalf("queue %d: [%d,%d), want [0,4)", q, lo, hi)
		}
	}
	if lo, hi := s.st().MinOffset("Orders", 7), s.st().MaxOffset("Nope", 0); lo != 0 || hi != 0 {
		t.Fatalf("unknown queues: min %d max %d, want 0 0", lo, hi)
	}
	last := msgs[len(msgs)-1]
	for _, off := range []int64{last.PhysicalOffset + 1, last.PhysicalOffset + int64(len(last.Encode())), 1 << 40, -1} {
		if _, err := s.st().ReadMessage(off); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("read at %d: %v, want ErrNotFound", off, err)
		}
	}
	if got := s.st().RemovedUnconsumed(); len(got) != 0 {
		t.Fatalf("RemovedUnconsumed on a new store: %v", got)
	}
	if got := s.st().CommitLogMinOffset(); got != 0 {
		t.Fatalf("CommitLogMinOffset on a new store: %d", got)
	}
}

// testBatchPuts: a batch gets consecutive queue offsets and consecutive
// records, across queues too; async and deferred puts call done once
// stored and continue the offsets.
func testBatchPuts(t *testing.T, s *suite) {
	s.put(s.msg("T", 0, "first", "", ""))
	batch := []*message.Message{s.msg("T", 0, "a", "", ""), s.msg("T", 0, "b", "", ""), s.msg("T", 1, "x", "", ""), s.msg("T", 0, "c", "", "")}
	if err := s.st().PutBatch(batch); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{1, 2, 0, 3} {
		if m := batch[i]; m.QueueOffset != want {
			t.Fatalf("batch item %d: queue offset %d, want %d", i, m.QueueOffset, want)
		}
		if i > 0 {
			prev := batch[i-1]
			if want := prev.PhysicalOffset + int64(prev.EncodedLen()); batch[i].PhysicalOffset != want {
				t.Fatalf("batch item %d at %d, want %d (right after item %d)", i, batch[i].PhysicalOffset, want, i-1)
			}
		}
		if batch[i].StoreTimestamp != batch[0].StoreTimestamp {
			t.Fatalf("batch item %d stored at %d, item 0 at %d", i, batch[i].StoreTimestamp, batch[0].StoreTimestamp)
		}
	}
	done := make(chan error, 2)
	async := []*message.Message{s.msg("T", 0, "d", "", ""), s.msg("T", 0, "e", "", "")}
	s.st().PutBatches([][]*message.Message{async}, func(_ int, err error) { done <- err })
	if err := <-done; err != nil || async[0].QueueOffset != 4 || async[1].QueueOffset != 5 {
		t.Fatalf("async put: offsets %d %d, %v", async[0].QueueOffset, async[1].QueueOffset, err)
	}
	batches := [][]*message.Message{{s.msg("T", 0, "f", "", "")}, {s.msg("T", 1, "y", "", ""), s.msg("T", 0, "g", "", "")}}
	answered := make([]int, len(batches))
	errs := make(chan error, len(batches))
	s.st().PutBatches(batches, func(i int, err error) { answered[i]++; errs <- err })
	for range batches {
		if err := receive(t, errs, "a PutBatches group's done"); err != nil {
			t.Fatal(err)
		}
	}
	if answered[0] != 1 || answered[1] != 1 || batches[0][0].QueueOffset != 6 || batches[1][0].QueueOffset != 1 || batches[1][1].QueueOffset != 7 {
		t.Fatalf("PutBatches: answered %v, offsets %d %d %d", answered, batches[0][0].QueueOffset, batches[1][0].QueueOffset, batches[1][1].QueueOffset)
	}
	app := s.st().NewAppender()
	last := []*message.Message{s.msg("T", 0, "h", "", "")}
	app.PutBatches([][]*message.Message{last}, func(_ int, err error) { errs <- err })
	if err := receive(t, errs, "an Appender's done"); err != nil || last[0].QueueOffset != 8 {
		t.Fatalf("appender put: offset %d, %v", last[0].QueueOffset, err)
	}
	s.sync()
	_, recs := s.get("T", 0, 0, 32, 0, nil, nil)
	if got, want := bodies(recs), []string{"first", "a", "b", "c", "d", "e", "f", "g", "h"}; !slices.Equal(got, want) {
		t.Fatalf("queue 0 holds %v, want %v", got, want)
	}
}

// testFailedPuts: an oversized message is refused naming the limit, a
// batch with one is refused whole, invalid messages and empty batches are
// refused, and none of it uses up a queue offset.
func testFailedPuts(t *testing.T, s *suite) {
	s.put(s.msg("T", 0, "before", "", ""))
	big := s.msg("T", 0, strings.Repeat("x", s.cfg.MaxMessageBytes), "", "")
	if err := s.st().Put(big); !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), strconv.Itoa(s.cfg.MaxMessageBytes)) {
		t.Fatalf("oversized put: %v, want ErrTooLarge naming %d", err, s.cfg.MaxMessageBytes)
	}
	if err := s.st().PutBatch([]*message.Message{s.msg("T", 0, "ok", "", ""), big}); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("batch with an oversized message: %v, want ErrTooLarge", err)
	}
	if err := s.st().Put(s.msg("bad topic!", 0, "x", "", "")); err == nil {
		t.Fatal("a message with an invalid topic was stored")
	}
	if err := s.st().PutBatch(nil); err == nil {
		t.Fatal("an empty batch was stored")
	}
	done := make(chan error, 1)
	s.st().PutBatches([][]*message.Message{{big}}, func(_ int, err error) { done <- err })
	if err := <-done; !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("oversized async put: %v, want ErrTooLarge", err)
	}
	after := s.msg("T", 0, "after", "", "")
	s.put(after)
	if after.QueueOffset != 1 {
		t.Fatalf("put after the refusals got queue offset %d, want 1", after.QueueOffset)
	}
	s.sync()
	if _, recs := s.get("T", 0, 0, 32, 0, nil, nil); !slices.Equal(bodies(recs), []string{"before", "after"}) {
		t.Fatalf("queue holds %v, want [before after]", bodies(recs))
	}
}

// testGetStatuses: each status at the edges of a queue, with the
// NextOffset the broker hands the consumer.
func testGetStatuses(t *testing.T, s *suite) {
	s.wantStatus("T", 0, 0, store.NoMessageInQueue, 0)
	s.wantStatus("T", 0, 5, store.NoMessageInQueue, 0)
	for i := range 5 {
		s.put(s.msg("T", 0, fmt.Sprint(i), "", ""))
	}
	s.sync()
	s.wantStatus("T", 0, 0, store.Found, 1)
	s.wantStatus("T", 0, 4, store.Found, 5)
	s.wantStatus("T", 0, 5, store.OffsetOverflowOne, 5)
	// Past the end with the queue starting at 0: start over.
	s.wantStatus("T", 0, 9, store.OffsetOverflowBadly, 0)
	s.wantStatus("T", 1, 0, store.NoMessageInQueue, 0)
	s.wantStatus("Other", 0, 0, store.NoMessageInQueue, 0)
	res, _ := s.get("T", 0, 9, 1, 0, nil, nil)
	if res.MinOffset != 0 || res.MaxOffset != 5 {
		t.Fatalf("overflow result bounds [%d,%d), want [0,5)", res.MinOffset, res.MaxOffset)
	}
	// Once retention moved the start: below it, and past the end.
	s.h.Expire(t, false)
	s.put(s.msg("T", 0, "5", "", ""))
	s.put(s.msg("T", 0, "6", "", ""))
	s.sync()
	s.wantStatus("T", 0, 0, store.OffsetTooSmall, 5)
	s.wantStatus("T", 0, 5, store.Found, 6)
	s.wantStatus("T", 0, 7, store.OffsetOverflowOne, 7)
	s.wantStatus("T", 0, 9, store.OffsetOverflowBadly, 7)
}

// testGetLimits: maxCount and maxBytes bound a read, which always holds at
// least one whole record.
func testGetLimits(t *testing.T, s *suite) {
	for i := range 10 {
		s.put(s.msg("T", 0, fmt.Sprintf("m%d-%s", i, strings.Repeat("y", 100)), "", ""))
	}
	s.sync()
	res, recs := s.get("T", 0, 2, 5, 0, nil, nil)
	if res.Status != store.Found || len(recs) != 5 || res.NextOffset != 7 || res.MaxOffset != 10 {
		t.Fatalf("5 from 2: %v %d records next %d max %d", res.Status, len(recs), res.NextOffset, res.MaxOffset)
	}
	if !strings.HasPrefix(string(recs[0].Body()), "m2-") {
		t.Fatalf("first record %q, want m2-...", recs[0].Body())
	}
	res, recs = s.get("T", 0, 0, 32, 10, nil, nil)
	if res.Status != store.Found || len(recs) != 1 || res.NextOffset != 1 {
		t.Fatalf("maxBytes 10: %v %d records next %d, want exactly one", res.Status, len(recs), res.NextOffset)
	}
	size := len(recs[0])
	_, recs = s.get("T", 0, 0, 32, 3*size, nil, nil)
	if len(recs) != 3 {
		t.Fatalf("maxBytes of 3 records: got %d", len(recs))
	}
	res, recs = s.get("T", 0, 0, 0, 0, nil, nil)
	if len(recs) != 1 || res.NextOffset != 1 {
		t.Fatalf("maxCount 0 read %d records, want 1", len(recs))
	}
}

// testTagFilter: entries whose tag hash the filter rejects are skipped and
// stepped over; when none passes the read says NoMatchedMessage and where
// to go on.
func testTagFilter(t *testing.T, s *suite) {
	for i := range 12 {
		s.put(s.msg("T", 0, fmt.Sprint(i), "", []string{"A", "B", "C"}[i%3]))
	}
	s.sync()
	hashB := message.TagHash("B")
	res, recs := s.get("T", 0, 0, 32, 0, func(h int64) bool { return h == hashB }, nil)
	if res.Status != store.Found || !slices.Equal(bodies(recs), []string{"1", "4", "7", "10"}) || res.NextOffset != 12 {
		t.Fatalf("tag B: %v %v next %d", res.Status, bodies(recs), res.NextOffset)
	}
	for _, r := range recs {
		if tag, _ := r.Property(message.PropertyTags); string(tag) != "B" {
			t.Fatalf("filter passed tag %q", tag)
		}
	}
	res, recs = s.get("T", 0, 2, 2, 0, func(h int64) bool { return h == hashB }, nil)
	if !slices.Equal(bodies(recs), []string{"4", "7"}) || res.NextOffset != 8 {
		t.Fatalf("2 of tag B from 2: %v next %d, want [4 7] next 8", bodies(recs), res.NextOffset)
	}
	res, recs = s.get("T", 0, 3, 32, 0, func(int64) bool { return false }, nil)
	if res.Status != store.NoMatchedMessage || len(recs) != 0 || res.NextOffset != 12 {
		t.Fatalf("nothing passing: %v %d records next %d, want NoMatchedMessage next 12", res.Status, len(recs), res.NextOffset)
	}
}

// testRecordFilter: a record filter drops the records it rejects, after the
// tag filter; reading on from NextOffset yields every matching record once,
// in order; a read whose records were all dropped says NoMatchedMessage.
func testRecordFilter(t *testing.T, s *suite) {
	for i := range 20 {
		m := s.msg("T", 0, fmt.Sprintf("m%d", i), "", []string{"X", "Y"}[i%2])
		m.SetProperty("a", fmt.Sprint(i))
		s.put(m)
	}
	s.sync()
	over := func(n int) store.RecordFilter {
		return func(r message.Record) bool {
			v, _ := r.Property("a")
			i, _ := strconv.Atoi(string(v))
			return i > n
		}
	}
	hashX := message.TagHash("X")
	tagX := func(h int64) bool { return h == hashX }
	res, recs := s.get("T", 0, 0, 32, 0, tagX, over(9))
	if want := []string{"m10", "m12", "m14", "m16", "m18"}; res.Status != store.Found || !slices.Equal(bodies(recs), want) || res.NextOffset != 20 {
		t.Fatalf("X over 9: %v %v next %d, want %v next 20", res.Status, bodies(recs), res.NextOffset, want)
	}
	res, recs = s.get("T", 0, 0, 32, 0, nil, over(100))
	if res.Status != store.NoMatchedMessage || len(recs) != 0 || res.NextOffset != 20 {
		t.Fatalf("nothing matching: %v %d records next %d", res.Status, len(recs), res.NextOffset)
	}
	// Small reads from NextOffset on, as a consumer pulls.
	var got []string
	for off, n := int64(0), 0; off < 20; n++ {
		if n > 40 {
			t.Fatalf("reading on from NextOffset does not reach the end (at %d)", off)
		}
		res, recs := s.get("T", 0, off, 2, 0, tagX, over(4))
		if res.NextOffset <= off || len(recs) > 2 {
			t.Fatalf("read at %d: next %d, %d records", off, res.NextOffset, len(recs))
		}
		if (res.Status == store.Found) != (len(recs) > 0) || res.Status != store.Found && res.Status != store.NoMatchedMessage {
			t.Fatalf("read at %d: status %v with %d records", off, res.Status, len(recs))
		}
		got = append(got, bodies(recs)...)
		off = res.NextOffset
	}
	if want := []string{"m6", "m8", "m10", "m12", "m14", "m16", "m18"}; !slices.Equal(got, want) {
		t.Fatalf("read on in steps: %v, want %v", got, want)
	}
}

// testOffsetByTime: the first offset stored at or after a time; the min
// offset for a time before all, the max offset for one after all.
func testOffsetByTime(t *testing.T, s *suite) {
	var ts []int64
	for i := range 6 {
		m := s.msg("T", 0, fmt.Sprint(i), "", "")
		s.put(m)
		if i == 2 { // two messages at one time
			s.put(s.msg("T", 0, "2b", "", ""))
		}
		ts = append(ts, m.StoreTimestamp)
		s.clk.Advance(10 * time.Second)
	}
	s.sync()
	for _, c := range []struct {
		ts   int64
		want int64
	}{
		{ts[0] - 1, 0}, {ts[0], 0}, {ts[1], 1}, {ts[1] + 1, 2}, {ts[2], 2}, {ts[3], 4}, {ts[5], 6}, {ts[5] + 1, 7}, {ts[5] + int64(time.Hour/time.Millisecond), 7},
	} {
		if off, err := s.st().OffsetByTime("T", 0, c.ts); err != nil || off != c.want {
			t.Fatalf("offset at time %d (t0%+dms): %d, %v; want %d", c.ts, c.ts-SuiteT0.UnixMilli(), off, err, c.want)
		}
	}
	if off, err := s.st().OffsetByTime("Nope", 0, ts[0]); err != nil || off != 0 {
		t.Fatalf("unknown queue: %d, %v", off, err)
	}
	// After retention: never below the min offset.
	s.h.Expire(t, false)
	s.put(s.msg("T", 0, "late", "", ""))
	s.sync()
	if off, err := s.st().OffsetByTime("T", 0, ts[0]); err != nil || off != 7 {
		t.Fatalf("offset at an expired time: %d, %v; want the min offset 7", off, err)
	}
}

// testQueryByKey: each KEYS key and the UNIQ_KEY (in any case) find their
// messages, newest first, within an inclusive time range, up to max, and
// only in their topic.
func testQueryByKey(t *testing.T, s *suite) {
	var msgs []*message.Message
	for i := range 20 {
		m := s.msg("Orders", int32(i%2), fmt.Sprintf("order-%d", i), fmt.Sprintf("id%d shared", i), "")
		s.put(m)
		msgs = append(msgs, m)
		s.clk.Advance(time.Second)
	}
	s.put(s.msg("Other", 0, "other", "shared", ""))
	s.sync()
	now := s.clk.Now().UnixMilli()
	q := func(topic, key string, from, to int64, max int) []string {
		t.Helper()
		recs, err := s.st().QueryByKey(topic, key, from, to, max)
		if err != nil {
			t.Fatalf("query %s %q: %v", topic, key, err)
		}
		return bodies(recs)
	}
	if got := q("Orders", "id7", 0, now, 10); !slices.Equal(got, []string{"order-7"}) {
		t.Fatalf("id7: %v", got)
	}
	if got := q("Orders", "ID7", 0, now, 10); len(got) != 0 {
		t.Fatalf("KEYS are exact: ID7 found %v", got)
	}
	if got := q("Orders", "shared", 0, now, 3); !slices.Equal(got, []string{"order-19", "order-18", "order-17"}) {
		t.Fatalf("shared, 3: %v", got)
	}
	if got := q("Orders", "shared", msgs[10].StoreTimestamp, msgs[13].StoreTimestamp, 100); !slices.Equal(got, []string{"order-13", "order-12", "order-11", "order-10"}) {
		t.Fatalf("shared in [10,13]: %v", got)
	}
	if got := q("Orders", "shared", 0, now, 0); len(got) != 0 {
		t.Fatalf("max 0 found %v", got)
	}
	if got := q("Other", "shared", 0, now, 10); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("shared in Other: %v", got)
	}
	if got := q("Nope", "shared", 0, now, 10); len(got) != 0 {
		t.Fatalf("shared in an unknown topic: %v", got)
	}
	uniq := msgs[3].Property(message.PropertyUniqKey)
	for _, k := range []string{uniq, strings.ToLower(uniq), strings.ToUpper(uniq)} {
		if got := q("Orders", k, 0, now, 10); !slices.Equal(got, []string{"order-3"}) {
			t.Fatalf("UNIQ_KEY as %q: %v", k, got)
		}
	}
	recs, _ := s.st().QueryByKey("Orders", "id5", 0, now, 1)
	if len(recs) != 1 || !bytes.Equal(recs[0], msgs[5].Encode()) {
		t.Fatal("a found record is not the stored record")
	}
}

// testListeners: every listener hears of each message once it is readable,
// with the queue's new max offset, in store order, the listeners in the
// order they were added.
func testListeners(t *testing.T, s *suite) {
	type ev struct {
		who      int
		topic    string
		qid      int32
		max      int64
		readable bool
	}
	var mu sync.Mutex
	var evs []ev
	all := make(chan struct{}, 100)
	st := s.st()
	for who := range 2 {
		st.AddListener(func(topic string, qid int32, max int64) {
			readable := st.MaxOffset(topic, qid) >= max
			mu.Lock()
			evs = append(evs, ev{who, topic, qid, max, readable})
			mu.Unlock()
			if who == 1 {
				all <- struct{}{}
			}
		})
	}
	s.put(s.msg("T", 2, "a", "", ""))
	if err := st.PutBatch([]*message.Message{s.msg("T", 2, "b", "", ""), s.msg("U", 0, "c", "", "")}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		receive(t, all, fmt.Sprintf("the listeners hearing of message %d", i))
	}
	mu.Lock()
	defer mu.Unlock()
	want := []ev{{0, "T", 2, 1, true}, {1, "T", 2, 1, true}, {0, "T", 2, 2, true}, {1, "T", 2, 2, true}, {0, "U", 0, 1, true}, {1, "U", 0, 1, true}}
	if !slices.Equal(evs, want) {
		t.Fatalf("heard %v, want %v", evs, want)
	}
}

// testWaitDispatched: once WaitDispatched returns, every message stored
// before is readable and every listener has heard of it.
func testWaitDispatched(t *testing.T, s *suite) {
	var mu sync.Mutex
	heard := 0
	s.st().AddListener(func(string, int32, int64) {
		mu.Lock()
		heard++
		mu.Unlock()
	})
	for i := range 30 {
		s.put(s.msg("T", int32(i%3), fmt.Sprint(i), "", ""))
	}
	s.sync()
	mu.Lock()
	if heard != 30 {
		t.Fatalf("listener heard %d of 30 after WaitDispatched", heard)
	}
	mu.Unlock()
	for q := range int32(3) {
		if got := s.st().MaxOffset("T", q); got != 10 {
			t.Fatalf("queue %d: max %d after WaitDispatched, want 10", q, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.st().WaitDispatched(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitDispatched with nothing to wait for: %v", err)
	}
}

// testDeleteTopic: QueueIDs lists a topic's queues, sorted; DeleteTopic
// makes them read as empty and unknown and leaves other topics alone; a
// later put starts the queue again and is readable at its offset.
func testDeleteTopic(t *testing.T, s *suite) {
	for _, q := range []int32{3, 0, 7, 0} {
		s.put(s.msg("Gone", q, "x", "", ""))
	}
	s.put(s.msg("Stays", 1, "y", "", ""))
	s.sync()
	if got := s.st().QueueIDs("Gone"); !slices.Equal(got, []int32{0, 3, 7}) {
		t.Fatalf("QueueIDs = %v, want [0 3 7]", got)
	}
	if got := s.st().QueueIDs("Nope"); len(got) != 0 {
		t.Fatalf("QueueIDs of an unknown topic = %v", got)
	}
	if err := s.st().DeleteTopic("Gone"); err != nil {
		t.Fatal(err)
	}
	if got := s.st().QueueIDs("Gone"); len(got) != 0 {
		t.Fatalf("deleted topic still lists queues %v", got)
	}
	for _, q := range []int32{0, 3, 7} {
		s.wantStatus("Gone", q, 0, store.NoMessageInQueue, 0)
		if lo, hi := s.st().MinOffset("Gone", q), s.st().MaxOffset("Gone", q); lo != 0 || hi != 0 {
			t.Fatalf("deleted queue %d: [%d,%d)", q, lo, hi)
		}
	}
	if got := s.st().QueueIDs("Stays"); !slices.Equal(got, []int32{1}) {
		t.Fatalf("other topic's QueueIDs = %v", got)
	}
	s.wantStatus("Stays", 1, 0, store.Found, 1)
	again := s.msg("Gone", 0, "again", "", "")
	s.put(again)
	s.sync()
	if got := s.st().QueueIDs("Gone"); !slices.Equal(got, []int32{0}) {
		t.Fatalf("recreated topic's QueueIDs = %v", got)
	}
	if hi := s.st().MaxOffset("Gone", 0); hi != again.QueueOffset+1 || s.st().MinOffset("Gone", 0) > again.QueueOffset {
		t.Fatalf("recreated queue [%d,%d), message at %d", s.st().MinOffset("Gone", 0), hi, again.QueueOffset)
	}
	if _, recs := s.get("Gone", 0, again.QueueOffset, 32, 0, nil, nil); !slices.Equal(bodies(recs), []string{"again"}) {
		t.Fatalf("recreated queue holds %v", bodies(recs))
	}
	if err := s.st().DeleteTopic("Nope"); err != nil {
		t.Fatalf("deleting an unknown topic: %v", err)
	}
}

// testRestart: a store opened again holds every message at the same
// offsets, and puts go on after them.
func testRestart(t *testing.T, s *suite) {
	var msgs []*message.Message
	for i := range 9 {
		m := s.msg("T", int32(i%3), fmt.Sprint(i), fmt.Sprint("k", i), "")
		s.put(m)
		msgs = append(msgs, m)
	}
	s.sync()
	s.h.Restart(t)
	heard := make(chan int64, 10)
	s.st().AddListener(func(_ string, _ int32, max int64) { heard <- max })
	s.sync()
	for _, m := range msgs {
		res, recs := s.get(m.Topic, m.QueueID, m.QueueOffset, 1, 0, nil, nil)
		if res.Status != store.Found || len(recs) != 1 || !bytes.Equal(recs[0], m.Encode()) {
			t.Fatalf("after restart %s/%d@%d: %v", m.Topic, m.QueueID, m.QueueOffset, res.Status)
		}
		if r, err := s.st().ReadMessage(m.PhysicalOffset); err != nil || !bytes.Equal(r, m.Encode()) {
			t.Fatalf("after restart, read at %d: %v", m.PhysicalOffset, err)
		}
	}
	if got, _ := s.st().QueryByKey("T", "k4", 0, s.clk.Now().UnixMilli(), 5); len(got) != 1 {
		t.Fatalf("after restart, key k4 found %d", len(got))
	}
	next := s.msg("T", 1, "next", "", "")
	s.put(next)
	last := msgs[len(msgs)-1]
	if next.QueueOffset != 3 || next.PhysicalOffset < last.PhysicalOffset+int64(last.EncodedLen()) {
		t.Fatalf("put after restart: queue offset %d at %d, want 3 after %d", next.QueueOffset, next.PhysicalOffset, last.PhysicalOffset)
	}
	if max := receive(t, heard, "the listener added after the restart"); max != 4 {
		t.Fatalf("listener heard max %d, want 4", max)
	}
}

// testRetention: retention removes whole records from the log and moves the
// queues' min offsets past them; the removed records are not found by
// offset or key; deletion by age is not counted as RemovedUnconsumed.
func testRetention(t *testing.T, s *suite) {
	var old []*message.Message
	for i := range 10 {
		m := s.msg("T", int32(i%2), fmt.Sprint(i), "oldkey", "")
		s.put(m)
		old = append(old, m)
	}
	s.sync()
	s.h.Expire(t, false)
	if min := s.st().CommitLogMinOffset(); min <= old[len(old)-1].PhysicalOffset {
		t.Fatalf("CommitLogMinOffset %d, want past the removed records (last at %d)", min, old[len(old)-1].PhysicalOffset)
	}
	for _, m := range old {
		if _, err := s.st().ReadMessage(m.PhysicalOffset); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("removed record at %d: %v, want ErrNotFound", m.PhysicalOffset, err)
		}
	}
	if got, _ := s.st().QueryByKey("T", "oldkey", 0, s.clk.Now().UnixMilli(), 10); len(got) != 0 {
		t.Fatalf("key of removed messages found %d", len(got))
	}
	for q := range int32(2) {
		if lo, hi := s.st().MinOffset("T", q), s.st().MaxOffset("T", q); lo != 5 || hi != 5 {
			t.Fatalf("queue %d after retention: [%d,%d), want [5,5)", q, lo, hi)
		}
		s.wantStatus("T", q, 0, store.OffsetTooSmall, 5)
		s.wantStatus("T", q, 5, store.OffsetOverflowOne, 5)
	}
	if got := s.st().RemovedUnconsumed(); len(got) != 0 {
		t.Fatalf("deletion by age counted as unconsumed: %v", got)
	}
	m := s.msg("T", 0, "new", "newkey", "")
	s.put(m)
	s.sync()
	if m.QueueOffset != 5 {
		t.Fatalf("put after retention: queue offset %d, want 5", m.QueueOffset)
	}
	s.wantStatus("T", 0, 5, store.Found, 6)
	if got, _ := s.st().QueryByKey("T", "newkey", 0, s.clk.Now().UnixMilli(), 10); len(got) != 1 {
		t.Fatalf("key of a message after retention found %d", len(got))
	}
}

// testFoundNull: while a queue still points at removed records, reads skip
// them and say OffsetFoundNull, with NextOffset past them, when they find
// nothing else; the records after them are found.
func testFoundNull(t *testing.T, s *suite) {
	for i := range 10 {
		s.put(s.msg("T", 0, fmt.Sprint(i), "", ""))
	}
	s.sync()
	s.h.Expire(t, true)
	if lo := s.st().MinOffset("T", 0); lo >= 10 {
		t.Fatalf("min offset %d: the queue was trimmed", lo)
	}
	lo := s.st().MinOffset("T", 0)
	res, recs := s.get("T", 0, lo, 32, 0, nil, nil)
	if res.Status != store.OffsetFoundNull || len(recs) != 0 || res.NextOffset != 10 {
		t.Fatalf("read of removed records at %d: %v next %d (%d records), want OffsetFoundNull next 10", lo, res.Status, res.NextOffset, len(recs))
	}
	s.put(s.msg("T", 0, "live", "", ""))
	s.sync()
	res, recs = s.get("T", 0, lo, 32, 0, nil, nil)
	if res.Status != store.Found || !slices.Equal(bodies(recs), []string{"live"}) || res.NextOffset != 11 {
		t.Fatalf("read over removed records to a live one: %v %v next %d", res.Status, bodies(recs), res.NextOffset)
	}
}

// testConcurrentPuts: puts from many goroutines to one queue get every
// offset once, and the queue reads back in offset order.
func testConcurrentPuts(t *testing.T, s *suite) {
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	offs := make([][]int64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := &message.Message{Topic: "T", Body: []byte(fmt.Sprintf("%d/%d", w, i)), BornHost: netip.MustParseAddrPort("10.1.2.3:1")}
				var err error
				if i%2 == 0 {
					err = s.st().Put(m)
				} else {
					err = s.st().PutBatch([]*message.Message{m})
				}
				if err != nil {
					errs <- err
					return
				}
				offs[w] = append(offs[w], m.QueueOffset)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []int64
	for _, o := range offs {
		all = append(all, o...)
	}
	slices.Sort(all)
	for i, o := range all {
		if o != int64(i) {
			t.Fatalf("queue offsets handed out %v..., want 0..%d each once", all[:min(len(all), i+2)], workers*each-1)
		}
	}
	s.sync()
	_, recs := s.get("T", 0, 0, workers*each, 0, nil, nil)
	if len(recs) != workers*each {
		t.Fatalf("read back %d of %d", len(recs), workers*each)
	}
	for i, r := range recs {
		if r.QueueOffset() != int64(i) {
			t.Fatalf("record %d has queue offset %d", i, r.QueueOffset())
		}
	}
}

// testClosed: a closed store refuses puts with ErrClosed.
func testClosed(t *testing.T, s *suite) {
	s.put(s.msg("T", 0, "x", "", ""))
	st := s.st()
	if err := s.h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(s.msg("T", 0, "late", "", "")); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("put after close: %v, want ErrClosed", err)
	}
	done := make(chan error, 1)
	st.PutBatches([][]*message.Message{{s.msg("T", 0, "late", "", "")}}, func(_ int, err error) { done <- err })
	if err := <-done; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("async put after close: %v, want ErrClosed", err)
	}
}
