package meta

import "context"

// Tables is what the broker uses of the metadata store: the topic, group,
// user and ACL tables with their versions and durability, and the consumer offsets. The
// file Store and the in-memory Mem implement it and pass the same
// conformance suite (package metatest); a broker test that does not test
// the disk can run on a Mem.
//
// The semantics are those documented on Store's methods: every change of a
// table adds 1 to its version's Counter (a put of an identical value and a
// removal of a missing name are no change); stored values are the store's
// own copies; GroupOffsets and AllOffsets return copies the caller owns.
type Tables interface {
	// Topic returns the config of a topic. Its maps must not be modified.
	Topic(name string) (Topic, bool)
	// TopicAt returns the config of a topic and the topic table's version
	// at which that holds, read atomically.
	TopicAt(name string) (Topic, bool, DataVersion)
	// Topics returns every topic sorted by name, in a new slice.
	Topics() []Topic
	// TopicsAt is Topics with the version of that state, read atomically.
	TopicsAt() ([]Topic, DataVersion)
	// TopicsVersion returns the version of the topic table.
	TopicsVersion() DataVersion
	// PutTopic adds or replaces t.Name and returns once that is durable.
	PutTopic(t Topic) error
	// UpdateTopic is PutTopic that reports whether t differed from the
	// stored topic (or there was none), in one step.
	UpdateTopic(t Topic) (changed bool, err error)
	// EnsureTopic stores t unless t.Name exists and returns the topic now
	// stored; of concurrent callers exactly one creates.
	EnsureTopic(t Topic) (cur Topic, created bool, err error)
	// RemoveTopic removes a topic (not its offsets) and reports whether it
	// was there.
	RemoveTopic(name string) (existed bool, err error)
	// TopicsDurable reports whether every topic change made so far is
	// durable.
	TopicsDurable() bool
	// SyncTopics returns once every topic change made before the call is
	// durable.
	SyncTopics(ctx context.Context) error

	// Group returns the config of a subscription group; its maps must not
	// be modified.
	Group(name string) (Group, bool)
	// Groups returns every group sorted by name, in a new slice.
	Groups() []Group
	// GroupsVersion returns the version of the group table.
	GroupsVersion() DataVersion
	// PutGroup adds or replaces g.Name and returns once that is durable.
	PutGroup(g Group) error
	// DeleteGroup removes a group (not its offsets) durably.
	DeleteGroup(name string) error

	// User returns a user of the access control; false when none.
	User(name string) (User, bool)
	// Users returns every user sorted by name, in a new slice.
	Users() []User
	// PutUser adds or replaces u.Name and returns once that is durable.
	PutUser(u User) error
	// RemoveUser removes a user (not its ACL) durably and reports whether
	// it was there.
	RemoveUser(name string) (existed bool, err error)
	// Acl returns a subject's ACL; its slices must not be modified.
	Acl(subject string) (Acl, bool)
	// Acls returns every ACL sorted by subject, in a new slice.
	Acls() []Acl
	// PutAcl adds or replaces the ACL of a.Subject and returns once that
	// is durable.
	PutAcl(a Acl) error
	// RemoveAcl removes a subject's ACL durably and reports whether it was
	// there.
	RemoveAcl(subject string) (existed bool, err error)

	// CommitOffset sets group's next offset to consume on a queue; memory
	// only, durable with the next SyncOffsets (or the store's own flush).
	CommitOffset(group, topic string, queueID int32, offset int64)
	// Offset returns group's committed offset on a queue, false if none.
	Offset(group, topic string, queueID int32) (int64, bool)
	// GroupOffsets returns a copy of group's offsets, topic → queue id →
	// offset; an empty map when it has none.
	GroupOffsets(group string) map[string]map[int32]int64
	// AllOffsets returns a copy of every committed offset, in no order.
	AllOffsets() []OffsetEntry
	// DeleteOffsets removes group's offsets on topic, or on every topic
	// when topic is "".
	DeleteOffsets(group, topic string)
	// DeleteTopicOffsets removes every group's offsets on topic.
	DeleteTopicOffsets(topic string)
	// SyncOffsets returns once every offset change made before the call is
	// durable.
	SyncOffsets(ctx context.Context) error
}

var (
	_ Tables = (*Store)(nil)
	_ Tables = (*Mem)(nil)
)
