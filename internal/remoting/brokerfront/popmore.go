package brokerfront

// The rest of RocketMQ 5's pop requests over remoting (the wire types are
// rmq's popmore.go), answered as Apache RocketMQ 5's broker answers them
// (PeekMessageProcessor, NotificationProcessor, PollingInfoProcessor,
// AckMessageProcessor's batch path):
//
//	PEEK_MESSAGE (200052): broker.PeekPop, one queue or every one (-1),
//	  then the group's retry topic. 0 with the records as stored in the
//	  body (no POP_CK: nothing was taken) and the pop answer's header,
//	  restNum the messages behind the group's positions; 19
//	  PULL_NOT_FOUND when there is none.
//	NOTIFICATION (200054): broker.PopNotify, waiting up to pollTime
//	  (bounded by PopMaxWait) as a pop does, on its own goroutine as every
//	  request (the connection's reader goes on). Always 0 once the request
//	  is valid: hasMsg true when a pop would find a message, false after
//	  the wait; pollingFull true (with hasMsg false) when too many requests
//	  wait already (LongPollMaxTotal).
//	POLLING_INFO (200055): broker.PollingPops; 0 with pollingNum, the pops
//	  of the group parked on the topic (Petrel's pops are of the whole
//	  topic, so one count serves every queueId).
//	BATCH_ACK_MESSAGE (200151): broker.AckBatch by queue, offset and the
//	  time the delivery ends (popTime + invisibleTime), every offset of
//	  every BatchAck in one durable write. An empty body or one without
//	  acks 208 NO_MESSAGE (as Java). 0 when every offset was acknowledged;
//	  otherwise — where Java answers 0 and drops the stale ones unsaid —
//	  the code of the first refusal (29 INVALID_PARAMETER: not delivered
//	  so, acknowledged already, replaced by a change; 208 NO_MESSAGE: its
//	  invisible time passed) with a remark that says how many were
//	  acknowledged and names the refused ones; the others stay
//	  acknowledged.
//
// Peek, notification and polling info refuse a queueId at or above the
// topic's read queues 29 INVALID_PARAMETER, as Java; a header that does
// not decode 1 SYSTEM_ERROR (as a pop's); the rest as every request.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// batchAckRefusalsNamed bounds the refused acknowledgements a batch ack's
// remark names.
const batchAckRefusalsNamed = 8

// registerPopMore registers the handlers of this file.
func (f *Front) registerPopMore(s *remoting.Server) {
	s.HandleWide(rmq.CodePeekMessage, f.peekMessage)
	s.HandleWide(rmq.CodeNotification, f.notification)
	s.HandleWide(rmq.CodePollingInfo, f.pollingInfo)
	s.HandleWide(rmq.CodeBatchAckMessage, f.batchAck)
}

// queueOutside is the refusal of a queue id beyond the topic's read
// queues, nil when the queue is there, -1, or the topic is not (the broker
// answers that).
func (f *Front) queueOutside(req *remoting.Command, topic string, queueID int32) *remoting.Command {
	t, ok := f.b.Topic(topic)
	if !ok || queueID < t.ReadQueueNums {
		return nil
	}
	return remoting.NewResponse(req, rmq.RespInvalidParameter, fmt.Sprintf("queueId %d is not a queue of topic %q, which has %d read queues (0 to %d, or -1 for all)",
		queueID, topic, t.ReadQueueNums, t.ReadQueueNums-1))
}

func (f *Front) peekMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodePeekRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if refused := f.queueOutside(req, h.Topic, h.QueueID); refused != nil {
		return refused
	}
	got, err := f.b.PeekPop(broker.PeekRequest{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, MaxMsgs: int(h.MaxMsgNums)})
	if err != nil {
		return f.errorResponse(req, err)
	}
	head := rmq.PopResponse{PopTime: f.b.Config().Clock.Now().UnixMilli(), RestNum: got.RestNum}
	if len(got.Records) == 0 {
		return rmq.EncodePopResponse(req, rmq.RespPullNotFound, "no new message", head)
	}
	n := 0
	for _, r := range got.Records {
		n += len(r)
	}
	body := make([]byte, 0, n)
	for _, r := range got.Records {
		body = append(body, r...)
	}
	resp := rmq.EncodePopResponse(req, rmq.RespSuccess, "", head)
	resp.Body = body
	return resp
}

func (f *Front) notification(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeNotificationRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if refused := f.queueOutside(req, h.Topic, h.QueueID); refused != nil {
		return refused
	}
	has, err := f.b.PopNotify(ctx, broker.NotifyRequest{Group: h.ConsumerGroup, Topic: h.Topic,
		Wait: time.Duration(max(h.PollTime, 0)) * time.Millisecond, FIFO: h.Order})
	if errors.Is(err, broker.ErrTooManyWaiting) {
		f.log.Debug("notification answered at once: too many requests wait", "group", h.ConsumerGroup, "topic", h.Topic)
		return rmq.EncodeNotificationResponse(req, rmq.NotificationResponse{PollingFull: true})
	}
	if err != nil {
		return f.errorResponse(req, err)
	}
	return rmq.EncodeNotificationResponse(req, rmq.NotificationResponse{HasMsg: has})
}

func (f *Front) pollingInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodePollingInfoRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if refused := f.queueOutside(req, h.Topic, h.QueueID); refused != nil {
		return refused
	}
	n, err := f.b.PollingPops(h.ConsumerGroup, h.Topic)
	if err != nil {
		return f.errorResponse(req, err)
	}
	return rmq.EncodePollingInfoResponse(req, rmq.PollingInfoResponse{PollingNum: int32(min(n, 1<<31-1))})
}

func (f *Front) batchAck(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := rmq.DecodeBatchAckRequest(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	var acks []broker.AckRequest
	var from []int // acks[i] is of body.Acks[from[i]]
	for i, a := range body.Acks {
		until := time.UnixMilli(a.PopTime + a.InvisibleTime)
		for _, o := range a.Offsets {
			acks = append(acks, broker.AckRequest{Group: a.ConsumerGroup, Topic: a.Topic, ByOffset: true,
				QueueID: a.QueueID, Offset: o, Until: until, RetryOnly: a.Retry != rmq.RetryMarkTopic})
			from = append(from, i)
		}
	}
	if len(acks) == 0 {
		return remoting.NewResponse(req, rmq.RespNoMessage, "the batch acknowledges no message (no acks, or bit sets without a bit)")
	}
	errs := f.b.AckBatch(acks)
	var first error
	refused := 0
	var named strings.Builder
	for i, err := range errs {
		if err == nil {
			continue
		}
		if refused++; refused == 1 {
			first = err
		}
		if refused > batchAckRefusalsNamed {
			continue
		}
		msg := "refused"
		var be *broker.Error
		if errors.As(err, &be) {
			msg = be.Msg
		}
		fmt.Fprintf(&named, "; acks[%d] queue %d offset %d: %s", from[i], acks[i].QueueID, acks[i].Offset, msg)
	}
	if refused == 0 {
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	}
	more := ""
	if refused > batchAckRefusalsNamed {
		more = "; and " + strconv.Itoa(refused-batchAckRefusalsNamed) + " more"
	}
	remark := fmt.Sprintf("acknowledged %d of %d messages, refused %d (the others stay acknowledged)%s%s",
		len(acks)-refused, len(acks), refused, named.String(), more)
	if refused < len(acks) {
		// As RocketMQ's broker: a batch that acknowledged something is a
		// success (the client cannot act on a part of it; the refused
		// deliveries come again when due), the refusals named in the
		// remark and the log.
		f.log.Warn("batch acknowledgement partly refused", "remark", remark, "cause", first)
		return remoting.NewResponse(req, rmq.RespSuccess, remark)
	}
	resp := f.errorResponse(req, first) // logs the first cause as every refusal
	resp.Remark = remark
	return resp
}
