package workload

// The txn workload: 4.x transactional sends. Each producer sends half
// messages (the prepared sysflag, TRAN_MSG=true, its producer group in
// PGROUP), each with a seeded intent: commit or rollback (sent in
// END_TRANSACTION once the half is acked), or check_commit /
// check_rollback (no END; the producer answers the broker's
// CHECK_TRANSACTION_STATE with that decision). A producer's remoting
// client answers check-backs of any of its halves by the intent its body
// carries (txn=<intent>), so a half whose END was lost in a fault is
// decided by the check-back as well. Committed messages must arrive,
// rolled-back ones never.
//
// Producers heartbeat their group to every broker of the route each
// second, so that the broker knows a live producer to check back with
// after a restart. They stay up until Close, and the consumers consume
// from Run through Drain: the drain first waits for
// the check-backs to settle — every acked half with a check_* intent (or
// whose END was not written) answered, no half younger than settleAfter,
// no check-back for quiet — then lets the consumers catch up and reads
// the topic. settleAfter and quiet fit the broker settings the verify
// servers run with (--transaction-timeout 2s --transaction-check-interval
// 2s): a half is first checked about timeout + interval after it was
// stored, and checked again every interval while it is undecided.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/verify/history"
)

const txnName = "txn"

// Txn workload settings.
const (
	// txnSettleAfter is how long after the last half the drain waits at
	// least: its first check-back is due by then.
	txnSettleAfter = 5 * time.Second
	// txnQuiet is how long no check-back may have come before the drain
	// takes the transactions as settled.
	txnQuiet = 3 * time.Second
	// txnSettleMax bounds the wait for check-backs: a broker that gave up
	// on a transaction (its maximum checks) never asks again, and the
	// drain then goes on so that the checker can tell what became of it.
	txnSettleMax = 60 * time.Second
	// txnHeartbeat separates a producer's heartbeats.
	txnHeartbeat = time.Second
)

// txnIntents are the seeded intents, equally likely.
var txnIntents = [...]string{history.Commit, history.Rollback, history.CheckCommit, history.CheckRollback}

func init() {
	register(txnName, func() Workload { return newTxn() })
}

type txnWorkload struct {
	pubsub
	pgroup              string
	settleAfter, quiet  time.Duration
	beats               *background // the producers' heartbeats, until Close
	mu                  sync.Mutex
	needs               map[string]bool // acked halves decided only by a check-back
	answered            map[string]bool // halves whose check-back was answered
	lastHalf, lastCheck time.Time
}

func newTxn() *txnWorkload {
	w := &txnWorkload{settleAfter: txnSettleAfter, quiet: txnQuiet, needs: map[string]bool{}, answered: map[string]bool{}}
	w.pubsub = pubsub{name: txnName, model: Clustering, linger: true,
		produce: w.produce, producerOpts: w.producerOpts, settle: w.awaitChecks}
	return w
}

func (w *txnWorkload) Setup(ctx context.Context, env *Env) error {
	if err := w.pubsub.Setup(ctx, env); err != nil {
		return err
	}
	w.pgroup = w.env.producerGroup(txnName)
	w.beats = newBackground(context.Background())
	return nil
}

// Close stops the heartbeats, then the consumers and the clients.
func (w *txnWorkload) Close() error {
	w.beats.stop()
	return w.pubsub.Close()
}

// producerOpts makes producer i's connections answer the broker's
// CHECK_TRANSACTION_STATE.
func (w *txnWorkload) producerOpts(_ *pubsub, i int) []func(*remoting.ClientOptions) {
	name := producerName(txnName, i)
	return []func(*remoting.ClientOptions){func(o *remoting.ClientOptions) {
		o.Handler = func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code != rmq.CodeCheckTransactionState {
				return remoting.NewResponse(req, rmq.RespRequestCodeNotSupported, fmt.Sprintf("request code %d is not supported by a verify producer", req.Code))
			}
			w.answerCheck(conn, name, req)
			return nil // oneway
		}
	}}
}

// heartbeats tells every broker of the route each txnHeartbeat that p is
// a producer of the group, until ctx ends.
func (w *txnWorkload) heartbeats(ctx context.Context, p *Producer) {
	c := p.Client()
	id := "verify@" + w.env.RunID + "@" + c.Name()
	for ctx.Err() == nil {
		if r, err := c.Route(ctx, w.topic, false); err == nil {
			for _, addr := range r.Addrs {
				if err := c.Heartbeat(ctx, addr, id, "", "", w.pgroup); err != nil && ctx.Err() == nil {
					w.env.Logger.Debug("producer heartbeat failed", "process", c.Name(), "err", err)
					_, _ = c.Route(ctx, w.topic, true)
				}
			}
		}
		w.env.sleep(ctx, txnHeartbeat)
	}
}

// answerCheck answers a check-back with the intent of the half's body.
func (w *txnWorkload) answerCheck(conn *remoting.Conn, process string, req *remoting.Command) {
	e := w.env
	h, err := rmq.DecodeCheckTransactionState(req)
	if err != nil {
		e.Logger.Warn("bad transaction check", "process", process, "err", err)
		return
	}
	m, _, err := message.Decode(req.Body)
	if err != nil {
		e.Logger.Warn("transaction check with an unreadable half", "process", process, "err", err)
		return
	}
	rv := Receive(m)
	intent := rv.Fields["txn"]
	decision, answer := rmq.TransactionNotType, ""
	switch intent {
	case history.Commit, history.CheckCommit:
		decision, answer = rmq.TransactionCommit, history.Commit
	case history.Rollback, history.CheckRollback:
		decision, answer = rmq.TransactionRollback, history.Rollback
	}
	if answer == "" || rv.Corrupt {
		e.Logger.Warn("transaction check of a half without an intent", "process", process, "id", rv.ID)
		return
	}
	end := rmq.EncodeEndTransactionRequest(rmq.EndTransactionRequest{
		ProducerGroup: w.pgroup, TranStateTableOffset: h.TranStateTableOffset, CommitLogOffset: h.CommitLogOffset,
		CommitOrRollback: decision, FromTransactionCheck: true, MsgID: h.MsgID, TransactionID: h.TransactionID,
	})
	if err := conn.InvokeOneway(end); err != nil {
		e.Logger.Debug("transaction check answer not written", "process", process, "id", rv.ID, "err", err)
		return
	}
	op := history.New(history.Info, history.CheckTxn)
	op.Workload, op.Process, op.ID, op.Topic, op.Txn = txnName, process, rv.ID, w.topic, answer
	e.record(op)
	w.mu.Lock()
	w.answered[rv.ID] = true
	w.lastCheck = e.Clock.Now()
	w.mu.Unlock()
}

// produce sends halves with seeded intents, round robin over the queues,
// and ends those of intent commit or rollback, until ctx ends; p's
// heartbeats go on until Close.
func (w *txnWorkload) produce(ctx context.Context, ps *pubsub, p *Producer) {
	w.beats.Go(func(ctx context.Context) { w.heartbeats(ctx, p) })
	rng := p.rand()
	rr := p.RoundRobin()
	for ctx.Err() == nil {
		intent := txnIntents[rng.IntN(len(txnIntents))]
		id := p.NextID()
		m := Outgoing{
			ID: id, Body: Body(id, ps.env.BodyBytes, Field{"txn", intent}), Queue: rr,
			Properties: idProperties(id, message.PropertyTransactionFlag, "true", message.PropertyProducerGroup, w.pgroup),
			SysFlag:    message.SysFlagTxPrepared,
			// The half's queue and offset are the half topic's, not
			// where a commit delivers it.
			Staged: true,
		}
		m.Invoke.Txn = intent
		res, ok := p.Send(ctx, m)
		w.mu.Lock()
		w.lastHalf = ps.env.Clock.Now() // even a half in doubt may be stored and checked back
		if ok && (intent == history.CheckCommit || intent == history.CheckRollback) {
			w.needs[id] = true
		}
		w.mu.Unlock()
		if !ok {
			return
		}
		if intent == history.Commit || intent == history.Rollback {
			w.endTxn(context.WithoutCancel(ctx), p, id, intent, res)
		}
	}
}

// endTxn sends END_TRANSACTION (oneway) with the intent for the half
// stored as res. It is OK once written; a half whose END never arrives is
// decided by its check-back.
func (w *txnWorkload) endTxn(ctx context.Context, p *Producer, id, intent string, res SendResult) {
	e := w.env
	decision := rmq.TransactionCommit
	if intent == history.Rollback {
		decision = rmq.TransactionRollback
	}
	op := history.New(history.Invoke, history.EndTxn)
	op.Workload, op.Process, op.ID, op.Topic, op.Txn = txnName, p.Name(), id, w.topic, intent
	op = e.record(op)
	out := history.New(history.OK, history.EndTxn)
	out.Workload, out.Process, out.ID, out.Topic, out.Txn = txnName, p.Name(), id, w.topic, intent
	_, phys, err := message.ParseOffsetID(res.MsgID)
	if err != nil {
		err = &OpError{Outcome: history.Fail, Code: -1, Err: fmt.Errorf("the half's send answer: %w", err)}
	} else {
		err = p.Client().Oneway(ctx, res.Addr, rmq.EncodeEndTransactionRequest(rmq.EndTransactionRequest{
			ProducerGroup: w.pgroup, TranStateTableOffset: res.Offset, CommitLogOffset: phys,
			CommitOrRollback: decision, MsgID: id, TransactionID: id,
		}))
	}
	out.Latency = e.Clock.Now().Sub(op.Time)
	if err != nil {
		out.Type, out.Error = Outcome(err), errText(err)
		// The check-back decides it: wait for one.
		w.mu.Lock()
		w.needs[id] = true
		w.mu.Unlock()
	}
	e.record(out)
}

// awaitChecks waits for the transactions to settle: every half that
// needs a check-back answered, none younger than settleAfter, no
// check-back for quiet (or txnSettleMax passed).
func (w *txnWorkload) awaitChecks(ctx context.Context) error {
	e := w.env
	giveUp := e.Clock.Now().Add(txnSettleMax)
	for {
		w.mu.Lock()
		open := 0
		for id := range w.needs {
			if !w.answered[id] {
				open++
			}
		}
		lastHalf, lastCheck := w.lastHalf, w.lastCheck
		w.mu.Unlock()
		now := e.Clock.Now()
		if open == 0 && now.Sub(lastHalf) >= w.settleAfter && now.Sub(lastCheck) >= w.quiet {
			return nil
		}
		if now.After(giveUp) {
			e.Logger.Warn("transactions not settled; draining anyway", "workload", txnName, "open", open, "waited", txnSettleMax)
			return nil
		}
		if !e.sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("%d transactions still waiting for a check-back: %w", open, ctx.Err())
		}
	}
}
