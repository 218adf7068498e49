package brokerfront

// CONSUMER_SEND_MSG_BACK (36): ext group, offset (commit-log offset of the
// failed message), delayLevel, originMsgId, originTopic, unitMode,
// maxReconsumeTimes, bname. Answered with code 0 and no fields.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) sendBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	sb := &broker.SendBackRequest{
		Offset:            n.int64("offset", ext["offset"]),
		Group:             ext["group"],
		DelayLevel:        n.int32("delayLevel", ext["delayLevel"]),
		OriginMsgID:       ext["originMsgId"],
		OriginTopic:       ext["originTopic"],
		MaxReconsumeTimes: n.int32("maxReconsumeTimes", ext["maxReconsumeTimes"]),
	}
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	_, err := f.b.SendBack(ctx, sb)
	if err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// rmq.CodePetrelResendDLQ is Petrel's admin request (RocketMQ has none; its
// console re-consumes through a client) that stores a dead-letter message
// again in its original topic: ext group and offset (the commit-log offset,
// as in an offset message id) or msgId. Answered like a send: msgId,
// queueId, queueOffset.

func (f *Front) resendDLQ(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	off := n.int64("offset", ext["offset"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	if id := ext["msgId"]; id != "" {
		_, phys, err := message.ParseOffsetID(id)
		if err != nil {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, "msgId "+id+" is not an offset message id: "+err.Error())
		}
		off = phys
	}
	res, err := f.b.ResendDLQ(ctx, ext["group"], off)
	if err != nil {
		return f.errorResponse(req, err)
	}
	return f.sendResponse(req, res, nil)
}

// rmq.CodePetrelCancelDelayed is Petrel's admin request that cancels a delayed
// message not delivered yet: ext msgId (its UNIQ_KEY, the msgId a send
// result names). Answered with code 0, 22 QUERY_NOT_FOUND for an unknown
// id, 13 when it is already due.

func (f *Front) cancelDelayed(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if err := f.b.CancelDelayed(ctx, req.ExtFields["msgId"]); err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
