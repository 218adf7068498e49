package broker

// Offsets committed on a slave (UPDATE_CONSUMER_OFFSET, or a pull's
// commit-offset flag, while the master is away). The rule: the master owns
// a group's offsets. A commit on a slave is stored on the slave (queries
// there answer it) and kept in a pending set, which the slave hands to the
// master as soon as the master is reachable (every StateFlushInterval,
// through Config.HandBackOffsets). The master takes a handed-back offset
// only if it is ahead of its own (the consumer read the slave's copy, a
// prefix of the master's log, so the offset never points past what the
// master holds) and answers its resulting offset for each entry; its table
// then flows back to every slave through the state stream. A pending entry
// is dropped only once the master confirmed it and the slave has applied
// the state stream up to the master's answer; until then the stream's
// older values do not lower the slave's copy.

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/petrelmq/petrel/internal/broker/staterec"
)

// pendingOffset is an offset committed on this slave, not yet confirmed.
type pendingOffset struct {
	off       int64
	confirmed int64 // -1 until the master answered; then the state-topic end to apply before dropping it
}

// MaxHandBack bounds the entries of one hand-back (either side).
const MaxHandBack = 10_000

// commitOffset stores a consumer's commit: on a slave of a replicated
// group it also enters the pending set.
func (b *Broker) commitOffset(group, topic string, queueID int32, offset int64) {
	if !b.stateOn() || b.Role() != RoleSlave {
		b.meta.CommitOffset(group, topic, queueID, offset)
		return
	}
	s := &b.state
	s.pmu.Lock()
	b.meta.CommitOffset(group, topic, queueID, offset)
	k := offKey{group, topic, queueID}
	s.pending[k] = pendingOffset{off: offset, confirmed: -1}
	b.meta.CommitOffset(statePendingGroup, pendingTopic(k), queueID, offset)
	s.pmu.Unlock()
}

func pendingTopic(k offKey) string { return k.group + "\n" + k.topic }

// loadPending reads the pending set a slave persisted (startState).
func (b *Broker) loadPending() {
	s := &b.state
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for t, queues := range b.meta.GroupOffsets(statePendingGroup) {
		g, tp, ok := strings.Cut(t, "\n")
		if !ok {
			continue
		}
		for q, off := range queues {
			s.pending[offKey{g, tp, q}] = pendingOffset{off: off, confirmed: -1}
		}
	}
	if len(s.pending) > 0 {
		b.log.Info("offsets committed on this slave and not yet confirmed by the master", "pending", len(s.pending))
	}
}

// unpend drops k from the pending set and its persisted copy; pmu held.
func (b *Broker) unpend(k offKey) {
	s := &b.state
	delete(s.pending, k)
	// The meta store removes per (group, topic): keep the key's other queues.
	b.meta.DeleteOffsets(statePendingGroup, pendingTopic(k))
	for o, p := range s.pending {
		if o.group == k.group && o.topic == k.topic {
			b.meta.CommitOffset(statePendingGroup, pendingTopic(o), o.queue, p.off)
		}
	}
}

// applyMasterOffset applies an offset of the master's stream on a slave:
// a pending entry of this slave is not lowered by it.
func (b *Broker) applyMasterOffset(k offKey, off int64) {
	s := &b.state
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if p, ok := s.pending[k]; ok {
		if off < p.off {
			return
		}
		if p.confirmed < 0 {
			// The master's own table reached it: as good as a confirmation.
			b.unpend(k)
		}
	}
	b.meta.CommitOffset(k.group, k.topic, k.queue, off)
}

func (b *Broker) pendingKeys() []offKey {
	s := &b.state
	s.pmu.Lock()
	defer s.pmu.Unlock()
	out := make([]offKey, 0, len(s.pending))
	for k := range s.pending {
		out = append(out, k)
	}
	return out
}

func (b *Broker) dropPending(match func(offKey) bool) {
	s := &b.state
	s.pmu.Lock()
	for k := range s.pending {
		if match(k) {
			b.unpend(k)
		}
	}
	s.pmu.Unlock()
}

// PendingOffsets returns the offsets committed on this slave that the
// master has not confirmed yet, sorted.
func (b *Broker) PendingOffsets() []OffsetEntry {
	s := &b.state
	s.pmu.Lock()
	out := make([]OffsetEntry, 0, len(s.pending))
	for k, p := range s.pending {
		out = append(out, OffsetEntry{Group: k.group, Topic: k.topic, QueueID: k.queue, Offset: p.off})
	}
	s.pmu.Unlock()
	slices.SortFunc(out, compareOffsetEntry)
	return out
}

// OffsetEntry is one committed offset.
type OffsetEntry struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
}

func compareOffsetEntry(a, b OffsetEntry) int {
	switch {
	case a.Group != b.Group:
		if a.Group < b.Group {
			return -1
		}
		return 1
	case a.Topic != b.Topic:
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.QueueID) - int(b.QueueID)
}

// HandBack is the master's answer to a hand-back: Offsets[i] is its
// offset for entry i after the call, StateEnd the state topic's end once
// those offsets are in the stream.
type HandBack struct {
	Offsets  []int64
	StateEnd int64
}

// TakeHandedBackOffsets is the master's side of the hand-back: it takes
// each offset that is ahead of its own, emits the changed offsets into the
// state stream and returns once they are stored there.
func (b *Broker) TakeHandedBackOffsets(ctx context.Context, offs []OffsetEntry) (HandBack, error) {
	if err := b.refuseOnSlave(KindSystemError, "offsets handed back by a slave"); err != nil {
		return HandBack{}, err
	}
	if len(offs) > MaxHandBack {
		return HandBack{}, errorf(KindMessageIllegal, nil, "a hand-back of %d offsets is over the limit of %d", len(offs), MaxHandBack)
	}
	out := HandBack{Offsets: make([]int64, len(offs))}
	taken := 0
	for i, o := range offs {
		if o.Group == "" || o.Topic == "" || reservedGroup(o.Group) || o.QueueID < 0 || o.Offset < 0 {
			out.Offsets[i] = -1
			continue
		}
		cur, ok := b.meta.Offset(o.Group, o.Topic, o.QueueID)
		if !ok || o.Offset > cur {
			b.meta.CommitOffset(o.Group, o.Topic, o.QueueID, o.Offset)
			cur = o.Offset
			taken++
		}
		out.Offsets[i] = cur
	}
	if taken > 0 {
		b.log.Info("offsets committed on a slave taken over", "taken", taken, "handed_back", len(offs))
	}
	if b.stateOn() {
		b.emitOffsetDiff()
		// An empty record after the diff: stored once the diff is.
		if err := b.emitStateSync(ctx, stateKindBarrier, nil); err != nil {
			return HandBack{}, errorf(KindSystemError, err, "storing the handed-back offsets in the state stream failed; retry")
		}
		out.StateEnd = b.st.MaxOffset(StateTopic, 0)
	}
	return out, nil
}

// stateKindBarrier is a record with no effect (the hand-back's "stored"
// mark); applied as a no-op.
const stateKindBarrier = staterec.KindMark

// handBackPending hands the pending set to the master (slave tick) and
// drops the entries confirmed and applied.
func (b *Broker) handBackPending() {
	s := &b.state
	cursor := b.stateCursor()
	s.pmu.Lock()
	var send []OffsetEntry
	for k, p := range s.pending {
		switch {
		case p.confirmed >= 0 && cursor >= p.confirmed:
			b.unpend(k)
		case p.confirmed < 0 && len(send) < MaxHandBack:
			send = append(send, OffsetEntry{Group: k.group, Topic: k.topic, QueueID: k.queue, Offset: p.off})
		}
	}
	s.pmu.Unlock()
	if len(send) == 0 || b.cfg.HandBackOffsets == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*b.cfg.StateFlushInterval)
	defer cancel()
	ans, err := b.cfg.HandBackOffsets(ctx, send)
	if err == nil && len(ans.Offsets) != len(send) {
		err = errors.New("the master answered a different number of offsets")
	}
	if err != nil {
		b.log.Debug("handing offsets back to the master failed; retrying later", "offsets", len(send), "err", err)
		return
	}
	s.pmu.Lock()
	for i, o := range send {
		k := offKey{o.Group, o.Topic, o.QueueID}
		p, ok := s.pending[k]
		if !ok || p.off != o.Offset || p.confirmed >= 0 {
			continue // committed again meanwhile: hand that back next time
		}
		if m := ans.Offsets[i]; m > p.off {
			b.meta.CommitOffset(k.group, k.topic, k.queue, m) // the master's own was ahead
			p.off = m
		}
		p.confirmed = ans.StateEnd
		s.pending[k] = p
	}
	s.pmu.Unlock()
	b.log.Info("offsets committed on this slave handed back to the master", "offsets", len(send))
}
