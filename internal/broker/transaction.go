package broker

// Transactional messages (package txn does the bookkeeping): a prepared
// send is stored as a half message, END_TRANSACTION commits or rolls it
// back, and undecided ones are checked back with a live producer of the
// group through the front's CHECK_TRANSACTION_STATE sender.

import (
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
)

// TransactionCheck is one check-back to send: to connection Conn, the
// CHECK_TRANSACTION_STATE header and body (the half message as stored).
type TransactionCheck struct {
	Conn   uint64
	Group  string
	Header txn.CheckHeader
	Body   []byte
}

// EndTransactionRequest is a decoded END_TRANSACTION.
type EndTransactionRequest = txn.EndRequest

// transactions holds the manager and the fronts' check senders.
type transactions struct {
	m    *txn.Manager
	send atomic.Pointer[[]func(TransactionCheck) bool]
	next atomic.Uint64 // round-robin over a group's producers
}

// OnTransactionCheck adds a sender of check-backs (one per front); it
// reports whether the request went out, and returns false for a
// connection that is not its own, so that the next sender is tried.
// Without a sender no check is sent (and none is counted against the
// transaction).
func (b *Broker) OnTransactionCheck(fn func(TransactionCheck) bool) {
	for {
		old := b.txns.send.Load()
		var fns []func(TransactionCheck) bool
		if old != nil {
			fns = append(fns, *old...)
		}
		fns = append(fns, fn)
		if b.txns.send.CompareAndSwap(old, &fns) {
			return
		}
	}
}

func (b *Broker) openTransactions() error {
	m, err := txn.New(b.st, b.checkTransaction, txn.Config{Clock: b.clk, Logger: b.log,
		Timeout: b.cfg.TransactionTimeout, CheckInterval: b.cfg.TransactionCheckInterval, MaxChecks: b.cfg.TransactionMaxChecks})
	if err != nil {
		return err
	}
	b.txns.m = m
	m.Start()
	return nil
}

// checkTransaction is the manager's Checker: one live producer of the
// group gets the check.
func (b *Broker) checkTransaction(group string, half message.Record, _ int64) bool {
	send := b.txns.send.Load()
	conns := b.ProducerConns(group)
	if send == nil || len(conns) == 0 {
		return false
	}
	h, body, err := txn.CheckRequest(half)
	if err != nil {
		b.log.Warn("cannot build a transaction check", "group", group, "err", err)
		return false
	}
	check := TransactionCheck{Conn: conns[b.txns.next.Add(1)%uint64(len(conns))], Group: group, Header: h, Body: body}
	for _, fn := range *send {
		if fn(check) {
			return true
		}
	}
	return false
}

// EndTransaction commits or rolls back a half message (END_TRANSACTION).
// A second end of the same transaction is ignored.
func (b *Broker) EndTransaction(req EndTransactionRequest) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.txns.m.End(req); err != nil {
		return errorf(KindSystemError, err, "ending the transaction of half message at offset %d failed", req.CommitLogOffset)
	}
	return nil
}

// OpenTransactions is the number of undecided transactions as of the last
// check round.
func (b *Broker) OpenTransactions() int { return b.txns.m.Pending() }
