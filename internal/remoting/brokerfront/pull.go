package brokerfront

// PULL_MESSAGE (11): rmq.PullRequest in, rmq.PullResponse out. Codes: 0
// FOUND with the stored records as the body (written from the store's
// buffer without copying), 19 PULL_NOT_FOUND, 20 PULL_RETRY_IMMEDIATELY,
// 21 PULL_OFFSET_MOVED; a header that does not decode is refused with 1
// SYSTEM_ERROR and a remark naming the field, as Java refuses it.

import (
	"context"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// suggestWhichBrokerID is every pull answer's suggestWhichBrokerId: the
// master (0), from a master and from a slave alike, as RocketMQ answers
// while the master does not read far behind its write point. A client pulls
// next from the suggested id of the route's brokerAddrs and, when that id
// is not listed (the master is down), from any listed replica: so a
// consumer reads a group's queues from its slave while only the slave is
// routed, and returns to the master as soon as the route lists it again.
// (Answering a slave's own id would keep consumers on the slave after the
// master is back.) Petrel does not yet suggest a slave for a master reading
// from disk (RocketMQ's accessMessageInMemoryMaxRatio rule).
const suggestWhichBrokerID = 0

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
		SuggestWhichBrokerID: suggestWhichBrokerID,
	})
	if res.Status == broker.PullFound {
		resp.BodyParts = [][]byte{res.Body}
		resp.Release = res.Release
	} else {
		res.Release()
	}
	return resp
}
