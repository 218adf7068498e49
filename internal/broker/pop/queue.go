package pop

import (
	"cmp"
	"container/heap"
	"slices"
)

// Key names the pop state of one queue for one consumer group.
type Key struct {
	Group, Topic string
	QueueID      int32
}

// Entry is an in-flight message: delivered, not acknowledged.
type Entry struct {
	Offset int64 // queue offset
	// Until is when the message becomes visible again, unix ms.
	Until int64
	// Attempt counts deliveries to the group, 1 for the first.
	Attempt int32
	// Gen identifies the delivery (or the last ChangeInvisible); unique in
	// the store.
	Gen uint64
}

// queue is the state of one Key. Guarded by Store.mu.
type queue struct {
	key      Key
	cursor   int64 // next offset never popped
	inflight map[int64]*Entry
	// order holds the in-flight offsets ascending from head; offsets no
	// longer in flight are skipped lazily.
	order []int64
	head  int
	// due orders in-flight deliveries by Until; items whose Gen no longer
	// matches their entry are stale and dropped when met.
	due dueHeap
}

func newQueue(k Key, cursor int64) *queue {
	return &queue{key: k, cursor: cursor, inflight: make(map[int64]*Entry)}
}

type dueItem struct {
	until, offset int64
	gen           uint64
}

type dueHeap []dueItem

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].until != h[j].until {
		return h[i].until < h[j].until
	}
	return h[i].offset < h[j].offset
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (q *queue) live(it dueItem) bool {
	e := q.inflight[it.offset]
	return e != nil && e.Gen == it.gen
}

// put adds or replaces an in-flight entry; it reports whether it is new.
func (q *queue) put(e Entry) bool {
	old := q.inflight[e.Offset]
	cp := e
	q.inflight[e.Offset] = &cp
	heap.Push(&q.due, dueItem{until: e.Until, offset: e.Offset, gen: e.Gen})
	if old != nil {
		if len(q.due) > 2*len(q.inflight)+64 {
			q.rebuildDue()
		}
		return false
	}
	if n := len(q.order); n > q.head && q.order[n-1] > e.Offset {
		// Not expected (new offsets come from the cursor), but keep order.
		i, _ := slices.BinarySearch(q.order[q.head:], e.Offset)
		q.order = slices.Insert(q.order, q.head+i, e.Offset)
	} else {
		q.order = append(q.order, e.Offset)
	}
	return true
}

// del removes an in-flight entry; it reports whether there was one.
func (q *queue) del(off int64) bool {
	if q.inflight[off] == nil {
		return false
	}
	delete(q.inflight, off)
	switch {
	case len(q.inflight) == 0:
		q.order, q.head, q.due = q.order[:0], 0, q.due[:0]
	case len(q.order)-q.head > 2*len(q.inflight)+64:
		// Acknowledged offsets above a long-lived one pile up: keep the
		// live ones only (amortised: this follows many deletions).
		live := q.order[:0]
		for _, o := range q.order[q.head:] {
			if q.inflight[o] != nil {
				live = append(live, o)
			}
		}
		q.order, q.head = live, 0
	}
	if len(q.due) > 2*len(q.inflight)+64 {
		q.rebuildDue()
	}
	return true
}

func (q *queue) rebuildDue() {
	q.due = q.due[:0]
	for _, e := range q.inflight {
		q.due = append(q.due, dueItem{until: e.Until, offset: e.Offset, gen: e.Gen})
	}
	heap.Init(&q.due)
}

// low is the lowest offset not yet acknowledged: the lowest in flight, or
// the cursor.
func (q *queue) low() int64 {
	for q.head < len(q.order) && q.inflight[q.order[q.head]] == nil {
		q.head++
	}
	if q.head > 64 && q.head > len(q.order)/2 {
		q.order = append(q.order[:0], q.order[q.head:]...)
		q.head = 0
	}
	if q.head < len(q.order) {
		return q.order[q.head]
	}
	return q.cursor
}

// expired returns at most limit in-flight entries with Until ≤ now (unix
// ms), the earliest due, ascending by offset. It looks at no more heap
// items than it returns (plus stale ones, which it drops), so a pop's
// cost does not grow with the expired entries it leaves for later pops.
func (q *queue) expired(now int64, limit int) []Entry {
	var taken []dueItem
	for len(q.due) > 0 && len(taken) < limit {
		it := q.due[0]
		if !q.live(it) {
			heap.Pop(&q.due)
			continue
		}
		if it.until > now {
			break
		}
		heap.Pop(&q.due)
		taken = append(taken, it)
	}
	out := make([]Entry, 0, len(taken))
	for _, it := range taken {
		heap.Push(&q.due, it)
		out = append(out, *q.inflight[it.offset])
	}
	slices.SortFunc(out, byOffset)
	return out
}

// nextDue returns the earliest Until after now (unix ms) of an in-flight
// entry, or 0 when none is still invisible.
func (q *queue) nextDue(now int64) int64 {
	for len(q.due) > 0 && !q.live(q.due[0]) {
		heap.Pop(&q.due)
	}
	if len(q.due) == 0 {
		return 0
	}
	if u := q.due[0].until; u > now {
		return u
	}
	// Expired entries nobody took (a FIFO queue waiting for an
	// invisible one, a message whose dead-lettering failed) sit at the
	// top: look at all.
	var next int64
	for _, e := range q.inflight {
		if e.Until > now && (next == 0 || e.Until < next) {
			next = e.Until
		}
	}
	return next
}

// first returns the n in-flight entries of lowest offset.
func (q *queue) first(n int) []Entry {
	q.low() // skips acknowledged offsets at the head
	out := make([]Entry, 0, min(n, len(q.inflight)))
	for _, o := range q.order[q.head:] {
		if len(out) == n {
			break
		}
		if e := q.inflight[o]; e != nil {
			out = append(out, *e)
		}
	}
	return out
}

// entries returns the in-flight entries ascending by offset.
func (q *queue) entries() []Entry {
	out := make([]Entry, 0, len(q.inflight))
	for _, e := range q.inflight {
		out = append(out, *e)
	}
	slices.SortFunc(out, byOffset)
	return out
}

func byOffset(a, b Entry) int { return cmp.Compare(a.Offset, b.Offset) }

// invisible counts the in-flight entries still invisible at now (ms).
func (q *queue) invisible(now int64) int {
	n := 0
	for _, e := range q.inflight {
		if e.Until > now {
			n++
		}
	}
	return n
}
