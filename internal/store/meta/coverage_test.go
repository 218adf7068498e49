package meta_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/meta/metatest"
)

// TestSuiteCoversEveryMethod runs the suite on a twin that records the
// methods called, and fails if a method of meta.Tables is never called (a
// method added to the interface needs a test in the suite).
func TestSuiteCoversEveryMethod(t *testing.T) {
	rec := &recorder{called: map[string]bool{}}
	metatest.Run(t, func(t *testing.T, clk clock.Clock) meta.Tables {
		rec.mu.Lock()
		rec.t = meta.NewMem(clk)
		rec.mu.Unlock()
		return rec
	})
	it := reflect.TypeFor[meta.Tables]()
	for i := range it.NumMethod() {
		if name := it.Method(i).Name; !rec.called[name] {
			t.Errorf("the suite never calls %s", name)
		}
	}
}

// recorder is a meta.Tables that notes each method called and forwards it.
type recorder struct {
	mu     sync.Mutex
	t      meta.Tables
	called map[string]bool
}

func (r *recorder) note(name string) meta.Tables {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.called[name] = true
	return r.t
}

func (r *recorder) Topic(name string) (meta.Topic, bool) { return r.note("Topic").Topic(name) }

func (r *recorder) TopicAt(name string) (meta.Topic, bool, meta.DataVersion) {
	return r.note("TopicAt").TopicAt(name)
}

func (r *recorder) Topics() []meta.Topic { return r.note("Topics").Topics() }

func (r *recorder) TopicsAt() ([]meta.Topic, meta.DataVersion) { return r.note("TopicsAt").TopicsAt() }

func (r *recorder) TopicsVersion() meta.DataVersion { return r.note("TopicsVersion").TopicsVersion() }

func (r *recorder) PutTopic(t meta.Topic) error { return r.note("PutTopic").PutTopic(t) }

func (r *recorder) UpdateTopic(t meta.Topic) (bool, error) {
	return r.note("UpdateTopic").UpdateTopic(t)
}

func (r *recorder) EnsureTopic(t meta.Topic) (meta.Topic, bool, error) {
	return r.note("EnsureTopic").EnsureTopic(t)
}

func (r *recorder) RemoveTopic(name string) (bool, error) {
	return r.note("RemoveTopic").RemoveTopic(name)
}

func (r *recorder) TopicsDurable() bool { return r.note("TopicsDurable").TopicsDurable() }

func (r *recorder) SyncTopics(ctx context.Context) error { return r.note("SyncTopics").SyncTopics(ctx) }

func (r *recorder) Group(name string) (meta.Group, bool) { return r.note("Group").Group(name) }

func (r *recorder) Groups() []meta.Group { return r.note("Groups").Groups() }

func (r *recorder) GroupsVersion() meta.DataVersion { return r.note("GroupsVersion").GroupsVersion() }

func (r *recorder) PutGroup(g meta.Group) error { return r.note("PutGroup").PutGroup(g) }

func (r *recorder) DeleteGroup(name string) error { return r.note("DeleteGroup").DeleteGroup(name) }

func (r *recorder) CommitOffset(group, topic string, queueID int32, offset int64) {
	r.note("CommitOffset").CommitOffset(group, topic, queueID, offset)
}

func (r *recorder) Offset(group, topic string, queueID int32) (int64, bool) {
	return r.note("Offset").Offset(group, topic, queueID)
}

func (r *recorder) GroupOffsets(group string) map[string]map[int32]int64 {
	return r.note("GroupOffsets").GroupOffsets(group)
}

func (r *recorder) AllOffsets() []meta.OffsetEntry { return r.note("AllOffsets").AllOffsets() }

func (r *recorder) DeleteOffsets(group, topic string) {
	r.note("DeleteOffsets").DeleteOffsets(group, topic)
}

func (r *recorder) DeleteTopicOffsets(topic string) {
	r.note("DeleteTopicOffsets").DeleteTopicOffsets(topic)
}

func (r *recorder) SyncOffsets(ctx context.Context) error {
	return r.note("SyncOffsets").SyncOffsets(ctx)
}

func (r *recorder) User(name string) (meta.User, bool) { return r.note("User").User(name) }

func (r *recorder) Users() []meta.User { return r.note("Users").Users() }

func (r *recorder) PutUser(u meta.User) error { return r.note("PutUser").PutUser(u) }

func (r *recorder) RemoveUser(name string) (bool, error) {
	return r.note("RemoveUser").RemoveUser(name)
}

func (r *recorder) Acl(subject string) (meta.Acl, bool) { return r.note("Acl").Acl(subject) }

func (r *recorder) Acls() []meta.Acl { return r.note("Acls").Acls() }

func (r *recorder) PutAcl(a meta.Acl) error { return r.note("PutAcl").PutAcl(a) }

func (r *recorder) RemoveAcl(subject string) (bool, error) {
	return r.note("RemoveAcl").RemoveAcl(subject)
}
