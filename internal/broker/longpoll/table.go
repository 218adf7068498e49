package longpoll

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors returned by Park.
var (
	// ErrFull: parking the request would exceed maxTotal or maxPerConn.
	// The wrapping error names the limit; the caller should answer the pull
	// at once instead of holding it.
	ErrFull = errors.New("longpoll: too many parked pull requests")
	// ErrParked: the request is already in the table.
	ErrParked = errors.New("longpoll: request already parked")
)

// Request is a parked pull or pop. The Table reads every field but Payload,
// which the caller uses to find its waiter. The fields must not change
// while the request is parked (Update changes Deadline and Blocked);
// between a removal and the next Park the caller may change them.
//
// A pull (Group "") waits on one queue: Topic, QueueID, Offset. A pop
// (Group set) is a receive of a consumer group that reads every queue of
// Topic, and of Also when set (the group's retry topic).
type Request struct {
	Topic    string
	QueueID  int32     // pulls only
	Offset   int64     // pulls only: wake when the queue's max offset exceeds this
	Deadline time.Time // Expired returns the request once now ≥ Deadline
	Conn     uint64    // the connection the request came in on
	Payload  any

	// Group names the consumer group of a pop; "" makes the request a pull.
	Group string
	// Also is a second topic a pop reads ("" for none).
	Also string
	// FIFO: the pop consumes in order, so a queue of Topic with a message
	// of the group in flight gives it nothing until an acknowledgement or
	// a visibility deadline frees it.
	FIFO bool
	// Blocked (FIFO pops) lists the queues of Topic that are held so:
	// an arrival there does not wake the pop.
	Blocked []int32

	seq     uint64 // park order
	heapIdx int    // index in the deadline heap; -1 when not parked
	parked  bool
}

type queueKey struct {
	topic   string
	queueID int32
}

type groupKey struct {
	group, topic string
}

// Table holds parked requests. The zero value is not usable; call New.
type Table struct {
	maxTotal, maxPerConn int

	seq      uint64
	byQueue  map[queueKey][]*Request // pulls, park order
	byGroup  map[groupKey][]*Request // pops, park order, under Topic and under Also
	groupsOf map[string]map[string]struct{}
	byConn   map[uint64]map[*Request]struct{}
	deadline deadlineHeap
}

// New returns an empty table that holds at most maxTotal requests in all
// and maxPerConn per connection (values ≤ 0 mean 1).
func New(maxTotal, maxPerConn int) *Table {
	return &Table{
		maxTotal:   max(maxTotal, 1),
		maxPerConn: max(maxPerConn, 1),
		byQueue:    make(map[queueKey][]*Request),
		byGroup:    make(map[groupKey][]*Request),
		groupsOf:   make(map[string]map[string]struct{}),
		byConn:     make(map[uint64]map[*Request]struct{}),
	}
}

// Len returns the number of parked requests.
func (t *Table) Len() int { return len(t.deadline) }

// ConnLen returns the number of requests parked by conn.
func (t *Table) ConnLen(conn uint64) int { return len(t.byConn[conn]) }

// Park adds r. It returns an error wrapping ErrFull, naming the limit, when
// the table already holds maxTotal requests or r.Conn already has
// maxPerConn, and ErrParked when r is in the table; r is then not parked.
// A request removed by any call may be parked again.
func (t *Table) Park(r *Request) error {
	if r.parked {
		return ErrParked
	}
	if len(t.deadline) >= t.maxTotal {
		return fmt.Errorf("%w: %d parked in total, the limit is %d", ErrFull, len(t.deadline), t.maxTotal)
	}
	conns := t.byConn[r.Conn]
	if len(conns) >= t.maxPerConn {
		return fmt.Errorf("%w: connection %d has %d parked, the per-connection limit is %d", ErrFull, r.Conn, len(conns), t.maxPerConn)
	}
	if conns == nil {
		conns = make(map[*Request]struct{})
		t.byConn[r.Conn] = conns
	}
	t.seq++
	r.seq = t.seq
	r.parked = true
	conns[r] = struct{}{}
	if r.Group != "" {
		for _, topic := range r.topics() {
			k := groupKey{r.Group, topic}
			if len(t.byGroup[k]) == 0 {
				gs := t.groupsOf[topic]
				if gs == nil {
					gs = make(map[string]struct{})
					t.groupsOf[topic] = gs
				}
				gs[r.Group] = struct{}{}
			}
			t.byGroup[k] = append(t.byGroup[k], r)
		}
	} else {
		k := queueKey{r.Topic, r.QueueID}
		t.byQueue[k] = append(t.byQueue[k], r)
	}
	heap.Push(&t.deadline, r)
	return nil
}

// topics returns the topics a pop reads.
func (r *Request) topics() []string {
	if r.Also == "" || r.Also == r.Topic {
		return []string{r.Topic}
	}
	return []string{r.Topic, r.Also}
}

// blocks reports whether a message arriving on queue queueID of topic
// cannot be taken by the pop r.
func (r *Request) blocks(topic string, queueID int32) bool {
	return r.FIFO && topic == r.Topic && slices.Contains(r.Blocked, queueID)
}

// Arrived removes and returns the requests a message stored on the queue
// may answer, the pulls first, then the pops, each in park order: the pulls on the queue whose Offset is below
// maxOffset (the queue's new max offset: the next offset to be written),
// and, for each group with pops parked on the topic, the oldest pop that
// can take a message of the queue (one per group: the pops of a group
// share its position, so one of them looks; see Next for passing a wake
// on). The caller re-runs those pulls and pops.
func (t *Table) Arrived(topic string, queueID int32, maxOffset int64) []*Request {
	out := t.arrivedPulls(topic, queueID, maxOffset)
	if gs := t.groupsOf[topic]; len(gs) > 0 {
		pulls := len(out)
		for g := range gs {
			for _, r := range t.byGroup[groupKey{g, topic}] {
				if !r.blocks(topic, queueID) {
					out = append(out, r)
					break
				}
			}
		}
		pops := out[pulls:]
		slices.SortFunc(pops, bySeq)
		for _, r := range pops {
			t.Remove(r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (t *Table) arrivedPulls(topic string, queueID int32, maxOffset int64) []*Request {
	k := queueKey{topic, queueID}
	list := t.byQueue[k]
	if len(list) == 0 {
		return nil
	}
	var out []*Request
	kept := list[:0]
	for _, r := range list {
		if r.Offset < maxOffset {
			out = append(out, r)
			continue
		}
		kept = append(kept, r)
	}
	if len(out) == 0 {
		return nil
	}
	clear(list[len(kept):]) // drop references held by the old tail
	t.setQueue(k, kept)
	for _, r := range out {
		heap.Remove(&t.deadline, r.heapIdx)
		t.unlinkConn(r)
		r.parked = false
	}
	return out
}

// Acked removes and returns the oldest FIFO pop of group parked on topic,
// preferring one that queue queueID blocks: an acknowledgement there may
// have freed the queue. It returns nothing when no FIFO pop of the group
// is parked on topic (a pop that is not FIFO waits for no
// acknowledgement).
func (t *Table) Acked(group, topic string, queueID int32) []*Request {
	var first *Request
	for _, r := range t.byGroup[groupKey{group, topic}] {
		if !r.FIFO {
			continue
		}
		if r.blocks(topic, queueID) {
			first = r
			break
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		return nil
	}
	t.Remove(first)
	return []*Request{first}
}

// Next removes and returns the oldest pop of group parked on topic, if
// any. A pop that was handed a wake it did not act on, or that took a full
// batch (more may be waiting), passes the wake on so.
func (t *Table) Next(group, topic string) []*Request {
	list := t.byGroup[groupKey{group, topic}]
	if len(list) == 0 {
		return nil
	}
	r := list[0]
	t.Remove(r)
	return []*Request{r}
}

// Parked returns how many pops of group are parked with Topic topic (a
// pop parked on it as its Also is not counted) for which match is true
// (nil matches all).
func (t *Table) Parked(group, topic string, match func(*Request) bool) int {
	n := 0
	for _, r := range t.byGroup[groupKey{group, topic}] {
		if r.Topic == topic && (match == nil || match(r)) {
			n++
		}
	}
	return n
}

// Topic removes and returns, in park order, every pop parked on topic.
func (t *Table) Topic(topic string) []*Request {
	var out []*Request
	for g := range t.groupsOf[topic] {
		out = append(out, t.byGroup[groupKey{g, topic}]...)
	}
	slices.SortFunc(out, bySeq)
	for _, r := range out {
		t.Remove(r)
	}
	return out
}

// Reschedule moves the Deadline of every pop of group parked on topic
// forward to at where it is later (a message of the group becomes visible
// again at at), and returns how many it moved. Expired then hands them
// back at at.
func (t *Table) Reschedule(group, topic string, at time.Time) int {
	n := 0
	for _, r := range t.byGroup[groupKey{group, topic}] {
		if at.Before(r.Deadline) {
			r.Deadline = at
			heap.Fix(&t.deadline, r.heapIdx)
			n++
		}
	}
	return n
}

// Update sets the Deadline and Blocked of a parked request and reports
// whether it was parked (false: a call handed it back before).
func (t *Table) Update(r *Request, deadline time.Time, blocked []int32) bool {
	if !r.parked {
		return false
	}
	r.Blocked = blocked
	if !r.Deadline.Equal(deadline) {
		r.Deadline = deadline
		heap.Fix(&t.deadline, r.heapIdx)
	}
	return true
}

// Expired removes and returns the requests whose Deadline is at or before
// now, earliest deadline first.
func (t *Table) Expired(now time.Time) []*Request {
	var out []*Request
	for len(t.deadline) > 0 && !t.deadline[0].Deadline.After(now) {
		r := heap.Pop(&t.deadline).(*Request)
		t.unlinkQueue(r)
		t.unlinkConn(r)
		r.parked = false
		out = append(out, r)
	}
	return out
}

// NextDeadline returns the earliest deadline of a parked request, and false
// when the table is empty.
func (t *Table) NextDeadline() (time.Time, bool) {
	if len(t.deadline) == 0 {
		return time.Time{}, false
	}
	return t.deadline[0].Deadline, true
}

// Remove takes r out of the table and reports whether it was parked (false
// means another call already handed it back, or it was never parked).
func (t *Table) Remove(r *Request) bool {
	if !r.parked {
		return false
	}
	heap.Remove(&t.deadline, r.heapIdx)
	t.unlinkQueue(r)
	t.unlinkConn(r)
	r.parked = false
	return true
}

// RemoveConn removes and returns, in park order, every request of conn.
func (t *Table) RemoveConn(conn uint64) []*Request {
	set := t.byConn[conn]
	if len(set) == 0 {
		return nil
	}
	out := make([]*Request, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	slices.SortFunc(out, bySeq)
	for _, r := range out {
		t.Remove(r)
	}
	return out
}

// RemoveAll empties the table and returns its requests in park order.
func (t *Table) RemoveAll() []*Request {
	out := slices.Clone([]*Request(t.deadline))
	slices.SortFunc(out, bySeq)
	for _, r := range out {
		r.parked = false
		r.heapIdx = -1
	}
	t.deadline = nil
	clear(t.byQueue)
	clear(t.byGroup)
	clear(t.groupsOf)
	clear(t.byConn)
	return out
}

func bySeq(a, b *Request) int {
	switch {
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

func (t *Table) setQueue(k queueKey, list []*Request) {
	if len(list) == 0 {
		delete(t.byQueue, k)
		return
	}
	t.byQueue[k] = list
}

func (t *Table) unlinkQueue(r *Request) {
	if r.Group != "" {
		t.unlinkGroup(r)
		return
	}
	k := queueKey{r.Topic, r.QueueID}
	list := t.byQueue[k]
	if i := slices.Index(list, r); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	t.setQueue(k, list)
}

func (t *Table) unlinkGroup(r *Request) {
	for _, topic := range r.topics() {
		k := groupKey{r.Group, topic}
		list := t.byGroup[k]
		if i := slices.Index(list, r); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) > 0 {
			t.byGroup[k] = list
			continue
		}
		delete(t.byGroup, k)
		if gs := t.groupsOf[topic]; gs != nil {
			delete(gs, r.Group)
			if len(gs) == 0 {
				delete(t.groupsOf, topic)
			}
		}
	}
}

func (t *Table) unlinkConn(r *Request) {
	set := t.byConn[r.Conn]
	delete(set, r)
	if len(set) == 0 {
		delete(t.byConn, r.Conn)
	}
}

// deadlineHeap orders requests by Deadline, then park order.
type deadlineHeap []*Request

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	if !h[i].Deadline.Equal(h[j].Deadline) {
		return h[i].Deadline.Before(h[j].Deadline)
	}
	return h[i].seq < h[j].seq
}
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *deadlineHeap) Push(x any) {
	r := x.(*Request)
	r.heapIdx = len(*h)
	*h = append(*h, r)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	r.heapIdx = -1
	*h = old[:n-1]
	return r
}
