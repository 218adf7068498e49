package broker

// The master lease (issue 17, replication.md §2.3, §2.5): in controller
// mode a master may acknowledge sends only while it holds a lease the
// controller granted it. The controller elects a successor only after the
// old lease has surely expired, so a master whose lease ran out on its own
// monotonic clock must stop answering SEND_OK: an isolated or paused master
// then cannot acknowledge what a new master will not have (rocketmq#7017).
//
// The broker checks Config.Lease twice per send: at admission (an expired
// lease refuses the send with KindServiceUnavailable, nothing stored) and
// when answering a stored send (after the local flush and, with sync
// replication, after the commit point covers it): an expired lease then
// turns SEND_OK into FLUSH_SLAVE_TIMEOUT, stored but in doubt. Both count
// in LeaseRefusals (petrel_broker_lease_refusals_total).

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// ErrLeaseExpired is the cause of every refusal for an expired lease.
var ErrLeaseExpired = errors.New("broker: master lease expired")

// Lease says whether this broker may act as its group's master now. Valid
// is called on every send (twice): it must be quick, must not block, and
// must be safe for concurrent use.
type Lease interface {
	Valid() bool
}

// LeaseTimer is a Lease that the controller's grants extend: valid while
// the clock is before the last granted expiry and not revoked. The zero
// value is not usable; NewLeaseClock makes one (invalid until the first
// Extend). Safe for concurrent use; Valid reads the clock once and loads
// one atomic value, and nothing allocates.
type LeaseTimer struct {
	clk  clock.Clock
	base time.Time    // clk.Now() at construction; expiries are offsets from it
	exp  atomic.Int64 // expiry as nanoseconds since base; math.MinInt64: none
}

// NewLeaseClock returns a LeaseTimer on clk, invalid until Extend. With
// the real clock, times are compared by their monotonic readings (the
// time.Time values clk.Now returns carry them), so a change of the wall
// clock neither extends nor shortens a lease.
func NewLeaseClock(clk clock.Clock) *LeaseTimer {
	l := &LeaseTimer{clk: clk, base: clk.Now()}
	l.exp.Store(math.MinInt64)
	return l
}

// Extend makes the lease valid until until (exclusive), a time taken from
// the same clock: the send time of the granted heartbeat plus the lease
// duration. It never shortens the lease: a grant that answers an older
// heartbeat after a newer one changes nothing. After Revoke, the next
// Extend makes the lease valid again; a caller that revokes (a transfer)
// must not pass on grants of heartbeats sent before the Revoke.
func (l *LeaseTimer) Extend(until time.Time) {
	e := int64(until.Sub(l.base))
	for {
		cur := l.exp.Load()
		if e <= cur || l.exp.CompareAndSwap(cur, e) {
			return
		}
	}
}

// Revoke ends the lease at once (a master turning slave, or fencing itself
// for a transfer).
func (l *LeaseTimer) Revoke() { l.exp.Store(math.MinInt64) }

// Valid reports whether the lease holds now.
func (l *LeaseTimer) Valid() bool {
	e := l.exp.Load()
	return e != math.MinInt64 && int64(l.clk.Now().Sub(l.base)) < e
}

// Until is the expiry of the lease, and false when there is none (never
// extended, or revoked). For status pages and logs.
func (l *LeaseTimer) Until() (time.Time, bool) {
	e := l.exp.Load()
	if e == math.MinInt64 {
		return time.Time{}, false
	}
	return l.base.Add(time.Duration(e)), true
}

// LeaseRefusals counts the sends refused or left unacknowledged because
// the master lease (Config.Lease) had expired, since the broker started.
func (b *Broker) LeaseRefusals() uint64 { return b.leaseRefusals.Load() }

// refuseOnLease returns the refusal of what on a master whose lease is not
// valid, or nil (also without a lease). The send path pays a nil check
// without a lease, and Valid plus one atomic load with one.
func (b *Broker) refuseOnLease(k Kind, what string) *Error {
	if b.leaseValid() {
		return nil
	}
	return errorf(k, ErrLeaseExpired, "broker %s's master lease expired: it may no longer be the master of %s and takes no %s; the client retries the new master",
		b.cfg.BrokerName, b.cfg.BrokerName, what)
}

// leaseValid checks Config.Lease (true without one); a failed check is
// counted, and the first of a lapse logged.
func (b *Broker) leaseValid() bool {
	l := b.cfg.Lease
	if l == nil {
		return true
	}
	if l.Valid() {
		if b.leaseLapsed.Load() && b.leaseLapsed.CompareAndSwap(true, false) {
			b.log.Info("master lease valid again: acknowledging sends")
		}
		return true
	}
	b.leaseRefusals.Add(1)
	if !b.leaseLapsed.Load() && b.leaseLapsed.CompareAndSwap(false, true) {
		b.log.Warn("master lease expired: refusing sends and answering stored ones FLUSH_SLAVE_TIMEOUT until the controller grants it again",
			"role", b.Role().String())
	}
	return false
}

// leaseAnswer is res as a stored send may be answered now: a SEND_OK on a
// master whose lease is no longer valid becomes FLUSH_SLAVE_TIMEOUT
// (stored, in doubt, not acknowledged), so that no SEND_OK is written
// after the lease ran out.
func (b *Broker) leaseAnswer(res SendResult) SendResult {
	if res.Status == SendOK && !b.leaseValid() {
		res.Status = SendFlushSlaveTimeout
	}
	return res
}
