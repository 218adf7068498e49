package broker

// Offsets and lookups: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET
// (15), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP
// (29), QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).

import (
	"errors"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// QueryConsumerOffset returns the group's next offset to consume on a
// queue. With no stored offset it follows Java: when the queue's min
// offset is 0 (nothing was ever removed from it, including an empty or
// unknown queue) it returns (0, true), so that a brand-new group consumes
// from the beginning even with CONSUME_FROM_LAST_OFFSET; otherwise
// (0, false), which the front answers with QUERY_NOT_FOUND (22) and the
// client then resolves by its ConsumeFromWhere.
func (b *Broker) QueryConsumerOffset(group, topic string, queueID int32) (int64, bool) {
	if off, ok := b.meta.Offset(group, topic, queueID); ok {
		return off, true
	}
	if b.st.MinOffset(topic, queueID) <= 0 {
		return 0, true
	}
	return 0, false
}

// UpdateConsumerOffset stores the group's next offset to consume on a
// queue. It changes memory only; the store makes offsets durable every
// OffsetFlushInterval and on close. A negative offset is ignored.
func (b *Broker) UpdateConsumerOffset(group, topic string, queueID int32, offset int64) {
	if group == "" || topic == "" || offset < 0 {
		return
	}
	b.commitOffset(group, topic, queueID, offset)
}

// MaxOffset returns the offset the queue's next message will get (0 for an
// unknown queue).
func (b *Broker) MaxOffset(topic string, queueID int32) int64 { return b.st.MaxOffset(topic, queueID) }

// MinOffset returns the queue's first readable offset (0 for an unknown
// queue).
func (b *Broker) MinOffset(topic string, queueID int32) int64 { return b.st.MinOffset(topic, queueID) }

// SearchOffset returns the offset of the first message of the queue stored
// at or after tsMillis, or the max offset when there is none. If the
// search fails (a read error) it logs and returns the min offset, so the
// consumer re-reads rather than skips.
func (b *Broker) SearchOffset(topic string, queueID int32, tsMillis int64) int64 {
	off, err := b.st.OffsetByTime(topic, queueID, tsMillis)
	if err != nil {
		b.log.Warn("offset search failed; answering the min offset", "topic", topic, "queue_id", queueID, "err", err)
		return b.st.MinOffset(topic, queueID)
	}
	return off
}

// maxQueryResults bounds QueryByKey.
const maxQueryResults = 64 * 1024

// QueryByKey returns up to max records of topic whose KEYS contain key or
// whose UNIQ_KEY is key (case-insensitively), stored between beginMS and
// endMS inclusive, newest first. It returns an *Error of KindQueryNotFound
// when there is none. The caller owns the records.
func (b *Broker) QueryByKey(topic, key string, beginMS, endMS int64, max int) ([]message.Record, error) {
	if max <= 0 {
		max = 32
	}
	max = min(max, maxQueryResults)
	recs, err := b.st.QueryByKey(topic, key, beginMS, endMS, max)
	if err != nil {
		return nil, errorf(KindSystemError, err, "querying topic %q by key failed; retry", topic)
	}
	if len(recs) == 0 {
		return nil, errorf(KindQueryNotFound, nil, "no message of topic %q with key %q was stored in the time range", topic, key)
	}
	return recs, nil
}

// ViewByOffset returns the record at a commit-log offset (the offset in an
// offset message id). Not found is an *Error of KindSystemError, as Java
// answers code 1. The caller owns the record.
func (b *Broker) ViewByOffset(physOffset int64) (message.Record, error) {
	r, err := b.st.ReadMessage(physOffset)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(KindSystemError, err, "no message at commit-log offset %d; it may have been removed by retention", physOffset)
	}
	if err != nil {
		return nil, errorf(KindSystemError, err, "reading the message at commit-log offset %d failed; retry", physOffset)
	}
	if err := refuseStateRecord(r, physOffset); err != nil {
		return nil, err
	}
	return r, nil
}
