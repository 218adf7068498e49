package brokerfront

// RECALL_MESSAGE (370, header rmq.RecallRequest; RocketMQ 5.3+): recalls a
// delayed message by the recall handle of its send answer
// (broker.Recall). Answered with code 0 and msgId, or: 11
// SLAVE_NOT_AVAILABLE on a slave (RocketMQ's code there), 17
// TOPIC_NOT_EXIST, 604 ILLEGAL_OPERATION for a handle that does not
// decode, names another topic or broker, or a time passed or beyond the
// timer's limit; 22 QUERY_NOT_FOUND when no such message is pending here
// (RocketMQ answers 0 and writes its delete marker regardless), 13 when
// it is due already.

import (
	"context"
	"errors"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (f *Front) recall(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeRecallRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	id, err := f.b.Recall(ctx, h.Topic, h.RecallHandle)
	if errors.Is(err, broker.ErrNotMaster) {
		f.log.Debug("request refused by a slave", "code", req.Code, "err", err)
		var be *broker.Error
		errors.As(err, &be)
		return remoting.NewResponse(req, rmq.RespSlaveNotAvailable, be.Msg)
	}
	if err != nil {
		return f.errorResponse(req, err)
	}
	return rmq.EncodeRecallResponse(req, rmq.RecallResponse{MsgID: id})
}
