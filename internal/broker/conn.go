package broker

// Connections: every client connection a front serves (a remoting TCP
// connection, a gRPC client session) is registered here. The broker hands
// out its id, one sequence for every protocol, so that an id names one
// connection whatever front owns it; it routes what is pushed to clients
// (transaction check-backs, NOTIFY_CONSUMER_IDS_CHANGED) to the handler
// the owning front registered, and it expires registrations that have an
// idle timeout and are not touched for that long (the gRPC sessions) in
// the same sweep that expires heartbeat memberships and queue locks.
//
// A front calls RegisterConn once per connection, passes the id with
// heartbeats and pulls, TouchConn on client traffic that proves liveness,
// and ConnClosed when the connection ends. The broker calls the handler's
// Expired when it drops an idle registration itself.

import (
	"net/netip"
	"sync"
	"time"
)

// Protocols of ConnInfo.Protocol.
const (
	ProtocolRemoting = "remoting" // RocketMQ 4.x remoting over TCP
	ProtocolGRPC     = "grpc"     // RocketMQ 5.x gRPC client session
)

// ConnInfo describes a registered connection.
type ConnInfo struct {
	// Protocol is ProtocolRemoting or ProtocolGRPC (for logs and
	// inspection; the broker does not branch on it).
	Protocol string
	// Remote is the client's address, the zero value when unknown.
	Remote netip.AddrPort
	// ClientID is the client's id when the front knows it at registration
	// (a gRPC session), else empty; for logs.
	ClientID string
	// IdleTimeout: a registration not touched (RegisterConn, TouchConn)
	// for this long is expired by the broker: its client registrations are
	// dropped as by ConnClosed and its handler's Expired is called. It is
	// swept every min(10 s, max(IdleTimeout/4, 250 ms)), so it ends
	// between IdleTimeout and IdleTimeout plus one sweep after the last
	// touch. 0: never; the front calls ConnClosed when the transport ends
	// (remoting).
	IdleTimeout time.Duration
}

// ConnHandler is what the broker pushes to one registered connection; its
// front implements it per connection or session. The broker calls it with
// no lock of its own held, possibly concurrently; no method may block for
// long.
type ConnHandler interface {
	// CheckTransaction sends a transaction check-back to the producer and
	// reports whether it went out; false leaves the check uncounted, and
	// the transaction is checked again an interval later.
	CheckTransaction(TransactionCheck) bool
	// NotifyConsumerIDsChanged tells a member of group that the group's
	// client-id set changed, so that it rebalances now. A protocol whose
	// clients do not rebalance ignores it.
	NotifyConsumerIDsChanged(group string)
	// Expired tells the front that the broker dropped the registration
	// after IdleTimeout without a touch; the id is unknown to the broker
	// from then on. Never called after ConnClosed of the id.
	Expired()
}

// connEntry is one registration.
type connEntry struct {
	info      ConnInfo
	h         ConnHandler
	lastTouch time.Time
}

// connTable holds the registrations. Its mutex is never held while a
// handler runs or while the client table's is taken.
type connTable struct {
	mu   sync.Mutex
	next uint64 // last id handed out
	byID map[uint64]*connEntry
	// idle counts the live registrations per IdleTimeout > 0 (the sweep
	// interval follows the shortest).
	idle map[time.Duration]int
}

func (t *connTable) init() {
	t.byID = make(map[uint64]*connEntry)
	t.idle = make(map[time.Duration]int)
}

// removeLocked forgets id; mu is held.
func (t *connTable) removeLocked(id uint64) *connEntry {
	e := t.byID[id]
	if e == nil {
		return nil
	}
	delete(t.byID, id)
	if d := e.info.IdleTimeout; d > 0 {
		if t.idle[d]--; t.idle[d] <= 0 {
			delete(t.idle, d)
		}
	}
	return e
}

// remove forgets id and returns its entry, nil when it is not registered.
func (t *connTable) remove(id uint64) *connEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(id)
}

// handler returns the handler of id, nil when it is not registered.
func (t *connTable) handler(id uint64) ConnHandler {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byID[id]; e != nil {
		return e.h
	}
	return nil
}

// gone reports whether id was handed out and is closed or expired since;
// an id never handed out is not gone (callers may use their own ids
// without registering them, as the broker's tests do).
func (t *connTable) gone(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return id != 0 && id <= t.next && t.byID[id] == nil
}

// expiredConn is a registration the sweep dropped.
type expiredConn struct {
	id   uint64
	e    *connEntry
	idle time.Duration
}

// expire removes the registrations idle for their IdleTimeout at now.
func (t *connTable) expire(now time.Time) []expiredConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []expiredConn
	for id, e := range t.byID {
		if d := e.info.IdleTimeout; d > 0 && now.Sub(e.lastTouch) >= d {
			out = append(out, expiredConn{id: id, e: e, idle: now.Sub(e.lastTouch)})
		}
	}
	for _, x := range out {
		t.removeLocked(x.id)
	}
	return out
}

// idleInterval is the sweep interval a registration of idle timeout d
// needs.
func idleInterval(d time.Duration) time.Duration {
	return min(10*time.Second, max(d/4, 250*time.Millisecond))
}

// sweepInterval is the shortest interval the live idle timeouts need, or
// 0 when there is none.
func (t *connTable) sweepInterval() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out time.Duration
	for d := range t.idle {
		if i := idleInterval(d); out == 0 || i < out {
			out = i
		}
	}
	return out
}

// RegisterConn registers a client connection or session and returns its
// id: unique among every protocol's connections for the broker's life,
// never 0. The front passes the id with heartbeats and pulls and calls
// ConnClosed when the connection ends; check-backs and consumer-id
// notifications for the id go to h (nil: nothing is pushed to it).
// info.IdleTimeout > 0 makes the broker
// expire the registration when it is not touched for that long (see
// ConnInfo).
func (b *Broker) RegisterConn(info ConnInfo, h ConnHandler) uint64 {
	now := b.now()
	t := &b.conns
	t.mu.Lock()
	t.next++
	id := t.next
	t.byID[id] = &connEntry{info: info, h: h, lastTouch: now}
	if info.IdleTimeout > 0 {
		t.idle[info.IdleTimeout]++
	}
	t.mu.Unlock()
	if info.IdleTimeout > 0 {
		b.sweepWithin(idleInterval(info.IdleTimeout))
	}
	return id
}

// TouchConn marks a registration alive now (its idle timeout starts
// again) and reports whether it is registered: false once it was closed or
// expired, and the front should then treat the client as unknown.
func (b *Broker) TouchConn(id uint64) bool {
	now := b.now()
	t := &b.conns
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byID[id]
	if e == nil {
		return false
	}
	e.lastTouch = now
	return true
}

// Conn returns the registration of id, false when it is not (or no longer)
// registered.
func (b *Broker) Conn(id uint64) (ConnInfo, bool) {
	t := &b.conns
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byID[id]; e != nil {
		return e.info, true
	}
	return ConnInfo{}, false
}

// Conns is the number of registered connections.
func (b *Broker) Conns() int {
	t := &b.conns
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
