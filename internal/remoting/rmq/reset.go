package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// Offset reset: 222 INVOKE_BROKER_TO_RESET_OFFSET (an operator asks the
// broker to move a group's offsets of a topic to a time; the answer's body
// is the OffsetTable it stored) and 220 RESET_CONSUMER_CLIENT_OFFSET (the
// broker tells each member, oneway, with the same header and table).

// ResetOffsetLatest in ResetOffsetRequest.Timestamp means every queue's max
// offset.
const ResetOffsetLatest int64 = -1

// ResetOffsetRequest is the header of INVOKE_BROKER_TO_RESET_OFFSET and of
// RESET_CONSUMER_CLIENT_OFFSET. topic and group are required (Java's
// @CFNotNull); an absent timestamp is ResetOffsetLatest, as Petrel has
// always read it.
type ResetOffsetRequest struct {
	Topic     string
	Group     string
	Timestamp int64 // ms since the epoch, or ResetOffsetLatest
	IsForce   bool
}

// DecodeResetOffsetRequest reads an INVOKE_BROKER_TO_RESET_OFFSET or
// RESET_CONSUMER_CLIENT_OFFSET header.
func DecodeResetOffsetRequest(c *remoting.Command) (ResetOffsetRequest, error) {
	f := fields{c: c}
	h := ResetOffsetRequest{Topic: f.need("topic"), Group: f.need("group"), Timestamp: ResetOffsetLatest, IsForce: f.boolean("isForce")}
	if v := c.Ext("timestamp"); v != "" {
		h.Timestamp = f.i64("timestamp")
	}
	return h, f.result()
}

func encodeReset(code int16, h ResetOffsetRequest, body []byte) *remoting.Command {
	return remoting.NewRequest(code, map[string]string{
		"topic": h.Topic, "group": h.Group, "timestamp": itoa(h.Timestamp), "isForce": btoa(h.IsForce),
	}, body)
}

// EncodeResetOffsetRequest returns an INVOKE_BROKER_TO_RESET_OFFSET
// request.
func EncodeResetOffsetRequest(h ResetOffsetRequest) *remoting.Command {
	return encodeReset(CodeInvokeBrokerToResetOffset, h, nil)
}

// EncodeResetClientOffset returns a RESET_CONSUMER_CLIENT_OFFSET request
// with table, an EncodeOffsetTable body (encoded once for all members), as
// its body.
func EncodeResetClientOffset(h ResetOffsetRequest, table []byte) *remoting.Command {
	return encodeReset(CodeResetConsumerClientOffset, h, table)
}

// DecodeResetClientOffset reads a RESET_CONSUMER_CLIENT_OFFSET request: its
// header and offset table.
func DecodeResetClientOffset(c *remoting.Command) (ResetOffsetRequest, OffsetTable, error) {
	h, err := DecodeResetOffsetRequest(c)
	if err != nil {
		return h, nil, err
	}
	t, err := DecodeOffsetTable(c.Body)
	return h, t, err
}

// EncodeResetOffsetResponse returns the successful answer to req with
// table, an EncodeOffsetTable body, as its body.
func EncodeResetOffsetResponse(req *remoting.Command, table []byte) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.Body = table
	return resp
}

// DecodeResetOffsetResponse reads the table of a successful answer.
func DecodeResetOffsetResponse(c *remoting.Command) (OffsetTable, error) {
	return DecodeOffsetTable(c.Body)
}
