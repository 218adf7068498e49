package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/vfs"
)

// Topic permission bits (Topic.Perm), as in RocketMQ's PermName.
const (
	PermRead    int32 = 4
	PermWrite   int32 = 2
	PermInherit int32 = 1
)

// Topic is a topic's configuration, as RocketMQ's TopicConfig.
type Topic struct {
	Name           string `json:"topicName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	// Perm is a sum of PermRead (4), PermWrite (2) and PermInherit (1).
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType"` // "SINGLE_TAG" or "MULTI_TAG"
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
	// Attributes are free-form settings, e.g. "persistent"="false" for a
	// topic whose messages are kept in memory only. Maps returned by the
	// Store are shared and must not be modified.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Group is a subscription group's configuration, as RocketMQ's
// SubscriptionGroupConfig.
type Group struct {
	Name                   string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeFromMinEnable   bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	// RetryMaxTimes is how often a message is re-delivered before it goes
	// to the group's dead-letter queue.
	RetryMaxTimes  int32 `json:"retryMaxTimes"`
	RetryQueueNums int32 `json:"retryQueueNums"`
	// BrokerID is the broker (0 = master) consumers pull from.
	BrokerID int64 `json:"brokerId"`
	// WhichBrokerWhenConsumeSlowly is the broker id to redirect slow
	// consumers to.
	WhichBrokerWhenConsumeSlowly   int64 `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIDsChangedEnable bool  `json:"notifyConsumerIdsChangedEnable"`
	// ConsumeMessageOrderly: the group consumes in order (5.x clients get
	// fifo in their settings; FIFO pops hold a queue while a message of it
	// is in flight).
	ConsumeMessageOrderly bool `json:"consumeMessageOrderly"`
	// GroupRetryPolicy is the back-off between a 5.x push consumer's
	// attempts; nil is RocketMQ's default (customized, 1 s 5 s 10 s ...).
	GroupRetryPolicy *RetryPolicy `json:"groupRetryPolicy,omitempty"`
	GroupSysFlag     int32        `json:"groupSysFlag"`
	// ConsumeTimeoutMinute is how long a push consumer may take for one
	// message (RocketMQ's default 15).
	ConsumeTimeoutMinute int32 `json:"consumeTimeoutMinute"`
	// SubscriptionDataSet is the group's declared subscriptions, as
	// RocketMQ 5 keeps them; informational.
	SubscriptionDataSet []SimpleSubscription `json:"subscriptionDataSet,omitempty"`
	// Attributes: see Topic.Attributes; returned maps must not be modified.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// RetryPolicy is RocketMQ 5's GroupRetryPolicy: Type "EXPONENTIAL" uses
// Exponential, "CUSTOMIZED" (or "") Customized; a nil policy of the type
// chosen means RocketMQ's default of that type.
type RetryPolicy struct {
	Type        string            `json:"type"`
	Exponential *ExponentialRetry `json:"exponentialRetryPolicy,omitempty"`
	Customized  *CustomizedRetry  `json:"customizedRetryPolicy,omitempty"`
}

// ExponentialRetry waits Initial·Multiplier^attempt, at most Max (ms).
type ExponentialRetry struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// CustomizedRetry waits Next[attempt] ms (the last one beyond its end).
type CustomizedRetry struct {
	Next []int64 `json:"next"`
}

// SimpleSubscription is one entry of Group.SubscriptionDataSet.
type SimpleSubscription struct {
	Topic          string `json:"topic"`
	ExpressionType string `json:"expressionType"`
	Expression     string `json:"expression"`
	Version        int64  `json:"version"`
}

// DataVersion identifies a state of the topic or group table, as RocketMQ's
// DataVersion: every change sets Timestamp to the clock's time (ms since the
// epoch) and adds 1 to Counter. Name servers and peers compare versions to
// tell whether their copy is current.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

func (t Topic) key() string { return t.Name }
func (g Group) key() string { return g.Name }

// own returns a copy that shares no map with the caller's value, with an
// empty Attributes map made nil so the value compares equal after a reload.
func (t Topic) own() Topic { t.Attributes = ownAttrs(t.Attributes); return t }
func (g Group) own() Group {
	g.Attributes = ownAttrs(g.Attributes)
	if p := g.GroupRetryPolicy; p != nil {
		c := *p
		if p.Exponential != nil {
			e := *p.Exponential
			c.Exponential = &e
		}
		if p.Customized != nil {
			c.Customized = &CustomizedRetry{Next: slices.Clone(p.Customized.Next)}
		}
		g.GroupRetryPolicy = &c
	}
	if len(g.SubscriptionDataSet) == 0 {
		g.SubscriptionDataSet = nil
	} else {
		g.SubscriptionDataSet = slices.Clone(g.SubscriptionDataSet)
	}
	return g
}

func ownAttrs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func (t Topic) same(u Topic) bool {
	return t.Name == u.Name && t.ReadQueueNums == u.ReadQueueNums &&
		t.WriteQueueNums == u.WriteQueueNums && t.Perm == u.Perm &&
		t.TopicFilterType == u.TopicFilterType && t.TopicSysFlag == u.TopicSysFlag &&
		t.Order == u.Order && maps.Equal(t.Attributes, u.Attributes)
}

func (g Group) same(h Group) bool {
	return g.Name == h.Name && g.ConsumeEnable == h.ConsumeEnable &&
		g.ConsumeFromMinEnable == h.ConsumeFromMinEnable &&
		g.ConsumeBroadcastEnable == h.ConsumeBroadcastEnable &&
		g.RetryMaxTimes == h.RetryMaxTimes && g.RetryQueueNums == h.RetryQueueNums &&
		g.BrokerID == h.BrokerID &&
		g.WhichBrokerWhenConsumeSlowly == h.WhichBrokerWhenConsumeSlowly &&
		g.NotifyConsumerIDsChangedEnable == h.NotifyConsumerIDsChangedEnable &&
		g.ConsumeMessageOrderly == h.ConsumeMessageOrderly && g.GroupSysFlag == h.GroupSysFlag &&
		g.ConsumeTimeoutMinute == h.ConsumeTimeoutMinute &&
		reflect.DeepEqual(g.GroupRetryPolicy, h.GroupRetryPolicy) &&
		slices.Equal(g.SubscriptionDataSet, h.SubscriptionDataSet) &&
		maps.Equal(g.Attributes, h.Attributes)
}

// config is what a configTable holds: Topic, Group, User or Acl.
type config[T any] interface {
	key() string
	own() T
	same(T) bool
}

// configTable is the in-memory table of one config kind plus its files: a
// snapshot and a change log (see the package doc).
type configTable[T config[T]] struct {
	tableKey string // JSON name of the table in the file
	log      *slog.Logger

	mu      sync.RWMutex
	m       map[string]T
	version DataVersion
	seq     uint64 // changes made; the files hold changes ≤ w.durable
	// pending are the changes above w.durable, oldest first: what the next
	// append writes to the log.
	pending []pendingChange[T]
	// changed are the keys stored or removed since sorted was built; when
	// resort is set, sorted is rebuilt from m instead.
	changed map[string]struct{}
	resort  bool

	sortMu sync.Mutex
	sorted []T // every entry sorted by key, as of the last all(); guarded by sortMu

	files tableFiles // used by the running write only (and Open, Close)
	w     writer
}

// encodeConfig writes the layout of topics.json and groups.json; only the
// table's JSON key differs, so it is encoded through a map.
func encodeConfig[T any](tableKey string, v DataVersion, m map[string]T) ([]byte, error) {
	return json.Marshal(map[string]any{"dataVersion": v, tableKey: m})
}

// configFile is the layout of topics.json and groups.json for decoding: one
// pass of encoding/json, the table under whichever of the two keys.
type configFile[T any] struct {
	DataVersion *DataVersion `json:"dataVersion"`
	Topics      map[string]T `json:"topicConfigTable"`
	Groups      map[string]T `json:"subscriptionGroupTable"`
	Users       map[string]T `json:"userTable"`
	Acls        map[string]T `json:"aclTable"`
}

func decodeConfig[T config[T]](tableKey string, data []byte) (DataVersion, map[string]T, error) {
	var f configFile[T]
	if err := json.Unmarshal(data, &f); err != nil {
		return DataVersion{}, nil, err
	}
	if f.DataVersion == nil {
		return DataVersion{}, nil, fmt.Errorf("no dataVersion")
	}
	tables := map[string]map[string]T{"topicConfigTable": f.Topics, "subscriptionGroupTable": f.Groups,
		"userTable": f.Users, "aclTable": f.Acls}
	m := tables[tableKey]
	if m == nil {
		return DataVersion{}, nil, fmt.Errorf("no %s", tableKey)
	}
	for k, other := range tables {
		if k != tableKey && other != nil {
			return DataVersion{}, nil, fmt.Errorf("%s holds %s", tableKey, k)
		}
	}
	for k, v := range m {
		if k == "" || v.key() != k {
			return DataVersion{}, nil, fmt.Errorf("%s entry %q holds name %q", tableKey, k, v.key())
		}
		m[k] = v.own()
	}
	return *f.DataVersion, m, nil
}

// init sets up the table and its writer.
func (t *configTable[T]) init(s *Store, name, tableKey string, minLogBytes int64) {
	t.tableKey = tableKey
	t.log = s.log
	t.m = make(map[string]T)
	t.resort = true
	t.files = tableFiles{fsys: s.fsys, dir: s.dir, name: name, minBytes: minLogBytes}
	t.w = writer{name: name, write: t.write}
}

// open loads the snapshot file, then replays the change log over it and
// keeps the log open for appends.
func (t *configTable[T]) open() error {
	p := path.Join(t.files.dir, t.files.name)
	data, ok, err := vfs.ReadFile(t.files.fsys, p)
	if err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	if ok {
		v, m, err := decodeConfig[T](t.tableKey, data)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, p, err)
		}
		t.version, t.m = v, m
		t.files.snapBytes = int64(len(data))
	}
	logData, err := t.files.openLog()
	if err != nil {
		return err
	}
	if t.files.log == nil {
		return nil
	}
	v, good, err := replay(logData, t.version, t.m)
	if err != nil {
		t.files.close()
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, t.files.logPath(), err)
	}
	t.version = v
	t.files.logSize = int64(good)
	if good < len(logData) {
		// An append a crash cut short: never acknowledged. The first write
		// rewrites the snapshot and empties the log instead of appending
		// after the tear.
		t.files.compact = true
		t.log.Info("ignoring the unfinished end of a meta change log", "file", t.files.logPath(),
			"good_bytes", good, "ignored_bytes", len(logData)-good)
	}
	return nil
}

// write is the writer's write: it appends the pending changes to the log,
// or rewrites the snapshot when the log has grown as large as it (or must
// not be appended to).
func (t *configTable[T]) write() (uint64, error) {
	t.mu.RLock()
	seq, pend := t.seq, t.pending
	t.mu.RUnlock()
	f := &t.files
	if f.closed {
		return seq, ErrClosed
	}
	if len(pend) == 0 {
		return seq, nil
	}
	if !f.compact && f.log != nil {
		buf := f.buf[:0]
		for _, p := range pend {
			payload, err := json.Marshal(p.c)
			if err != nil {
				return seq, fmt.Errorf("meta: encode a change of %s: %w", f.name, err)
			}
			buf = appendRecord(buf, payload)
		}
		f.buf = buf
		if cap(f.buf) > 1<<20 {
			f.buf = nil // do not keep a large burst's buffer
		}
		if !f.shouldCompact(len(buf)) {
			err := f.appendChanges(buf)
			if err == nil {
				t.trim(seq)
			}
			return seq, err
		}
	}
	return t.compactNow()
}

// compactNow writes the whole table as the snapshot and empties the log.
func (t *configTable[T]) compactNow() (uint64, error) {
	t.mu.RLock()
	seq, v, m := t.seq, t.version, maps.Clone(t.m)
	t.mu.RUnlock()
	// Values are never modified once stored (own copies their maps), so the
	// shallow clone is a stable snapshot.
	data, err := encodeConfig(t.tableKey, v, m)
	if err != nil {
		return seq, fmt.Errorf("meta: encode %s: %w", t.files.name, err)
	}
	resetErr, err := t.files.replaceSnapshot(data)
	if err != nil {
		return seq, err
	}
	if resetErr != nil {
		// The snapshot holds every change: nothing is lost, the next
		// write compacts again.
		t.log.Warn("emptying a meta change log failed; the next change rewrites the table", "err", resetErr)
	}
	t.trim(seq)
	return seq, nil
}

// trim drops the pending changes ≤ seq, now durable.
func (t *configTable[T]) trim(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.pending) && t.pending[i].seq <= seq {
		i++
	}
	n := copy(t.pending, t.pending[i:])
	clear(t.pending[n:])
	t.pending = t.pending[:n]
}

// closeFiles makes every change durable and, if the log holds records,
// folds them into the snapshot, so a cleanly closed table is one file. It
// returns the error of a failed write only if changes were not durable
// before; a failed fold is logged (the log still holds the changes).
func (t *configTable[T]) closeFiles() error {
	var wasDirty bool
	err := t.w.exclusive(func() (uint64, error) {
		t.mu.RLock()
		seq := t.seq
		t.mu.RUnlock()
		wasDirty = seq > t.w.durableSeq()
		if t.files.closed || !wasDirty && t.files.logSize == 0 && !t.files.compact {
			return seq, nil
		}
		return t.compactNow()
	})
	if err != nil && !wasDirty {
		t.log.Warn("folding a meta change log into its table at close failed; the next open replays it", "file", t.files.name, "err", err)
		err = nil
	}
	return errors.Join(err, t.files.close())
}

// put stores items and returns the change number to wait for: the new
// change, or the current one if every item was already there as is (so the
// caller still waits for a write that failed earlier to be redone), and
// whether it changed the table.
func (t *configTable[T]) put(now time.Time, items []T) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var stored []T
	for _, it := range items {
		if old, ok := t.m[it.key()]; ok && old.same(it) {
			continue
		}
		it = it.own()
		t.m[it.key()] = it
		t.markChanged(it.key())
		stored = append(stored, it)
	}
	if len(stored) > 0 {
		t.bump(now, change[T]{Put: stored})
	}
	return t.seq, len(stored) > 0
}

// putIfMissing stores it unless an entry of its name exists. It returns the
// entry now stored, whether it was created, and the change number to wait
// for (see put).
func (t *configTable[T]) putIfMissing(now time.Time, it T) (T, bool, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.m[it.key()]; ok {
		return cur, false, t.seq
	}
	it = it.own()
	t.m[it.key()] = it
	t.markChanged(it.key())
	t.bump(now, change[T]{Put: []T{it}})
	return it, true, t.seq
}

// del removes name and returns the change number to wait for (see put) and
// whether name was there.
func (t *configTable[T]) del(now time.Time, name string) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[name]
	if ok {
		delete(t.m, name)
		t.markChanged(name)
		t.bump(now, change[T]{Delete: name})
	}
	return t.seq, ok
}

// bump records change c; t.mu must be held.
func (t *configTable[T]) bump(now time.Time, c change[T]) {
	t.seq++
	t.version = DataVersion{Timestamp: now.UnixMilli(), Counter: t.version.Counter + 1}
	c.Version = t.version
	t.pending = append(t.pending, pendingChange[T]{seq: t.seq, c: c})
}

func (t *configTable[T]) get(name string) (T, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.m[name]
	return v, ok
}

// markChanged notes that key was stored or removed, for all; t.mu must be
// held. Past a quarter of the table, a full sort is cheaper than the merge.
func (t *configTable[T]) markChanged(key string) {
	if t.resort {
		return
	}
	if t.changed == nil {
		t.changed = make(map[string]struct{})
	}
	t.changed[key] = struct{}{}
	if len(t.changed) > 64+len(t.m)/4 {
		t.resort, t.changed = true, nil
	}
}

// keyed is a changed key and its entry, if it is still there.
type keyed[T any] struct {
	key   string
	entry T
	ok    bool
}

// all returns every entry sorted by key, in a new slice, and the version of
// that state. It keeps the sorted table between calls and merges in the
// entries changed since, so a call after a few changes costs a copy of the
// table and no sort or hashing of all of it.
func (t *configTable[T]) all() ([]T, DataVersion) {
	t.sortMu.Lock()
	defer t.sortMu.Unlock()
	t.mu.Lock()
	v, resort, changed := t.version, t.resort, t.changed
	t.resort, t.changed = false, nil
	var fresh []T
	var edits []keyed[T]
	if resort {
		fresh = make([]T, 0, len(t.m))
		for _, e := range t.m {
			fresh = append(fresh, e)
		}
	} else {
		edits = make([]keyed[T], 0, len(changed))
		for k := range changed {
			e, ok := t.m[k]
			edits = append(edits, keyed[T]{k, e, ok})
		}
	}
	t.mu.Unlock()
	if resort {
		slices.SortFunc(fresh, func(a, b T) int { return strings.Compare(a.key(), b.key()) })
		t.sorted = fresh
		return slices.Clone(t.sorted), v
	}
	if len(edits) == 0 {
		return slices.Clone(t.sorted), v
	}
	slices.SortFunc(edits, func(a, b keyed[T]) int { return strings.Compare(a.key, b.key) })
	old := t.sorted
	merged := make([]T, 0, len(old)+len(edits))
	pos := 0
	for _, c := range edits {
		// Copy the run of unchanged entries before c.key, drop the entry
		// it replaces or removes, put the new one.
		j, found := slices.BinarySearchFunc(old[pos:], c.key, func(e T, k string) int { return strings.Compare(e.key(), k) })
		merged = append(merged, old[pos:pos+j]...)
		pos += j
		if found {
			pos++
		}
		if c.ok {
			merged = append(merged, c.entry)
		}
	}
	t.sorted = append(merged, old[pos:]...)
	return slices.Clone(t.sorted), v
}

// getAt returns the entry of name and the table's version, read under one
// lock.
func (t *configTable[T]) getAt(name string) (T, bool, DataVersion) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.m[name]
	return v, ok, t.version
}

func (t *configTable[T]) dataVersion() DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// dirty reports whether the table holds changes not known to be durable.
func (t *configTable[T]) dirty() (uint64, bool) {
	t.mu.RLock()
	seq := t.seq
	t.mu.RUnlock()
	return seq, seq > t.w.durableSeq()
}

// PutTopic adds or replaces the topic t.Name and returns once the change is
// durable. Storing a topic identical to the stored one is not a change (the
// version stays). The Store keeps its own copy of t.Attributes.
//
// It returns ErrInvalidName for an empty name and ErrClosed after Close. If
// the write fails it returns the error; the change stays in memory and is
// made durable by the next successful topic write (see the package doc).
// Safe for concurrent use; concurrent callers share file writes.
func (s *Store) PutTopic(t Topic) error {
	return s.PutTopics([]Topic{t})
}

// PutTopics is PutTopic for several topics at once: one change, one version
// bump, one write. If two have the same name, the last one wins.
func (s *Store) PutTopics(ts []Topic) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for _, t := range ts {
		if t.Name == "" {
			return fmt.Errorf("%w: empty topic name", ErrInvalidName)
		}
	}
	seq, _ := s.topics.put(s.clock.Now(), ts)
	return s.topics.w.sync(context.Background(), seq)
}

// UpdateTopic is PutTopic that also reports whether t differed from the
// stored topic (or there was none): the check and the change are one step,
// so of concurrent callers storing the same config one sees changed.
func (s *Store) UpdateTopic(t Topic) (changed bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	if t.Name == "" {
		return false, fmt.Errorf("%w: empty topic name", ErrInvalidName)
	}
	seq, changed := s.topics.put(s.clock.Now(), []Topic{t})
	return changed, s.topics.w.sync(context.Background(), seq)
}

// EnsureTopic stores t unless a topic named t.Name exists, and returns the
// topic now stored and whether this call created it. The check and the
// creation are one step: of concurrent callers exactly one creates. It
// returns once the stored topic is durable (also when it existed: its
// creation may still be being written). Errors as PutTopic.
func (s *Store) EnsureTopic(t Topic) (cur Topic, created bool, err error) {
	if s.closed.Load() {
		return Topic{}, false, ErrClosed
	}
	if t.Name == "" {
		return Topic{}, false, fmt.Errorf("%w: empty topic name", ErrInvalidName)
	}
	cur, created, seq := s.topics.putIfMissing(s.clock.Now(), t)
	return cur, created, s.topics.w.sync(context.Background(), seq)
}

// DeleteTopic removes a topic config and returns once that is durable;
// removing a missing topic is not a change. It does not touch the topic's
// consumer offsets (see DeleteTopicOffsets). Errors as PutTopic.
func (s *Store) DeleteTopic(name string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	seq, _ := s.topics.del(s.clock.Now(), name)
	return s.topics.w.sync(context.Background(), seq)
}

// RemoveTopic is DeleteTopic that also reports whether the topic was there
// (the check and the removal are one step).
func (s *Store) RemoveTopic(name string) (existed bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	seq, existed := s.topics.del(s.clock.Now(), name)
	return existed, s.topics.w.sync(context.Background(), seq)
}

// TopicsDurable reports whether every topic change made so far is durable.
// A topic is visible to Topic as soon as PutTopic starts, before it is on
// disk: a caller that must not act on a topic that a crash could take back
// (a send acknowledged to a topic whose config is lost) checks this, and
// waits with SyncTopics when it is false.
func (s *Store) TopicsDurable() bool {
	_, dirty := s.topics.dirty()
	return !dirty
}

// SyncTopics returns once every topic change made before the call is
// durable, writing the table if no write covers them yet.
func (s *Store) SyncTopics(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	seq, dirty := s.topics.dirty()
	if !dirty {
		return nil
	}
	return s.topics.w.sync(ctx, seq)
}

// Topic returns the config of a topic. Its Attributes map is shared: do not
// modify it. Safe for concurrent use; never waits for I/O.
func (s *Store) Topic(name string) (Topic, bool) { return s.topics.get(name) }

// Topics returns every topic config sorted by name, in a new slice (whose
// Attributes maps must not be modified).
func (s *Store) Topics() []Topic {
	ts, _ := s.topics.all()
	return ts
}

// TopicsVersion returns the version of the topic table; it changes with
// every topic change and is persisted with the table.
func (s *Store) TopicsVersion() DataVersion { return s.topics.dataVersion() }

// TopicsAt returns every topic config sorted by name together with the
// version of the topic table they are, read atomically (Topics and
// TopicsVersion called one after the other may straddle a change).
func (s *Store) TopicsAt() ([]Topic, DataVersion) { return s.topics.all() }

// TopicAt returns the config of a topic (false when there is none) and
// the version of the topic table at which that holds, read atomically.
func (s *Store) TopicAt(name string) (Topic, bool, DataVersion) { return s.topics.getAt(name) }

// PutGroup adds or replaces the subscription group g.Name and returns once
// the change is durable. Errors and concurrency as PutTopic.
func (s *Store) PutGroup(g Group) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if g.Name == "" {
		return fmt.Errorf("%w: empty group name", ErrInvalidName)
	}
	seq, _ := s.groups.put(s.clock.Now(), []Group{g})
	return s.groups.w.sync(context.Background(), seq)
}

// DeleteGroup removes a subscription group config and returns once that is
// durable. It does not touch the group's offsets (see DeleteOffsets).
func (s *Store) DeleteGroup(name string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	seq, _ := s.groups.del(s.clock.Now(), name)
	return s.groups.w.sync(context.Background(), seq)
}

// Group returns the config of a subscription group; its Attributes map is
// shared: do not modify it.
func (s *Store) Group(name string) (Group, bool) { return s.groups.get(name) }

// Groups returns every group config sorted by name, in a new slice.
func (s *Store) Groups() []Group {
	gs, _ := s.groups.all()
	return gs
}

// GroupsVersion returns the version of the group table (see TopicsVersion).
func (s *Store) GroupsVersion() DataVersion { return s.groups.dataVersion() }
