package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func fileSize(t *testing.T, fsys vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fsys.Stat(path.Join(testDir, name))
	must(t, err)
	return fi.Size()
}

// TestTopicChangeIsOneAppend is the O(1) of a topic change: with thousands
// of topics stored, creating one more writes one small record to the log
// and syncs it, and does not rewrite topics.json.
func TestTopicChangeIsOneAppend(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	s := openT(t, h, clock.NewManual(epoch))
	defer s.Close()
	var many []Topic
	for i := range 5000 {
		many = append(many, topic(fmt.Sprintf("existing-%05d", i), 8))
	}
	must(t, s.PutTopics(many))
	snap := fileSize(t, mem, topicsFileName)
	var cnt opCounter
	h.setHook(cnt.hook)
	const n = 100
	before := fileSize(t, mem, topicsFileName+logSuffix)
	for i := range n {
		must(t, s.PutTopic(topic(fmt.Sprintf("new-%03d", i), 8)))
	}
	logName := topicsFileName + logSuffix
	if w, y, r := cnt.get(vfs.OpWrite, logName), cnt.get(vfs.OpSync, logName), cnt.renames(topicsFileName); w != n || y != n || r != 0 {
		t.Fatalf("%d creates: %d log writes, %d log syncs, %d rewrites of topics.json; want %d, %d, 0", n, w, y, r, n, n)
	}
	grew := fileSize(t, mem, logName) - before
	if per := grew / n; per > 256 {
		t.Fatalf("a create appended %d bytes (topics.json is %d)", per, snap)
	}
	if got := fileSize(t, mem, topicsFileName); got != snap {
		t.Fatalf("topics.json changed size from %d to %d", snap, got)
	}
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != 5000+n {
		t.Fatalf("after crash %d topics, want %d", got, 5000+n)
	}
}

// TestLogIsCompacted: the log never grows much past the larger of
// LogCompactBytes and topics.json, compactions are few (about one per
// doubling of the table), and the state survives a crash and a reopen.
func TestLogIsCompacted(t *testing.T) {
	mem := vfs.NewMem()
	h := &hookFS{FS: mem}
	const minBytes = 4096
	s := openOpts(t, h, Options{LogCompactBytes: minBytes})
	var cnt opCounter
	h.setHook(cnt.hook)
	const n = 2000
	maxRecord := int64(0)
	for i := range n {
		logBefore := int64(0)
		if i > 0 {
			logBefore = fileSize(t, mem, topicsFileName+logSuffix)
		}
		must(t, s.PutTopic(topic(fmt.Sprintf("t-%05d", i), 4)))
		logSize, snap := fileSize(t, mem, topicsFileName+logSuffix), fileSize(t, mem, topicsFileName)
		if logSize > logBefore {
			maxRecord = max(maxRecord, logSize-logBefore)
		}
		if limit := max(minBytes, snap); logSize > limit {
			t.Fatalf("after %d creates the log is %d bytes, topics.json %d", i+1, logSize, snap)
		}
	}
	compactions := cnt.renames(topicsFileName)
	t.Logf("%d creates: %d compactions, records up to %d bytes", n, compactions, maxRecord)
	if compactions < 3 || compactions > 20 {
		t.Fatalf("%d creates made %d compactions", n, compactions)
	}
	want := s.Topics()
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	if got := c.Topics(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after crash %d topics, want %d", len(got), len(want))
	}
	must(t, c.Close())
	must(t, s.Close())
	if got := fileSize(t, mem, topicsFileName+logSuffix); got != 0 {
		t.Fatalf("after Close the log holds %d bytes", got)
	}
}

// TestOpenReplaysTheLog: without Close, the later changes are only in the
// log, and Open applies them, deletions and attribute changes included,
// with the version of the last one.
func TestOpenReplaysTheLog(t *testing.T) {
	mem := vfs.NewMem()
	clk := clock.NewManual(epoch)
	s := openT(t, mem, clk)
	must(t, s.PutTopic(topic("A", 1)))
	must(t, s.PutTopic(topic("B", 1)))
	must(t, s.DeleteTopic("A"))
	b := topic("B", 3)
	b.Attributes = map[string]string{"persistent": "false"}
	must(t, s.PutTopic(b))
	must(t, s.PutGroup(Group{Name: "G", RetryMaxTimes: 3}))
	must(t, s.PutGroup(Group{Name: "G", RetryMaxTimes: 4}))
	crashed := mem.CrashClone(vfs.CrashOptions{})
	must(t, s.Close())
	data, _, err := vfs.ReadFile(crashed, path.Join(testDir, topicsFileName))
	must(t, err)
	if strings.Contains(string(data), `"B"`) {
		t.Fatalf("topics.json already holds B: %s; the test needs it in the log only", data)
	}
	c := openT(t, crashed, clk)
	defer c.Close()
	if got := c.Topics(); !reflect.DeepEqual(got, []Topic{b}) {
		t.Fatalf("replayed Topics() = %+v, want [%+v]", got, b)
	}
	if got := c.TopicsVersion(); got != s.TopicsVersion() {
		t.Fatalf("replayed version %+v, want %+v", got, s.TopicsVersion())
	}
	if g, _ := c.Group("G"); g.RetryMaxTimes != 4 {
		t.Fatalf("replayed group %+v", g)
	}
}

// logWith returns a MemFS whose store holds topic A in topics.json (version
// 1) and whose topics log is content.
func logWith(t *testing.T, content []byte) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	s := openT(t, mem, clock.NewManual(epoch))
	must(t, s.PutTopic(topic("A", 1)))
	must(t, s.Close())
	writeRaw(t, mem, path.Join(testDir, topicsFileName+logSuffix), content)
	return mem
}

func record(t *testing.T, c change[Topic]) []byte {
	t.Helper()
	payload, err := json.Marshal(c)
	must(t, err)
	return appendRecord(nil, payload)
}

func TestOpenRejectsCorruptLog(t *testing.T) {
	v := func(n int64) DataVersion { return DataVersion{Timestamp: epoch.UnixMilli(), Counter: n} }
	good := record(t, change[Topic]{Version: v(2), Put: []Topic{topic("B", 1)}})
	for name, content := range map[string][]byte{
		"bad json":   appendRecord(append([]byte{}, good...), []byte(`{"dataVersion":`)),
		"gap":        append(append([]byte{}, good...), record(t, change[Topic]{Version: v(4), Delete: "A"})...),
		"empty name": record(t, change[Topic]{Version: v(2), Put: []Topic{{ReadQueueNums: 1}}}),
	} {
		_, err := Open(logWith(t, content), testDir, Options{})
		p := path.Join(testDir, topicsFileName+logSuffix)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Open error %v, want ErrCorrupt naming %s", name, err, p)
		}
	}
}

// TestOpenIgnoresTornLogTail cuts the log at every byte: Open takes the
// whole records before the cut and ignores the rest, and the next change
// is durable behind them.
func TestOpenIgnoresTornLogTail(t *testing.T) {
	v := func(n int64) DataVersion { return DataVersion{Timestamp: epoch.UnixMilli(), Counter: n} }
	r1 := record(t, change[Topic]{Version: v(2), Put: []Topic{topic("B", 1)}})
	r2 := record(t, change[Topic]{Version: v(3), Delete: "A"})
	whole := append(append([]byte{}, r1...), r2...)
	for cut := range len(whole) + 1 {
		mem := logWith(t, whole[:cut])
		want, wantV := []Topic{topic("A", 1)}, int64(1)
		switch {
		case cut == len(whole):
			want, wantV = []Topic{topic("B", 1)}, 3
		case cut >= len(r1):
			want, wantV = []Topic{topic("A", 1), topic("B", 1)}, 2
		}
		s := openT(t, mem, clock.NewManual(epoch))
		if got := s.Topics(); !reflect.DeepEqual(got, want) || s.TopicsVersion().Counter != wantV {
			t.Fatalf("cut at %d: %+v version %+v, want %+v version %d", cut, got, s.TopicsVersion(), want, wantV)
		}
		must(t, s.PutTopic(topic("C", 1)))
		c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
		if _, ok := c.Topic("C"); !ok || c.TopicsVersion().Counter != wantV+1 {
			t.Fatalf("cut at %d: the change after the cut is lost: %+v %+v", cut, c.Topics(), c.TopicsVersion())
		}
		must(t, c.Close())
		must(t, s.Close())
	}
}

// TestOpenWithoutLog opens a directory written before the change log
// existed (topics.json only): the tables load and the first change works.
func TestOpenWithoutLog(t *testing.T) {
	mem := vfs.NewMem()
	must(t, mem.MkdirAll(testDir))
	writeRaw(t, mem, path.Join(testDir, topicsFileName),
		[]byte(`{"dataVersion":{"timestamp":1,"counter":7},"topicConfigTable":{"A":{"topicName":"A","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}}}`))
	s := openT(t, mem, clock.NewManual(epoch))
	if got := s.Topics(); !reflect.DeepEqual(got, []Topic{topic("A", 2)}) {
		t.Fatalf("Topics() = %+v", got)
	}
	must(t, s.PutTopic(topic("B", 1)))
	must(t, s.PutTopic(topic("C", 1)))
	c := openT(t, mem.CrashClone(vfs.CrashOptions{}), clock.NewManual(epoch))
	defer c.Close()
	if got := len(c.Topics()); got != 3 || c.TopicsVersion().Counter != 9 {
		t.Fatalf("after crash %+v version %+v", c.Topics(), c.TopicsVersion())
	}
	must(t, s.Close())
}

func TestUpdateAndEnsureTopic(t *testing.T) {
	s := openT(t, vfs.NewMem(), clock.NewManual(epoch))
	defer s.Close()
	for i, c := range []struct {
		t       Topic
		changed bool
	}{{topic("A", 1), true}, {topic("A", 1), false}, {topic("A", 2), true}} {
		changed, err := s.UpdateTopic(c.t)
		must(t, err)
		if changed != c.changed {
			t.Fatalf("UpdateTopic #%d changed = %v, want %v", i, changed, c.changed)
		}
	}
	cur, created, err := s.EnsureTopic(topic("A", 8))
	must(t, err)
	if created || !cur.same(topic("A", 2)) {
		t.Fatalf("EnsureTopic of an existing topic: %+v created %v", cur, created)
	}
	if _, err := s.UpdateTopic(Topic{}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("UpdateTopic of an empty name: %v", err)
	}
	if _, _, err := s.EnsureTopic(Topic{}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("EnsureTopic of an empty name: %v", err)
	}
	// Concurrent callers: exactly one creates, all see its config.
	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	creators := 0
	for i := range n {
		wg.Go(func() {
			cur, created, err := s.EnsureTopic(topic("B", int32(1+i)))
			must(t, err)
			got, _ := s.Topic("B")
			if !cur.same(got) {
				t.Errorf("EnsureTopic returned %+v, stored is %+v", cur, got)
			}
			if created {
				mu.Lock()
				creators++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if creators != 1 {
		t.Fatalf("%d concurrent EnsureTopic calls created the topic %d times", n, creators)
	}
	if v := s.TopicsVersion().Counter; v != 3 {
		t.Fatalf("version counter %d, want 3", v)
	}
	for i, want := range []bool{true, false} {
		existed, err := s.RemoveTopic("B")
		must(t, err)
		if existed != want {
			t.Fatalf("RemoveTopic #%d existed = %v, want %v", i, existed, want)
		}
	}
}

func TestOpenRejectsNegativeLogCompactBytes(t *testing.T) {
	_, err := Open(vfs.NewMem(), testDir, Options{LogCompactBytes: -1})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "LogCompactBytes") {
		t.Fatalf("Open: %v", err)
	}
}

// TestTopicsStaySortedAcrossChanges checks the sorted table that Topics
// keeps between calls against a fresh sort of the map, through random puts,
// deletes and batches of every size (a few changes are merged, many make a
// full sort), and that the version comes with the same state.
func TestTopicsStaySortedAcrossChanges(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	s := openT(t, vfs.NewMem(), clock.NewManual(epoch))
	defer s.Close()
	want := map[string]Topic{}
	for round := range 300 {
		for range r.Intn([]int{1, 5, 50, 400}[r.Intn(4)]) {
			name := fmt.Sprintf("t%04d", r.Intn(500))
			if r.Intn(3) == 0 {
				must(t, s.DeleteTopic(name))
				delete(want, name)
				continue
			}
			tp := topic(name, int32(1+r.Intn(8)))
			must(t, s.PutTopic(tp))
			want[name] = tp
		}
		got, v := s.TopicsAt()
		exp := slices.SortedFunc(maps.Values(want), func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("round %d: Topics() has %d entries, want %d:\n%+v\nwant %+v", round, len(got), len(exp), got, exp)
		}
		if v != s.TopicsVersion() {
			t.Fatalf("round %d: version %+v, want %+v", round, v, s.TopicsVersion())
		}
		if len(got) > 0 {
			got[0].Name = "scribbled" // the caller owns the slice
		}
	}
}
