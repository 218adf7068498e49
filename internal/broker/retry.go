package broker

// Retry and dead-letter queues: CONSUMER_SEND_MSG_BACK (36). A clustering
// consumer that fails a message sends it back; the broker stores a copy in
// the group's retry topic %RETRY%<group> (one queue), due after the delay
// of level 3 + the attempts so far (10 s, 30 s, 1 m, 2 m ... 2 h with the
// default levels) unless the consumer asks for a level, with the attempt
// count in the record's reconsume-times field, the original topic in
// RETRY_TOPIC and the original id in ORIGIN_MESSAGE_ID. The consumers of
// the group subscribe to their retry topic (the clients do it themselves)
// and see the message again. After the maximum attempts (the consumer's
// maxReconsumeTimes, else its group config's retryMaxTimes, else
// DefaultMaxReconsumeTimes) — or at once when the
// consumer asks with a negative level — the copy goes to %DLQ%<group>
// instead, due at once; it can be read like any topic and resent to its
// original topic with ResendDLQ. Broadcasting consumers retry locally and
// never send back (as in RocketMQ).

import (
	"context"
	"strconv"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// SendBackRequest is a decoded CONSUMER_SEND_MSG_BACK.
type SendBackRequest struct {
	// Offset is the commit-log offset of the failed message (its offset id).
	Offset int64
	Group  string
	// DelayLevel: 0 lets the broker pick 3 + attempts; > 0 is honoured; < 0
	// sends the message to the dead-letter queue at once.
	DelayLevel        int32
	OriginMsgID       string
	OriginTopic       string
	MaxReconsumeTimes int32 // ≤ 0: the group's RetryMaxTimes, else DefaultMaxReconsumeTimes
}

// SendBackResult says where the failed message went.
type SendBackResult struct {
	DLQ        bool   // true: to the dead-letter queue
	Topic      string // %RETRY%<group> or %DLQ%<group>
	Attempts   int32  // the reconsume times the copy carries
	DelayLevel int32  // level of the retry delay; 0 for the DLQ
}

// SendBack stores a failed message for redelivery or in the DLQ.
func (b *Broker) SendBack(ctx context.Context, req *SendBackRequest) (SendBackResult, error) {
	if b.closed.Load() {
		return SendBackResult{}, b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "send-backs of consumed messages"); err != nil {
		return SendBackResult{}, err
	}
	if err := b.refuseOnLease(KindServiceUnavailable, "send-backs of consumed messages"); err != nil {
		return SendBackResult{}, err
	}
	if !validName(req.Group, 255) {
		return SendBackResult{}, errorf(KindMessageIllegal, nil, "consumer group %q is not a valid name", req.Group)
	}
	if g, ok := b.meta.Group(req.Group); ok && !g.ConsumeEnable {
		return SendBackResult{}, errorf(KindNoPermission, nil, "consumer group %q may not consume (consumeEnable is false)", req.Group)
	}
	rec, err := b.st.ReadMessage(req.Offset)
	if err != nil {
		return SendBackResult{}, errorf(KindSystemError, err, "no message at commit-log offset %d to send back; it may have expired", req.Offset)
	}
	if err := refuseStateRecord(rec, req.Offset); err != nil {
		return SendBackResult{}, err
	}
	m, _, err := message.Decode(rec)
	if err != nil {
		return SendBackResult{}, errorf(KindSystemError, err, "the message at commit-log offset %d does not decode", req.Offset)
	}
	// As RocketMQ: the client's own maxReconsumeTimes wins; without one
	// the group config's RetryMaxTimes (so `group update --retry-max`
	// reaches running members at their next send-back).
	maxTimes := req.MaxReconsumeTimes
	if maxTimes <= 0 {
		maxTimes = b.groupRetryMaxTimes(req.Group)
	}
	origTopic := m.Property(message.PropertyRetryTopic)
	if origTopic == "" {
		origTopic = m.Topic
	}
	attempts := m.ReconsumeTimes
	res := SendBackResult{Attempts: attempts + 1}
	if req.DelayLevel < 0 || attempts >= maxTimes {
		res.DLQ, res.Topic = true, DLQGroupTopicPrefix+req.Group
	} else {
		res.Topic = RetryGroupTopicPrefix + req.Group
		res.DelayLevel = req.DelayLevel
		if res.DelayLevel == 0 {
			res.DelayLevel = 3 + attempts
		}
	}
	if _, err := b.ensureTopic(meta.Topic{Name: res.Topic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: meta.PermRead | meta.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		return SendBackResult{}, err
	}
	out := b.retryCopy(m, res.Topic, attempts+1, origTopic, req.OriginMsgID)
	var delay message.Delay
	if res.DelayLevel > 0 {
		out.SetProperty(message.PropertyDelayLevel, strconv.Itoa(int(res.DelayLevel)))
		delay.Level = res.DelayLevel
	}
	if err := b.deferIfDelayed(out, delay); err != nil {
		return SendBackResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return SendBackResult{}, errorf(KindServiceUnavailable, err, "send-back was cancelled before the message was stored")
	}
	if _, err := b.sendResult([]*message.Message{out}, 0, b.st.Put(out)); err != nil {
		return SendBackResult{}, err
	}
	if err := b.awaitReplicated([]*message.Message{out}, "the retry copy"); err != nil {
		return SendBackResult{}, err
	}
	if !b.leaseValid() {
		// As a failed replication wait: the consumer sends the retry
		// itself, a duplicate rather than a loss.
		return SendBackResult{}, errorf(KindSystemError, ErrLeaseExpired, "the retry copy was stored on broker %s but its master lease expired before it was acknowledged", b.cfg.BrokerName)
	}
	if res.DLQ {
		b.log.Info("message moved to the dead-letter queue", "group", req.Group, "topic", origTopic,
			"offset", req.Offset, "attempts", res.Attempts, "dlq", res.Topic)
	}
	return res, nil
}

// retryCopy returns the copy of m to store in a %RETRY% or %DLQ% topic:
// reconsume times set, timer properties dropped, the original topic in
// RETRY_TOPIC and the original message id in ORIGIN_MESSAGE_ID (kept if m
// has one, else originID, else m's UNIQ_KEY). SendBack and the pop
// consumers' dead-letter moves share it, so ResendDLQ works on both.
func (b *Broker) retryCopy(m *message.Message, topic string, reconsumeTimes int32, origTopic, originID string) *message.Message {
	out := &message.Message{
		Topic:          topic,
		Flag:           m.Flag,
		SysFlag:        m.SysFlag,
		Body:           m.Body,
		BodyCRC:        m.BodyCRC,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		ReconsumeTimes: reconsumeTimes,
		Properties:     m.Properties,
	}
	for _, k := range timerProps {
		out.RemoveProperty(k)
	}
	out.SetProperty(message.PropertyRetryTopic, origTopic)
	if out.Property(message.PropertyOriginMessageID) == "" {
		id := originID
		if id == "" {
			id = m.Property(message.PropertyUniqKey)
		}
		if id != "" {
			out.SetProperty(message.PropertyOriginMessageID, id)
		}
	}
	out.SetProperty(message.PropertyCluster, b.cfg.ClusterName)
	return out
}

// ResendDLQ stores again, in its original topic, the dead-letter message of
// group at commit-log offset off (its offset id), as a fresh message with
// zero attempts, and returns the new message's send result.
func (b *Broker) ResendDLQ(ctx context.Context, group string, off int64) (SendResult, error) {
	if err := b.refuseOnSlave(KindServiceUnavailable, "dead-letter resends"); err != nil {
		return SendResult{}, err
	}
	if err := b.refuseOnLease(KindServiceUnavailable, "dead-letter resends"); err != nil {
		return SendResult{}, err
	}
	rec, err := b.st.ReadMessage(off)
	if err != nil {
		return SendResult{}, errorf(KindSystemError, err, "no message at commit-log offset %d", off)
	}
	m, _, err := message.Decode(rec)
	if err != nil {
		return SendResult{}, errorf(KindSystemError, err, "the message at commit-log offset %d does not decode", off)
	}
	if m.Topic != DLQGroupTopicPrefix+group {
		return SendResult{}, errorf(KindMessageIllegal, nil, "the message at offset %d is in topic %q, not in the dead-letter queue of group %q", off, m.Topic, group)
	}
	topic := m.Property(message.PropertyRetryTopic)
	t, ok := b.meta.Topic(topic)
	if topic == "" || !ok {
		return SendResult{}, errorf(KindTopicNotExist, nil, "the original topic %q of the dead-letter message does not exist (any more); create it first", topic)
	}
	out := &message.Message{
		Topic:         topic,
		QueueID:       int32(b.sendSeq.Add(1) % uint32(max(t.WriteQueueNums, 1))),
		Flag:          m.Flag,
		SysFlag:       m.SysFlag,
		Body:          m.Body,
		BodyCRC:       m.BodyCRC,
		BornTimestamp: m.BornTimestamp,
		BornHost:      m.BornHost,
		Properties:    m.Properties,
	}
	out.RemoveProperty(message.PropertyRetryTopic)
	if err := ctx.Err(); err != nil {
		return SendResult{}, errorf(KindServiceUnavailable, err, "resend was cancelled before the message was stored")
	}
	res, err := b.sendResult([]*message.Message{out}, out.QueueID, b.st.Put(out))
	if err != nil {
		return res, err
	}
	return b.leaseAnswer(res), nil
}
