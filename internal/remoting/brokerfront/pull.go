package brokerfront

// PULL_MESSAGE (11). Ext: consumerGroup, topic, queueId, queueOffset,
// maxMsgNums, sysFlag (bit 0 commit offset, bit 1 long polling allowed,
// bit 2 subscription in this request), commitOffset, suspendTimeoutMillis,
// subscription, expressionType, subVersion. The answer always carries
// nextBeginOffset, minOffset, maxOffset and suggestWhichBrokerId (a missing
// nextBeginOffset sends the client back to offset 0). Codes: 0 FOUND with
// the stored records as the body (written from the store's buffer without
// copying), 19 PULL_NOT_FOUND, 20 PULL_RETRY_IMMEDIATELY, 21
// PULL_OFFSET_MOVED.

import (
	"context"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) pull(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	suspend := time.Duration(n.int64("suspendTimeoutMillis", ext["suspendTimeoutMillis"])) * time.Millisecond
	pr := &broker.PullRequest{
		Group:          ext["consumerGroup"],
		Topic:          ext["topic"],
		QueueID:        n.int32("queueId", ext["queueId"]),
		Offset:         n.int64("queueOffset", ext["queueOffset"]),
		MaxMsgs:        n.int32("maxMsgNums", ext["maxMsgNums"]),
		CommitOffset:   n.int64("commitOffset", ext["commitOffset"]),
		SysFlag:        n.int32("sysFlag", ext["sysFlag"]),
		SuspendTimeout: suspend,
		Subscription:   ext["subscription"],
		ExpressionType: ext["expressionType"],
		Conn:           f.id(c),
	}
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	res, err := f.b.Pull(ctx, pr)
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
	resp := remoting.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{
		"nextBeginOffset":      itoa(res.NextBeginOffset),
		"minOffset":            itoa(res.MinOffset),
		"maxOffset":            itoa(res.MaxOffset),
		"suggestWhichBrokerId": "0",
	}
	if res.Status == broker.PullFound {
		resp.BodyParts = [][]byte{res.Body}
		resp.Release = res.Release
	} else {
		res.Release()
	}
	return resp
}
