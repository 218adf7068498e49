package commitlog

import (
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/message"
)

// An Appender is one caller's handle on the log for batches of appends —
// a remoting connection's reader has one. Under FlushAsync it writes each
// batch on its caller's goroutine, taking turns with the writer goroutine
// on the tail, and answers every append of it before AppendMany returns:
// the caller's goroutine does the work the writer would, and no goroutine
// has to be woken for it (the replies its callbacks queue are written by
// the same goroutine next). Nothing is held for later, so there is nothing
// to flush and no rule about blocking. Under FlushSync the fsync is the
// wait, so an Appender hands its batches to the writer as AppendMany does,
// where they join the group commit of every caller.
//
// An Appender serves one call at a time: it reuses its requests from one
// call to the next. A second call while one runs — from another goroutine,
// or from one of the call's own callbacks, which would wait for itself on
// the tail — panics.
type Appender struct {
	l    *Log
	busy atomic.Bool
	reqs []request
	list []*request
}

// NewAppender returns an Appender on l for one caller.
func (l *Log) NewAppender() *Appender { return &Appender{l: l} }

// AppendMany is Log.AppendMany; under FlushAsync done has been called for
// every group when it returns, on the calling goroutine.
func (a *Appender) AppendMany(groups [][]*message.Message, done func(i int, res Result, err error)) {
	l := a.l
	if l.opts.FlushMode != FlushAsync {
		l.AppendMany(groups, done)
		return
	}
	if !a.busy.CompareAndSwap(false, true) {
		panic("commitlog: an Appender was called while a call of it was running; give each caller its own")
	}
	defer a.busy.Store(false)
	a.reqs, a.list = l.admitMany(a.reqs, a.list, groups, done)
	if len(a.list) > 0 {
		l.writeNow(a.list)
	}
	clear(a.reqs) // keep no message or callback alive
	clear(a.list)
}

// writeNow writes reqs on the calling goroutine (FlushAsync) and so
// answers them. Close waits for a write in progress (closeMu).
func (l *Log) writeNow(reqs []*request) {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		failAll(reqs, ErrClosed)
		return
	}
	l.submissions.Add(1)
	l.wmu.Lock()
	l.writeGroups(reqs)
	l.wmu.Unlock()
}
