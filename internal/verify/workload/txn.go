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
// after a restart. They stay up until Close: the drain first waits for
// the check-backs to settle — every acked half with a check_* intent (or
// whose END was not written) answered, no half younger than settleAfter,
// no check-back for quiet — then lets the consumers catch up and reads
// the topic. settleAfter and quiet fit the broker settings the verify
// servers run with (--transaction-timeout 2s --transaction-check-interval
// 2s): a half is first checked about timeout + interval after it was
// stored, and checked again every interval while it is undecided.

import (
	"context"
	"errors"
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
	register(txnName, func() Workload { return &txnWorkload{settleAfter: txnSettleAfter, quiet: txnQuiet} })
}

type txnWorkload struct {
	env                  *Env
	topic, group, pgroup string
	settleAfter, quiet   time.Duration
	members              *memberSet
	stopProducers        context.CancelFunc // the producers' clients and heartbeats
	producers            sync.WaitGroup
	stopOnce             sync.Once
	mu                   sync.Mutex
	needs                map[string]bool // acked halves decided only by a check-back
	answered             map[string]bool // halves whose check-back was answered
	lastHalf, lastCheck  time.Time
}

func (w *txnWorkload) Name() string { return txnName }

func (w *txnWorkload) Setup(ctx context.Context, env *Env) error {
	e, err := env.withDefaults()
	if err != nil {
		return err
	}
	w.env, w.topic, w.group = e, e.Topic(txnName), e.Group(txnName)
	w.pgroup = w.topic + "-pg"
	w.needs, w.answered = map[string]bool{}, map[string]bool{}
	c := NewClient(e, txnName+"-setup")
	defer c.Close()
	return c.CreateTopic(ctx, w.topic, e.Queues, false)
}

// Run drives the producers' sends until ctx ends; the producers keep
// answering check-backs, and the consumers consuming, until Drain is done
// (or Close).
func (w *txnWorkload) Run(ctx context.Context) error {
	if w.env == nil {
		return errors.New("workload: txn: Run before Setup")
	}
	w.members = startMembers(w.env, txnName, w.topic, w.group)
	life, stop := context.WithCancel(context.Background())
	w.stopProducers = stop
	var wg sync.WaitGroup
	for i := range w.env.Producers {
		name := fmt.Sprintf("%s-p%d", txnName, i)
		w.env.start(txnName, name, history.RoleProducer)
		c := w.producerClient(name)
		w.producers.Go(func() {
			defer c.Close()
			w.heartbeats(life, c)
		})
		wg.Go(func() { w.produce(ctx, c, i) })
	}
	wg.Wait()
	return nil
}

// producerClient is a Client whose connections answer the broker's
// CHECK_TRANSACTION_STATE.
func (w *txnWorkload) producerClient(name string) *Client {
	return NewClient(w.env, name, func(o *remoting.ClientOptions) {
		o.Handler = func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code != rmq.CodeCheckTransactionState {
				return remoting.NewResponse(req, rmq.RespRequestCodeNotSupported, fmt.Sprintf("request code %d is not supported by a verify producer", req.Code))
			}
			w.answerCheck(conn, name, req)
			return nil // oneway
		}
	})
}

// heartbeats tells every broker of the route each txnHeartbeat that c is
// a producer of the group, until ctx ends.
func (w *txnWorkload) heartbeats(ctx context.Context, c *Client) {
	id := "verify@" + w.env.RunID + "@" + c.Name()
	for ctx.Err() == nil {
		if r, err := c.Route(ctx, w.topic, false); err == nil {
			for _, addr := range r.Addrs {
				if err := c.Heartbeat(ctx, addr, id, "", "", w.pgroup); err != nil && ctx.Err() == nil {
					e := w.env
					e.Logger.Debug("producer heartbeat failed", "process", c.Name(), "err", err)
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

// half is where the broker stored a half message.
type half struct {
	addr        string
	queueOffset int64
	physOffset  int64
}

// produce is producer i, sending on c.
func (w *txnWorkload) produce(ctx context.Context, c *Client, i int) {
	e := w.env
	name := c.Name()
	rng := seededRand(e.RunID, txnName, i)
	start := e.Clock.Now()
	fails := 0
	for n := 0; ctx.Err() == nil; n++ {
		if e.Rate > 0 && !e.sleep(ctx, start.Add(time.Duration(n)*time.Second/time.Duration(e.Rate)).Sub(e.Clock.Now())) {
			return
		}
		intent := txnIntents[rng.IntN(len(txnIntents))]
		id := ID(e.RunID, txnName, i, n)
		body := Body(id, e.BodyBytes, Field{"txn", intent})
		op := history.New(history.Invoke, history.Send)
		op.Workload, op.Process, op.ID, op.Topic, op.Sum, op.Txn = txnName, name, id, w.topic, Sum(body), intent
		e.record(op)
		t0 := e.Clock.Now()
		hf, err := w.sendHalf(context.WithoutCancel(ctx), c, n, id, body)
		res := history.New(Outcome(err), history.Send)
		res.Workload, res.Process, res.ID, res.Topic, res.Txn = txnName, name, id, w.topic, intent
		res.Latency = e.Clock.Now().Sub(t0)
		// The half's queue and offset are the half topic's, not where a
		// commit delivers it: the OK line has none.
		if err != nil {
			res.Error = errText(err)
		}
		e.record(res)
		w.mu.Lock()
		if res.Type != history.Fail {
			w.lastHalf = e.Clock.Now() // an in-doubt half may be stored and checked back
		}
		if err == nil && (intent == history.CheckCommit || intent == history.CheckRollback) {
			w.needs[id] = true
		}
		w.mu.Unlock()
		if err == nil && (intent == history.Commit || intent == history.Rollback) {
			err = w.endTxn(context.WithoutCancel(ctx), c, name, id, intent, hf)
		}
		if err == nil {
			fails = 0
			continue
		}
		fails++
		if !e.sleep(ctx, backoff(fails)) {
			return
		}
	}
}

// sendHalf sends body as a half message to a queue of the topic.
func (w *txnWorkload) sendHalf(ctx context.Context, c *Client, n int, id string, body []byte) (half, error) {
	r, err := c.Route(ctx, w.topic, false)
	if err != nil {
		return half{}, noRoute(err)
	}
	q := r.Queues[n%len(r.Queues)]
	addr := r.Addr(q)
	req := rmq.EncodeSendHeader(rmq.SendHeader{
		ProducerGroup: w.pgroup, Topic: q.Topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: int32(len(r.Queues)),
		QueueID: q.QueueID, SysFlag: message.SysFlagTxPrepared, BornTimestamp: w.env.Clock.Now().UnixMilli(),
		Properties: idProperties(id, message.PropertyTransactionFlag, "true", message.PropertyProducerGroup, w.pgroup),
		BrokerName: q.BrokerName,
	})
	req.Body = body
	resp, err := c.Call(ctx, addr, req, 0)
	if err != nil {
		_, _ = c.Route(ctx, w.topic, true)
		return half{}, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespFlushDiskTimeout, 11, 12: // FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE: stored, not durable in time
		return half{}, &OpError{Outcome: history.InDoubt, Code: resp.Code, Err: fmt.Errorf("broker answered code %d: %s", resp.Code, resp.Remark)}
	default:
		return half{}, refused(resp.Code, resp.Remark)
	}
	sr, err := rmq.DecodeSendResponse(resp)
	if err == nil {
		var phys int64
		if _, phys, err = message.ParseOffsetID(sr.MsgID); err == nil {
			return half{addr: addr, queueOffset: sr.QueueOffset, physOffset: phys}, nil
		}
	}
	return half{}, &OpError{Outcome: history.InDoubt, Code: resp.Code, Err: fmt.Errorf("half send answer: %w", err)}
}

// endTxn sends END_TRANSACTION (oneway) with the intent for the half.
// It is OK once written; a half whose END never arrives is decided by its
// check-back.
func (w *txnWorkload) endTxn(ctx context.Context, c *Client, process, id, intent string, hf half) error {
	e := w.env
	decision := rmq.TransactionCommit
	if intent == history.Rollback {
		decision = rmq.TransactionRollback
	}
	op := history.New(history.Invoke, history.EndTxn)
	op.Workload, op.Process, op.ID, op.Topic, op.Txn = txnName, process, id, w.topic, intent
	e.record(op)
	t0 := e.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, e.SendTimeout)
	defer cancel()
	res := history.New(history.OK, history.EndTxn)
	res.Workload, res.Process, res.ID, res.Topic, res.Txn = txnName, process, id, w.topic, intent
	conn, err := c.rc.Conn(ctx, hf.addr)
	if err != nil {
		res.Type = history.Fail
	} else if err = conn.InvokeOneway(rmq.EncodeEndTransactionRequest(rmq.EndTransactionRequest{
		ProducerGroup: w.pgroup, TranStateTableOffset: hf.queueOffset, CommitLogOffset: hf.physOffset,
		CommitOrRollback: decision, MsgID: id, TransactionID: id,
	})); err != nil {
		res.Type = history.InDoubt
	}
	res.Latency = e.Clock.Now().Sub(t0)
	if err != nil {
		res.Error = errText(err)
		// The check-back decides it: wait for one.
		w.mu.Lock()
		w.needs[id] = true
		w.mu.Unlock()
	}
	e.record(res)
	return err
}

// Drain waits for the transactions to settle, then lets the consumers
// catch up and reads the topic.
func (w *txnWorkload) Drain(ctx context.Context) error {
	if w.env == nil || w.members == nil {
		return errors.New("workload: txn: Drain before Run")
	}
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
			break
		}
		if now.After(giveUp) {
			e.Logger.Warn("transactions not settled; draining anyway", "workload", txnName, "open", open, "waited", txnSettleMax)
			break
		}
		if !e.sleep(ctx, 100*time.Millisecond) {
			w.members.stop()
			return fmt.Errorf("workload: txn: %d transactions still waiting for a check-back: %w", open, ctx.Err())
		}
	}
	return catchUpAndDrain(ctx, e, w.members.stop, txnName, w.topic, w.group)
}

func (w *txnWorkload) Close() error {
	if w.members != nil {
		w.members.stop()
	}
	w.stopOnce.Do(func() {
		if w.stopProducers != nil {
			w.stopProducers()
		}
		w.producers.Wait()
	})
	return nil
}
