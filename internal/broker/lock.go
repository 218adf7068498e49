package broker

// Orderly queue locks: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42). A lock
// is keyed by (group, topic, broker name, queue id) and held by a client
// id until it is unlocked or not renewed for LockExpiry. Like Java, the
// broker does not release a lock when its holder's connection closes: the
// holder may still be consuming from memory, and orderly consumers only
// consume while their lock was renewed in the last 30 s.

import "time"

// QueueRef names a message queue as lock requests do.
type QueueRef struct {
	Topic, BrokerName string
	QueueID           int32
}

type lockKey struct {
	group string
	q     QueueRef
}

type lockEntry struct {
	clientID string
	renewed  time.Time
}

// LockQueues locks or renews qs for clientID in group and returns, in
// request order, the queues clientID now holds: those it held already and
// those free or whose lock expired. A queue locked by another client and
// renewed within LockExpiry is left out.
func (b *Broker) LockQueues(group, clientID string, qs []QueueRef) []QueueRef {
	now := b.now()
	out := make([]QueueRef, 0, len(qs))
	b.locksMu.Lock()
	defer b.locksMu.Unlock()
	for _, q := range qs {
		k := lockKey{group, q}
		if e, ok := b.locks[k]; ok && e.clientID != clientID && now.Sub(e.renewed) < b.cfg.LockExpiry {
			continue
		}
		b.locks[k] = lockEntry{clientID: clientID, renewed: now}
		out = append(out, q)
	}
	return out
}

// UnlockQueues releases the locks on qs that clientID holds in group;
// others are left alone.
func (b *Broker) UnlockQueues(group, clientID string, qs []QueueRef) {
	b.locksMu.Lock()
	defer b.locksMu.Unlock()
	for _, q := range qs {
		k := lockKey{group, q}
		if e, ok := b.locks[k]; ok && e.clientID == clientID {
			delete(b.locks, k)
		}
	}
}

// LockHolder returns the client holding a live lock on q in group.
func (b *Broker) LockHolder(group string, q QueueRef) (string, bool) {
	now := b.now()
	b.locksMu.Lock()
	defer b.locksMu.Unlock()
	e, ok := b.locks[lockKey{group, q}]
	if !ok || now.Sub(e.renewed) >= b.cfg.LockExpiry {
		return "", false
	}
	return e.clientID, true
}

// expireLocks forgets locks not renewed for LockExpiry.
func (b *Broker) expireLocks(now time.Time) {
	b.locksMu.Lock()
	defer b.locksMu.Unlock()
	for k, e := range b.locks {
		if now.Sub(e.renewed) >= b.cfg.LockExpiry {
			delete(b.locks, k)
		}
	}
}
