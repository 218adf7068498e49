package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// 370 RECALL_MESSAGE (RocketMQ 5.3+): a producer recalls a delayed message
// before it is due, by the recall handle its send answer carried
// (SendResponse.RecallHandle; the layout is message.RecallHandle's). The
// answer is code 0 with ext msgId (the message's UNIQ_KEY), or a refusal:
// 11 SLAVE_NOT_AVAILABLE on a slave, 17 TOPIC_NOT_EXIST, 604
// ILLEGAL_OPERATION for a handle that does not decode or names another
// topic or broker, or a time already passed or beyond the timer's limit.

// RecallRequest is the header of RECALL_MESSAGE
// (RecallMessageRequestHeader): topic and recallHandle are required,
// producerGroup is optional (RocketMQ only records it).
type RecallRequest struct {
	ProducerGroup string
	Topic         string
	RecallHandle  string
}

// DecodeRecallRequest reads a RECALL_MESSAGE header. The handle is not
// decoded here (message.DecodeRecallHandle, which bounds it, does that).
func DecodeRecallRequest(c *remoting.Command) (RecallRequest, error) {
	f := fields{c: c}
	h := RecallRequest{ProducerGroup: f.str("producerGroup"), Topic: f.need("topic"), RecallHandle: f.need("recallHandle")}
	return h, f.result()
}

// EncodeRecallRequest returns a RECALL_MESSAGE request.
func EncodeRecallRequest(h RecallRequest) *remoting.Command {
	ext := map[string]string{"topic": h.Topic, "recallHandle": h.RecallHandle}
	if h.ProducerGroup != "" {
		ext["producerGroup"] = h.ProducerGroup
	}
	return remoting.NewRequest(CodeRecallMessage, ext, nil)
}

// RecallResponse is the header of RECALL_MESSAGE's answer
// (RecallMessageResponseHeader): msgId, the recalled message's UNIQ_KEY,
// required.
type RecallResponse struct {
	MsgID string
}

// EncodeRecallResponse answers req with code 0 and header r.
func EncodeRecallResponse(req *remoting.Command, r RecallResponse) *remoting.Command {
	return remoting.NewResponse(req, RespSuccess, "").AppendExt("msgId", r.MsgID)
}

// DecodeRecallResponse reads the header of a successful answer.
func DecodeRecallResponse(c *remoting.Command) (RecallResponse, error) {
	f := fields{c: c}
	r := RecallResponse{MsgID: f.need("msgId")}
	return r, f.result()
}
