package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// Lookups used by tools: 12 QUERY_MESSAGE (by key in a time range; the
// answer's body is the matching records back to back, RespQueryNotFound
// when none) and 33 VIEW_MESSAGE_BY_ID (by commit-log offset, the one an
// offset message id holds; the body is that record).

// QueryMessageRequest is the header of QUERY_MESSAGE; every field is
// required (Java's @CFNotNull; the official clients send them all).
type QueryMessageRequest struct {
	Topic          string
	Key            string
	MaxNum         int32
	BeginTimestamp int64 // ms since the epoch
	EndTimestamp   int64
}

// DecodeQueryMessageRequest reads a QUERY_MESSAGE header.
func DecodeQueryMessageRequest(c *remoting.Command) (QueryMessageRequest, error) {
	f := fields{c: c}
	h := QueryMessageRequest{
		Topic: f.need("topic"), Key: f.need("key"), MaxNum: f.needI32("maxNum"),
		BeginTimestamp: f.needI64("beginTimestamp"), EndTimestamp: f.needI64("endTimestamp"),
	}
	return h, f.result()
}

// EncodeQueryMessageRequest returns a QUERY_MESSAGE request.
func EncodeQueryMessageRequest(h QueryMessageRequest) *remoting.Command {
	return remoting.NewRequest(CodeQueryMessage, map[string]string{
		"topic": h.Topic, "key": h.Key, "maxNum": itoa(h.MaxNum),
		"beginTimestamp": itoa(h.BeginTimestamp), "endTimestamp": itoa(h.EndTimestamp),
	}, nil)
}

// QueryMessageResponse is the header of a successful QUERY_MESSAGE answer;
// both fields are required.
type QueryMessageResponse struct {
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// EncodeQueryMessageResponse returns the answer to req with code and r's
// fields; the caller adds the records.
func EncodeQueryMessageResponse(req *remoting.Command, code int16, r QueryMessageResponse) *remoting.Command {
	resp := remoting.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{
		"indexLastUpdateTimestamp": itoa(r.IndexLastUpdateTimestamp),
		"indexLastUpdatePhyoffset": itoa(r.IndexLastUpdatePhyoffset),
	}
	return resp
}

// DecodeQueryMessageResponse reads a successful answer's header.
func DecodeQueryMessageResponse(c *remoting.Command) (QueryMessageResponse, error) {
	f := fields{c: c}
	r := QueryMessageResponse{
		IndexLastUpdateTimestamp: f.needI64("indexLastUpdateTimestamp"),
		IndexLastUpdatePhyoffset: f.needI64("indexLastUpdatePhyoffset"),
	}
	return r, f.result()
}

// ViewMessageRequest is the header of VIEW_MESSAGE_BY_ID: offset is
// required, topic optional (Java's @CFNotNull; clients send only the
// offset).
type ViewMessageRequest struct {
	Topic  string
	Offset int64 // commit-log offset
}

// DecodeViewMessageRequest reads a VIEW_MESSAGE_BY_ID header.
func DecodeViewMessageRequest(c *remoting.Command) (ViewMessageRequest, error) {
	f := fields{c: c}
	h := ViewMessageRequest{Topic: f.str("topic"), Offset: f.needI64("offset")}
	return h, f.result()
}

// EncodeViewMessageRequest returns a VIEW_MESSAGE_BY_ID request.
func EncodeViewMessageRequest(h ViewMessageRequest) *remoting.Command {
	ext := map[string]string{"offset": itoa(h.Offset)}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return remoting.NewRequest(CodeViewMessageByID, ext, nil)
}
