package proxy

import "sync"

// readBytes is the size of a reader's buffer: the most one chunk can hold.
const readBytes = 32 << 10

// classes are the buffer sizes a queued chunk can occupy. A short read is
// copied into the smallest class that fits, so that a window of small
// chunks is not charged 32 KiB each.
var classes = [...]int{512, 4 << 10, readBytes}

var pools [len(classes)]sync.Pool

func class(n int) int {
	for i, c := range classes {
		if n <= c {
			return i
		}
	}
	return len(classes) - 1
}

// getBuf returns a pooled buffer of the smallest class holding n bytes,
// with len = cap = the class size.
func getBuf(n int) *[]byte {
	i := class(n)
	if b, ok := pools[i].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, classes[i])
	return &b
}

func putBuf(b *[]byte) {
	i := class(cap(*b))
	if cap(*b) != classes[i] {
		return
	}
	pools[i].Put(b)
}
