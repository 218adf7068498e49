package broker

import (
	"cmp"
	"slices"
)

// QueueLag is a consumer group's position on one queue.
type QueueLag struct {
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
			top := b.st.MaxOffset(topic, q)
			out = append(out, QueueLag{Topic: topic, QueueID: q, Committed: off, MaxOffset: top, Lag: max(0, top-off)})
		}
	}
	slices.SortFunc(out, func(a, b QueueLag) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
	})
	return out
}
