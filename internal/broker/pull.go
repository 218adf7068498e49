package broker

// Pull: PULL_MESSAGE (11) with long polling. Statuses and nextBeginOffset
// follow Java's PullMessageProcessor and DefaultMessageStore.getMessage on a
// master (remoting-protocol.md §6):
//
//	store status                 pull status        nextBeginOffset
//	FOUND                        PullFound          after the last scanned entry
//	NO_MATCHED_MESSAGE           PullNoMatched      after the last scanned entry
//	OFFSET_OVERFLOW_ONE (== max) PullNoNewMsg       the requested offset      (long-polled)
//	NO_MESSAGE_IN_QUEUE, off 0   PullNoNewMsg       0                         (long-polled)
//	NO_MESSAGE_IN_QUEUE, off ≠ 0 PullOffsetMoved    0
//	OFFSET_TOO_SMALL (< min)     PullOffsetMoved    min offset
//	OFFSET_OVERFLOW_BADLY (> max) PullOffsetMoved   max offset (min offset when min is 0)
//	OFFSET_FOUND_NULL            PullNoNewMsg       past the removed entries
//
// Long polling: a pull with the suspend bit that finds nothing new is
// parked in a bounded longpoll.Table. The store's listener (on the
// dispatcher goroutine) takes the pulls parked on a queue whose max offset
// grew out of the table and signals each one's own goroutine, which re-runs
// the read at once — woken pulls never queue behind new requests, and the
// dispatcher never reads. A re-read that finds nothing matching parks
// again with the same deadline. One clock timer, armed for the earliest
// deadline, answers expired pulls.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/longpoll"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Pull request sysFlag bits.
const (
	// PullFlagCommitOffset: store CommitOffset for the group before pulling.
	PullFlagCommitOffset int32 = 0x1
	// PullFlagSuspend: long polling allowed.
	PullFlagSuspend int32 = 0x2
	// PullFlagSubscription: use Subscription/ExpressionType of the request.
	PullFlagSubscription int32 = 0x4
)

// PullStatus is the outcome of a pull.
type PullStatus int

// Pull statuses and the RocketMQ codes the front answers with.
const (
	// PullFound: Body holds Count records (code 0 SUCCESS).
	PullFound PullStatus = iota
	// PullNoNewMsg: nothing at the offset, or nothing arrived before the
	// long-poll timeout (code 19 PULL_NOT_FOUND).
	PullNoNewMsg
	// PullNoMatched: entries were scanned but none matched the
	// subscription (code 20 PULL_RETRY_IMMEDIATELY).
	PullNoMatched
	// PullOffsetMoved: the offset is out of the queue's range; the client
	// continues at NextBeginOffset (code 21 PULL_OFFSET_MOVED).
	PullOffsetMoved
)

var pullStatusNames = [...]string{"FOUND", "NO_NEW_MSG", "NO_MATCHED_MSG", "OFFSET_ILLEGAL"}

func (s PullStatus) String() string { return pullStatusNames[s] }

// PullRequest is a decoded pull.
type PullRequest struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
	// MaxMsgs caps the records returned; ≤ 0 means 1 (the Go pull
	// consumer sends 0).
	MaxMsgs int32
	// MaxBytes caps the body (at least one record is always returned);
	// ≤ 0 means 256 KiB.
	MaxBytes int
	// CommitOffset is stored as the group's offset when SysFlag has
	// PullFlagCommitOffset and it is ≥ 0.
	CommitOffset int64
	SysFlag      int32
	// SuspendTimeout is how long a pull with PullFlagSuspend may be held;
	// ≤ 0 means not at all; above Config.PullMaxSuspend means that.
	SuspendTimeout time.Duration
	// Subscription and ExpressionType are used with PullFlagSubscription.
	Subscription, ExpressionType string
	// Conn identifies the connection, for the per-connection bound on
	// parked pulls and for ConnClosed.
	Conn uint64
}

// PullResult answers a pull. Body holds stored records back to back,
// exactly as the pull answer carries them; it stays valid until Release.
type PullResult struct {
	Status                                PullStatus
	NextBeginOffset, MinOffset, MaxOffset int64
	Body                                  []byte
	Count                                 int
	release                               func()

	// SuggestWhichBrokerID is the broker id of the group the consumer
	// should pull from next (suggest.go).
	SuggestWhichBrokerID int64
}

// Release returns Body's memory; Body must not be used after. Safe to call
// more than once and on a result without a body.
func (r *PullResult) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
	r.Body = nil
}

// Pull reads messages of one queue, holding the request while nothing new
// is there and PullFlagSuspend is set (see the file comment).
//
// Errors (*Error): KindTopicNotExist; KindNoPermission when the topic is
// not readable or the group's consumeEnable is off; KindSystemError for a
// queue id outside the read queues or a store read failure;
// KindSubscriptionNotExist / KindSubscriptionParseFailed; and
// KindServiceUnavailable when the broker is closing or the pull would
// exceed LongPollMaxTotal / LongPollMaxPerConn. A parked pull whose ctx
// ends, whose connection closes (ConnClosed) or whose broker closes is
// answered PullNoNewMsg at its offset, with no error.
//
// The caller must Release the result.
func (b *Broker) Pull(ctx context.Context, req *PullRequest) (*PullResult, error) {
	res, err := b.pull(ctx, req)
	if err == nil {
		b.suggestFor(req.Group, res)
	}
	if err == nil && res.Count > 0 {
		b.reorderPull(req, res)
	}
	if err == nil && res.Count > 0 {
		b.stats.got(req.Topic, req.Group, res.Count, uint64(len(res.Body)))
	}
	return res, err
}

func (b *Broker) pull(ctx context.Context, req *PullRequest) (*PullResult, error) {
	if b.closed.Load() {
		return nil, b.errClosed()
	}
	t, ok := b.meta.Topic(req.Topic)
	if !ok {
		t, ok = b.replicatedTopic(req.Topic)
	}
	if !ok {
		return nil, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s; refresh the route", req.Topic, b.cfg.BrokerName)
	}
	if t.Perm&meta.PermRead == 0 {
		return nil, errorf(KindNoPermission, nil, "topic %q is not readable on broker %s (perm %d)", req.Topic, b.cfg.BrokerName, t.Perm)
	}
	if req.QueueID < 0 || req.QueueID >= t.ReadQueueNums {
		return nil, errorf(KindSystemError, nil, "queue id %d is outside the %d read queues of topic %q on broker %s; refresh the route", req.QueueID, t.ReadQueueNums, req.Topic, b.cfg.BrokerName)
	}
	if g, ok := b.meta.Group(req.Group); ok && !g.ConsumeEnable {
		return nil, errorf(KindNoPermission, nil, "consumer group %q may not consume (consumeEnable is false)", req.Group)
	} else if ok && b.broadcastRefused(g, req.Conn) {
		return nil, errorf(KindNoPermission, nil, "consumer group %q may not consume by broadcast (consumeBroadcastEnable is false); allow it with `petrel group update %s --broadcast`", req.Group, req.Group)
	}
	spec, err := b.filterFor(req)
	if err != nil {
		return nil, err
	}
	if req.SysFlag&PullFlagCommitOffset != 0 && req.CommitOffset >= 0 {
		b.commitOffset(req.Group, req.Topic, req.QueueID, req.CommitOffset)
	}
	p := &puller{b: b, req: req, maxMsgs: max(int(req.MaxMsgs), 1), filter: spec.tagFilter(), rec: spec.recordFilter()}
	res, err := p.read(req.Offset)
	if err != nil {
		return nil, err
	}
	suspend := req.SysFlag&PullFlagSuspend != 0 && req.SuspendTimeout > 0
	out, park, scan := classify(res, req.Offset, suspend, b.Role() == RoleSlave)
	if !park {
		return out, nil
	}
	return p.longPoll(ctx, scan)
}

type puller struct {
	b       *Broker
	req     *PullRequest
	maxMsgs int
	filter  store.TagFilter
	rec     store.RecordFilter
}

func (p *puller) read(offset int64) (*store.GetResult, error) {
	p.b.reads.Add(1)
	r := p.req
	res, err := p.b.st.GetMessagesFiltered(r.Topic, r.QueueID, offset, p.maxMsgs, r.MaxBytes, p.filter, p.rec)
	if err != nil {
		return nil, errorf(KindSystemError, err, "reading queue %d of topic %q at offset %d failed; retry", r.QueueID, r.Topic, offset)
	}
	if res.Status == store.OffsetTooSmall {
		p.b.noteOffsetJump(r.Group, r.Topic, r.QueueID, offset, res.NextOffset)
	}
	return res, nil
}

// classify maps a store result to a pull result, or says to park at scan
// (then the store result is released).
//
// keep (a slave) leaves an offset past the queue's end where it is: see
// slaveKeepsOffset.
func classify(res *store.GetResult, offset int64, suspend, keep bool) (out *PullResult, park bool, scan int64) {
	out = &PullResult{NextBeginOffset: res.NextOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	if keep && slaveKeepsOffset(res.Status, offset) {
		res.Release()
		if suspend {
			return nil, true, offset
		}
		out.Status, out.NextBeginOffset = PullNoNewMsg, offset
		return out, false, 0
	}
	switch res.Status {
	case store.Found:
		out.Status = PullFound
		out.Body, out.Count, out.release = res.Body, res.Count, res.Release
		return out, false, 0
	case store.NoMatchedMessage:
		// Park only when the scan reached the end of the queue; otherwise
		// the client should come back at once for the rest.
		if suspend && res.NextOffset >= res.MaxOffset {
			res.Release()
			return nil, true, res.NextOffset
		}
		out.Status = PullNoMatched
	case store.OffsetOverflowOne:
		if suspend {
			return nil, true, offset
		}
		out.Status = PullNoNewMsg
	case store.NoMessageInQueue:
		if offset != 0 {
			out.Status = PullOffsetMoved
			out.NextBeginOffset = 0
			break
		}
		if suspend {
			return nil, true, offset
		}
		out.Status = PullNoNewMsg
		out.NextBeginOffset = 0
	case store.OffsetTooSmall, store.OffsetOverflowBadly:
		out.Status = PullOffsetMoved
	case store.OffsetFoundNull:
		out.Status = PullNoNewMsg
	default:
		out.Status = PullNoNewMsg
		out.NextBeginOffset = offset
	}
	res.Release()
	return out, false, 0
}

// Why a parked pull's goroutine was signalled.
type wake int

const (
	wakeArrived wake = iota + 1 // the queue grew: re-read
	wakeTimeout                 // deadline passed
	wakeClosed                  // connection or broker closed
	wakeCancel                  // ctx ended
)

// waiter is the Payload of a parked longpoll.Request. At most one signal
// is sent per park (every signal follows the request's removal from the
// table), so a one-slot channel never blocks the signaller.
type waiter struct {
	ch chan wake
	// notify: a pop notification's, not a pop's (PollingPops).
	notify bool
}

func signal(rs []*longpoll.Request, why wake) {
	for _, r := range rs {
		select {
		case r.Payload.(*waiter).ch <- why:
		default:
		}
	}
}

// pollState is the long-poll shell around a longpoll.Table: its lock,
// one clock timer armed for the earliest deadline, and a lock-free count
// the store listener checks first. Pulls and pops each have one (their
// bounds are counted apart).
type pollState struct {
	clk     clock.Clock
	mu      sync.Mutex
	table   *longpoll.Table
	closed  bool
	timer   clock.Timer
	timerAt time.Time
	gen     uint64 // identifies the armed timer
	parked  atomic.Int64
	// woken counts the requests handed back by events other than expiry
	// (for tests and benchmarks).
	woken atomic.Int64
	// testHookParked, when set (by tests, before any pull), runs after
	// each successful park.
	testHookParked func()
}

func (ps *pollState) init(clk clock.Clock, maxTotal, maxPerConn int) {
	ps.clk = clk
	ps.table = longpoll.New(maxTotal, maxPerConn)
}

func (p *puller) longPoll(ctx context.Context, scan int64) (*PullResult, error) {
	b := p.b
	w := &waiter{ch: make(chan wake, 1)}
	lr := &longpoll.Request{Topic: p.req.Topic, QueueID: p.req.QueueID, Offset: scan,
		Deadline: b.now().Add(min(p.req.SuspendTimeout, b.cfg.PullMaxSuspend)), Conn: p.req.Conn, Payload: w}
	for first := true; ; first = false {
		if err := b.polls.park(lr); err != nil {
			if first && errors.Is(err, longpoll.ErrFull) {
				return nil, errorf(KindServiceUnavailable, err, "too many pulls are waiting on broker %s (limits LongPollMaxTotal=%d, LongPollMaxPerConn=%d); retry later",
					b.cfg.BrokerName, b.cfg.LongPollMaxTotal, b.cfg.LongPollMaxPerConn)
			}
			return b.noNewMsg(p.req, lr.Offset), nil // closing, or full on a re-park
		}
		if h := b.polls.testHookParked; h != nil {
			h()
		}
		var why wake
		// A message may have arrived between the read and the park, before
		// the listener could see this request.
		if b.st.MaxOffset(lr.Topic, lr.QueueID) > lr.Offset && b.polls.unpark(lr) {
			why = wakeArrived
		} else {
			select {
			case why = <-w.ch:
			case <-ctx.Done():
				if !b.polls.unpark(lr) {
					<-w.ch // a signal is on its way
				}
				why = wakeCancel
			}
		}
		if why != wakeArrived {
			return b.noNewMsg(p.req, lr.Offset), nil
		}
		if !b.groupConsumable(p.req.Group) {
			return nil, b.errConsumeDisabled(p.req.Group) // disabled while parked
		}
		res, err := p.read(lr.Offset)
		if err != nil {
			return nil, err
		}
		out, park, scan := classify(res, lr.Offset, true, b.Role() == RoleSlave)
		if !park {
			return out, nil
		}
		lr.Offset = scan
		if !b.now().Before(lr.Deadline) {
			return b.noNewMsg(p.req, lr.Offset), nil
		}
	}
}

func (b *Broker) noNewMsg(req *PullRequest, offset int64) *PullResult {
	return &PullResult{Status: PullNoNewMsg, NextBeginOffset: offset,
		MinOffset: b.st.MinOffset(req.Topic, req.QueueID), MaxOffset: b.st.MaxOffset(req.Topic, req.QueueID)}
}

var errPollClosed = errors.New("broker: closed")

// park adds lr to the table and arms the timer for its deadline if it is
// the earliest.
func (ps *pollState) park(lr *longpoll.Request) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return errPollClosed
	}
	if err := ps.table.Park(lr); err != nil {
		return err
	}
	ps.parked.Store(int64(ps.table.Len()))
	ps.armIfEarlier(lr.Deadline)
	return nil
}

// armIfEarlier arms the timer for at when no timer is armed or at comes
// before it; ps.mu is held.
func (ps *pollState) armIfEarlier(at time.Time) {
	if ps.timer == nil || at.Before(ps.timerAt) {
		ps.armTimer(at)
	}
}

// armTimer replaces the timer with one for at; ps.mu is held.
func (ps *pollState) armTimer(at time.Time) {
	if ps.timer != nil {
		ps.timer.Stop()
	}
	ps.gen++
	gen := ps.gen
	ps.timerAt = at
	ps.timer = ps.clk.AfterFunc(at.Sub(ps.clk.Now()), func() { ps.expire(gen) })
}

// expire answers the requests whose deadline passed and re-arms the
// timer for the next deadline.
func (ps *pollState) expire(gen uint64) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return
	}
	expired := ps.table.Expired(ps.clk.Now())
	if gen == ps.gen {
		ps.timer = nil
		if next, ok := ps.table.NextDeadline(); ok {
			ps.armTimer(next)
		}
	}
	ps.parked.Store(int64(ps.table.Len()))
	ps.mu.Unlock()
	signal(expired, wakeTimeout)
}

// unpark removes lr and reports whether it was still parked.
func (ps *pollState) unpark(lr *longpoll.Request) bool {
	ps.mu.Lock()
	ok := ps.table.Remove(lr)
	ps.parked.Store(int64(ps.table.Len()))
	ps.mu.Unlock()
	return ok
}

// wake runs op, which removes requests from the table, and signals them
// why. It does nothing when nothing is parked.
func (ps *pollState) wake(why wake, op func(*longpoll.Table) []*longpoll.Request) {
	if ps.parked.Load() == 0 {
		return
	}
	ps.mu.Lock()
	rs := op(ps.table)
	ps.parked.Store(int64(ps.table.Len()))
	ps.mu.Unlock()
	ps.woken.Add(int64(len(rs)))
	signal(rs, why)
}

func (ps *pollState) close() {
	ps.mu.Lock()
	ps.closed = true
	if ps.timer != nil {
		ps.timer.Stop()
		ps.timer = nil
	}
	rs := ps.table.RemoveAll()
	ps.parked.Store(0)
	ps.mu.Unlock()
	signal(rs, wakeClosed)
}

// onArrived is the store listener: it runs on the dispatcher goroutine for
// every stored message, so it does no I/O and only signals.
func (b *Broker) onArrived(topic string, queueID int32, maxOffset int64) {
	b.kickTimers(topic)
	b.arrivedPops(topic, queueID, maxOffset)
	b.polls.wake(wakeArrived, func(t *longpoll.Table) []*longpoll.Request { return t.Arrived(topic, queueID, maxOffset) })
}

// answerConnPolls answers the pulls parked by conn.
func (b *Broker) answerConnPolls(conn uint64) {
	b.polls.wake(wakeClosed, func(t *longpoll.Table) []*longpoll.Request { return t.RemoveConn(conn) })
}

func (b *Broker) closePolls() { b.polls.close() }

// ParkedPulls returns the number of pulls waiting for messages.
func (b *Broker) ParkedPulls() int { return int(b.polls.parked.Load()) }
