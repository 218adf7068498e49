package brokerfront

// RocketMQ 5's pop requests over remoting, through the broker's pop API
// (the gRPC front's simple consumers use the same one); the wire types are
// rmq's (pop.go there says what a client sends back and why).
//
//	POP_MESSAGE (200050): broker.Pop of the whole topic for the group (a
//	  request naming one queue is served from every queue: a pop owns no
//	  queue), order = FIFO, pollTime the long-poll wait (bounded by the
//	  broker's PopMaxWait), maxAttempts the group's retryMaxTimes+1. Codes:
//	  0 with the messages in the body, as a pull's; 210 POLLING_TIMEOUT when
//	  a wait found none, 19 PULL_NOT_FOUND when the request did not wait.
//	  Every message carries POP_CK (its extra info, Petrel's receipt handle
//	  as the ninth field) and its reconsume times (deliveries before this
//	  one); the header carries popTime, invisibleTime, reviveQid (999 for
//	  order), restNum (0: not counted), startOffsetInfo and msgOffsetInfo.
//	ACK_MESSAGE (200051): broker.AckPop of the handle in extraInfo; 0.
//	CHANGE_MESSAGE_INVISIBLETIME (200053): broker.ChangeInvisible; 0 with
//	  popTime (now), invisibleTime, reviveQid and receiptHandle (the new
//	  handle).
//	PETREL_FORWARD_POP_TO_DLQ (10104): broker.ForwardPopToDLQ; 0.
//
// Refusals: a header that does not decode 1 SYSTEM_ERROR (as a pull's); an
// extra info that does not parse or has no handle 29 INVALID_PARAMETER; a
// handle the broker does not take 29 (invalid) or 208 NO_MESSAGE
// (expired); a slave 14 SERVICE_NOT_AVAILABLE; the rest as every request.

import (
	"context"
	"strconv"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// registerPop registers the pop handlers.
func (f *Front) registerPop(s *remoting.Server) {
	s.HandleWide(rmq.CodePopMessage, f.popMessage)
	s.HandleWide(rmq.CodeAckMessage, f.ackMessage)
	s.HandleWide(rmq.CodeChangeInvisibleTime, f.changeInvisible)
	s.Handle(rmq.CodePetrelForwardPopToDLQ, f.forwardPopToDLQ)
}

func (f *Front) popMessage(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodePopRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if h.InvisibleTime <= 0 {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, "invisibleTime "+strconv.FormatInt(h.InvisibleTime, 10)+" must be positive (milliseconds)")
	}
	typ := h.ExpType
	if typ == "" {
		typ = broker.ExpressionTag
	}
	attempts := 0
	if g, ok := f.b.Group(h.ConsumerGroup); ok {
		attempts = int(max(g.RetryMaxTimes, 0)) + 1
	}
	invisible := time.Duration(h.InvisibleTime) * time.Millisecond
	got, err := f.b.Pop(ctx, &broker.PopRequest{
		Group:          h.ConsumerGroup,
		Topic:          h.Topic,
		Expression:     h.Exp,
		ExpressionType: typ,
		MaxMsgs:        int(h.MaxMsgNums),
		Invisible:      invisible,
		Wait:           time.Duration(max(h.PollTime, 0)) * time.Millisecond,
		FIFO:           h.Order,
		MaxAttempts:    attempts,
	})
	if err != nil {
		return f.errorResponse(req, err)
	}
	revive := int32(0)
	if h.Order {
		revive = rmq.PopOrderReviveQid
	}
	now := f.b.Config().Clock.Now().UnixMilli()
	head := rmq.PopResponse{PopTime: now, InvisibleTime: h.InvisibleTime, ReviveQid: revive}
	if len(got) == 0 {
		code := rmq.RespPullNotFound
		if h.PollTime > 0 {
			code = rmq.RespPollingTimeout
		}
		return rmq.EncodePopResponse(req, code, "no new message", head)
	}
	head.PopTime = got[0].InvisibleUntil.UnixMilli() - h.InvisibleTime
	body, infos := f.popBody(h, got, revive)
	head.StartOffsetInfo, head.MsgOffsetInfo = rmq.FormatOffsetInfo(infos)
	resp := rmq.EncodePopResponse(req, rmq.RespSuccess, "", head)
	resp.Body = body
	return resp
}

// popBody is the answer's body, the popped records with their POP_CK and
// reconsume times, and the per-queue offset lists of its header.
func (f *Front) popBody(h rmq.PopRequest, got []broker.PoppedMessage, revive int32) ([]byte, []rmq.QueueOffsets) {
	type qkey struct {
		retry string
		qid   int32
	}
	at := map[qkey]int{}
	var infos []rmq.QueueOffsets
	for _, p := range got {
		k := qkey{rmq.RetryMarkTopic, p.Record.QueueID()}
		if string(p.Record.Topic()) != h.Topic {
			k.retry = rmq.RetryMarkRetryV1 // the group's retry topic: its queues are others
		}
		i, ok := at[k]
		if !ok {
			i = len(infos)
			at[k] = i
			infos = append(infos, rmq.QueueOffsets{Retry: k.retry, QueueID: k.qid, Start: p.Record.QueueOffset()})
		}
		q := &infos[i]
		q.Start = min(q.Start, p.Record.QueueOffset())
		q.Offsets = append(q.Offsets, p.Record.QueueOffset())
	}
	brokerName := f.b.Config().BrokerName
	var body []byte
	for _, p := range got {
		k := qkey{rmq.RetryMarkTopic, p.Record.QueueID()}
		if string(p.Record.Topic()) != h.Topic {
			k.retry = rmq.RetryMarkRetryV1
		}
		e := rmq.ExtraInfo{
			CkQueueOffset: infos[at[k]].Start,
			PopTime:       p.InvisibleUntil.UnixMilli() - h.InvisibleTime,
			InvisibleTime: h.InvisibleTime,
			ReviveQid:     revive,
			Retry:         rmq.RetryMarkTopic, // acknowledged with the asked topic
			BrokerName:    brokerName,
			QueueID:       p.Record.QueueID(),
			QueueOffset:   p.Record.QueueOffset(),
			Handle:        p.Handle,
		}
		body = append(body, f.popRecord(p, e)...)
	}
	return body, infos
}

// popRecord is a popped record with its POP_CK property and its reconsume
// times set. A record whose properties cannot take POP_CK goes as stored
// (the client builds an extra info without the handle; its ack is refused,
// and the message is delivered again once its invisible time passes).
func (f *Front) popRecord(p broker.PoppedMessage, e rmq.ExtraInfo) []byte {
	m, _, err := message.Decode(p.Record)
	if err != nil {
		f.log.Warn("a popped record does not decode; sending it as stored", "err", err)
		return p.Record
	}
	m.SetProperty(rmq.PropertyPopCK, e.String())
	m.ReconsumeTimes = max(p.Attempt-1, 0)
	if err := m.Validate(); err != nil {
		f.log.Warn("a popped message cannot carry its POP_CK; sending it as stored", "topic", m.Topic, "queue_id", m.QueueID, "offset", m.QueueOffset, "err", err)
		return p.Record
	}
	return m.Encode()
}

// handleOf is the receipt handle of an ack's or change's extra info, or
// the refusal to answer.
func handleOf(req *remoting.Command, extraInfo string) (string, *remoting.Command) {
	e, err := rmq.ParseExtraInfo(extraInfo)
	if err != nil {
		return "", remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	if e.Handle == "" {
		return "", remoting.NewResponse(req, rmq.RespInvalidParameter,
			"extraInfo carries no receipt handle (its ninth field); send the POP_CK property of the popped message unchanged, not one rebuilt from a change of invisible time")
	}
	return e.Handle, nil
}

func (f *Front) ackMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeAckRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	handle, refused := handleOf(req, h.ExtraInfo)
	if refused != nil {
		return refused
	}
	if err := f.b.AckPop(h.ConsumerGroup, h.Topic, handle); err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// changeInvisible answers CHANGE_MESSAGE_INVISIBLETIME. A refusal carries
// the answer's three fields too (as zeros): a Java client decodes them
// before it looks at the code.
func (f *Front) changeInvisible(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := f.changeInvisibleTime(ctx, c, req)
	if resp.Code != rmq.RespSuccess {
		for _, k := range []string{"popTime", "invisibleTime", "reviveQid"} {
			if resp.Ext(k) == "" {
				resp.SetExt(k, "0")
			}
		}
	}
	return resp
}

func (f *Front) changeInvisibleTime(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeChangeInvisibleRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if h.InvisibleTime < 0 {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, "invisibleTime "+strconv.FormatInt(h.InvisibleTime, 10)+" must not be negative (milliseconds)")
	}
	handle, refused := handleOf(req, h.ExtraInfo)
	if refused != nil {
		return refused
	}
	e, _ := rmq.ParseExtraInfo(h.ExtraInfo)
	nh, err := f.b.ChangeInvisible(h.ConsumerGroup, h.Topic, handle, time.Duration(h.InvisibleTime)*time.Millisecond)
	if err != nil {
		return f.errorResponse(req, err)
	}
	until := f.b.Config().Clock.Now().UnixMilli() + h.InvisibleTime
	if ph, err := broker.DecodeReceiptHandle(nh); err == nil {
		until = ph.Until // the broker's own reading of now
	}
	return rmq.EncodeChangeInvisibleResponse(req, rmq.ChangeInvisibleResponse{
		PopTime: until - h.InvisibleTime, InvisibleTime: h.InvisibleTime, ReviveQid: e.ReviveQid, ReceiptHandle: nh,
	})
}

func (f *Front) forwardPopToDLQ(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeForwardPopToDLQRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if err := f.b.ForwardPopToDLQ(h.ConsumerGroup, h.Topic, h.ReceiptHandle); err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
