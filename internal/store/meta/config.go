package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
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

// config is what a configTable holds: Topic or Group.
type config[T any] interface {
	key() string
	own() T
	same(T) bool
}

// configTable is the in-memory table of one config kind plus the writer of
// its file.
type configTable[T config[T]] struct {
	tableKey string // JSON name of the table in the file

	mu      sync.RWMutex
	m       map[string]T
	version DataVersion
	seq     uint64 // changes made; the file holds changes ≤ w.durable

	w writer
}

// encodeConfig writes the layout of topics.json and groups.json; only the
// table's JSON key differs, so it is encoded through a map.
func encodeConfig[T any](tableKey string, v DataVersion, m map[string]T) ([]byte, error) {
	return json.Marshal(map[string]any{"dataVersion": v, tableKey: m})
}

func decodeConfig[T config[T]](tableKey string, data []byte) (DataVersion, map[string]T, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return DataVersion{}, nil, err
	}
	rv, ok := raw["dataVersion"]
	if !ok {
		return DataVersion{}, nil, fmt.Errorf("no dataVersion")
	}
	var v DataVersion
	if err := json.Unmarshal(rv, &v); err != nil {
		return DataVersion{}, nil, fmt.Errorf("dataVersion: %w", err)
	}
	tab, ok := raw[tableKey]
	if !ok {
		return DataVersion{}, nil, fmt.Errorf("no %s", tableKey)
	}
	var m map[string]T
	if err := json.Unmarshal(tab, &m); err != nil {
		return DataVersion{}, nil, fmt.Errorf("%s: %w", tableKey, err)
	}
	if m == nil {
		m = make(map[string]T)
	}
	for k, v := range m {
		if k == "" || v.key() != k {
			return DataVersion{}, nil, fmt.Errorf("%s entry %q holds name %q", tableKey, k, v.key())
		}
		m[k] = v.own()
	}
	return v, m, nil
}

// init sets up the table and its writer.
func (t *configTable[T]) init(s *Store, name, tableKey string) {
	t.tableKey = tableKey
	t.m = make(map[string]T)
	t.w = writer{fsys: s.fsys, dir: s.dir, name: name, snapshot: t.snapshot}
}

// load reads the table from data.
func (t *configTable[T]) load(data []byte) error {
	v, m, err := decodeConfig[T](t.tableKey, data)
	if err != nil {
		return err
	}
	t.version, t.m = v, m
	return nil
}

func (t *configTable[T]) snapshot() (uint64, func() ([]byte, error)) {
	t.mu.RLock()
	seq, v, m := t.seq, t.version, maps.Clone(t.m)
	t.mu.RUnlock()
	// Values are never modified once stored (own copies their maps), so the
	// shallow clone is a stable snapshot.
	return seq, func() ([]byte, error) { return encodeConfig(t.tableKey, v, m) }
}

// put stores items and returns the change number to wait for: the new
// change, or the current one if every item was already there as is (so the
// caller still waits for a write that failed earlier to be redone).
func (t *configTable[T]) put(now time.Time, items []T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for _, it := range items {
		if old, ok := t.m[it.key()]; ok && old.same(it) {
			continue
		}
		t.m[it.key()] = it.own()
		changed = true
	}
	if changed {
		t.bump(now)
	}
	return t.seq
}

// del removes name and returns the change number to wait for (see put).
func (t *configTable[T]) del(now time.Time, name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[name]; ok {
		delete(t.m, name)
		t.bump(now)
	}
	return t.seq
}

// bump records a change; t.mu must be held.
func (t *configTable[T]) bump(now time.Time) {
	t.seq++
	t.version = DataVersion{Timestamp: now.UnixMilli(), Counter: t.version.Counter + 1}
}

func (t *configTable[T]) get(name string) (T, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.m[name]
	return v, ok
}

func (t *configTable[T]) all() []T {
	t.mu.RLock()
	out := make([]T, 0, len(t.m))
	for _, v := range t.m {
		out = append(out, v)
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(a.key(), b.key()) })
	return out
}

// allAt returns every entry (sorted by key) and the table's version, read
// under one lock: the entries are the table at exactly that version.
func (t *configTable[T]) allAt() ([]T, DataVersion) {
	t.mu.RLock()
	out := make([]T, 0, len(t.m))
	for _, v := range t.m {
		out = append(out, v)
	}
	v := t.version
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(a.key(), b.key()) })
	return out, v
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
	seq := s.topics.put(s.clock.Now(), ts)
	return s.topics.w.sync(context.Background(), seq)
}

// DeleteTopic removes a topic config and returns once that is durable;
// removing a missing topic is not a change. It does not touch the topic's
// consumer offsets (see DeleteTopicOffsets). Errors as PutTopic.
func (s *Store) DeleteTopic(name string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	seq := s.topics.del(s.clock.Now(), name)
	return s.topics.w.sync(context.Background(), seq)
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
func (s *Store) Topics() []Topic { return s.topics.all() }

// TopicsVersion returns the version of the topic table; it changes with
// every topic change and is persisted with the table.
func (s *Store) TopicsVersion() DataVersion { return s.topics.dataVersion() }

// TopicsAt returns every topic config sorted by name together with the
// version of the topic table they are, read atomically (Topics and
// TopicsVersion called one after the other may straddle a change).
func (s *Store) TopicsAt() ([]Topic, DataVersion) { return s.topics.allAt() }

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
	seq := s.groups.put(s.clock.Now(), []Group{g})
	return s.groups.w.sync(context.Background(), seq)
}

// DeleteGroup removes a subscription group config and returns once that is
// durable. It does not touch the group's offsets (see DeleteOffsets).
func (s *Store) DeleteGroup(name string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	seq := s.groups.del(s.clock.Now(), name)
	return s.groups.w.sync(context.Background(), seq)
}

// Group returns the config of a subscription group; its Attributes map is
// shared: do not modify it.
func (s *Store) Group(name string) (Group, bool) { return s.groups.get(name) }

// Groups returns every group config sorted by name, in a new slice.
func (s *Store) Groups() []Group { return s.groups.all() }

// GroupsVersion returns the version of the group table (see TopicsVersion).
func (s *Store) GroupsVersion() DataVersion { return s.groups.dataVersion() }
