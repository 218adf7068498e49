package brokerfront

// Lookups used by tools. 12 QUERY_MESSAGE: ext topic, key, maxNum,
// beginTimestamp, endTimestamp; body = the matching records back to back,
// ext indexLastUpdateTimestamp and indexLastUpdatePhyoffset; 22 when none.
// 33 VIEW_MESSAGE_BY_ID: ext offset (the commit-log offset inside an offset
// message id); body = that record; 1 when there is none.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	limit := int(n.int32("maxNum", ext["maxNum"]))
	if limit <= 0 {
		limit = 32
	}
	end := n.int64("endTimestamp", ext["endTimestamp"])
	if end == 0 {
		end = 1<<63 - 1
	}
	begin := n.int64("beginTimestamp", ext["beginTimestamp"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	recs, err := f.b.QueryByKey(ext["topic"], ext["key"], begin, end, limit)
	if err != nil {
		return f.errorResponse(req, err)
	}
	if len(recs) == 0 {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no message of topic "+ext["topic"]+" has key "+ext["key"]+" in that time range")
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	var last int64
	for _, r := range recs {
		resp.BodyParts = append(resp.BodyParts, r)
		last = max(last, r.StoreTimestamp())
	}
	resp.ExtFields = map[string]string{"indexLastUpdateTimestamp": itoa(last), "indexLastUpdatePhyoffset": "0"}
	return resp
}

func (f *Front) viewMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var n numbers
	off := n.int64("offset", req.ExtFields["offset"])
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	r, err := f.b.ViewByOffset(off)
	if err != nil {
		f.log.Debug("view message failed", "offset", off, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, "no message at commit-log offset "+req.ExtFields["offset"])
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = r
	return resp
}
