package broker

// The state stream (DESIGN.md "State that changes with traffic lives in
// the commit log"). A master of a replicated group writes every change of
// its metadata — topic and group configs, consumer offsets, and the state
// other parts register (pop, timers) — as records (package staterec) of
// the system topic StateTopic, queue 0, in its own commit log. Replication
// ships them to the slaves with the messages; a slave's applier reads the
// topic in log order and applies each record to its own tables. There is
// no second protocol, and what a slave applies is only what its dispatcher
// made readable: at most the commit point.
//
// Master: config changes are emitted once durable locally; committed
// offsets are diffed every StateFlushInterval and the entries changed go
// out as one KindOffsets record set; a snapshot (SnapshotBegin, every
// kind's whole state, SnapshotEnd) is written when the broker starts as
// master and whenever its log grew by more than half a segment since the
// last, so a slave starting from the master's first retained byte finds a
// whole snapshot. One goroutine appends, in order, in messages of at most
// 1 MiB; the queue is bounded and a full queue blocks the emitter.
//
// Slave: a store listener wakes the applier, which reads from its cursor
// (persisted as a reserved offset entry), applies, and moves the cursor;
// at SnapshotBegin every kind is reset, at SnapshotEnd what the snapshot
// did not name is dropped. The applier runs while the role is slave;
// SetRole(master) drains it first. The master ignores its own records.
//
// Offsets committed on a slave (see handback.go) are kept locally and in
// a pending set handed back to the master, which takes an offset only if
// it is ahead of its own.
//
// Only a broker with Config.StateReplication writes or applies the
// stream: a single broker pays nothing for it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// StateTopic holds the state stream's records: one queue, read-only for
// clients.
const StateTopic = "rmq_sys_PETREL_STATE"

// stateCursorGroup is the reserved offset entry (group, StateTopic, 0)
// where a slave keeps the next state-topic offset to apply. It is neither
// emitted nor overwritten by the stream.
const stateCursorGroup = "PETREL_STATE_APPLIER"

// statePendingGroup holds, on a slave, the pending set of offsets
// committed there (handback.go), durable with the offsets: topic
// group+"\n"+topic (no name holds a newline), same queue id and offset.
const statePendingGroup = "PETREL_STATE_PENDING"

// reservedGroup reports whether an offset entry is the broker's own
// bookkeeping of the state stream, never emitted, applied or shown.
func reservedGroup(g string) bool { return g == stateCursorGroup || g == statePendingGroup }

// Bounds of the emitter.
const (
	stateMaxMessage   = 1 << 20 // body of one state message
	stateQueueBytes   = 8 << 20 // queued payload bytes before emitters block
	stateOffsetsChunk = 256 << 10
	stateRetryMin     = 100 * time.Millisecond
	stateRetryMax     = 5 * time.Second
)

// stateKind is a kind's share of the stream. apply runs on a slave for
// each record of the kind, in log order, on the applier goroutine, and must
// be idempotent under replay (a restart re-applies from the persisted
// cursor). snapshot, on the master's writer goroutine, emits the kind's
// whole state as records of the kind. reset, on a slave at SnapshotBegin:
// the kind's state is about to be replaced. end (optional), on a slave at
// SnapshotEnd: the snapshot's records have all been applied.
type stateKind struct {
	apply    func(payload []byte) error
	snapshot func(emit func(payload []byte))
	reset    func() error
	end      func() error
}

// stateItem is one queued record; done, when set, is answered once the
// record is stored (or will not be).
type stateItem struct {
	rec  staterec.Record
	done chan error
}

type offKey struct {
	group, topic string
	queue        int32
}

// streamState is the broker's state-stream machinery.
type streamState struct {
	kinds map[staterec.Kind]stateKind
	order []staterec.Kind // registration order: snapshots follow it

	// emitter (master)
	mu       sync.Mutex
	notFull  *sync.Cond
	q        []stateItem
	qBytes   int
	snapWant bool
	closed   bool
	wake     chan struct{}
	done     chan struct{}
	snapID   atomic.Uint64 // snapshots written; writer-owned writes
	lastSnap int64         // commit-log end of the last snapshot written
	written  atomic.Int64
	failures atomic.Int64 // puts refused (retried) and records too large
	blocked  atomic.Int64 // emitters waiting for room, for tests

	// offsets diff (master): offMu orders a tick's read-and-enqueue with
	// the deletions, so a deletion never lands before a stale set.
	offMu sync.Mutex
	last  map[offKey]int64
	tick  atomic.Pointer[tickHolder]

	// applier (slave)
	amu      sync.Mutex // one apply pass at a time
	awake    chan struct{}
	astop    chan struct{}
	adone    chan struct{}
	applied  atomic.Int64 // records applied, for tests
	snapSeen map[offKey]bool
	topSeen  map[string]bool
	grpSeen  map[string]bool
	inSnap   bool

	// pending offsets committed on this slave (handback.go)
	pmu     sync.Mutex
	pending map[offKey]pendingOffset
}

type tickHolder struct{ t interface{ Stop() bool } }

// stateOn reports whether the broker takes part in the state stream.
func (b *Broker) stateOn() bool { return b.cfg.StateReplication }

// registerStateKind registers a kind's handlers; call it in New, before
// startState.
func (b *Broker) registerStateKind(k staterec.Kind, h stateKind) {
	s := &b.state
	if s.kinds == nil {
		s.kinds = make(map[staterec.Kind]stateKind)
	}
	if _, dup := s.kinds[k]; dup {
		panic(fmt.Sprintf("broker: state kind %v registered twice", k))
	}
	s.kinds[k] = h
	s.order = append(s.order, k)
}

// emitState queues a record for the master's writer and returns at once
// (blocking only while the queue is full). A no-op on a slave or a broker
// without state replication.
func (b *Broker) emitState(k staterec.Kind, payload []byte) {
	if !b.stateOn() || b.Role() != RoleMaster {
		return
	}
	if b.stateTooLarge(k, payload) {
		return
	}
	b.enqueueState(stateItem{rec: staterec.Record{Kind: k, Payload: payload}})
}

// maxStatePayload is the largest payload a state message holds.
const maxStatePayload = stateMaxMessage - 1 - staterec.RecordHeader

// stateTooLarge refuses (logged and counted) a record no state message can
// hold: a caller's bug, which must not stop the writer.
func (b *Broker) stateTooLarge(k staterec.Kind, payload []byte) bool {
	if len(payload) <= maxStatePayload {
		return false
	}
	b.state.failures.Add(1)
	b.log.Error("a state record is larger than a state message; it is not replicated", "kind", k.String(), "bytes", len(payload), "limit", maxStatePayload)
	return true
}

// emitStateSync is emitState that returns once the record is stored (nil
// at once when the broker does not emit).
func (b *Broker) emitStateSync(ctx context.Context, k staterec.Kind, payload []byte) error {
	if !b.stateOn() || b.Role() != RoleMaster {
		return nil
	}
	if b.stateTooLarge(k, payload) {
		return errors.New("broker: the state record is larger than a state message")
	}
	it := stateItem{rec: staterec.Record{Kind: k, Payload: payload}, done: make(chan error, 1)}
	if !b.enqueueState(it) {
		return errors.New("broker: closed before the state record was stored")
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueueState adds it to the queue, waiting while it is full; false once
// the emitter is closed.
func (b *Broker) enqueueState(it stateItem) bool {
	s := &b.state
	n := len(it.rec.Payload) + staterec.RecordHeader
	s.mu.Lock()
	for s.qBytes > 0 && s.qBytes+n > stateQueueBytes && !s.closed {
		s.blocked.Add(1)
		s.notFull.Wait()
		s.blocked.Add(-1)
	}
	if s.closed {
		s.mu.Unlock()
		if it.done != nil {
			it.done <- errors.New("broker: closed")
		}
		return false
	}
	s.q = append(s.q, it)
	s.qBytes += n
	s.mu.Unlock()
	s.kick()
	return true
}

func (s *streamState) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// initState registers the metadata kinds and prepares the machinery; New
// calls it before the other parts register theirs.
func (b *Broker) initState() {
	s := &b.state
	s.wake = make(chan struct{}, 1)
	s.awake = make(chan struct{}, 1)
	s.notFull = sync.NewCond(&s.mu)
	s.last = make(map[offKey]int64)
	s.pending = make(map[offKey]pendingOffset)
	b.registerMetaKinds()
	b.registerAuthKinds()
	b.registerStateKind(stateKindBarrier, stateKind{apply: func([]byte) error { return nil }})
}

// startState starts the writer and the applier (New, after every kind is
// registered).
func (b *Broker) startState() {
	if !b.stateOn() {
		return
	}
	s := &b.state
	s.done = make(chan struct{})
	s.adone = make(chan struct{})
	s.astop = make(chan struct{})
	s.lastSnap = -1
	if b.Role() == RoleMaster {
		b.seedOffsetDiff()
		s.snapWant = true
	} else {
		b.loadPending()
	}
	b.st.AddListener(func(topic string, _ int32, _ int64) {
		if topic == StateTopic {
			select {
			case s.awake <- struct{}{}:
			default:
			}
		}
	})
	go b.runStateWriter()
	go b.runStateApplier()
	b.armStateTick()
	s.kick()
	select {
	case s.awake <- struct{}{}:
	default:
	}
}

// closeState stops the tick, writes what is queued (best effort: the
// store may be closing), and stops the applier.
func (b *Broker) closeState() {
	if !b.stateOn() {
		return
	}
	s := &b.state
	if h := s.tick.Swap(nil); h != nil {
		h.t.Stop()
	}
	s.mu.Lock()
	s.closed = true
	s.notFull.Broadcast()
	s.mu.Unlock()
	s.kick()
	<-s.done
	close(s.astop)
	<-s.adone
}

// armStateTick schedules the next offsets diff (and, on a slave, the
// hand-back of pending offsets).
func (b *Broker) armStateTick() {
	s := &b.state
	h := &tickHolder{}
	h.t = b.clk.AfterFunc(b.cfg.StateFlushInterval, func() {
		if s.tick.Load() != h {
			return
		}
		if b.Role() == RoleMaster {
			b.emitOffsetDiff()
			s.kick() // the writer checks whether a snapshot is due
		} else {
			b.handBackPending()
		}
		if s.tick.CompareAndSwap(h, nil) {
			b.armStateTick()
		}
	})
	if !s.tick.CompareAndSwap(nil, h) {
		h.t.Stop()
		return
	}
	if b.closed.Load() && s.tick.CompareAndSwap(h, nil) {
		h.t.Stop() // Close began between the run and the re-arm
	}
}

// runStateWriter is the one goroutine that appends state records.
func (b *Broker) runStateWriter() {
	s := &b.state
	defer close(s.done)
	for {
		s.mu.Lock()
		items, snap, closed := s.q, s.snapWant && b.Role() == RoleMaster, s.closed
		s.q, s.snapWant = nil, false
		s.mu.Unlock()
		if !closed && (snap || b.snapshotDue()) {
			// First: the queued records are older than its state, and
			// their replay after it is idempotent.
			b.writeSnapshot()
		}
		if len(items) > 0 {
			err := b.storeState(items, closed)
			for _, it := range items {
				if it.done != nil {
					it.done <- err
				}
			}
			s.mu.Lock()
			for _, it := range items {
				s.qBytes -= len(it.rec.Payload) + staterec.RecordHeader
			}
			s.notFull.Broadcast()
			s.mu.Unlock()
		}
		if closed {
			return
		}
		if len(items) > 0 {
			continue
		}
		<-s.wake
	}
}

// snapshotDue: the log grew by more than half a segment since the last
// snapshot.
func (b *Broker) snapshotDue() bool {
	s := &b.state
	if b.Role() != RoleMaster || s.lastSnap < 0 {
		return false
	}
	return b.st.Durable()-s.lastSnap > b.st.Config().SegmentBytes/2
}

// storeState appends the items' records in messages of at most
// stateMaxMessage, a few messages per put, retrying with back-off while the
// store refuses (never dropping), except once the broker is closing: then
// one try.
func (b *Broker) storeState(items []stateItem, closing bool) error {
	msgs := b.stateMessages(items)
	for len(msgs) > 0 {
		n := min(len(msgs), statePutMessages)
		if err := b.putState(msgs[:n], closing); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// statePutMessages bounds the messages of one put (a put's records are
// consecutive in one segment).
const statePutMessages = 4

func (b *Broker) putState(msgs []*message.Message, closing bool) error {
	s := &b.state
	wait := stateRetryMin
	for {
		if b.Role() != RoleMaster {
			// Demoted: its records are the new master's to write now (and a
			// replica's log takes no local append).
			return b.errSlave(KindServiceUnavailable, "state records")
		}
		err := b.st.PutBatch(msgs)
		if err == nil {
			s.written.Store(recordsEnd(msgs))
			return nil
		}
		s.failures.Add(1)
		b.log.Warn("storing state records failed; retrying", "messages", len(msgs), "retry_in", wait, "err", err)
		if closing || b.closed.Load() {
			return err
		}
		ch := make(chan struct{})
		t := b.clk.AfterFunc(wait, func() { close(ch) })
	waiting:
		for {
			select {
			case <-ch:
				break waiting
			case <-s.wake:
				s.mu.Lock()
				closing = s.closed
				s.mu.Unlock()
				if closing {
					t.Stop()
					break waiting
				}
			}
		}
		s.kick() // the wakes taken here are for the loop
		wait = min(2*wait, stateRetryMax)
	}
}

// stateMessages packs items into state-topic messages.
func (b *Broker) stateMessages(items []stateItem) []*message.Message {
	var msgs []*message.Message
	var recs []staterec.Record
	size := 1
	flush := func() {
		if len(recs) == 0 {
			return
		}
		msgs = append(msgs, b.stateMessage(staterec.AppendBatch(make([]byte, 0, size), recs...)))
		recs, size = recs[:0], 1
	}
	for _, it := range items {
		n := staterec.RecordHeader + len(it.rec.Payload)
		if size+n > stateMaxMessage {
			flush()
		}
		recs = append(recs, it.rec)
		size += n
	}
	flush()
	return msgs
}

func (b *Broker) stateMessage(body []byte) *message.Message {
	return &message.Message{Topic: StateTopic, QueueID: 0, Body: body, BornTimestamp: b.now().UnixMilli(),
		BornHost: netip.AddrPortFrom(netip.IPv4Unspecified(), 0)}
}

// writeSnapshot writes a whole snapshot (writer goroutine).
func (b *Broker) writeSnapshot() {
	s := &b.state
	id := s.snapID.Load() + 1
	var epoch uint32
	if b.cfg.ReplicationStatus != nil {
		epoch = b.cfg.ReplicationStatus().Epoch
	}
	mark := staterec.AppendSnapshot(nil, staterec.Snapshot{ID: id, Epoch: epoch})
	items := []stateItem{{rec: staterec.Record{Kind: staterec.KindSnapshotBegin, Payload: mark}}}
	for _, k := range s.order {
		h := s.kinds[k]
		if h.snapshot == nil {
			continue
		}
		h.snapshot(func(p []byte) {
			if !b.stateTooLarge(k, p) {
				items = append(items, stateItem{rec: staterec.Record{Kind: k, Payload: p}})
			}
		})
	}
	items = append(items, stateItem{rec: staterec.Record{Kind: staterec.KindSnapshotEnd, Payload: mark}})
	if err := b.storeState(items, false); err != nil {
		return
	}
	s.snapID.Store(id)
	s.lastSnap = b.st.Durable()
	b.log.Info("state snapshot written", "snapshot", id, "records", len(items), "log_end", s.lastSnap)
}

// --- the metadata kinds -------------------------------------------------

func (b *Broker) registerMetaKinds() {
	s := &b.state
	b.registerStateKind(staterec.KindTopicPut, stateKind{
		apply: func(p []byte) error {
			var t meta.Topic
			if err := json.Unmarshal(p, &t); err != nil {
				return fmt.Errorf("topic config: %w", err)
			}
			if s.inSnap {
				s.topSeen[t.Name] = true
			}
			if _, err := b.meta.UpdateTopic(t); err != nil {
				return err
			}
			b.topicsChanged(t.Name)
			return nil
		},
		snapshot: func(emit func([]byte)) {
			for _, t := range b.meta.Topics() {
				emit(topicPayload(t))
			}
		},
		reset: func() error { s.topSeen = make(map[string]bool); return nil },
		end: func() error {
			for _, t := range b.meta.Topics() {
				if !s.topSeen[t.Name] {
					if err := b.applyTopicDelete(t.Name); err != nil {
						return err
					}
				}
			}
			return nil
		},
	})
	b.registerStateKind(staterec.KindTopicDelete, stateKind{apply: func(p []byte) error {
		name, err := staterec.DecodeName(p)
		if err != nil {
			return err
		}
		return b.applyTopicDelete(name)
	}})
	b.registerStateKind(staterec.KindGroupPut, stateKind{
		apply: func(p []byte) error {
			var g meta.Group
			if err := json.Unmarshal(p, &g); err != nil {
				return fmt.Errorf("group config: %w", err)
			}
			if s.inSnap {
				s.grpSeen[g.Name] = true
			}
			if cur, ok := b.meta.Group(g.Name); ok && sameJSON(cur, g) {
				return nil
			}
			if err := b.meta.PutGroup(g); err != nil {
				return err
			}
			b.groupChanged(g.Name)
			return nil
		},
		snapshot: func(emit func([]byte)) {
			for _, g := range b.meta.Groups() {
				emit(groupPayload(g))
			}
		},
		reset: func() error { s.grpSeen = make(map[string]bool); return nil },
		end: func() error {
			for _, g := range b.meta.Groups() {
				if !s.grpSeen[g.Name] {
					if err := b.meta.DeleteGroup(g.Name); err != nil {
						return err
					}
				}
			}
			return nil
		},
	})
	b.registerStateKind(staterec.KindGroupDelete, stateKind{apply: func(p []byte) error {
		name, err := staterec.DecodeName(p)
		if err != nil {
			return err
		}
		if _, ok := b.meta.Group(name); !ok {
			return nil
		}
		return b.meta.DeleteGroup(name)
	}})
	b.registerStateKind(staterec.KindOffsets, stateKind{
		apply: func(p []byte) error {
			return staterec.DecodeOffsets(p, func(o staterec.Offset) error {
				k := offKey{o.Group, o.Topic, o.QueueID}
				if s.inSnap {
					s.snapSeen[k] = true
				}
				b.applyMasterOffset(k, o.Offset)
				return nil
			})
		},
		snapshot: func(emit func([]byte)) {
			all := b.meta.AllOffsets()
			offs := make([]staterec.Offset, 0, len(all))
			for _, e := range all {
				if !reservedGroup(e.Group) {
					offs = append(offs, staterec.Offset{Group: e.Group, Topic: e.Topic, QueueID: e.QueueID, Offset: e.Offset})
				}
			}
			emitOffsets(offs, emit)
		},
		reset: func() error { s.snapSeen = make(map[offKey]bool); return nil },
		end: func() error {
			// Offsets are removed per (group, topic), as the meta store
			// does: a pair none of whose queues the snapshot named.
			named := make(map[[2]string]bool)
			for k := range s.snapSeen {
				named[[2]string{k.group, k.topic}] = true
			}
			for _, k := range b.pendingKeys() {
				named[[2]string{k.group, k.topic}] = true
			}
			gone := make(map[[2]string]bool)
			for _, e := range b.meta.AllOffsets() {
				if gt := [2]string{e.Group, e.Topic}; !reservedGroup(e.Group) && !named[gt] {
					gone[gt] = true
				}
			}
			for gt := range gone {
				b.meta.DeleteOffsets(gt[0], gt[1])
			}
			return nil
		},
	})
	b.registerStateKind(staterec.KindOffsetsDelete, stateKind{apply: func(p []byte) error {
		g, t, err := staterec.DecodeGroupTopic(p)
		if err != nil {
			return err
		}
		b.meta.DeleteOffsets(g, t)
		b.dropPending(func(k offKey) bool { return k.group == g && (t == "" || k.topic == t) })
		return nil
	}})
	b.registerStateKind(staterec.KindTopicOffsetsDelete, stateKind{apply: func(p []byte) error {
		t, err := staterec.DecodeName(p)
		if err != nil {
			return err
		}
		b.meta.DeleteTopicOffsets(t)
		b.dropPending(func(k offKey) bool { return k.topic == t })
		return nil
	}})
}

// applyTopicDelete removes a topic's config on a slave (its queues stay:
// they are the master's replicated records, and retention removes them).
func (b *Broker) applyTopicDelete(name string) error {
	existed, err := b.meta.RemoveTopic(name)
	if err != nil {
		return err
	}
	if existed {
		b.topicsChanged(name)
	}
	return nil
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func topicPayload(t meta.Topic) []byte {
	p, err := json.Marshal(t)
	if err != nil {
		panic(fmt.Sprintf("broker: encoding topic %q: %v", t.Name, err)) // plain struct: cannot fail
	}
	return p
}

func groupPayload(g meta.Group) []byte {
	p, err := json.Marshal(g)
	if err != nil {
		panic(fmt.Sprintf("broker: encoding group %q: %v", g.Name, err))
	}
	return p
}

// emitOffsets emits offs as KindOffsets payloads of about
// stateOffsetsChunk bytes each.
func emitOffsets(offs []staterec.Offset, emit func([]byte)) {
	start, size := 0, 4
	for i, o := range offs {
		n := staterec.OffsetLen(o)
		if i > start && size+n > stateOffsetsChunk {
			emit(staterec.AppendOffsets(nil, offs[start:i]))
			start, size = i, 4
		}
		size += n
	}
	if start < len(offs) {
		emit(staterec.AppendOffsets(nil, offs[start:]))
	}
}

// --- master: what is emitted -------------------------------------------

// stateTopicChanged emits a topic's state once its change is durable.
func (b *Broker) stateTopicChanged(name string) {
	if !b.stateOn() || b.Role() != RoleMaster {
		return
	}
	if t, ok := b.meta.Topic(name); ok {
		b.emitState(staterec.KindTopicPut, topicPayload(t))
	} else {
		b.emitState(staterec.KindTopicDelete, staterec.AppendName(nil, name))
	}
}

// stateGroupChanged emits a group's config (or its deletion) once durable.
func (b *Broker) stateGroupChanged(name string) {
	if !b.stateOn() || b.Role() != RoleMaster {
		return
	}
	if g, ok := b.meta.Group(name); ok {
		b.emitState(staterec.KindGroupPut, groupPayload(g))
	} else {
		b.emitState(staterec.KindGroupDelete, staterec.AppendName(nil, name))
	}
}

// deleteOffsets removes group's offsets on topic ("" = all) and, on a
// master of a replicated group, emits the deletion in order with the
// offset diffs.
func (b *Broker) deleteOffsets(group, topic string) {
	if !b.stateOn() || b.Role() != RoleMaster {
		b.meta.DeleteOffsets(group, topic)
		return
	}
	s := &b.state
	s.offMu.Lock()
	defer s.offMu.Unlock()
	b.meta.DeleteOffsets(group, topic)
	for k := range s.last {
		if k.group == group && (topic == "" || k.topic == topic) {
			delete(s.last, k)
		}
	}
	b.emitState(staterec.KindOffsetsDelete, staterec.AppendGroupTopic(nil, group, topic))
}

// deleteTopicOffsets removes every group's offsets on topic, emitted as
// deleteOffsets is.
func (b *Broker) deleteTopicOffsets(topic string) {
	if !b.stateOn() || b.Role() != RoleMaster {
		b.meta.DeleteTopicOffsets(topic)
		return
	}
	s := &b.state
	s.offMu.Lock()
	defer s.offMu.Unlock()
	b.meta.DeleteTopicOffsets(topic)
	for k := range s.last {
		if k.topic == topic {
			delete(s.last, k)
		}
	}
	b.emitState(staterec.KindTopicOffsetsDelete, staterec.AppendName(nil, topic))
}

// seedOffsetDiff makes the current offsets the base of the next diff
// (the snapshot carries them).
func (b *Broker) seedOffsetDiff() {
	s := &b.state
	s.offMu.Lock()
	clear(s.last)
	for _, e := range b.meta.AllOffsets() {
		if !reservedGroup(e.Group) {
			s.last[offKey{e.Group, e.Topic, e.QueueID}] = e.Offset
		}
	}
	s.offMu.Unlock()
}

// emitOffsetDiff emits the offsets changed since the last diff.
func (b *Broker) emitOffsetDiff() {
	s := &b.state
	s.offMu.Lock()
	defer s.offMu.Unlock()
	var changed []staterec.Offset
	for _, e := range b.meta.AllOffsets() {
		if reservedGroup(e.Group) {
			continue
		}
		k := offKey{e.Group, e.Topic, e.QueueID}
		if old, ok := s.last[k]; ok && old == e.Offset {
			continue
		}
		s.last[k] = e.Offset
		changed = append(changed, staterec.Offset{Group: e.Group, Topic: e.Topic, QueueID: e.QueueID, Offset: e.Offset})
	}
	emitOffsets(changed, func(p []byte) { b.emitState(staterec.KindOffsets, p) })
}

// --- slave: the applier -------------------------------------------------

// stateCursor is the next state-topic offset a slave applies.
func (b *Broker) stateCursor() int64 {
	off, _ := b.meta.Offset(stateCursorGroup, StateTopic, 0)
	return off
}

func (b *Broker) runStateApplier() {
	s := &b.state
	defer close(s.adone)
	for {
		select {
		case <-s.awake:
		case <-s.astop:
			return
		}
		if b.Role() == RoleSlave {
			b.applyState()
		}
	}
}

// applyState applies the state topic from the cursor to its readable end.
func (b *Broker) applyState() {
	s := &b.state
	s.amu.Lock()
	defer s.amu.Unlock()
	for {
		cur := b.stateCursor()
		if lo := b.st.MinOffset(StateTopic, 0); cur < lo {
			b.log.Warn("state records below the applier's cursor were removed by retention; going on from the oldest one kept", "cursor", cur, "min_offset", lo)
			cur = lo
		}
		if cur >= b.st.MaxOffset(StateTopic, 0) {
			return
		}
		res, err := b.st.GetMessages(StateTopic, 0, cur, 64, 4<<20, nil)
		if err != nil {
			b.log.Warn("reading the state topic failed", "offset", cur, "err", err)
			return
		}
		next := res.NextOffset
		if res.Count > 0 {
			res.Records(b.applyStateMessage)
		}
		res.Release()
		if next <= cur {
			return
		}
		b.meta.CommitOffset(stateCursorGroup, StateTopic, 0, next)
	}
}

// applyStateMessage applies one state message's records.
func (b *Broker) applyStateMessage(r message.Record) {
	s := &b.state
	err := staterec.DecodeBatch(r.Body(), func(rec staterec.Record) error {
		switch rec.Kind {
		case staterec.KindSnapshotBegin:
			s.inSnap = true
			for _, k := range s.order {
				if h := s.kinds[k]; h.reset != nil {
					if err := h.reset(); err != nil {
						b.log.Warn("resetting state at a snapshot failed", "kind", k.String(), "err", err)
					}
				}
			}
		case staterec.KindSnapshotEnd:
			if !s.inSnap {
				return nil // the end of a snapshot whose begin retention removed
			}
			for _, k := range s.order {
				if h := s.kinds[k]; h.end != nil {
					if err := h.end(); err != nil {
						b.log.Warn("finishing a snapshot failed", "kind", k.String(), "err", err)
					}
				}
			}
			s.inSnap = false
			if snap, err := staterec.DecodeSnapshot(rec.Payload); err == nil {
				b.log.Info("state snapshot of the master applied", "snapshot", snap.ID, "epoch", snap.Epoch, "state_offset", r.QueueOffset())
			}
		default:
			h, ok := s.kinds[rec.Kind]
			if !ok || h.apply == nil {
				b.log.Warn("a state record of an unknown kind was skipped", "kind", rec.Kind.String())
				return nil
			}
			if err := h.apply(rec.Payload); err != nil {
				b.log.Warn("applying a state record failed", "kind", rec.Kind.String(), "err", err)
			}
		}
		s.applied.Add(1)
		return nil
	})
	if err != nil {
		b.log.Warn("a state message is malformed; its remaining records were skipped", "offset", r.QueueOffset(), "err", err)
	}
}

// drainState applies, before a slave turns master, every state record
// readable now.
func (b *Broker) drainState() {
	if b.stateOn() && b.Role() == RoleSlave {
		b.applyState()
	}
}

// stateRoleChanged adapts the stream to a new role (SetRole).
func (b *Broker) stateRoleChanged(r Role) {
	if !b.stateOn() {
		return
	}
	s := &b.state
	if r == RoleMaster {
		b.dropPending(func(offKey) bool { return true }) // its table is the master's now
		b.seedOffsetDiff()
		s.mu.Lock()
		s.snapWant = true
		s.mu.Unlock()
		s.kick()
		return
	}
	b.meta.CommitOffset(stateCursorGroup, StateTopic, 0, b.st.MaxOffset(StateTopic, 0))
}
