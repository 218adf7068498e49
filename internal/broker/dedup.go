package broker

// Broker-side deduplication (package dedup keeps the window): a producer
// retrying a send (timeout, busy broker) resends the same message with the
// same UNIQ_KEY; within the window (default 10 minutes) such a resend to
// the same topic is answered with the original send result and stores
// nothing. A resend that arrives while the original is still being stored
// waits for it (async sends: goes the goroutine way and waits there).
// Batches, consumers' send-backs and retry/DLQ topics are not deduplicated
// (a send-back reuses the UNIQ_KEY on purpose). After a restart the window
// is rebuilt from the messages the consume queues hold since its horizon.

import (
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/broker/dedup"
	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
)

// dedupKey returns the UNIQ_KEY to deduplicate req, built into msgs, by,
// or "".
func (b *Broker) dedupKey(req *SendRequest, msgs []*message.Message) string {
	if !b.dedup.Enabled() || req.Batch || isGroupTopic(req.Topic) || txn.IsHalfTopic(msgs[0].Topic) {
		return ""
	}
	k, _ := req.Properties.Get(message.PropertyUniqKey)
	return k
}

func isGroupTopic(topic string) bool {
	return strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix)
}

// dupResult is the answer to a resend of what r records.
func (b *Broker) dupResult(r dedup.Result) SendResult {
	return SendResult{Status: SendOK, QueueID: r.QueueID, QueueOffset: r.QueueOffset, RegionID: DefaultRegionID,
		MsgID: message.OffsetID(b.st.Config().StoreHost, r.CommitLogOffset)}
}

// dedupResult is what the window remembers of a stored send.
func dedupResult(topic string, qid int32, m *message.Message) dedup.Result {
	return dedup.Result{Topic: topic, QueueID: qid, QueueOffset: m.QueueOffset,
		CommitLogOffset: m.PhysicalOffset, StoredAt: m.StoreTimestamp}
}

// rebuildDedup refills the window from the consume queues: every message
// stored since the window's horizon, delayed ones under their real topic.
func (b *Broker) rebuildDedup() int {
	if !b.dedup.Enabled() {
		return 0
	}
	horizon := b.dedup.Horizon().UnixMilli()
	topics := []string{TimerTopic}
	for _, t := range b.meta.Topics() {
		if !isGroupTopic(t.Name) {
			topics = append(topics, t.Name)
		}
	}
	return b.dedup.Rebuild(func(yield func(string, dedup.Result) bool) {
		for _, topic := range topics {
			for _, q := range b.st.QueueIDs(topic) {
				if !b.yieldStored(topic, q, horizon, yield) {
					return
				}
			}
		}
	})
}

// yieldStored yields the UNIQ_KEY and result of each message of a queue
// stored at or after since (ms).
func (b *Broker) yieldStored(topic string, q int32, since int64, yield func(string, dedup.Result) bool) bool {
	off, err := b.st.OffsetByTime(topic, q, since)
	if err != nil {
		b.log.Warn("rebuilding the dedup window: cannot find where to start", "topic", topic, "queue", q, "err", err)
		return true
	}
	for off < b.st.MaxOffset(topic, q) {
		res, err := b.st.GetMessages(topic, q, off, 256, 1<<20, nil)
		if err != nil || res.NextOffset <= off {
			if res != nil {
				res.Release()
			}
			return true
		}
		more := true
		res.Records(func(r message.Record) {
			if !more {
				return
			}
			uk, ok := r.Property(message.PropertyUniqKey)
			if !ok || len(uk) == 0 {
				return
			}
			d := dedup.Result{Topic: topic, QueueID: r.QueueID(), QueueOffset: r.QueueOffset(),
				CommitLogOffset: r.PhysicalOffset(), StoredAt: r.StoreTimestamp()}
			if topic == TimerTopic {
				rt, _ := r.Property(message.PropertyRealTopic)
				rq, _ := r.Property(message.PropertyRealQueueID)
				qid, _ := strconv.Atoi(string(rq))
				d.Topic, d.QueueID = string(rt), int32(qid)
			}
			more = yield(string(uk), d)
		})
		off = res.NextOffset
		res.Release()
		if !more {
			return false
		}
	}
	return true
}
