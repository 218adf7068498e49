package meta

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/petrelmq/petrel/internal/clock"
)

// Mem is the in-memory twin of Store: the Tables a broker test uses when
// it does not test the disk. It keeps no files; every change is durable at
// once (TopicsDurable is always true, SyncTopics and SyncOffsets return
// nil). Otherwise it behaves as Store: versions are stamped with the
// clock's time and count changes, a put of an identical value or a removal
// of a missing name is no change, empty names are refused with
// ErrInvalidName. It copies the values it stores and the values it returns,
// so no caller shares a map or slice with it. Safe for concurrent use.
type Mem struct {
	clk clock.Clock

	mu       sync.RWMutex
	topics   map[string]Topic
	groups   map[string]Group
	users    map[string]User
	acls     map[string]Acl
	topicVer DataVersion
	groupVer DataVersion

	offsets offsetMap
}

// NewMem returns an empty Mem whose versions take their timestamps from
// clk (clock.Real if nil).
func NewMem(clk clock.Clock) *Mem {
	if clk == nil {
		clk = clock.Real
	}
	return &Mem{clk: clk, topics: make(map[string]Topic), groups: make(map[string]Group),
		users: make(map[string]User), acls: make(map[string]Acl),
		offsets: offsetMap{m: make(map[offsetKey]int64)}}
}

// bump records a change of the table whose version is v; m.mu must be held.
func (m *Mem) bump(v *DataVersion) {
	*v = DataVersion{Timestamp: m.clk.Now().UnixMilli(), Counter: v.Counter + 1}
}

// Topic implements Tables; the result is a copy.
func (m *Mem) Topic(name string) (Topic, bool) {
	t, ok, _ := m.TopicAt(name)
	return t, ok
}

// TopicAt implements Tables.
func (m *Mem) TopicAt(name string) (Topic, bool, DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.topics[name]
	return t.own(), ok, m.topicVer
}

// Topics implements Tables.
func (m *Mem) Topics() []Topic {
	ts, _ := m.TopicsAt()
	return ts
}

// TopicsAt implements Tables.
func (m *Mem) TopicsAt() ([]Topic, DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedCopies(m.topics), m.topicVer
}

// sortedCopies returns copies of the values of tab sorted by name.
func sortedCopies[T config[T]](tab map[string]T) []T {
	out := make([]T, 0, len(tab))
	for _, v := range tab {
		out = append(out, v.own())
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(a.key(), b.key()) })
	return out
}

// TopicsVersion implements Tables.
func (m *Mem) TopicsVersion() DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topicVer
}

// PutTopic implements Tables.
func (m *Mem) PutTopic(t Topic) error {
	_, err := m.UpdateTopic(t)
	return err
}

// UpdateTopic implements Tables.
func (m *Mem) UpdateTopic(t Topic) (bool, error) {
	if t.Name == "" {
		return false, fmt.Errorf("%w: empty topic name", ErrInvalidName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.topics[t.Name]; ok && old.same(t) {
		return false, nil
	}
	m.topics[t.Name] = t.own()
	m.bump(&m.topicVer)
	return true, nil
}

// EnsureTopic implements Tables.
func (m *Mem) EnsureTopic(t Topic) (Topic, bool, error) {
	if t.Name == "" {
		return Topic{}, false, fmt.Errorf("%w: empty topic name", ErrInvalidName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.topics[t.Name]; ok {
		return cur.own(), false, nil
	}
	t = t.own()
	m.topics[t.Name] = t
	m.bump(&m.topicVer)
	return t.own(), true, nil
}

// RemoveTopic implements Tables.
func (m *Mem) RemoveTopic(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.topics[name]; !ok {
		return false, nil
	}
	delete(m.topics, name)
	m.bump(&m.topicVer)
	return true, nil
}

// TopicsDurable implements Tables: always true.
func (m *Mem) TopicsDurable() bool { return true }

// SyncTopics implements Tables: there is nothing to write.
func (m *Mem) SyncTopics(context.Context) error { return nil }

// Group implements Tables; the result is a copy.
func (m *Mem) Group(name string) (Group, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[name]
	return g.own(), ok
}

// Groups implements Tables.
func (m *Mem) Groups() []Group {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedCopies(m.groups)
}

// GroupsVersion implements Tables.
func (m *Mem) GroupsVersion() DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.groupVer
}

// PutGroup implements Tables.
func (m *Mem) PutGroup(g Group) error {
	if g.Name == "" {
		return fmt.Errorf("%w: empty group name", ErrInvalidName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.groups[g.Name]; ok && old.same(g) {
		return nil
	}
	m.groups[g.Name] = g.own()
	m.bump(&m.groupVer)
	return nil
}

// DeleteGroup implements Tables.
func (m *Mem) DeleteGroup(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.groups[name]; ok {
		delete(m.groups, name)
		m.bump(&m.groupVer)
	}
	return nil
}

// CommitOffset implements Tables.
func (m *Mem) CommitOffset(group, topic string, queueID int32, offset int64) {
	m.offsets.commit(group, topic, queueID, offset)
}

// Offset implements Tables.
func (m *Mem) Offset(group, topic string, queueID int32) (int64, bool) {
	return m.offsets.get(group, topic, queueID)
}

// GroupOffsets implements Tables.
func (m *Mem) GroupOffsets(group string) map[string]map[int32]int64 { return m.offsets.group(group) }

// AllOffsets implements Tables.
func (m *Mem) AllOffsets() []OffsetEntry { return m.offsets.all() }

// DeleteOffsets implements Tables.
func (m *Mem) DeleteOffsets(group, topic string) {
	m.offsets.deleteWhere(func(k offsetKey) bool { return k.group == group && (topic == "" || k.topic == topic) })
}

// DeleteTopicOffsets implements Tables.
func (m *Mem) DeleteTopicOffsets(topic string) {
	m.offsets.deleteWhere(func(k offsetKey) bool { return k.topic == topic })
}

// SyncOffsets implements Tables: there is nothing to write.
func (m *Mem) SyncOffsets(context.Context) error { return nil }

// User implements Tables.
func (m *Mem) User(name string) (User, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	u, ok := m.users[name]
	return u, ok
}

// Users implements Tables.
func (m *Mem) Users() []User {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedCopies(m.users)
}

// PutUser implements Tables.
func (m *Mem) PutUser(u User) error {
	if u.Name == "" {
		return fmt.Errorf("%w: empty user name", ErrInvalidName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users[u.Name] = u
	return nil
}

// RemoveUser implements Tables.
func (m *Mem) RemoveUser(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.users[name]
	delete(m.users, name)
	return ok, nil
}

// Acl implements Tables; the result is a copy.
func (m *Mem) Acl(subject string) (Acl, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, ok := m.acls[subject]
	return a.own(), ok
}

// Acls implements Tables.
func (m *Mem) Acls() []Acl {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedCopies(m.acls)
}

// PutAcl implements Tables.
func (m *Mem) PutAcl(a Acl) error {
	if a.Subject == "" {
		return fmt.Errorf("%w: empty ACL subject", ErrInvalidName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acls[a.Subject] = a.own()
	return nil
}

// RemoveAcl implements Tables.
func (m *Mem) RemoveAcl(subject string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.acls[subject]
	delete(m.acls, subject)
	return ok, nil
}
