package pop

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// View is what a pop of one queue may take now (Peek).
type View struct {
	// Known: the queue has state; otherwise the caller picks the first
	// cursor and passes it as Claim.From.
	Known  bool
	Cursor int64
	// Expired are in-flight entries whose invisible time has passed,
	// ascending by offset: deliver them again before new messages.
	Expired []Entry
	// Blocked (FIFO peeks only): an entry is still invisible, so nothing
	// of the queue may be delivered.
	Blocked bool
}

// Peek returns what a pop of k may take at now: at most limit expired
// entries and the cursor. Without fifo, the expired entries are the
// earliest due. With fifo, Blocked is set when an in-flight entry of the
// queue is still invisible; otherwise every entry in flight has expired
// and Expired holds those of lowest offset.
func (s *Store) Peek(k Key, now time.Time, fifo bool, limit int) View {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return View{}
	}
	v := View{Known: true, Cursor: q.cursor}
	if fifo {
		if q.nextDue(ms(now)) > 0 {
			v.Blocked = true
			return v
		}
		v.Expired = q.first(max(limit, 0))
		return v
	}
	v.Expired = q.expired(ms(now), max(limit, 0))
	return v
}

// NextVisible returns the earliest time after now at which an in-flight
// entry of the group on the topic becomes visible again, or false.
func (s *Store) NextVisible(group, topic string, now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next int64
	for _, q := range s.byTopic[[2]string{group, topic}] {
		if n := q.nextDue(ms(now)); n > 0 && (next == 0 || n < next) {
			next = n
		}
	}
	if next == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(next), true
}

// InFlight returns the group's in-flight entries on all queues.
func (s *Store) InFlight(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[group]
}

// Low returns the lowest offset of k not yet acknowledged (the lowest in
// flight, else the cursor), and false for an unknown queue: everything
// below it is done, which makes it the group's consumer offset.
func (s *Store) Low(k Key) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return 0, false
	}
	return q.low(), true
}

// Claim is one pop of a queue, built from a View.
type Claim struct {
	Key Key
	// From is the View's Cursor (for an unknown queue: the first cursor);
	// To is the new cursor. Offsets in [From, To) not in New were skipped
	// (filtered out or gone). To < From (with New empty) follows a queue
	// that is shorter than the cursor (deleted and created again).
	From, To int64
	// New are the offsets in [From, To) delivered now, ascending.
	New []int64
	// Again are expired entries delivered again, Drop expired entries to
	// forget (moved to the dead-letter queue, or gone from the store), as
	// the View gave them.
	Again, Drop []Entry
	// Until is the new deliveries' invisible time.
	Until time.Time
}

// Claim records a pop and returns the delivered entries (Again first, then
// New, each with its new Gen and Attempt) and the Ticket to Sync before
// handing them out. ErrConflict when the cursor is not From any more or an
// Again or Drop entry changed since the View; nothing is changed then.
func (s *Store) Claim(c Claim) ([]Entry, Ticket, error) {
	if c.To < c.From && len(c.New) > 0 {
		return nil, 0, fmt.Errorf("pop: claim moves the cursor back from %d to %d and delivers", c.From, c.To)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, 0, err
	}
	q := s.queues[c.Key]
	if q != nil && q.cursor != c.From {
		return nil, 0, fmt.Errorf("%w: cursor %d, the claim read from %d", ErrConflict, q.cursor, c.From)
	}
	for _, lists := range [][]Entry{c.Again, c.Drop} {
		for _, e := range lists {
			if q == nil || q.inflight[e.Offset] == nil || q.inflight[e.Offset].Gen != e.Gen {
				return nil, 0, fmt.Errorf("%w: offset %d changed", ErrConflict, e.Offset)
			}
		}
	}
	ch := change{key: c.Key, cursor: -1}
	if q == nil || c.To != c.From {
		ch.cursor = c.To
	}
	until := ms(c.Until)
	out := make([]Entry, 0, len(c.Again)+len(c.New))
	for _, e := range c.Again {
		ne := Entry{Offset: e.Offset, Until: until, Attempt: q.inflight[e.Offset].Attempt + 1, Gen: s.nextGen}
		s.nextGen++
		out = append(out, ne)
	}
	for _, o := range c.New {
		if o < c.From || o >= c.To {
			return nil, 0, fmt.Errorf("pop: claimed offset %d is outside [%d, %d)", o, c.From, c.To)
		}
		out = append(out, Entry{Offset: o, Until: until, Attempt: 1, Gen: s.nextGen})
		s.nextGen++
	}
	ch.put = out
	for _, e := range c.Drop {
		ch.del = append(ch.del, e.Offset)
	}
	if q != nil && ch.cursor < 0 && len(ch.put) == 0 && len(ch.del) == 0 {
		return nil, 0, nil
	}
	return out, s.record(&ch), nil
}

// HandleOf returns the receipt handle of a delivered entry of k.
func HandleOf(k Key, e Entry) string {
	return EncodeHandle(Handle{QueueID: k.QueueID, Offset: e.Offset, Gen: e.Gen, Attempt: e.Attempt, Until: e.Until,
		GroupHash: NameHash(k.Group), TopicHash: NameHash(k.Topic)})
}

// Check validates a receipt handle of group on topic at now and returns
// the queue and the entry it names. Errors: ErrInvalidHandle,
// ErrOtherGroup, ErrOtherTopic, ErrNotDelivered, ErrAcked, ErrSuperseded,
// ErrExpired (each wrapped with details).
func (s *Store) Check(group, topic, handle string, now time.Time) (Key, Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, e, err := s.checkLocked(group, topic, handle, now)
	if err != nil {
		return Key{}, Entry{}, err
	}
	return k, *e, nil
}

func (s *Store) checkLocked(group, topic, handle string, now time.Time) (Key, *Entry, error) {
	h, err := DecodeHandle(handle)
	if err != nil {
		return Key{}, nil, err
	}
	if h.GroupHash != NameHash(group) {
		return Key{}, nil, fmt.Errorf("%w: not issued to group %q", ErrOtherGroup, group)
	}
	if h.TopicHash != NameHash(topic) {
		return Key{}, nil, fmt.Errorf("%w: not issued for topic %q", ErrOtherTopic, topic)
	}
	k := Key{Group: group, Topic: topic, QueueID: h.QueueID}
	q := s.queues[k]
	nowMS := ms(now)
	if q == nil || h.Offset >= q.cursor {
		return k, nil, fmt.Errorf("%w: queue %d offset %d", ErrNotDelivered, h.QueueID, h.Offset)
	}
	e := q.inflight[h.Offset]
	switch {
	case e == nil && nowMS >= h.Until:
		return k, nil, fmt.Errorf("%w: queue %d offset %d was due again at %s", ErrExpired, h.QueueID, h.Offset, fmtMS(h.Until))
	case e == nil:
		return k, nil, fmt.Errorf("%w: queue %d offset %d", ErrAcked, h.QueueID, h.Offset)
	case e.Gen != h.Gen && e.Attempt != h.Attempt:
		return k, nil, fmt.Errorf("%w: queue %d offset %d was delivered again (attempt %d)", ErrExpired, h.QueueID, h.Offset, e.Attempt)
	case e.Gen != h.Gen:
		return k, nil, fmt.Errorf("%w: queue %d offset %d", ErrSuperseded, h.QueueID, h.Offset)
	case nowMS >= e.Until:
		return k, nil, fmt.Errorf("%w: queue %d offset %d was due again at %s", ErrExpired, h.QueueID, h.Offset, fmtMS(e.Until))
	}
	return k, e, nil
}

func fmtMS(v int64) string { return time.UnixMilli(v).UTC().Format(time.RFC3339Nano) }

// Ack acknowledges the delivery a handle names (see Check for errors) and
// returns the Ticket to Sync before confirming it.
func (s *Store) Ack(group, topic, handle string, now time.Time) (Key, Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Key{}, 0, err
	}
	k, e, err := s.checkLocked(group, topic, handle, now)
	if err != nil {
		return Key{}, 0, err
	}
	return k, s.record(&change{key: k, cursor: -1, del: []int64{e.Offset}}), nil
}

// AckAt acknowledges the delivery of offset on k that becomes visible
// again at until (unix ms): a receipt without the handle (RocketMQ's batch
// ack names a delivery by queue, offset and pop time + invisible time).
// Errors as Check's: ErrNotDelivered (an offset never popped), ErrAcked
// (nothing in flight there and until not passed), ErrExpired (until, or the
// entry's own Until, has passed), ErrSuperseded (the entry in flight has
// another Until: a change of invisible time or a later delivery).
func (s *Store) AckAt(k Key, offset, until int64, now time.Time) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	q := s.queues[k]
	nowMS := ms(now)
	if q == nil || offset < 0 || offset >= q.cursor {
		return 0, fmt.Errorf("%w: queue %d offset %d", ErrNotDelivered, k.QueueID, offset)
	}
	e := q.inflight[offset]
	switch {
	case e == nil && nowMS >= until:
		return 0, fmt.Errorf("%w: queue %d offset %d was due again at %s", ErrExpired, k.QueueID, offset, fmtMS(until))
	case e == nil:
		return 0, fmt.Errorf("%w: queue %d offset %d", ErrAcked, k.QueueID, offset)
	case e.Until != until && nowMS >= until:
		return 0, fmt.Errorf("%w: queue %d offset %d was due again at %s", ErrExpired, k.QueueID, offset, fmtMS(until))
	case e.Until != until:
		return 0, fmt.Errorf("%w: queue %d offset %d is in flight until %s, not %s", ErrSuperseded, k.QueueID, offset, fmtMS(e.Until), fmtMS(until))
	case nowMS >= e.Until:
		return 0, fmt.Errorf("%w: queue %d offset %d was due again at %s", ErrExpired, k.QueueID, offset, fmtMS(e.Until))
	}
	return s.record(&change{key: k, cursor: -1, del: []int64{offset}}), nil
}

// Change sets the invisible time of the delivery a handle names to until
// and returns the new handle (the old one no longer works), the updated
// entry and the Ticket to Sync before answering. Errors as Check.
func (s *Store) Change(group, topic, handle string, until, now time.Time) (string, Entry, Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return "", Entry{}, 0, err
	}
	k, e, err := s.checkLocked(group, topic, handle, now)
	if err != nil {
		return "", Entry{}, 0, err
	}
	ne := Entry{Offset: e.Offset, Until: ms(until), Attempt: e.Attempt, Gen: s.nextGen}
	s.nextGen++
	t := s.record(&change{key: k, cursor: -1, put: []Entry{ne}})
	return HandleOf(k, ne), ne, t, nil
}

// ForgetGroup drops the state of every queue of group (deleted with its
// offsets): its cursors and in-flight messages are gone, so a later pop of
// the group starts as a new group's would. The returned ticket is durable
// after Sync; 0 when the group had no state.
func (s *Store) ForgetGroup(group string) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	var keys []Key
	for k := range s.queues {
		if k.Group == group {
			keys = append(keys, k)
		}
	}
	var t Ticket
	for _, k := range keys {
		t = s.record(&change{key: k, cursor: cursorForget})
	}
	return t, nil
}

// ResetTopic forgets where every group stands on topic (deleted, and
// perhaps created again with queues that start at 0): each of its queues
// goes back to cursor 0 with nothing in flight. The returned ticket is
// durable after Sync.
func (s *Store) ResetTopic(topic string) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	var t Ticket
	for k, q := range s.queues {
		if k.Topic != topic {
			continue
		}
		c := &change{key: k, cursor: 0}
		for off := range q.inflight {
			c.del = append(c.del, off)
		}
		t = s.record(c)
	}
	return t, nil
}

// ResetQueue moves k's cursor to cursor (back or forward: a reset of the
// group's offsets) and forgets what is in flight there, so that the next
// pop reads from cursor and the handles issued before no longer
// acknowledge anything. ok is false for a queue with no state (its first
// pop starts at the committed offset anyway); nothing is recorded then.
// The returned ticket is durable after Sync.
func (s *Store) ResetQueue(k Key, cursor int64) (t Ticket, ok bool, err error) {
	if cursor < 0 {
		return 0, false, fmt.Errorf("pop: reset of %s/%s/%d to the negative offset %d", k.Group, k.Topic, k.QueueID, cursor)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, false, err
	}
	q := s.queues[k]
	if q == nil {
		return 0, false, nil
	}
	c := &change{key: k, cursor: cursor}
	for off := range q.inflight {
		c.del = append(c.del, off)
	}
	return s.record(c), true, nil
}

// QueueInFlight returns how many messages of k are in flight at now —
// delivered, neither acknowledged nor past their invisible time — and
// k's cursor (the next offset never popped); ok is false for a queue
// with no state.
func (s *Store) QueueInFlight(k Key, now time.Time) (n int, cursor int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return 0, 0, false
	}
	return q.invisible(ms(now)), q.cursor, true
}

// TopicInFlight is the in-flight count of a group on a topic.
type TopicInFlight struct {
	Group, Topic string
	Messages     int
}

// InFlightByTopic returns, for every (group, topic) with pop state, the
// messages in flight at now (see QueueInFlight) over its queues (0 when
// none), sorted by group and topic.
func (s *Store) InFlightByTopic(now time.Time) []TopicInFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	nowMS := ms(now)
	var out []TopicInFlight
	for gt, qs := range s.byTopic {
		n := 0
		for _, q := range qs {
			n += q.invisible(nowMS)
		}
		out = append(out, TopicInFlight{Group: gt[0], Topic: gt[1], Messages: n})
	}
	slices.SortFunc(out, func(a, b TopicInFlight) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic))
	})
	return out
}
