package track

import "sync"

// waiter is one parked Wait. done has room for the one answer, sent under
// the tracker's mutex when the waiter leaves the heap (idx = -1), so the
// sender never blocks.
type waiter struct {
	end  int64
	idx  int
	done chan error
}

var waiterPool = sync.Pool{New: func() any { return &waiter{done: make(chan error, 1)} }}

func getWaiter(end int64) *waiter {
	w := waiterPool.Get().(*waiter)
	w.end, w.idx = end, -1
	return w
}

// putWaiter recycles w; it must be out of the heap with its channel empty.
func putWaiter(w *waiter) { waiterPool.Put(w) }

// waitHeap orders waiters by end, lowest first (container/heap).
type waitHeap []*waiter

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}

func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.idx = len(*h)
	*h = append(*h, w)
}

func (h *waitHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.idx = -1
	*h = old[:n-1]
	return w
}
