package brokerfront

// Offsets. 14 QUERY_CONSUMER_OFFSET (ext consumerGroup, topic, queueId):
// code 0 with ext offset, or 22 QUERY_NOT_FOUND when the group has none.
// 15 UPDATE_CONSUMER_OFFSET (ext consumerGroup, topic, queueId,
// commitOffset) is sent as a oneway call by clients; answered anyway.
// 30 GET_MAX_OFFSET, 31 GET_MIN_OFFSET, 29 SEARCH_OFFSET_BY_TIMESTAMP (ext
// topic, queueId, timestamp) answer ext offset; clients do not check the
// code, so the offset is always present.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

func offsetResponse(req *remoting.Command, off int64) *remoting.Command {
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.ExtFields = map[string]string{"offset": itoa(off)}
	return resp
}

func (f *Front) queryConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	qid := n.int32("queueId", ext["queueId"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	off, ok := f.b.QueryConsumerOffset(ext["consumerGroup"], ext["topic"], qid)
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no offset stored for this group and queue; start by the consumer's ConsumeFromWhere")
	}
	return offsetResponse(req, off)
}

func (f *Front) updateConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	qid, off := n.int32("queueId", ext["queueId"]), n.int64("commitOffset", ext["commitOffset"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	f.b.UpdateConsumerOffset(ext["consumerGroup"], ext["topic"], qid, off)
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) maxOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var n numbers
	qid := n.int32("queueId", req.ExtFields["queueId"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	return offsetResponse(req, f.b.MaxOffset(req.ExtFields["topic"], qid))
}

func (f *Front) minOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var n numbers
	qid := n.int32("queueId", req.ExtFields["queueId"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	return offsetResponse(req, f.b.MinOffset(req.ExtFields["topic"], qid))
}

func (f *Front) searchOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	qid, ts := n.int32("queueId", ext["queueId"]), n.int64("timestamp", ext["timestamp"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	return offsetResponse(req, f.b.SearchOffset(ext["topic"], qid, ts))
}
