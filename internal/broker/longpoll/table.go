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

// Request is a parked pull. The Table reads Topic, QueueID, Offset,
// Deadline and Conn and never looks at Payload, which the caller uses to
// find its waiter. The fields must not change while the request is parked;
// between a removal and the next Park the caller may change them.
type Request struct {
	Topic    string
	QueueID  int32
	Offset   int64     // wake when the queue's max offset exceeds this
	Deadline time.Time // Expired returns the request once now ≥ Deadline
	Conn     uint64    // the connection the pull came in on
	Payload  any

	seq     uint64 // park order
	heapIdx int    // index in the deadline heap; -1 when not parked
	parked  bool
}

type queueKey struct {
	topic   string
	queueID int32
}

// Table holds parked pull requests. The zero value is not usable; call New.
type Table struct {
	maxTotal, maxPerConn int

	seq      uint64
	byQueue  map[queueKey][]*Request // park order
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
	k := queueKey{r.Topic, r.QueueID}
	t.byQueue[k] = append(t.byQueue[k], r)
	heap.Push(&t.deadline, r)
	return nil
}

// Arrived removes and returns, in park order, the requests on the queue
// whose Offset is below maxOffset (the queue's new max offset: the next
// offset to be written). The caller re-runs those pulls.
func (t *Table) Arrived(topic string, queueID int32, maxOffset int64) []*Request {
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
	k := queueKey{r.Topic, r.QueueID}
	list := t.byQueue[k]
	if i := slices.Index(list, r); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	t.setQueue(k, list)
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
