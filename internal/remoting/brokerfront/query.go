package brokerfront

// Lookups used by tools. 12 QUERY_MESSAGE: ext topic, key, maxNum,
// beginTimestamp, endTimestamp; body = the matching records back to back,
// ext indexLastUpdateTimestamp and indexLastUpdatePhyoffset; 22 when none.
// 33 VIEW_MESSAGE_BY_ID: ext offset (the commit-log offset inside an offset
// message id); body = that record; 1 when there is none.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	limit := int(parseInt32(ext["maxNum"]))
	if limit <= 0 {
		limit = 32
	}
	end := parseInt64(ext["endTimestamp"])
	if end == 0 {
		end = 1<<63 - 1
	}
	recs, err := f.b.QueryByKey(ext["topic"], ext["key"], parseInt64(ext["beginTimestamp"]), end, limit)
	if err != nil {
		return errorResponse(req, err)
	}
	if len(recs) == 0 {
		return remoting.NewResponse(req, respQueryNotFound, "no message of topic "+ext["topic"]+" has key "+ext["key"]+" in that time range")
	}
	resp := remoting.NewResponse(req, respSuccess, "")
	var last int64
	for _, r := range recs {
		resp.BodyParts = append(resp.BodyParts, r)
		last = max(last, r.StoreTimestamp())
	}
	resp.ExtFields = map[string]string{"indexLastUpdateTimestamp": itoa(last), "indexLastUpdatePhyoffset": "0"}
	return resp
}

func (f *Front) viewMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := f.b.ViewByOffset(parseInt64(req.ExtFields["offset"]))
	if err != nil {
		return remoting.NewResponse(req, respSystemError, "no message at commit-log offset "+req.ExtFields["offset"]+": "+err.Error())
	}
	resp := remoting.NewResponse(req, respSuccess, "")
	resp.Body = r
	return resp
}
