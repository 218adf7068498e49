package broker

// Delayed delivery: RocketMQ 4.x delay levels (the DELAY property) and 5.x
// delivery times (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS) share
// one path. A send that is not due yet is stored as a record of the system
// topic rmq_sys_wheel_timer (queue 0) with its real topic and queue in
// REAL_TOPIC / REAL_QID and its due time in TIMER_OUT_MS, so it is durable
// like any message and invisible to consumers. The timer store
// (internal/broker/timer) indexes those records: a feeder reads the timer
// topic's queue as the dispatcher fills it and adds each record; when a
// timer is due the broker reads the record, restores topic and queue,
// drops the timer properties and stores the message in its real topic.
// After a restart the feeder replays the timer topic from the timer store's
// Applied() mark, so nothing is lost; a crash between delivering and the
// timer store's checkpoint may deliver a message twice (same UNIQ_KEY).
//
// A record must outlive its delay, but the commit log keeps segments only
// for the store's reserve time (72 h by default) while delays may reach
// MaxTimerDelay (7 days, or a year). So a timer due later than half the
// reserve time is indexed to fire at that half-way point instead; when it
// fires the broker stores a fresh copy of the record in the timer topic
// (same due time), which the feeder indexes again — the record rolls
// forward through the log and is never older than the reserve time.
//
// Retry back-off (CONSUMER_SEND_MSG_BACK) uses the same levels.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/timer"
	"github.com/petrelmq/petrel/internal/message"
)

// TimerTopic holds messages that are not due yet.
const TimerTopic = "rmq_sys_wheel_timer"

// Timer properties.
const (
	PropertyTimerOutMS    = "TIMER_OUT_MS"
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS  = "TIMER_DELAY_MS" // a map-properties send's Delay.After
	// PropertyTimerDelUniqKey marks a cancel record: the delayed message
	// with this UNIQ_KEY must not be delivered (RocketMQ 5's name).
	PropertyTimerDelUniqKey = "TIMER_DEL_UNIQKEY"
	// propTimerRolled marks a timer record rolled forward at least once.
	propTimerRolled = "PETREL_TIMER_ROLLED"
)

// cancelKeyPrefix + UNIQ_KEY is the KEYS of a cancel record, so that a
// rolling timer can find out it was cancelled.
const cancelKeyPrefix = "TIMER_DEL_"

// timerProps are removed from a retry or dead-letter copy: its own delay
// is the broker's, not the original send's.
var timerProps = []string{
	message.PropertyDelayLevel, message.PropertyTimerDeliverMS, PropertyTimerDelaySec, PropertyTimerDelayMS,
	PropertyTimerOutMS, message.PropertyRealTopic, message.PropertyRealQueueID, propTimerRolled,
}

// firedProps are removed from a delayed message when the timer delivers
// it. TIMER_DELIVER_MS stays, as in RocketMQ 5 (its timer keeps the
// sender's properties): it is how a 5.x consumer sees the message as
// DELAY with its delivery timestamp. A time in the past delays nothing,
// so a copy sent on again is not held a second time.
var firedProps = []string{
	message.PropertyDelayLevel, PropertyTimerDelaySec, PropertyTimerDelayMS,
	PropertyTimerOutMS, message.PropertyRealTopic, message.PropertyRealQueueID, propTimerRolled,
}

// timers is the broker's side of the timer store.
type timers struct {
	ts    *timer.Store
	fired *timer.FiredSet        // timers the master fired (state replication), slavestate.go
	hook  atomic.Pointer[func()] // tests: called after each feed and fire
	fed   atomic.Int64           // timer-topic queue offset the feeder has reached
	kick  chan struct{}
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// dueAt returns when a message sent with delay d is due (unix ms), or ok
// false when it is not delayed. A level above the last means the last; a
// due time not in the future means now (ok false: store it at once). A
// delay beyond MaxTimerDelay is refused (ErrDeliveryTime in the chain).
func (b *Broker) dueAt(d message.Delay) (at int64, ok bool, err error) {
	now := b.clk.Now().UnixMilli()
	switch {
	case d.AtMS != 0:
		at = d.AtMS
	case d.After > 0:
		if d.After > b.cfg.MaxTimerDelay {
			return 0, false, b.errTooFar(d.After)
		}
		at = now + d.After.Milliseconds()
	case d.Level > 0:
		lv := min(int(d.Level), len(b.cfg.DelayLevels))
		at = now + b.cfg.DelayLevels[lv-1].Milliseconds()
	default:
		return 0, false, nil
	}
	if at <= now {
		return 0, false, nil
	}
	if d := time.Duration(at-now) * time.Millisecond; d > b.cfg.MaxTimerDelay {
		return 0, false, b.errTooFar(d)
	}
	return at, true, nil
}

func (b *Broker) errTooFar(d time.Duration) *Error {
	return errorf(KindMessageIllegal, ErrDeliveryTime, "the message is due in %v, beyond the broker's limit of %v (MaxTimerDelay); deliver it sooner or raise the limit", d.Round(time.Second), b.cfg.MaxTimerDelay)
}

// deferIfDelayed turns m into a timer-topic record when its delay d has
// it due later than now.
func (b *Broker) deferIfDelayed(m *message.Message, d message.Delay) error {
	if m.Topic == TimerTopic {
		return errorf(KindMessageIllegal, nil, "topic %s is reserved for delayed messages; send to your own topic with a delay", TimerTopic)
	}
	if d.IsZero() {
		return nil
	}
	at, ok, err := b.dueAt(d)
	if err != nil || !ok {
		return err
	}
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.SetProperty(PropertyTimerOutMS, strconv.FormatInt(at, 10))
	m.Topic, m.QueueID = TimerTopic, 0
	return nil
}

// openTimers opens the timer store in the store's directory, replays the
// timer topic from its Applied mark and starts the feeder and the firing.
func (b *Broker) openTimers() error {
	sc := b.st.Config()
	ts, err := timer.Open(sc.FS, path.Join(sc.Dir, "timer"), timer.Options{
		Clock:    b.clk,
		MaxDelay: b.cfg.MaxTimerDelay,
		Fire:     b.fireTimers,
		Logger:   b.log,
	})
	if err != nil {
		return fmt.Errorf("open the timer store: %w", err)
	}
	fired, err := b.openFiredTimers()
	if err != nil {
		ts.Close()
		return fmt.Errorf("open the fired-timer set: %w", err)
	}
	t := &timers{ts: ts, fired: fired, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	b.timers = t
	if err := b.feedTimers(); err != nil {
		ts.Close()
		t.closeFired()
		return err
	}
	if err := ts.Start(); err != nil {
		ts.Close()
		t.closeFired()
		return fmt.Errorf("start the timer store: %w", err)
	}
	go b.timerFeeder()
	return nil
}

// timerFeeder adds new timer-topic records as they are dispatched.
func (b *Broker) timerFeeder() {
	t := b.timers
	defer close(t.done)
	for {
		select {
		case <-t.kick:
			if err := b.feedTimers(); err != nil {
				b.log.Error("adding delayed messages to the timer store failed; they are delivered after a restart", "err", err)
			}
			t.testHook()
		case <-t.quit:
			return
		}
	}
}

// feedTimers adds the timer-topic records from the timer store's Applied
// mark to the queue's end.
func (b *Broker) feedTimers() error {
	t := b.timers
	off := t.ts.Applied()
	for off < b.st.MaxOffset(TimerTopic, 0) {
		res, err := b.st.GetMessages(TimerTopic, 0, off, 256, 1<<20, nil)
		if err != nil {
			return err
		}
		if res.Count == 0 {
			res.Release()
			if res.NextOffset <= off {
				return nil
			}
			off = res.NextOffset // skipped entries (retention)
			continue
		}
		var addErr error
		res.Records(func(r message.Record) {
			if addErr != nil {
				return
			}
			out, _ := r.Property(PropertyTimerOutMS)
			at, perr := strconv.ParseInt(string(out), 10, 64)
			if perr != nil {
				b.log.Warn("timer record without a due time; delivering it now", "offset", r.PhysicalOffset())
				at = 0
			}
			now := b.clk.Now()
			if limit := now.Add(b.cfg.MaxTimerDelay).UnixMilli(); at > limit {
				// Accepted under a higher limit before a restart.
				at = limit
			}
			if roll := now.Add(b.rollAfter()).UnixMilli(); at > roll {
				at = roll // fire early to roll the record forward
			}
			if del, ok := r.Property(PropertyTimerDelUniqKey); ok {
				addErr = t.ts.Cancel(timerKey(string(del)), at, r.QueueOffset())
				return
			}
			e := timer.Entry{DeliverAt: at, Offset: r.PhysicalOffset(), Size: r.TotalSize()}
			if uk, ok := r.Property(message.PropertyUniqKey); ok {
				e.Key = timerKey(string(uk))
			}
			addErr = t.ts.Add(e, r.QueueOffset())
		})
		res.Release()
		if addErr != nil {
			return addErr
		}
		off = res.NextOffset
		t.fed.Store(off)
	}
	t.fed.Store(max(t.fed.Load(), off))
	return nil
}

// timerKey is the timer store's key of a message id.
func timerKey(uniq string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(uniq))
	return h.Sum64() | 1 // 0 means "no key"
}

func (t *timers) closeFired() {
	if t.fired != nil {
		t.fired.Close()
	}
}

func (t *timers) testHook() {
	if h := t.hook.Load(); h != nil {
		(*h)()
	}
}

// fireTimers delivers due timer records to their real topics. A slave
// delivers nothing (the master's deliveries reach it by replication): its
// timer store offers the entries again after a back-off, so a slave that
// becomes the master delivers them then. With state replication a slave
// passes the timers its master fired, and a promoted one delivers only
// the others (slavestate.go).
func (b *Broker) fireTimers(due []timer.Entry) error {
	if t := b.timers; t != nil {
		defer t.testHook()
	}
	if b.Role() == RoleSlave {
		if b.stateOn() {
			return b.firedOnSlave(due)
		}
		return b.errSlave(KindServiceUnavailable, "timer deliveries")
	}
	due = b.unfired(due)
	msgs := make([]*message.Message, 0, len(due))
	for _, e := range due {
		rec, err := b.st.ReadMessage(e.Offset)
		if err != nil {
			// Retention took the record (the delay outlived the commit
			// log's reserve time): nothing left to deliver.
			b.log.Error("a delayed message's record is gone; it cannot be delivered", "offset", e.Offset, "err", err)
			continue
		}
		m, _, err := message.Decode(rec)
		if err != nil {
			b.log.Error("a delayed message's record does not decode; it cannot be delivered", "offset", e.Offset, "err", err)
			continue
		}
		out, _ := strconv.ParseInt(m.Property(PropertyTimerOutMS), 10, 64)
		roll := out > b.clk.Now().UnixMilli()
		// The timer store drops a cancelled timer itself when the cancel
		// names the time it was indexed for; a timer indexed early to roll
		// forward, and its copies, are checked against the cancel records.
		if (roll || m.Property(propTimerRolled) != "") && b.cancelled(m.Property(message.PropertyUniqKey)) {
			continue
		}
		if roll {
			// Not due: store a fresh copy of the timer record.
			m.SetProperty(propTimerRolled, "true")
			msgs = append(msgs, m)
			continue
		}
		topic := m.Property(message.PropertyRealTopic)
		qid, _ := strconv.Atoi(m.Property(message.PropertyRealQueueID))
		if topic == "" {
			b.log.Error("a delayed message has no REAL_TOPIC; dropped", "offset", e.Offset)
			continue
		}
		for _, k := range firedProps {
			m.RemoveProperty(k)
		}
		m.Topic, m.QueueID = topic, int32(qid) // the body and its CRC stay
		msgs = append(msgs, m)
	}
	if len(msgs) > 0 {
		if err := b.st.PutBatch(msgs); err != nil {
			return fmt.Errorf("deliver %d delayed messages: %w", len(msgs), err)
		}
	}
	b.emitTimersFired(due)
	return nil
}

// ErrCancelledAlready is in the chain of CancelDelayed's error for a
// message cancelled before (KindQueryNotFound: not pending any more).
var ErrCancelledAlready = errors.New("broker: delayed message cancelled already")

// CancelDelayed cancels a delayed message that is not delivered yet, by
// its message id (the UNIQ_KEY the producer's send result names). The
// cancel is a record of the timer topic, so it survives a restart.
func (b *Broker) CancelDelayed(ctx context.Context, uniq string) error {
	return b.CancelDelayedIn(ctx, uniq, "")
}

// CancelDelayedIn is CancelDelayed of a message of topic only (the topic
// it was sent to); "" means of any topic. A message of another topic is
// not found.
func (b *Broker) CancelDelayedIn(ctx context.Context, uniq, topic string) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "cancellations of delayed messages"); err != nil {
		return err
	}
	// A message just acknowledged may not be in the index yet.
	if err := b.st.WaitDispatched(ctx); err != nil {
		return errorf(KindServiceUnavailable, err, "the broker is still indexing; retry the cancel")
	}
	now := b.clk.Now().UnixMilli()
	recs, err := b.st.QueryByKey(TimerTopic, uniq, 0, math.MaxInt64, 16)
	if err != nil {
		return errorf(KindSystemError, err, "looking up delayed message %q failed", uniq)
	}
	at := int64(-1)
	for _, r := range recs {
		if k, _ := r.Property(message.PropertyUniqKey); string(k) != uniq {
			continue
		}
		if rt, _ := r.Property(message.PropertyRealTopic); topic != "" && string(rt) != topic {
			continue
		}
		if out, _ := r.Property(PropertyTimerOutMS); len(out) > 0 {
			at, _ = strconv.ParseInt(string(out), 10, 64)
		}
	}
	switch {
	case at < 0 && topic != "":
		return errorf(KindQueryNotFound, nil, "no delayed message with id %q in topic %q on broker %s; it may have been delivered and its timer record removed, or it was never delayed here", uniq, topic, b.cfg.BrokerName)
	case at < 0:
		return errorf(KindQueryNotFound, nil, "no delayed message with id %q; check the id (the producer's msgId, not the offset id)", uniq)
	case b.cancelled(uniq):
		return errorf(KindQueryNotFound, ErrCancelledAlready, "delayed message %q is cancelled already; it will not be delivered", uniq)
	case at <= now:
		return errorf(KindMessageIllegal, nil, "delayed message %q was due at %s and is delivered (or being delivered); it cannot be cancelled", uniq, time.UnixMilli(at).UTC().Format(time.RFC3339))
	}
	m := &message.Message{Topic: TimerTopic, Body: []byte("cancel"), BornTimestamp: now,
		BornHost: netip.AddrPortFrom(netip.IPv4Unspecified(), 0)}
	m.SetProperty(PropertyTimerDelUniqKey, uniq)
	m.SetProperty(PropertyTimerOutMS, strconv.FormatInt(at, 10))
	m.SetProperty(message.PropertyKeys, cancelKeyPrefix+uniq)
	if _, err := b.sendResult([]*message.Message{m}, 0, b.st.Put(m)); err != nil {
		return err
	}
	return nil
}

// recallHandle is the recall handle of m as stored, a single sent
// message: empty unless m is a timer record (not due yet when sent) of a
// topic other than a %RETRY% one, with a UNIQ_KEY. As in RocketMQ, the
// handle's timestamp is the due time plus one (a reader that floors a
// time to the second still finds it in the future while it is pending).
func (b *Broker) recallHandle(m *message.Message) string {
	if m.Topic != TimerTopic {
		return ""
	}
	real, uniq := m.Property(message.PropertyRealTopic), m.Property(message.PropertyUniqKey)
	if real == "" || uniq == "" || strings.HasPrefix(real, RetryGroupTopicPrefix) {
		return ""
	}
	at, err := strconv.ParseInt(m.Property(PropertyTimerOutMS), 10, 64)
	if err != nil {
		return ""
	}
	return message.EncodeRecallHandle(real, b.cfg.BrokerName, at, uniq)
}

// cancelled reports whether a cancel record names uniq.
func (b *Broker) cancelled(uniq string) bool {
	if uniq == "" {
		return false
	}
	recs, err := b.st.QueryByKey(TimerTopic, cancelKeyPrefix+uniq, 0, math.MaxInt64, 1)
	return err == nil && len(recs) > 0
}

// rollAfter is how far ahead a timer may be indexed before its record is
// rolled forward: half the commit log's reserve time, at least a minute.
func (b *Broker) rollAfter() time.Duration {
	return max(b.st.Config().FileReservedTime/2, time.Minute)
}

// kickTimers wakes the feeder when the timer topic grew. Store listener.
func (b *Broker) kickTimers(topic string) {
	if t := b.timers; t != nil && topic == TimerTopic {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// closeTimers stops the feeder and the timer store.
func (b *Broker) closeTimers() {
	t := b.timers
	if t == nil {
		return
	}
	t.once.Do(func() {
		close(t.quit)
		<-t.done
		if err := t.ts.Close(); err != nil {
			b.log.Warn("closing the timer store failed", "err", err)
		}
		t.closeFired()
	})
}

// TimersCaughtUp reports whether the timer store has read every record
// of the timer topic stored so far: each delayed send's timer and each
// cancel (a recall or a cancel by id) is in effect. A record is read from
// its consume queue, which the store fills after the put returns, so the
// store must have dispatched everything durable first: else a cancel just
// answered is not yet counted and the timers look caught up without it.
func (b *Broker) TimersCaughtUp() bool {
	if b.timers == nil {
		return true
	}
	now, cancel := context.WithCancel(context.Background())
	cancel()
	return b.st.WaitDispatched(now) == nil && b.timers.fed.Load() >= b.st.MaxOffset(TimerTopic, 0)
}

// PendingTimers is the number of delayed messages not yet delivered.
func (b *Broker) PendingTimers() int64 {
	if b.timers == nil {
		return 0
	}
	return b.timers.ts.Pending()
}
