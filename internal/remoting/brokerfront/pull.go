package brokerfront

// PULL_MESSAGE (11): rmq.PullRequest in, rmq.PullResponse out. Codes: 0
// FOUND with the stored records as the body (written from the store's
// buffer without copying), 19 PULL_NOT_FOUND, 20 PULL_RETRY_IMMEDIATELY,
// 21 PULL_OFFSET_MOVED; a header that does not decode is refused with 1
// SYSTEM_ERROR and a remark naming the field, as Java refuses it. The
// answer's suggestWhichBrokerId is the broker's (broker/suggest.go).

import (
	"context"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) pull(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodePullRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	suspend := time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
	res, err := f.b.Pull(ctx, &broker.PullRequest{
		Group:          h.ConsumerGroup,
		Topic:          h.Topic,
		QueueID:        h.QueueID,
		Offset:         h.QueueOffset,
		MaxMsgs:        h.MaxMsgNums,
		CommitOffset:   h.CommitOffset,
		SysFlag:        h.SysFlag,
		SuspendTimeout: suspend,
		Subscription:   h.Subscription,
		ExpressionType: h.ExpressionType,
		Conn:           f.id(c),
	})
	if err != nil {
		return f.errorResponse(req, err)
	}
	code := rmq.RespPullNotFound
	switch res.Status {
	case broker.PullFound:
		code = rmq.RespSuccess
	case broker.PullNoMatched:
		code = rmq.RespPullRetryImmediately
	case broker.PullOffsetMoved:
		code = rmq.RespPullOffsetMoved
	}
	resp := rmq.EncodePullResponse(req, code, rmq.PullResponse{
		NextBeginOffset: res.NextBeginOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset,
		SuggestWhichBrokerID: res.SuggestWhichBrokerID, // the broker's rule, broker/suggest.go
	})
	if res.Status == broker.PullFound {
		resp.BodyParts = [][]byte{res.Body}
		resp.Release = res.Release
	} else {
		res.Release()
	}
	return resp
}
