package grpcfront

// A slave's simple consumers. The pop state (what is in flight, the
// cursors) is the master's, so a slave's broker refuses pops, acks,
// changes of invisible time and forwards to the dead-letter queue. With
// Config.Master set, a front whose broker is a slave (its role at the time
// of each call: a promotion takes effect at once) sends them to its
// group's master over remoting instead, as a Java client would send them
// (rmq's POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, and
// Petrel's PETREL_FORWARD_POP_TO_DLQ), and answers the client with the
// master's answer:
//
//   - ReceiveMessage: one POP_MESSAGE of the whole topic with the
//     receive's batch size, invisible time, FIFO flag and filter, and
//     pollTime = the receive's long-poll wait, so the master holds it as
//     it would hold its own client's receive (its PopMaxWait bounds it);
//     the call waits that long plus ForwardTimeout for the answer. The
//     handle of each message is the ninth field of its POP_CK, its
//     delivery attempt and invisible time those the handle names.
//     Receives go over a connection of their own, so that acks never wait
//     behind them, and at most maxForwardedPolls at a time (the master
//     runs that many requests of one connection); beyond, a receive is
//     TOO_MANY_REQUESTS.
//   - AckMessage: one ACK_MESSAGE per entry, at most forwardAcksInFlight
//     at a time; ChangeInvisibleDuration: CHANGE_MESSAGE_INVISIBLETIME, the
//     new handle from the answer's receiptHandle; ForwardMessageToDead-
//     LetterQueue: PETREL_FORWARD_POP_TO_DLQ. Each waits ForwardTimeout.
//   - The master's refusals keep their meaning (its remark is its sentence
//     for the client; the code maps back to the broker's error kind).
//   - A master the slave cannot reach (no address known yet, the dial or
//     the connection failed, no answer in time) is HA_NOT_AVAILABLE with a
//     sentence that names the master and says to retry; the cause goes to
//     the log. A receive whose own call ended while it waited is an empty
//     answer, as on a master.
//
// Messages the master handed to a forward whose client went away stay
// invisible for their invisible time and are then delivered again (as
// with RocketMQ's proxy).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// DefaultForwardTimeout is Config.ForwardTimeout's default.
const DefaultForwardTimeout = 3 * time.Second

// forwardAcksInFlight bounds the ACK_MESSAGEs one AckMessage has in flight.
const forwardAcksInFlight = 32

// maxForwardedPolls bounds the receives a slave has waiting on its master:
// they share one connection, on which the master runs at most
// remoting.DefaultMaxInFlightPerConn requests (more would wait unread
// there, past their deadlines). Beyond it a receive is TOO_MANY_REQUESTS.
const maxForwardedPolls = remoting.DefaultMaxInFlightPerConn - 16

// errMasterUnavailable is the cause of a forward the master did not answer
// (HA_NOT_AVAILABLE).
var errMasterUnavailable = errors.New("grpcfront: the master cannot be reached")

// routedPop is the pop API of a front with Config.Master: the broker's on
// a master, the forwarder's on a slave.
type routedPop struct {
	b   *broker.Broker
	fwd *forwarder
}

func (r *routedPop) api() popAPI {
	if r.b.Role() == broker.RoleSlave {
		return r.fwd
	}
	return r.b
}

func (r *routedPop) Pop(ctx context.Context, req *broker.PopRequest) ([]broker.PoppedMessage, error) {
	return r.api().Pop(ctx, req)
}

func (r *routedPop) AckBatch(reqs []broker.AckRequest) []error { return r.api().AckBatch(reqs) }

func (r *routedPop) ChangeInvisible(group, topic, handle string, d time.Duration) (string, error) {
	return r.api().ChangeInvisible(group, topic, handle, d)
}

func (r *routedPop) ForwardPopToDLQ(group, topic, handle string) error {
	return r.api().ForwardPopToDLQ(group, topic, handle)
}

// forwarding reports whether s sends pops to a master now.
func (s *Server) forwarding() bool {
	r, ok := s.pop.(*routedPop)
	return ok && r.b.Role() == broker.RoleSlave
}

// forwarder sends a slave's pop requests to its master.
type forwarder struct {
	b       *broker.Broker
	master  func() string
	moved   func() context.Context // Config.MasterMoved (nil: no watch)
	cl      *remoting.Client       // acks, changes, forwards to the DLQ
	polls   *remoting.Client       // receives (owned: closed by Shutdown)
	timeout time.Duration
	// maxPolls bounds the receives in flight (maxForwardedPolls; tests
	// lower it); inPolls counts them.
	maxPolls int64
	inPolls  atomic.Int64
	stop     context.Context // the front's: Shutdown ends forwards
	log      *slog.Logger
	halves   halves      // offsets of forwarded halves (sendfwd.go)
	relay    *checkRelay // check-backs of those halves (checkrelay.go)
}

// unavailable is the error of a forward that did not reach the master.
func (f *forwarder) unavailable(what, addr string, cause error) error {
	name := f.b.Config().BrokerName
	if addr == "" {
		f.log.Warn("cannot forward to the master: its address is not known yet", "what", what)
		return &broker.Error{Kind: broker.KindServiceUnavailable, Err: errMasterUnavailable,
			Msg: fmt.Sprintf("broker %s is a slave and does not yet know the address of its master, which does %s; retry shortly", name, what)}
	}
	if errors.Is(cause, broker.ErrMasterMoved) {
		f.log.Info("forward abandoned: the group has another master now; the client retries there", "what", what, "old_master", addr)
		return &broker.Error{Kind: broker.KindServiceUnavailable, Err: fmt.Errorf("%w: %w", errMasterUnavailable, cause),
			Msg: fmt.Sprintf("broker %s forwarded this request to its master at %s, which does %s, but the group's master changed while it waited; retry: it goes to the new master", name, addr, what)}
	}
	if !errors.Is(cause, context.Canceled) { // not the caller gone, or Shutdown
		f.log.Warn("forward to the master failed", "what", what, "master", addr, "err", cause)
	}
	return &broker.Error{Kind: broker.KindServiceUnavailable, Err: fmt.Errorf("%w: %w", errMasterUnavailable, cause),
		Msg: fmt.Sprintf("broker %s is a slave and cannot reach its master at %s, which does %s; retry shortly (the master may be restarting)", name, addr, what)}
}

// invoke sends req to the master over cl within ctx. When the master
// changes meanwhile (Config.MasterMoved) the forward is abandoned: the old
// master may be paused or cut off, and the client's retry reaches the new
// one (a send abandoned so may have been stored: its retry carries the
// same message id).
func (f *forwarder) invoke(ctx context.Context, cl *remoting.Client, what string, req *remoting.Command) (*remoting.Command, error) {
	var moved context.Context
	if f.moved != nil {
		moved = f.moved() // before the address: a change after reading it ends the forward
	}
	addr := f.master()
	if addr == "" {
		return nil, f.unavailable(what, "", nil)
	}
	ctx, cancel := broker.WhileMasterStays(ctx, moved)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, broker.ErrMasterMoved) {
			err = cause
		}
		return nil, f.unavailable(what, addr, err)
	}
	return resp, nil
}

// refusal is the broker error of a master's refusal (code ≠ 0); receipt
// says the request named a receipt handle (INVALID_PARAMETER is about it).
func refusal(resp *remoting.Command, receipt bool) error {
	k := broker.KindSystemError
	switch resp.Code {
	case rmq.RespTopicNotExist:
		k = broker.KindTopicNotExist
	case rmq.RespMessageIllegal:
		k = broker.KindMessageIllegal
	case rmq.RespNoPermission:
		k = broker.KindNoPermission
	case rmq.RespServiceNotAvailable, rmq.RespPollingFull:
		k = broker.KindServiceUnavailable
	case rmq.RespSubscriptionParseFailed:
		k = broker.KindSubscriptionParseFailed
	case rmq.RespSubscriptionNotExist:
		k = broker.KindSubscriptionNotExist
	case rmq.RespSystemBusy:
		k = broker.KindSystemBusy
	case rmq.RespSubscriptionGroupNotExist:
		k = broker.KindGroupNotExist
	case rmq.RespNoMessage:
		k = broker.KindReceiptHandleExpired
	case rmq.RespInvalidParameter:
		k = broker.KindMessageIllegal
		if receipt {
			k = broker.KindInvalidReceiptHandle
		}
	}
	msg := resp.Remark
	if msg == "" {
		msg = fmt.Sprintf("the master refused the request (code %d)", resp.Code)
	}
	return &broker.Error{Kind: k, Msg: msg, Err: fmt.Errorf("grpcfront: master answered code %d", resp.Code)}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// Pop is a receive forwarded as one POP_MESSAGE.
func (f *forwarder) Pop(ctx context.Context, req *broker.PopRequest) ([]broker.PoppedMessage, error) {
	h := rmq.PopRequest{
		ConsumerGroup: req.Group, Topic: req.Topic, QueueID: -1, MaxMsgNums: int32(req.MaxMsgs),
		InvisibleTime: ms(req.Invisible), PollTime: ms(max(req.Wait, 0)), BornTime: time.Now().UnixMilli(),
		ExpType: req.ExpressionType, Exp: req.Expression, Order: req.FIFO,
	}
	if n := f.inPolls.Add(1); n > f.maxPolls {
		f.inPolls.Add(-1)
		return nil, &broker.Error{Kind: broker.KindServiceUnavailable,
			Msg: fmt.Sprintf("broker %s is a slave with %d receives waiting on its master, the most it forwards; retry shortly", f.b.Config().BrokerName, f.maxPolls)}
	}
	defer f.inPolls.Add(-1)
	cctx, cancel := context.WithTimeout(ctx, max(req.Wait, 0)+f.timeout)
	defer cancel()
	resp, err := f.invoke(cctx, f.polls, "receives", rmq.EncodePopRequest(h))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the receive ended: an empty answer
		}
		return nil, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespPullNotFound, rmq.RespPollingTimeout:
		return nil, nil
	default:
		return nil, refusal(resp, false)
	}
	return f.popped(resp.Body)
}

// popped reads the messages of a POP_MESSAGE answer.
func (f *forwarder) popped(body []byte) ([]broker.PoppedMessage, error) {
	body = bytes.Clone(body)
	var out []broker.PoppedMessage
	for len(body) > 0 {
		n, err := message.Check(body)
		if err != nil {
			return nil, f.badAnswer(fmt.Errorf("record %d of the answer: %w", len(out), err))
		}
		rec := message.Record(body[:n:n])
		body = body[n:]
		ck, _ := rec.Property(rmq.PropertyPopCK)
		e, err := rmq.ParseExtraInfo(string(ck))
		if err != nil {
			return nil, f.badAnswer(fmt.Errorf("POP_CK of record %d: %w", len(out), err))
		}
		h, err := broker.DecodeReceiptHandle(e.Handle)
		if err != nil {
			return nil, f.badAnswer(fmt.Errorf("handle of record %d: %w", len(out), err))
		}
		out = append(out, broker.PoppedMessage{Record: rec, Handle: e.Handle, Attempt: h.Attempt, InvisibleUntil: h.UntilTime()})
	}
	return out, nil
}

// badAnswer is the error of a master's answer the slave cannot read (a
// master that is not Petrel's, or a bug): the client is told to retry.
func (f *forwarder) badAnswer(cause error) error {
	f.log.Error("the master's answer to a forwarded receive cannot be read", "err", cause)
	return &broker.Error{Kind: broker.KindSystemError, Err: cause,
		Msg: fmt.Sprintf("broker %s is a slave and could not read its master's answer to a receive; retry, and report it if it persists", f.b.Config().BrokerName)}
}

// extraInfo is the extra info of a Petrel handle, as the master reads it
// (the handle is what counts), or the refusal of a handle that does not
// decode.
func (f *forwarder) extraInfo(handle string) (rmq.ExtraInfo, error) {
	h, err := broker.DecodeReceiptHandle(handle)
	if err != nil {
		return rmq.ExtraInfo{}, &broker.Error{Kind: broker.KindInvalidReceiptHandle, Err: err,
			Msg: "the receipt handle is not one this broker issued; pass the handle the receive returned, unchanged"}
	}
	return rmq.ExtraInfo{CkQueueOffset: h.Offset, PopTime: h.Until, Retry: rmq.RetryMarkTopic, BrokerName: f.b.Config().BrokerName,
		QueueID: h.QueueID, QueueOffset: h.Offset, Handle: handle}, nil
}

// call is a forward bounded by the forward timeout and the front's life.
func (f *forwarder) call(what string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(f.stop, f.timeout)
	defer cancel()
	return f.invoke(ctx, f.cl, what, req)
}

// AckBatch forwards each acknowledgement as an ACK_MESSAGE.
func (f *forwarder) AckBatch(reqs []broker.AckRequest) []error {
	errs := make([]error, len(reqs))
	sem := make(chan struct{}, forwardAcksInFlight)
	var wg sync.WaitGroup
	for i, r := range reqs {
		e, err := f.extraInfo(r.Handle)
		if err != nil {
			errs[i] = err
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := f.call("acknowledgements", rmq.EncodeAckRequest(rmq.AckRequestFor(r.Group, r.Topic, e)))
			switch {
			case err != nil:
				errs[i] = err
			case resp.Code != rmq.RespSuccess:
				errs[i] = refusal(resp, true)
			}
		}()
	}
	wg.Wait()
	return errs
}

// ChangeInvisible forwards a change of invisible time.
func (f *forwarder) ChangeInvisible(group, topic, handle string, d time.Duration) (string, error) {
	e, err := f.extraInfo(handle)
	if err != nil {
		return "", err
	}
	resp, err := f.call("changes of invisible time", rmq.EncodeChangeInvisibleRequest(rmq.ChangeInvisibleRequest{
		ConsumerGroup: group, Topic: topic, QueueID: e.QueueID, ExtraInfo: e.String(), Offset: e.QueueOffset, InvisibleTime: ms(max(d, 0)),
	}))
	if err != nil {
		return "", err
	}
	if resp.Code != rmq.RespSuccess {
		return "", refusal(resp, true)
	}
	r, err := rmq.DecodeChangeInvisibleResponse(resp)
	if err == nil && r.ReceiptHandle == "" {
		err = errors.New("the answer has no receiptHandle")
	}
	if err != nil {
		return "", f.badAnswer(fmt.Errorf("change of invisible time: %w", err))
	}
	return r.ReceiptHandle, nil
}

// ForwardPopToDLQ forwards a move to the dead-letter queue.
func (f *forwarder) ForwardPopToDLQ(group, topic, handle string) error {
	if _, err := f.extraInfo(handle); err != nil {
		return err
	}
	resp, err := f.call("forwards to the dead-letter queue", rmq.EncodeForwardPopToDLQRequest(rmq.ForwardPopToDLQRequest{
		ConsumerGroup: group, Topic: topic, ReceiptHandle: handle,
	}))
	if err != nil {
		return err
	}
	if resp.Code != rmq.RespSuccess {
		return refusal(resp, true)
	}
	return nil
}
