package brokerfront

// Lookups used by tools (headers in rmq/query.go). 12 QUERY_MESSAGE: body =
// the records with the key back to back, 22 when none. 33
// VIEW_MESSAGE_BY_ID: body = the record at the commit-log offset (the one
// inside an offset message id); 1 when there is none.

import (
	"context"
	"strconv"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

// defaultQueryLimit is the records a query returns when its maxNum is not
// positive.
const defaultQueryLimit = 32

func (f *Front) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueryMessageRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	limit := int(h.MaxNum)
	if limit <= 0 {
		limit = defaultQueryLimit
	}
	end := h.EndTimestamp
	if end == 0 {
		end = 1<<63 - 1
	}
	recs, err := f.b.QueryByKey(h.Topic, h.Key, h.BeginTimestamp, end, limit)
	if err != nil {
		return f.errorResponse(req, err)
	}
	if len(recs) == 0 {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no message of topic "+h.Topic+" has key "+h.Key+" in that time range")
	}
	var last int64
	for _, r := range recs {
		last = max(last, r.StoreTimestamp())
	}
	resp := rmq.EncodeQueryMessageResponse(req, rmq.RespSuccess, rmq.QueryMessageResponse{IndexLastUpdateTimestamp: last})
	for _, r := range recs {
		resp.BodyParts = append(resp.BodyParts, r)
	}
	return resp
}

func (f *Front) viewMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeViewMessageRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	r, err := f.b.ViewByOffset(h.Offset)
	if err != nil {
		f.log.Debug("view message failed", "offset", h.Offset, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, "no message at commit-log offset "+strconv.FormatInt(h.Offset, 10))
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = r
	return resp
}
