package broker

// QueueTimeSpan is a consumer group's position on one queue in time
// (RocketMQ's QUERY_CONSUME_TIME_SPAN): when the queue's first and last
// messages were stored, when the last one the group consumed was, and
// how far behind (ms) the group's next message is; times are ms since
// the epoch, 0 when there is no such message.
type QueueTimeSpan struct {
	QueueID                                      int32
	MinTimeStamp, MaxTimeStamp, ConsumeTimeStamp int64
	DelayTime                                    int64
}

// ConsumeTimeSpan returns the group's time span on each write queue of
// topic, as RocketMQ's queryConsumeTimeSpan. Errors: KindTopicNotExist.
func (b *Broker) ConsumeTimeSpan(group, topic string) ([]QueueTimeSpan, error) {
	t, ok := b.meta.Topic(topic)
	if !ok {
		return nil, errorf(KindTopicNotExist, nil, "topic[%s] not exist", topic)
	}
	now := b.now().UnixMilli()
	out := make([]QueueTimeSpan, 0, t.WriteQueueNums)
	for q := range t.WriteQueueNums {
		lo, hi := b.st.MinOffset(topic, q), b.st.MaxOffset(topic, q)
		s := QueueTimeSpan{QueueID: q, MinTimeStamp: b.storeTimeAt(topic, q, lo), MaxTimeStamp: b.storeTimeAt(topic, q, hi-1)}
		off, _ := b.QueryConsumerOffset(group, topic, q)
		s.ConsumeTimeStamp = s.MinTimeStamp
		if off > 0 {
			s.ConsumeTimeStamp = b.storeTimeAt(topic, q, off-1)
		}
		if off < hi {
			if next := b.storeTimeAt(topic, q, max(off, lo)); next > 0 {
				s.DelayTime = now - next
			}
		}
		out = append(out, s)
	}
	return out, nil
}
