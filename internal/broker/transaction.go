package broker

// Transactional messages (package txn does the bookkeeping): a prepared
// send is stored as a half message, END_TRANSACTION commits or rolls it
// back, and undecided ones are checked back with a live producer of the
// group through the ConnHandler of its connection.

import (
	"context"
	"errors"
	"math"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
)

// TransactionCheck is one check-back to send: to connection Conn (the
// handler's own), the CHECK_TRANSACTION_STATE header and body (the half
// message as stored).
type TransactionCheck struct {
	Conn   uint64
	Group  string
	Header txn.CheckHeader
	Body   []byte
}

// EndTransactionRequest is a decoded END_TRANSACTION.
type EndTransactionRequest = txn.EndRequest

// transactions holds the manager and the round-robin over a group's
// producers.
type transactions struct {
	m    *txn.Manager
	next atomic.Uint64
}

func (b *Broker) openTransactions() error {
	m, err := txn.New(b.st, b.meta, b.checkTransaction, txn.Config{Clock: b.clk, Logger: b.log,
		Timeout: b.cfg.TransactionTimeout, CheckInterval: b.cfg.TransactionCheckInterval, MaxChecks: b.cfg.TransactionMaxChecks,
		Standby: func() bool { return b.Role() == RoleSlave }})
	if err != nil {
		return err
	}
	b.txns.m = m
	m.Start()
	return nil
}

// checkTransaction is the manager's Checker: one live producer of the
// group gets the check, through the handler its front registered with
// RegisterConn; false (not counted) when the group has no producer, the
// chosen one has no handler, or the handler could not send it.
func (b *Broker) checkTransaction(group string, half message.Record, _ int64) bool {
	conns := b.ProducerConns(group)
	if len(conns) == 0 {
		return false
	}
	conn := conns[b.txns.next.Add(1)%uint64(len(conns))]
	h := b.conns.handler(conn)
	if h == nil {
		return false
	}
	hdr, body, err := txn.CheckRequest(half)
	if err != nil {
		b.log.Warn("cannot build a transaction check", "group", group, "err", err)
		return false
	}
	return h.CheckTransaction(TransactionCheck{Conn: conn, Group: group, Header: hdr, Body: body})
}

// EndTransaction commits or rolls back a half message (END_TRANSACTION).
// A second end of the same transaction is ignored.
func (b *Broker) EndTransaction(req EndTransactionRequest) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "transaction ends"); err != nil {
		return err
	}
	if err := b.refuseOnLease(KindServiceUnavailable, "transaction ends"); err != nil {
		return err
	}
	if err := b.txns.m.End(req); err != nil {
		return errorf(KindSystemError, err, "ending the transaction of half message at offset %d failed", req.CommitLogOffset)
	}
	return nil
}

// maxHalfCopies bounds the half records FindHalf reads for one id (a
// transaction's checked copies share it).
const maxHalfCopies = 16

// FindHalf finds the half message of a transaction by its transaction id
// (the half's __transactionId__, its UNIQ_KEY: RocketMQ's transaction id
// and what the 5.x front hands its producers) and returns the commit-log
// and half-topic queue offsets an EndTransactionRequest names it by: the
// newest copy of producerGroup, else the newest of any group (End then
// refuses it as another group's). A half stored but not dispatched yet is
// waited for (bounded by ctx). Errors (*Error): KindQueryNotFound when no
// half has the id, KindSystemError when the index cannot be read.
func (b *Broker) FindHalf(ctx context.Context, producerGroup, transactionID string) (commitLogOffset, queueOffset int64, err error) {
	if b.closed.Load() {
		return 0, 0, b.errClosed()
	}
	for attempt := 0; ; attempt++ {
		recs, err := b.st.QueryByKey(txn.HalfTopic, transactionID, 0, math.MaxInt64, maxHalfCopies)
		if err != nil {
			return 0, 0, errorf(KindSystemError, err, "looking up transaction %q failed; retry", transactionID)
		}
		var other message.Record
		for _, r := range recs {
			if !halfOf(r, transactionID) {
				continue
			}
			if g, _ := r.Property(txn.PropertyProducerGroup); string(g) == producerGroup {
				return r.PhysicalOffset(), r.QueueOffset(), nil
			}
			if other == nil {
				other = r
			}
		}
		if other != nil {
			return other.PhysicalOffset(), other.QueueOffset(), nil
		}
		if attempt > 0 {
			return 0, 0, errorf(KindQueryNotFound, nil, "no half message of transaction %q is stored on broker %s", transactionID, b.cfg.BrokerName)
		}
		// Perhaps stored and not dispatched yet: wait for what is durable.
		if err := b.st.WaitDispatched(ctx); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return 0, 0, errorf(KindQueryNotFound, err, "no half message of transaction %q is stored on broker %s", transactionID, b.cfg.BrokerName)
			}
			return 0, 0, errorf(KindSystemError, err, "looking up transaction %q failed; retry", transactionID)
		}
	}
}

// halfOf reports whether half record r belongs to transaction id: its
// __transactionId__, or (a half stored before it had one) its UNIQ_KEY.
func halfOf(r message.Record, id string) bool {
	if v, ok := r.Property(txn.PropertyTransactionID); ok {
		return string(v) == id
	}
	v, ok := r.Property(message.PropertyUniqKey)
	return ok && string(v) == id
}

// OpenTransactions is the number of undecided transactions as of the last
// check round.
func (b *Broker) OpenTransactions() int { return b.txns.m.Pending() }
