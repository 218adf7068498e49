package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// RemovedUnconsumed counts the messages of a topic that retention removed
// before its reserve time (disk above DiskHighWater) while a group had not
// consumed them: the group's committed offset on the queue was below the
// removed range.
type RemovedUnconsumed struct {
	Topic, Group string
	Messages     uint64
}

// maxLoggedPairs bounds the topic/group pairs one early-deletion line names.
const maxLoggedPairs = 20

type topicGroup struct{ topic, group string }

// lostCounts is the running total of RemovedUnconsumed since Open.
type lostCounts struct {
	mu sync.Mutex
	m  map[topicGroup]uint64
}

func (l *lostCounts) add(pairs []RemovedUnconsumed) {
	if len(pairs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[topicGroup]uint64)
	}
	for _, p := range pairs {
		l.m[topicGroup{p.Topic, p.Group}] += p.Messages
	}
}

// RemovedUnconsumed returns, per topic and group, how many messages early
// deletion (disk above DiskHighWater) has removed unconsumed since the store
// opened, sorted by topic then group. Deletion by age (FileReservedTime) is
// not counted. The caller owns the result.
func (s *Store) RemovedUnconsumed() []RemovedUnconsumed {
	l := &s.lost
	l.mu.Lock()
	out := make([]RemovedUnconsumed, 0, len(l.m))
	for k, n := range l.m {
		out = append(out, RemovedUnconsumed{Topic: k.topic, Group: k.group, Messages: n})
	}
	l.mu.Unlock()
	sortPairs(out)
	return out
}

func sortPairs(ps []RemovedUnconsumed) {
	slices.SortFunc(ps, func(a, b RemovedUnconsumed) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Group, b.Group))
	})
}

type queueKey struct {
	topic string
	qid   int32
}

// minOffsets returns every consume queue's min offset.
func (qs *queueSet) minOffsets() map[queueKey]int64 {
	qs.mu.RLock()
	defer qs.mu.RUnlock()
	out := make(map[queueKey]int64)
	for topic, m := range qs.topics {
		for qid, q := range m {
			out[queueKey{topic, qid}] = q.MinOffset()
		}
	}
	return out
}

// unconsumedSince compares the queues' min offsets with before (taken
// before a removal) and returns, per topic and group, the messages between
// the two that a group's committed offset had not passed, sorted by topic
// then group. Groups with no committed offset on a queue are not counted.
func (s *Store) unconsumedSince(before map[queueKey]int64) []RemovedUnconsumed {
	sums := make(map[topicGroup]uint64)
	for _, o := range s.meta.AllOffsets() {
		oldMin, ok := before[queueKey{o.Topic, o.QueueID}]
		if !ok {
			continue
		}
		q := s.queues.get(o.Topic, o.QueueID)
		if q == nil {
			continue
		}
		if n := q.MinOffset() - max(o.Offset, oldMin); n > 0 {
			sums[topicGroup{o.Topic, o.Group}] += uint64(n)
		}
	}
	out := make([]RemovedUnconsumed, 0, len(sums))
	for k, n := range sums {
		out = append(out, RemovedUnconsumed{Topic: k.topic, Group: k.group, Messages: n})
	}
	sortPairs(out)
	return out
}

// describePairs renders pairs as "topic/group=n ..." (topic and group
// names cannot hold '/', '=' or spaces), largest first, at most
// maxLoggedPairs of them and the number left out, and their total.
func describePairs(pairs []RemovedUnconsumed) (string, uint64) {
	byCount := slices.Clone(pairs)
	slices.SortStableFunc(byCount, func(a, b RemovedUnconsumed) int { return cmp.Compare(b.Messages, a.Messages) })
	var sb strings.Builder
	var total uint64
	for i, p := range byCount {
		total += p.Messages
		if i < maxLoggedPairs {
			if i > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s/%s=%d", p.Topic, p.Group, p.Messages)
		}
	}
	if n := len(byCount) - maxLoggedPairs; n > 0 {
		fmt.Fprintf(&sb, " (and %d more)", n)
	}
	return sb.String(), total
}
