package broker

// Offset jumps: a consumer whose offset is below its queue's min offset
// (retention removed the messages in between) continues from the min
// offset, as in RocketMQ: pulls answer PULL_OFFSET_MOVED with the min as
// nextBeginOffset, pops move the group's cursor. Each jump is logged once
// per group, queue and new min offset, however many pulls arrive at the
// old offset before the client moves on.

import (
	"sync"

	"github.com/petrelmq/petrel/internal/store"
)

// maxJumpKeys bounds the jumps remembered for deduplication; past it the
// memory starts again (a jump may then be logged twice).
const maxJumpKeys = 10_000

type jumpKey struct {
	group, topic string
	queueID      int32
}

// offsetJumps remembers the last logged new min offset per group and queue.
type offsetJumps struct {
	mu   sync.Mutex
	last map[jumpKey]int64
}

// noteOffsetJump logs, once per group, queue and min offset, that a
// consumer at offset continues at minOffset.
func (b *Broker) noteOffsetJump(group, topic string, queueID int32, offset, minOffset int64) {
	if offset >= minOffset {
		return
	}
	j := &b.jumps
	k := jumpKey{group, topic, queueID}
	j.mu.Lock()
	if j.last == nil || len(j.last) >= maxJumpKeys {
		j.last = make(map[jumpKey]int64)
	}
	seen := j.last[k] == minOffset
	j.last[k] = minOffset
	j.mu.Unlock()
	if seen {
		return
	}
	b.log.Warn("consumer offset is below the queue's min offset (retention removed the messages in between); it continues from the min offset",
		"group", group, "topic", topic, "queue_id", queueID, "offset", offset, "min_offset", minOffset, "skipped", minOffset-offset)
}

// RemovedUnconsumed returns, per topic and group, the messages retention
// removed early (disk above the high-water mark) before the group consumed
// them, since the store opened (store.Store.RemovedUnconsumed).
func (b *Broker) RemovedUnconsumed() []store.RemovedUnconsumed { return b.st.RemovedUnconsumed() }
