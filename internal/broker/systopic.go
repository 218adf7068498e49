package broker

import (
	"github.com/petrelmq/petrel/internal/broker/txn"
)

// SystemTopics returns the topics the broker stores into itself and that
// are not in the topic table: the timer topic (delays, retries' back-off,
// any-time delivery) and the transaction topics, each with its one queue
// and read-only (clients cannot send to them). TRANS_CHECK_MAX_TIME_TOPIC
// is listed once it holds a message. Admin listings add them to the table,
// as RocketMQ's topic config lists its system topics.
func (b *Broker) SystemTopics() []TopicConfig {
	names := []string{TimerTopic, txn.HalfTopic, txn.OpTopic}
	if b.stateOn() || b.st.MaxOffset(StateTopic, 0) > 0 {
		names = append(names, StateTopic)
	}
	if b.st.MaxOffset(txn.CheckMaxTimeTopic, 0) > 0 {
		names = append(names, txn.CheckMaxTimeTopic)
	}
	out := make([]TopicConfig, len(names))
	for i, n := range names {
		out[i] = TopicConfig{Name: n, ReadQueueNums: 1, WriteQueueNums: 1, Perm: PermRead, TopicFilterType: "SINGLE_TAG"}
	}
	return out
}

// TraceTopic is the topic that message-trace clients (RocketMQ's
// enableMsgTrace; TopicValidator.RMQ_SYS_TRACE_TOPIC) send their trace
// records to. Unlike the topics above it is in the topic table: every
// broker holds it, as Java's broker with traceTopicEnable does, and
// clients send to it.
const TraceTopic = "RMQ_SYS_TRACE_TOPIC"

// ensureSingleQueueTopic creates topic name when it is missing: one
// read/write queue, perm 6, as Java's TopicConfigManager creates its
// system topics at start, so that the name servers route it with the other
// topics. what names it in the error ("reply topic").
func (b *Broker) ensureSingleQueueTopic(name, what string) error {
	if _, ok := b.meta.Topic(name); ok {
		return nil
	}
	t := TopicConfig{Name: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: PermRead | PermWrite, TopicFilterType: "SINGLE_TAG"}
	if err := b.meta.PutTopic(t.meta()); err != nil {
		return errorf(KindSystemError, err, "create the %s %s", what, name)
	}
	return nil
}
