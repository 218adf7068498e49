package broker

// Operator views and actions behind the admin requests of the CLI:
// members of a consumer group (GET_CONSUMER_CONNECTION_LIST 203), per-queue
// offsets of a topic (GET_TOPIC_STATS_INFO 202), a group's position per
// queue (GET_CONSUME_STATS 208), resetting a group's offsets by time
// (INVOKE_BROKER_TO_RESET_OFFSET 222) and disk use (GET_BROKER_RUNTIME_INFO
// 28). They read state the broker already keeps; only ResetOffset writes.

import (
	"cmp"
	"slices"

	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Member is one member connection of a consumer group and what its last
// heartbeat registered.
type Member struct {
	Conn     uint64
	ClientID string
	ConsumerData
}

// ConsumerMembers returns the live members of a consumer group in
// connection order; nil when the group has none. The caller owns the slice
// but must not modify the Subscriptions it shares with the broker.
func (b *Broker) ConsumerMembers(group string) []Member {
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return nil
	}
	out := make([]Member, 0, len(g.members))
	for _, conn := range g.conns(nil) {
		m := g.members[conn]
		out = append(out, Member{Conn: conn, ClientID: m.clientID, ConsumerData: m.data})
	}
	return out
}

// QueueStat is the state of one queue of a topic.
type QueueStat struct {
	QueueID int32
	// MinOffset is the first readable offset, MaxOffset the offset the
	// next message will get.
	MinOffset, MaxOffset int64
	// LastStoreTime is when the queue's last message was stored (ms since
	// the epoch); 0 for an empty queue.
	LastStoreTime int64
}

// TopicStats returns every queue of a topic (the larger of its read and
// write queue counts), by queue id. Errors: KindTopicNotExist for an
// unknown topic.
func (b *Broker) TopicStats(topic string) ([]QueueStat, error) {
	t, ok := b.meta.Topic(topic)
	if !ok {
		return nil, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s", topic, b.cfg.BrokerName)
	}
	n := max(t.ReadQueueNums, t.WriteQueueNums)
	out := make([]QueueStat, 0, n)
	for q := range n {
		lo, hi := b.st.MinOffset(topic, q), b.st.MaxOffset(topic, q)
		out = append(out, QueueStat{QueueID: q, MinOffset: lo, MaxOffset: hi, LastStoreTime: b.storeTimeAt(topic, q, hi-1)})
	}
	return out, nil
}

// storeTimeAt returns when the message at a queue offset was stored, or 0
// when there is none (or it cannot be read).
func (b *Broker) storeTimeAt(topic string, queueID int32, offset int64) int64 {
	if offset < 0 || offset < b.st.MinOffset(topic, queueID) {
		return 0
	}
	res, err := b.st.GetMessages(topic, queueID, offset, 1, 1, nil)
	if err != nil {
		return 0
	}
	defer res.Release()
	if res.Count == 0 || len(res.Body) < message.MinRecordLen {
		return 0
	}
	return message.Record(res.Body).StoreTimestamp()
}

// ConsumeStat is a consumer group's position on one queue.
type ConsumeStat struct {
	Topic   string
	QueueID int32
	// BrokerOffset is the queue's max offset; ConsumerOffset the group's
	// committed offset (0 when it has none).
	BrokerOffset, ConsumerOffset int64
	// LastTimestamp is when the last consumed message (the one before
	// ConsumerOffset) was stored; 0 when none was consumed.
	LastTimestamp int64
	// PullOffset is how far the group's reads reached: for a pop
	// (simple-consumer) group the next offset never received, else
	// ConsumerOffset. InFlight is, for a pop group, the messages received
	// and neither acknowledged nor past their invisible time.
	PullOffset, InFlight int64
}

// ConsumeStats returns the group's position on every queue of topic, or,
// when topic is empty, of every topic it has committed offsets on or its
// live members subscribe to; sorted by topic and queue. Topics that no
// longer exist are left out. Errors: KindGroupNotExist when the broker
// knows nothing of the group; KindTopicNotExist when topic is named and
// unknown.
func (b *Broker) ConsumeStats(group, topic string) ([]ConsumeStat, error) {
	if !b.GroupKnown(group) {
		return nil, b.errNoGroup(group)
	}
	topics := map[string]bool{}
	if topic != "" {
		if _, ok := b.meta.Topic(topic); !ok {
			return nil, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s", topic, b.cfg.BrokerName)
		}
		topics[topic] = true
	} else {
		for t := range b.meta.GroupOffsets(group) {
			topics[t] = true
		}
		for _, m := range b.ConsumerMembers(group) {
			for _, s := range m.Subscriptions {
				topics[s.Topic] = true
			}
		}
	}
	offsets := b.meta.GroupOffsets(group)
	var out []ConsumeStat
	for name := range topics {
		t, ok := b.meta.Topic(name)
		if !ok {
			continue
		}
		for q := range t.ReadQueueNums {
			off := offsets[name][q]
			cs := ConsumeStat{Topic: name, QueueID: q, BrokerOffset: b.st.MaxOffset(name, q),
				ConsumerOffset: off, LastTimestamp: b.storeTimeAt(name, q, off-1), PullOffset: off}
			if n, cursor, ok := b.pops.st.QueueInFlight(pop.Key{Group: group, Topic: name, QueueID: q}, b.now()); ok {
				cs.InFlight, cs.PullOffset = int64(n), max(cursor, off)
			}
			out = append(out, cs)
		}
	}
	slices.SortFunc(out, func(x, y ConsumeStat) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.QueueID, y.QueueID))
	})
	return out, nil
}

// GroupKnown reports whether the broker has a subscription group config,
// committed offsets or live members for group.
func (b *Broker) GroupKnown(group string) bool {
	if _, ok := b.meta.Group(group); ok {
		return true
	}
	if len(b.meta.GroupOffsets(group)) > 0 {
		return true
	}
	return len(b.ConsumerConns(group)) > 0
}

func (b *Broker) errNoGroup(group string) *Error {
	return errorf(KindGroupNotExist, nil, "consumer group %q is unknown to broker %s: it has never consumed here; check the name", group, b.cfg.BrokerName)
}

// ResetOffset moves the group's committed offset on every read queue of
// topic to the first message stored at or after timestampMS (the max
// offset when there is none), or to the max offset when timestampMS is
// negative, and returns the new offsets by queue id. The group's pop
// position (simple consumers) moves with it and what it has in flight
// there is forgotten. Running 4.x members are not told: the front sends
// them RESET_CONSUMER_CLIENT_OFFSET, since a member keeps its own position
// and would otherwise commit it again. Errors: KindTopicNotExist,
// KindGroupNotExist, KindSystemError (the pop state could not be written).
func (b *Broker) ResetOffset(group, topic string, timestampMS int64) (map[int32]int64, error) {
	if err := b.refuseOnSlave(KindSystemError, "offset resets"); err != nil {
		return nil, err
	}
	t, ok := b.meta.Topic(topic)
	if !ok {
		return nil, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s", topic, b.cfg.BrokerName)
	}
	if !b.GroupKnown(group) {
		return nil, b.errNoGroup(group)
	}
	out := make(map[int32]int64, t.ReadQueueNums)
	for q := range t.ReadQueueNums {
		off := b.st.MaxOffset(topic, q)
		if timestampMS >= 0 {
			off = b.SearchOffset(topic, q, timestampMS)
		}
		// A pop (5.x simple-consumer) group's position moves too, or its
		// next receive would put the old offset back.
		if err := b.resetPopQueue(group, topic, q, off); err != nil {
			return nil, err
		}
		out[q] = off
	}
	b.wakePops(topic)
	b.log.Info("consumer offsets reset", "group", group, "topic", topic, "timestamp", timestampMS, "queues", len(out))
	return out, nil
}

// DiskUsage reports the size, use and free space of the device holding the
// broker's data directory; its UsedFraction is the figure retention acts on.
func (b *Broker) DiskUsage() (vfs.Usage, error) {
	cfg := b.st.Config()
	u, err := cfg.FS.Usage(cfg.Dir)
	if err != nil {
		return vfs.Usage{}, errorf(KindSystemError, err, "reading the disk usage of %s failed", cfg.Dir)
	}
	return u, nil
}

// GroupsConsuming returns, sorted, the consumer groups that consume topic
// on this broker: those with a live member subscribed to it and those with
// a committed offset on it (RocketMQ's QUERY_TOPIC_CONSUME_BY_WHO).
func (b *Broker) GroupsConsuming(topic string) []string {
	seen := map[string]bool{}
	for _, o := range b.meta.AllOffsets() {
		if o.Topic == topic {
			seen[o.Group] = true
		}
	}
	c := &b.clients
	c.mu.Lock()
	for name, g := range c.groups {
		for _, m := range g.members {
			for _, s := range m.data.Subscriptions {
				if s.Topic == topic {
					seen[name] = true
				}
			}
		}
	}
	c.mu.Unlock()
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// TopicsConsumedBy returns, sorted, the topics group has committed
// offsets on here (RocketMQ's QUERY_TOPICS_BY_CONSUMER).
func (b *Broker) TopicsConsumedBy(group string) []string {
	out := make([]string, 0, 4)
	for t := range b.meta.GroupOffsets(group) {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
