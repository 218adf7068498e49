package broker

// Topic administration (UPDATE_AND_CREATE_TOPIC 17, DELETE_TOPIC_IN_BROKER
// 215) and the create-if-missing paths used by send (auto-create from the
// TBW102 template) and heartbeat (%RETRY%<group>).

import (
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Names and limits of topics and groups.
const (
	// TemplateTopic is the auto-create template producers name in
	// defaultTopic.
	TemplateTopic = "TBW102"
	// RetryGroupTopicPrefix + group is a consumer group's retry topic.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix + group is a consumer group's dead-letter topic.
	DLQGroupTopicPrefix = "%DLQ%"
	// maxQueueNums bounds the queue counts of a topic.
	maxQueueNums = 1024
	// maxGroupLen is RocketMQ's limit on group names.
	maxGroupLen = 255
)

// validName reports whether name is 1..maxLen characters of
// [%|a-zA-Z0-9_-], RocketMQ's rule for topic and group names.
func validName(name string, maxLen int) bool {
	return len(name) > 0 && len(name) <= maxLen && message.ValidTopic(name)
}

func checkTopicName(name string) *Error {
	switch {
	case name == "":
		return errorf(KindMessageIllegal, nil, "the topic name is empty; name the topic")
	case len(name) > message.MaxTopicLen:
		return errorf(KindMessageIllegal, nil, "topic name is %d characters, longer than the limit of %d; use a shorter name", len(name), message.MaxTopicLen)
	case !message.ValidTopic(name):
		return errorf(KindMessageIllegal, nil, "topic name %q contains illegal characters; a topic name must match ^[%%|a-zA-Z0-9_-]+$", name)
	}
	return nil
}

// CreateTopic creates or updates a topic and returns once the change is
// durable; OnTopicsChanged hooks run when something changed. An empty
// TopicFilterType becomes "SINGLE_TAG". Errors: KindMessageIllegal for a
// bad name, queue count (1..1024) or perm (0..7); KindSystemError when the
// metadata write fails.
func (b *Broker) CreateTopic(tc TopicConfig) error {
	if err := b.refuseOnSlave(KindSystemError, "topic changes"); err != nil {
		return err
	}
	t := tc.meta()
	if err := checkTopicName(t.Name); err != nil {
		return err
	}
	if t.ReadQueueNums < 1 || t.ReadQueueNums > maxQueueNums || t.WriteQueueNums < 1 || t.WriteQueueNums > maxQueueNums {
		return errorf(KindMessageIllegal, nil, "topic %q: read and write queue counts (%d, %d) must lie in 1..%d", t.Name, t.ReadQueueNums, t.WriteQueueNums, maxQueueNums)
	}
	if t.Perm < 0 || t.Perm > meta.PermRead|meta.PermWrite|meta.PermInherit {
		return errorf(KindMessageIllegal, nil, "topic %q: perm %d must lie in 0..7 (4 read + 2 write + 1 inherit)", t.Name, t.Perm)
	}
	if t.TopicFilterType == "" {
		t.TopicFilterType = "SINGLE_TAG"
	}
	// The meta store compares and stores in one step and shares its file
	// writes among concurrent creates: no lock here, so a create costs an
	// append to the change log shared with the others in flight.
	changed, err := b.meta.UpdateTopic(t)
	if err != nil {
		return errorf(KindSystemError, err, "storing topic %q failed; retry", t.Name)
	}
	if changed {
		b.log.Info("topic saved", "topic", t.Name, "read_queues", t.ReadQueueNums, "write_queues", t.WriteQueueNums, "perm", t.Perm)
		b.topicsChanged(t.Name)
	}
	return nil
}

// DeleteTopic removes a topic's config, its consume queues and every
// group's offsets on it (its records stay in the commit log until
// retention). Deleting a missing topic is not an error. Pulls parked on the
// topic are answered at their timeout.
func (b *Broker) DeleteTopic(name string) error {
	if err := b.refuseOnSlave(KindSystemError, "topic changes"); err != nil {
		return err
	}
	existed, err := b.meta.RemoveTopic(name)
	if err != nil {
		return errorf(KindSystemError, err, "deleting topic %q failed; retry", name)
	}
	if err := b.st.DeleteTopic(name); err != nil {
		return errorf(KindSystemError, err, "deleting the queues of topic %q failed; retry", name)
	}
	b.deleteTopicOffsets(name)
	b.stats.topics.Delete(name) // its traffic counters go with it
	b.stats.forget(name, "")
	if err := b.resetPops(name); err != nil {
		return errorf(KindSystemError, err, "forgetting the simple consumers' positions on topic %q failed; retry", name)
	}
	if existed {
		b.log.Info("topic deleted", "topic", name)
		b.topicsChanged(name)
	}
	return nil
}

// Topic returns a topic's config. Its Attributes map must not be modified.
func (b *Broker) Topic(name string) (TopicConfig, bool) {
	t, ok := b.meta.Topic(name)
	return topicFromMeta(t), ok
}

// Topics returns every topic config sorted by name.
func (b *Broker) Topics() []TopicConfig { return topicsFromMeta(b.meta.Topics()) }

// Groups returns every subscription group config sorted by name.
func (b *Broker) Groups() []GroupConfig { return groupsFromMeta(b.meta.Groups()) }

// Group returns a subscription group's config.
func (b *Broker) Group(name string) (GroupConfig, bool) {
	g, ok := b.meta.Group(name)
	if !ok {
		return GroupConfig{}, false
	}
	return groupFromMeta(g), true
}

// ensureTopic returns the topic named t.Name, creating it as t when it is
// missing (and running the topic hooks).
func (b *Broker) ensureTopic(t meta.Topic) (meta.Topic, error) {
	if cur, ok := b.meta.Topic(t.Name); ok {
		return cur, nil
	}
	// Of concurrent callers exactly one creates (and runs the hooks).
	cur, created, err := b.meta.EnsureTopic(t)
	if err != nil {
		return meta.Topic{}, errorf(KindSystemError, err, "creating topic %q failed; retry", t.Name)
	}
	if created {
		b.log.Info("topic created", "topic", t.Name, "queues", t.WriteQueueNums, "perm", t.Perm)
		b.topicsChanged(t.Name)
	}
	return cur, nil
}

// ensureGroup creates the subscription group config with RocketMQ's
// defaults when it is missing.
func (b *Broker) ensureGroup(name string) error {
	if _, ok := b.meta.Group(name); ok {
		return nil
	}
	b.topicMu.Lock()
	defer b.topicMu.Unlock()
	if _, ok := b.meta.Group(name); ok {
		return nil
	}
	if err := b.meta.PutGroup(DefaultGroup(name).meta()); err != nil {
		return errorf(KindSystemError, err, "creating subscription group %q failed; retry", name)
	}
	b.stateGroupChanged(name)
	return nil
}

// DefaultGroup returns the subscription group config RocketMQ creates for
// a group on its first heartbeat.
func DefaultGroup(name string) GroupConfig {
	return GroupConfig{
		Name:                           name,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryMaxTimes:                  16,
		RetryQueueNums:                 1,
		BrokerID:                       0,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIDsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
	}
}
