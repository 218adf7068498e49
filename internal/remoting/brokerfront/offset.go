package brokerfront

// Offsets (headers in rmq/offset.go). 14 QUERY_CONSUMER_OFFSET: code 0
// with the offset, or 22 QUERY_NOT_FOUND when the group has none.
// 15 UPDATE_CONSUMER_OFFSET is sent as a oneway call by clients; answered
// anyway. 30 GET_MAX_OFFSET, 31 GET_MIN_OFFSET, 29
// SEARCH_OFFSET_BY_TIMESTAMP answer the offset; clients do not check the
// code, so the offset is always present.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

func offsetResponse(req *remoting.Command, off int64) *remoting.Command {
	return rmq.EncodeOffsetResponse(req, rmq.RespSuccess, rmq.OffsetResponse{Offset: off})
}

// refuseHeader answers a request whose header does not decode: the remark
// names the field (SYSTEM_ERROR, as Java answers a header it cannot read).
func refuseHeader(req *remoting.Command, err error) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
}

func (f *Front) queryConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueryConsumerOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	off, ok := f.b.QueryConsumerOffset(h.ConsumerGroup, h.Topic, h.QueueID)
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no offset stored for this group and queue; start by the consumer's ConsumeFromWhere")
	}
	return offsetResponse(req, off)
}

func (f *Front) updateConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeUpdateConsumerOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	f.b.UpdateConsumerOffset(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) maxOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueueOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return offsetResponse(req, f.b.MaxOffset(h.Topic, h.QueueID))
}

func (f *Front) minOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueueOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return offsetResponse(req, f.b.MinOffset(h.Topic, h.QueueID))
}

func (f *Front) searchOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeSearchOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return offsetResponse(req, f.b.SearchOffset(h.Topic, h.QueueID, h.Timestamp))
}
