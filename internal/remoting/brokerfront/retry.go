package brokerfront

// CONSUMER_SEND_MSG_BACK (36): ext group, offset (commit-log offset of the
// failed message), delayLevel, originMsgId, originTopic, unitMode,
// maxReconsumeTimes, bname. Answered with code 0 and no fields.

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

const codeConsumerSendMsgBack int16 = 36

func (f *Front) sendBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	_, err := f.b.SendBack(ctx, &broker.SendBackRequest{
		Offset:            parseInt64(ext["offset"]),
		Group:             ext["group"],
		DelayLevel:        parseInt32(ext["delayLevel"]),
		OriginMsgID:       ext["originMsgId"],
		OriginTopic:       ext["originTopic"],
		MaxReconsumeTimes: parseInt32(ext["maxReconsumeTimes"]),
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, respSuccess, "")
}

// codePetrelResendDLQ is Petrel's admin request (RocketMQ has none; its
// console re-consumes through a client) that stores a dead-letter message
// again in its original topic: ext group and offset (the commit-log offset,
// as in an offset message id) or msgId. Answered like a send: msgId,
// queueId, queueOffset.
const codePetrelResendDLQ int16 = 10101

func (f *Front) resendDLQ(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	off := parseInt64(ext["offset"])
	if id := ext["msgId"]; id != "" {
		_, phys, err := message.ParseOffsetID(id)
		if err != nil {
			return remoting.NewResponse(req, respMessageIllegal, "msgId "+id+" is not an offset message id: "+err.Error())
		}
		off = phys
	}
	res, err := f.b.ResendDLQ(ctx, ext["group"], off)
	if err != nil {
		return errorResponse(req, err)
	}
	return sendResponse(req, res, nil)
}

// codePetrelCancelDelayed is Petrel's admin request that cancels a delayed
// message not delivered yet: ext msgId (its UNIQ_KEY, the msgId a send
// result names). Answered with code 0, 22 QUERY_NOT_FOUND for an unknown
// id, 13 when it is already due.
const codePetrelCancelDelayed int16 = 10102

func (f *Front) cancelDelayed(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if err := f.b.CancelDelayed(ctx, req.ExtFields["msgId"]); err != nil {
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, respSuccess, "")
}
