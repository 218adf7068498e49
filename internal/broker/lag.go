package broker

import (
	"cmp"
	"slices"
)

// QueueLag is a consumer group's position on one queue.
type QueueLag struct {
	Group   string
	Topic   string
	QueueID int32
	// Committed is the group's committed offset (the next to consume);
	// MaxOffset the offset the queue's next message will get.
	Committed, MaxOffset int64
	// Lag is MaxOffset − Committed, never below 0.
	Lag int64
}

// ConsumerLag returns the group's lag on every queue it has committed an
// offset for, sorted by topic and queue. It costs one map walk and one
// max-offset lookup a queue.
func (b *Broker) ConsumerLag(group string) []QueueLag {
	var out []QueueLag
	for topic, queues := range b.meta.GroupOffsets(group) {
		for q, off := range queues {
			out = append(out, b.queueLag(group, topic, q, off))
		}
	}
	sortLags(out)
	return out
}

// AllConsumerLag returns the lag of every group on every queue it has
// committed an offset for, sorted by group, topic and queue, from one pass
// over the offsets (for the metrics scrape).
func (b *Broker) AllConsumerLag() []QueueLag {
	offs := b.meta.AllOffsets()
	out := make([]QueueLag, 0, len(offs))
	for _, o := range offs {
		if reservedGroup(o.Group) {
			continue // the state stream's bookkeeping, state.go
		}
		out = append(out, b.queueLag(o.Group, o.Topic, o.QueueID, o.Offset))
	}
	sortLags(out)
	return out
}

func (b *Broker) queueLag(group, topic string, q int32, off int64) QueueLag {
	top := b.st.MaxOffset(topic, q)
	return QueueLag{Group: group, Topic: topic, QueueID: q, Committed: off, MaxOffset: top, Lag: max(0, top-off)}
}

func sortLags(ls []QueueLag) {
	slices.SortFunc(ls, func(a, b QueueLag) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
	})
}
