package brokerfront

// CONSUMER_SEND_MSG_BACK (36, header rmq.SendBackRequest): answered with
// code 0 and no fields.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) sendBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeSendBackRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	_, err = f.b.SendBack(ctx, &broker.SendBackRequest{
		Offset:            h.Offset,
		Group:             h.Group,
		DelayLevel:        h.DelayLevel,
		OriginMsgID:       h.OriginMsgID,
		OriginTopic:       h.OriginTopic,
		MaxReconsumeTimes: h.MaxReconsumeTimes,
	})
	if err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// rmq.CodePetrelResendDLQ is Petrel's admin request (RocketMQ has none; its
// console re-consumes through a client) that stores a dead-letter message
// again in its original topic (header rmq.ResendDLQRequest). Answered like
// a send: msgId, queueId, queueOffset.

func (f *Front) resendDLQ(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeResendDLQRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	off := h.Offset
	if id := h.MsgID; id != "" {
		_, phys, err := message.ParseOffsetID(id)
		if err != nil {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, "msgId "+id+" is not an offset message id: "+err.Error())
		}
		off = phys
	}
	res, err := f.b.ResendDLQ(ctx, h.Group, off)
	if err != nil {
		return f.errorResponse(req, err)
	}
	return f.sendResponse(req, res, nil)
}

// rmq.CodePetrelCancelDelayed is Petrel's admin request that cancels a delayed
// message not delivered yet (header rmq.CancelDelayedRequest; with a
// topic, only a message of that topic). Answered with code 0, 22
// QUERY_NOT_FOUND for an unknown id, 13 when it is already due.

func (f *Front) cancelDelayed(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeCancelDelayedRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	if err := f.b.CancelDelayedIn(ctx, h.MsgID, h.Topic); err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
