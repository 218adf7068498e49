package broker

// Operator views of producers, committed offsets and consume-queue
// entries, behind mqadmin's producerConnection, producer, queryCq and a
// slave's offset sync (the remoting front's adminmore.go).

import (
	"cmp"
	"slices"

	"github.com/petrelmq/petrel/internal/message"
)

// Producer is one connection whose heartbeats name a producer group.
type Producer struct {
	Group    string
	Conn     uint64
	ClientID string
	// LastHeartbeat is when a heartbeat last named the group on Conn
	// (ms since the epoch).
	LastHeartbeat int64
}

// Producers returns the live producers of group, or of every group when
// group is empty, sorted by group and connection. The caller owns the
// slice.
func (b *Broker) Producers(group string) []Producer {
	c := &b.clients
	c.mu.Lock()
	var out []Producer
	for g, set := range c.producers {
		if group != "" && g != group {
			continue
		}
		for conn := range set {
			cs := c.conns[conn]
			if cs == nil {
				continue
			}
			p := Producer{Group: g, Conn: conn, ClientID: cs.clientID}
			if t, ok := cs.producers[g]; ok {
				p.LastHeartbeat = t.UnixMilli()
			}
			out = append(out, p)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(x, y Producer) int {
		return cmp.Or(cmp.Compare(x.Group, y.Group), cmp.Compare(x.Conn, y.Conn))
	})
	return out
}

// CommittedOffsets returns every committed consumer offset, sorted by
// group, topic and queue. The caller owns the slice.
func (b *Broker) CommittedOffsets() []OffsetEntry {
	all := b.meta.AllOffsets()
	out := make([]OffsetEntry, len(all))
	for i, o := range all {
		out[i] = OffsetEntry{Group: o.Group, Topic: o.Topic, QueueID: o.QueueID, Offset: o.Offset}
	}
	slices.SortFunc(out, compareOffsetEntry)
	return out
}

// QueueEntry is one consume-queue entry: where its record is in the
// commit log, the record's size and its tag hash.
type QueueEntry struct {
	QueueOffset    int64
	PhysicalOffset int64
	Size           int32
	TagHash        int64
}

// MaxQueueEntries bounds one QueueEntries call.
const MaxQueueEntries = 1000

// QueueEntries returns up to count (at most MaxQueueEntries) entries of
// one queue from offset index on, with the queue's min and max offset.
// An index outside the queue gives no entries. Errors:
// KindTopicNotExist for an unknown topic or a queue id it does not have;
// KindSystemError when the store fails.
func (b *Broker) QueueEntries(topic string, queueID int32, index int64, count int) (minOffset, maxOffset int64, entries []QueueEntry, err error) {
	t, ok := b.meta.Topic(topic)
	if !ok || queueID < 0 || queueID >= max(t.ReadQueueNums, t.WriteQueueNums) {
		return 0, 0, nil, errorf(KindTopicNotExist, nil, "queue %d of topic %q does not exist on broker %s", queueID, topic, b.cfg.BrokerName)
	}
	minOffset, maxOffset = b.st.MinOffset(topic, queueID), b.st.MaxOffset(topic, queueID)
	count = min(count, MaxQueueEntries)
	if count <= 0 || index < minOffset || index >= maxOffset {
		return minOffset, maxOffset, nil, nil
	}
	res, err := b.st.GetMessages(topic, queueID, index, count, 64<<20, nil)
	if err != nil {
		return 0, 0, nil, errorf(KindSystemError, err, "reading queue %d of topic %q failed", queueID, topic)
	}
	defer res.Release()
	for rest := res.Body; len(rest) > 0; {
		n, err := message.Check(rest)
		if err != nil || n <= 0 {
			break
		}
		r := message.Record(rest[:n])
		tags, _ := r.Property(message.PropertyTags)
		entries = append(entries, QueueEntry{QueueOffset: r.QueueOffset(), PhysicalOffset: r.PhysicalOffset(),
			Size: r.TotalSize(), TagHash: message.TagHash(tags)})
		rest = rest[n:]
	}
	return minOffset, maxOffset, entries, nil
}
