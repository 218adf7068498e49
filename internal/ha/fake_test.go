package ha

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// memLog is an in-memory byte log that is both a Source and a Sink. It
// models durability: bytes above durable are lost by Crash. With
// syncAppend every append is durable at once (sync flush); otherwise only
// Flush makes them durable (async flush).
type memLog struct {
	mu         sync.Mutex
	start      int64 // first retained byte
	data       []byte
	durable    int64
	syncAppend bool
	grow       chan struct{} // closed and replaced when the log grows
	cp         int64         // last commit point set
	onCP       func(off int64)
	empty      bool // nothing was ever appended: the first AppendRaw sets start
	resets     int
}

func newMemLog(start int64, syncAppend bool) *memLog {
	return &memLog{start: start, durable: start, syncAppend: syncAppend, grow: make(chan struct{}), empty: true}
}

func (l *memLog) endLocked() int64 { return l.start + int64(len(l.data)) }

func (l *memLog) grewLocked() {
	close(l.grow)
	l.grow = make(chan struct{})
}

// Put appends a record on the master; it returns the record's end.
func (l *memLog) Put(b []byte) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.empty = false
	l.data = append(l.data, b...)
	if l.syncAppend {
		l.durable = l.endLocked()
	}
	l.grewLocked()
	return l.endLocked()
}

// Flush makes everything written durable.
func (l *memLog) Flush() {
	l.mu.Lock()
	l.durable = l.endLocked()
	l.mu.Unlock()
}

// Crash returns the log a restart finds: the durable prefix only.
func (l *memLog) Crash() *memLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := newMemLog(l.start, l.syncAppend)
	c.data = append([]byte(nil), l.data[:l.durable-l.start]...)
	c.durable = l.durable
	c.empty = l.empty
	return c
}

// Trim drops the bytes below off (retention).
func (l *memLog) Trim(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = append([]byte(nil), l.data[off-l.start:]...)
	l.start = off
}

// Bytes returns a copy of [from, to).
func (l *memLog) Bytes(from, to int64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.data[from-l.start:to-l.start]...)
}

func (l *memLog) ReadRaw(off int64, max int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off < l.start {
		return nil, fmt.Errorf("memlog: offset %d below the first byte %d", off, l.start)
	}
	end := l.endLocked()
	if off > end {
		return nil, fmt.Errorf("memlog: offset %d beyond the end %d", off, end)
	}
	n := min(int64(max), end-off)
	return l.data[off-l.start : off-l.start+n : off-l.start+n], nil
}

func (l *memLog) Written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endLocked()
}

func (l *memLog) Durable() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

func (l *memLog) MinOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start
}

func (l *memLog) WaitWritten(ctx context.Context, off int64) error {
	for {
		l.mu.Lock()
		if l.endLocked() > off {
			l.mu.Unlock()
			return nil
		}
		ch := l.grow
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *memLog) AppendRaw(off int64, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.empty && len(l.data) == 0 {
		l.start, l.durable = off, off
	}
	if end := l.endLocked(); off != end {
		return fmt.Errorf("memlog: append at %d, the log ends at %d", off, end)
	}
	l.empty = false
	l.data = append(l.data, b...)
	if l.syncAppend {
		l.durable = l.endLocked()
	}
	l.grewLocked()
	return nil
}

// ResetAt and CommitLogMinOffset make memLog a Restarter.
func (l *memLog) ResetAt(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off < l.endLocked() {
		return errors.New("memlog: restart below the end")
	}
	l.start, l.durable, l.data, l.empty = off, off, nil, true
	l.resets++
	return nil
}

func (l *memLog) CommitLogMinOffset() int64 { return l.MinOffset() }

// Resets counts the ResetAt calls.
func (l *memLog) Resets() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resets
}

func (l *memLog) SetCommitPoint(off int64) {
	l.mu.Lock()
	l.cp = off
	f := l.onCP
	l.mu.Unlock()
	if f != nil {
		f(off)
	}
}

func (l *memLog) CommitPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cp
}

// noRestart hides memLog's ResetAt.
type noRestart struct{ *memLog }

func (noRestart) ResetAt() {}
