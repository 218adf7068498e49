package grpcfront

// A slave's producers. Only a master stores sends and ends transactions,
// so with Config.Master a front whose broker is a slave (its role at the
// time of each call) forwards them to its group's master over remoting,
// as a 4.x producer would send them, on the forwarder's connection (the
// one of acks), and answers the client as the master's own front would:
//
//   - SendMessage: each message is one SEND_MESSAGE_V2, with the
//     properties the master's front would store (the user's, UNIQ_KEY,
//     TAGS, KEYS, TRACE_CONTEXT, and those of the type: TRAN_MSG and
//     PGROUP with the prepared sysflag for a half, TIMER_DELIVER_MS for a
//     delay, __SHARDINGKEY for a FIFO message), at most
//     forwardSendsInFlight of one request in flight (pipelined on the
//     connection: the master stores what one read brings as one group
//     commit), those of one FIFO group one after the other, in request
//     order. A request's N messages are N sends, not one
//     SEND_BATCH_MESSAGE: each message of a gRPC request picks its own
//     queue and gets its own status, which a batch (one queue, one
//     answer) cannot express.
//   - What the master's gRPC front would decide from the request and that
//     remoting does not carry is decided here from the topic table the
//     slave replicates: the message type against the topic's accepted
//     types (MESSAGE_PROPERTY_CONFLICT_WITH_TYPE), a retry or dead-letter
//     topic a send must not create (TOPIC_NOT_FOUND), and the queue of a FIFO
//     message (broker.ShardQueue of its group over the topic's write
//     queues; for a topic the slave does not know yet, over the queues an
//     auto-created one gets, autoCreateQueues).
//   - The master's answer maps as on the master: SUCCESS and
//     FLUSH_DISK_TIMEOUT are OK with the queue offset, FLUSH_SLAVE_TIMEOUT
//     is SLAVE_PERSISTENCE_TIMEOUT, SLAVE_NOT_AVAILABLE is
//     HA_NOT_AVAILABLE, a refusal keeps its meaning; the transaction id is
//     the message id, as on the master. A send waits ForwardTimeout beyond
//     the broker's ReplicationTimeout, so that a master waiting for its
//     slaves answers before the forward gives up.
//   - EndTransaction: END_TRANSACTION with the half's commit-log and
//     queue offsets, from the answer of the forwarded send (kept for
//     maxForwardedHalves transactions), else from the slave's own index
//     (its log is the master's, byte for byte, so the offsets are the
//     master's), or from the master's check-back (checkrelay.go).
//   - A master that cannot be reached is HA_NOT_AVAILABLE with a sentence
//     (the cause to the log). A send whose answer did not come may have
//     been stored: the client's retry carries the same message id, which
//     the master's dedup window answers as the original.
//
// The stored born host is the slave's address (remoting has no field for
// it; RocketMQ's proxy forwards alike).
//
// Check-backs of those halves reach the producer through the slave
// (checkrelay.go).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// forwardSendsInFlight bounds the SEND_MESSAGE_V2s one SendMessage has in
// flight.
const forwardSendsInFlight = 32

// maxForwardedHalves bounds the halves whose offsets the forwarder keeps
// for EndTransaction; beyond, the oldest are forgotten (their end then
// finds the half in the slave's index).
const maxForwardedHalves = 16384

// sendBatch stores reqs: through the broker on a master, forwarded on a
// slave; fn is called once per request, perhaps concurrently.
func (s *Server) sendBatch(ctx context.Context, reqs []*broker.SendRequest, fn func(int, broker.SendResult, error)) {
	if s.forwarding() {
		s.fwd.SendBatch(ctx, reqs, fn)
		return
	}
	s.b.SendBatch(ctx, reqs, fn)
}

// findHalf is Broker.FindHalf, or the forwarder's on a slave.
func (s *Server) findHalf(ctx context.Context, group, id string) (int64, int64, error) {
	if s.forwarding() {
		return s.fwd.findHalf(ctx, group, id)
	}
	return s.b.FindHalf(ctx, group, id)
}

// endTransaction is Broker.EndTransaction, forwarded on a slave.
func (s *Server) endTransaction(req broker.EndTransactionRequest) error {
	if s.forwarding() {
		return s.fwd.EndTransaction(req)
	}
	return s.b.EndTransaction(req)
}

// halfKey names a forwarded half: its producer group and transaction id.
type halfKey struct{ group, id string }

// halfAt is where the master stored a half.
type halfAt struct{ phys, queueOffset int64 }

// halves remembers the offsets of forwarded halves, the newest
// maxForwardedHalves (oldest forgotten first).
type halves struct {
	mu    sync.Mutex
	at    map[halfKey]halfAt
	order []halfKey // ring of insertion order
	next  int
	limit int
}

func (h *halves) put(k halfKey, a halfAt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = make(map[halfKey]halfAt)
		h.limit = maxForwardedHalves
	}
	if _, ok := h.at[k]; !ok {
		if len(h.order) < h.limit {
			h.order = append(h.order, k)
		} else {
			delete(h.at, h.order[h.next])
			h.order[h.next] = k
			h.next = (h.next + 1) % h.limit
		}
	}
	h.at[k] = a
}

// reset forgets every half (tests).
func (h *halves) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at, h.order, h.next = nil, nil, 0
}

func (h *halves) get(k halfKey) (halfAt, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.at[k]
	return a, ok
}

// sendTimeout bounds the wait for the master's answer to a send.
func (f *forwarder) sendTimeout() time.Duration {
	return f.timeout + f.b.Config().ReplicationTimeout
}

// SendBatch forwards each send as a SEND_MESSAGE_V2. The messages of one
// FIFO group (topic and sharding key) go one after the other, in request
// order, so that the master stores them in that order; the others go
// concurrently.
func (f *forwarder) SendBatch(ctx context.Context, reqs []*broker.SendRequest, fn func(int, broker.SendResult, error)) {
	type fifoKey struct{ topic, key string }
	var chains [][]int // indexes of reqs sent one after the other
	var byKey map[fifoKey]int
	for k, r := range reqs {
		if r.ShardingKey == "" {
			chains = append(chains, []int{k})
			continue
		}
		if byKey == nil {
			byKey = make(map[fifoKey]int)
		}
		fk := fifoKey{r.Topic, r.ShardingKey}
		if c, ok := byKey[fk]; ok {
			chains[c] = append(chains[c], k)
			continue
		}
		byKey[fk] = len(chains)
		chains = append(chains, []int{k})
	}
	sem := make(chan struct{}, forwardSendsInFlight)
	var wg sync.WaitGroup
	for _, chain := range chains {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, k := range chain {
				res, err := f.send(ctx, reqs[k])
				fn(k, res, err)
			}
		}()
	}
	wg.Wait()
}

// send forwards one send.
func (f *forwarder) send(ctx context.Context, r *broker.SendRequest) (broker.SendResult, error) {
	h, err := f.sendHeader(r)
	if err != nil {
		return broker.SendResult{}, err
	}
	cmd := rmq.EncodeSendHeader(h)
	cmd.AppendExt(rmq.ExtForwarded, "true") // a slave that gets it (a stale view) refuses it rather than passing it on
	cmd.Body = r.Body
	cctx, cancel := context.WithTimeout(ctx, f.sendTimeout())
	defer cancel()
	stop := context.AfterFunc(f.stop, cancel)
	defer stop()
	if r.Transactional {
		f.relay.ensure(cctx, r.ProducerGroup, false) // the master checks the half back through this front
	}
	resp, err := f.invoke(cctx, f.cl, "sends", cmd)
	if err != nil {
		return broker.SendResult{}, err
	}
	st := broker.SendOK
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespFlushDiskTimeout:
		st = broker.SendFlushDiskTimeout
	case rmq.RespFlushSlaveTimeout:
		st = broker.SendFlushSlaveTimeout
	case rmq.RespSlaveNotAvailable:
		st = broker.SendSlaveNotAvailable
	default:
		return broker.SendResult{}, refusal(resp, false)
	}
	a, err := rmq.DecodeSendResponse(resp)
	if err != nil {
		return broker.SendResult{}, f.badSendAnswer(err)
	}
	if r.Transactional {
		_, phys, err := message.ParseOffsetID(a.MsgID)
		if err != nil {
			return broker.SendResult{}, f.badSendAnswer(fmt.Errorf("msgId of a half: %w", err))
		}
		if id, ok := r.Properties.Map()[message.PropertyUniqKey]; ok {
			f.halves.put(halfKey{r.ProducerGroup, id}, halfAt{phys: phys, queueOffset: a.QueueOffset})
		}
	}
	return broker.SendResult{Status: st, MsgID: a.MsgID, QueueID: a.QueueID, QueueOffset: a.QueueOffset, RegionID: a.Region, RecallHandle: a.RecallHandle}, nil
}

// sendHeader is the remoting header of a gRPC send (the front's map
// properties and typed fields), or the refusal the master's gRPC front
// would answer that remoting cannot carry to it.
func (f *forwarder) sendHeader(r *broker.SendRequest) (rmq.SendHeader, error) {
	t, known := f.b.Topic(r.Topic)
	if !known && r.NoGroupTopicCreate && (strings.HasPrefix(r.Topic, broker.RetryGroupTopicPrefix) || strings.HasPrefix(r.Topic, broker.DLQGroupTopicPrefix)) {
		// The master would create it from the send (remoting cannot say
		// not to): refused as the master's front refuses it.
		return rmq.SendHeader{}, &broker.Error{Kind: broker.KindTopicNotExist,
			Msg: fmt.Sprintf("topic %q does not exist on broker %s; a retry or dead-letter topic belongs to its consumer group and is not created by a send", r.Topic, f.b.Config().BrokerName)}
	}
	if known {
		if err := f.b.CheckMessageType(t, r); err != nil {
			return rmq.SendHeader{}, err
		}
	}
	props := make(map[string]string, len(r.Properties.Map())+3)
	for k, v := range r.Properties.Map() {
		props[k] = v
	}
	h := rmq.SendHeader{ProducerGroup: r.ProducerGroup, Topic: r.Topic, DefaultTopic: r.DefaultTopic,
		DefaultTopicQueueNums: r.DefaultTopicQueueNums, QueueID: r.QueueID, SysFlag: r.SysFlag, Flag: r.Flag,
		BornTimestamp: r.BornTimestamp, ReconsumeTimes: r.ReconsumeTimes, MaxReconsumeTimes: r.MaxReconsumeTimes}
	if r.Transactional {
		props[message.PropertyTransactionFlag] = "true"
		props[message.PropertyProducerGroup] = r.ProducerGroup
		h.SysFlag = h.SysFlag&^message.SysFlagTxMask | message.SysFlagTxPrepared
	}
	if r.ShardingKey != "" {
		props[broker.PropertyShardingKey] = r.ShardingKey
		if h.QueueID < 0 {
			n := int32(autoCreateQueues)
			if known {
				n = t.WriteQueueNums
			}
			h.QueueID = broker.ShardQueue(r.ShardingKey, n)
		}
	}
	if d := r.Delay; d.AtMS != 0 {
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(d.AtMS, 10)
	}
	h.Properties = message.EncodeProperties(props)
	return h, nil
}

// badSendAnswer is the error of a master's send answer the slave cannot
// read; the message may be stored.
func (f *forwarder) badSendAnswer(cause error) error {
	f.log.Error("the master's answer to a forwarded send cannot be read", "err", cause)
	return &broker.Error{Kind: broker.KindSystemError, Err: cause,
		Msg: fmt.Sprintf("broker %s is a slave and could not read its master's answer to a send; the message may be stored: retry with the same message id", f.b.Config().BrokerName)}
}

// findHalf finds a half by what its forwarded send answered, else in the
// slave's own index (waiting at most the forward timeout for it).
func (f *forwarder) findHalf(ctx context.Context, group, id string) (int64, int64, error) {
	if a, ok := f.halves.get(halfKey{group, id}); ok {
		return a.phys, a.queueOffset, nil
	}
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.b.FindHalf(cctx, group, id)
}

// EndTransaction forwards an END_TRANSACTION.
func (f *forwarder) EndTransaction(req broker.EndTransactionRequest) error {
	resp, err := f.call("transaction ends", rmq.EncodeEndTransactionRequest(rmq.EndTransactionRequest{
		ProducerGroup: req.ProducerGroup, TranStateTableOffset: req.TranStateTableOffset, CommitLogOffset: req.CommitLogOffset,
		CommitOrRollback: req.CommitOrRollback, FromTransactionCheck: req.FromTransactionCheck,
		MsgID: req.MsgID, TransactionID: req.TransactionID,
	}))
	if err != nil {
		return err
	}
	if resp.Code != rmq.RespSuccess {
		return refusal(resp, false)
	}
	return nil
}
