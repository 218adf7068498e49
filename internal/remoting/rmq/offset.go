package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// Offsets: 14 QUERY_CONSUMER_OFFSET (answered with an offset, or
// RespQueryNotFound when the group has none), 15 UPDATE_CONSUMER_OFFSET
// (oneway from clients; answered anyway), 29 SEARCH_OFFSET_BY_TIMESTAMP,
// 30 GET_MAX_OFFSET and 31 GET_MIN_OFFSET. Every field of these headers is
// required, as Java's @CFNotNull (the official clients send them all).

// QueryConsumerOffsetRequest is the header of QUERY_CONSUMER_OFFSET.
type QueryConsumerOffsetRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
}

// DecodeQueryConsumerOffsetRequest reads a QUERY_CONSUMER_OFFSET header.
func DecodeQueryConsumerOffsetRequest(c *remoting.Command) (QueryConsumerOffsetRequest, error) {
	f := fields{c: c}
	h := QueryConsumerOffsetRequest{ConsumerGroup: f.need("consumerGroup"), Topic: f.need("topic"), QueueID: f.needI32("queueId")}
	return h, f.result()
}

// EncodeQueryConsumerOffsetRequest returns a QUERY_CONSUMER_OFFSET request.
func EncodeQueryConsumerOffsetRequest(h QueryConsumerOffsetRequest) *remoting.Command {
	return remoting.NewRequest(CodeQueryConsumerOffset, map[string]string{
		"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa(h.QueueID),
	}, nil)
}

// UpdateConsumerOffsetRequest is the header of UPDATE_CONSUMER_OFFSET.
type UpdateConsumerOffsetRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	CommitOffset  int64
}

// DecodeUpdateConsumerOffsetRequest reads an UPDATE_CONSUMER_OFFSET header.
func DecodeUpdateConsumerOffsetRequest(c *remoting.Command) (UpdateConsumerOffsetRequest, error) {
	f := fields{c: c}
	h := UpdateConsumerOffsetRequest{
		ConsumerGroup: f.need("consumerGroup"), Topic: f.need("topic"),
		QueueID: f.needI32("queueId"), CommitOffset: f.needI64("commitOffset"),
	}
	return h, f.result()
}

// EncodeUpdateConsumerOffsetRequest returns an UPDATE_CONSUMER_OFFSET
// request.
func EncodeUpdateConsumerOffsetRequest(h UpdateConsumerOffsetRequest) *remoting.Command {
	return remoting.NewRequest(CodeUpdateConsumerOffset, map[string]string{
		"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa(h.QueueID), "commitOffset": itoa(h.CommitOffset),
	}, nil)
}

// SearchOffsetRequest is the header of SEARCH_OFFSET_BY_TIMESTAMP.
type SearchOffsetRequest struct {
	Topic     string
	QueueID   int32
	Timestamp int64 // ms since the epoch
}

// DecodeSearchOffsetRequest reads a SEARCH_OFFSET_BY_TIMESTAMP header.
func DecodeSearchOffsetRequest(c *remoting.Command) (SearchOffsetRequest, error) {
	f := fields{c: c}
	h := SearchOffsetRequest{Topic: f.need("topic"), QueueID: f.needI32("queueId"), Timestamp: f.needI64("timestamp")}
	return h, f.result()
}

// EncodeSearchOffsetRequest returns a SEARCH_OFFSET_BY_TIMESTAMP request.
func EncodeSearchOffsetRequest(h SearchOffsetRequest) *remoting.Command {
	return remoting.NewRequest(CodeSearchOffsetByTimestamp, map[string]string{
		"topic": h.Topic, "queueId": itoa(h.QueueID), "timestamp": itoa(h.Timestamp),
	}, nil)
}

// QueueOffsetRequest is the header of GET_MAX_OFFSET and GET_MIN_OFFSET.
type QueueOffsetRequest struct {
	Topic   string
	QueueID int32
}

// DecodeQueueOffsetRequest reads a GET_MAX_OFFSET or GET_MIN_OFFSET header.
func DecodeQueueOffsetRequest(c *remoting.Command) (QueueOffsetRequest, error) {
	f := fields{c: c}
	h := QueueOffsetRequest{Topic: f.need("topic"), QueueID: f.needI32("queueId")}
	return h, f.result()
}

// EncodeGetMaxOffsetRequest returns a GET_MAX_OFFSET request.
func EncodeGetMaxOffsetRequest(h QueueOffsetRequest) *remoting.Command {
	return encodeQueueOffset(CodeGetMaxOffset, h)
}

// EncodeGetMinOffsetRequest returns a GET_MIN_OFFSET request.
func EncodeGetMinOffsetRequest(h QueueOffsetRequest) *remoting.Command {
	return encodeQueueOffset(CodeGetMinOffset, h)
}

func encodeQueueOffset(code int16, h QueueOffsetRequest) *remoting.Command {
	return remoting.NewRequest(code, map[string]string{"topic": h.Topic, "queueId": itoa(h.QueueID)}, nil)
}

// OffsetResponse is the header of the answers to 14, 29, 30 and 31:
// offset, required.
type OffsetResponse struct {
	Offset int64
}

// EncodeOffsetResponse returns the answer to req with code and r's offset.
func EncodeOffsetResponse(req *remoting.Command, code int16, r OffsetResponse) *remoting.Command {
	resp := remoting.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{"offset": itoa(r.Offset)}
	return resp
}

// DecodeOffsetResponse reads an offset answer's header.
func DecodeOffsetResponse(c *remoting.Command) (OffsetResponse, error) {
	f := fields{c: c}
	r := OffsetResponse{Offset: f.needI64("offset")}
	return r, f.result()
}
