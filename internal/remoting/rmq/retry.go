package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// Redelivery: 36 CONSUMER_SEND_MSG_BACK (a consumer gives a message back
// for a later retry, or to the dead-letter queue), and Petrel's own admin
// requests 10101 PETREL_RESEND_DLQ (store a dead-letter message again in
// its original topic; answered like a send) and 10102
// PETREL_CANCEL_DELAYED (cancel a delayed message not delivered yet).

// SendBackRequest is the header of CONSUMER_SEND_MSG_BACK. Required (Java's
// @CFNotNull): offset, group, delayLevel. MaxReconsumeTimes is 0 when
// absent.
type SendBackRequest struct {
	Offset            int64 // commit-log offset of the failed message
	Group             string
	DelayLevel        int32 // 0: the next retry level; -1: to the dead-letter queue
	OriginMsgID       string
	OriginTopic       string
	UnitMode          bool
	MaxReconsumeTimes int32
}

// DecodeSendBackRequest reads a CONSUMER_SEND_MSG_BACK header.
func DecodeSendBackRequest(c *remoting.Command) (SendBackRequest, error) {
	f := fields{c: c}
	h := SendBackRequest{
		Offset:            f.needI64("offset"),
		Group:             f.need("group"),
		DelayLevel:        f.needI32("delayLevel"),
		OriginMsgID:       f.str("originMsgId"),
		OriginTopic:       f.str("originTopic"),
		UnitMode:          f.boolean("unitMode"),
		MaxReconsumeTimes: f.i32("maxReconsumeTimes"),
	}
	return h, f.result()
}

// EncodeSendBackRequest returns a CONSUMER_SEND_MSG_BACK request.
func EncodeSendBackRequest(h SendBackRequest) *remoting.Command {
	return remoting.NewRequest(CodeConsumerSendMsgBack, map[string]string{
		"offset": itoa(h.Offset), "group": h.Group, "delayLevel": itoa(h.DelayLevel),
		"originMsgId": h.OriginMsgID, "originTopic": h.OriginTopic, "unitMode": btoa(h.UnitMode),
		"maxReconsumeTimes": itoa(h.MaxReconsumeTimes),
	}, nil)
}

// ResendDLQRequest is the header of PETREL_RESEND_DLQ: group (required)
// and the dead-letter message, by its commit-log offset or by its offset
// message id (MsgID, which wins when both are given).
type ResendDLQRequest struct {
	Group  string
	Offset int64
	MsgID  string
}

// DecodeResendDLQRequest reads a PETREL_RESEND_DLQ header.
func DecodeResendDLQRequest(c *remoting.Command) (ResendDLQRequest, error) {
	f := fields{c: c}
	h := ResendDLQRequest{Group: f.need("group"), Offset: f.i64("offset"), MsgID: f.str("msgId")}
	return h, f.result()
}

// EncodeResendDLQRequest returns a PETREL_RESEND_DLQ request.
func EncodeResendDLQRequest(h ResendDLQRequest) *remoting.Command {
	ext := map[string]string{"group": h.Group, "offset": itoa(h.Offset)}
	if h.MsgID != "" {
		ext["msgId"] = h.MsgID
	}
	return remoting.NewRequest(CodePetrelResendDLQ, ext, nil)
}

// CancelDelayedRequest is the header of PETREL_CANCEL_DELAYED: msgId, the
// message's UNIQ_KEY (the msgId its send answer named), required; topic,
// optional: only a message of that topic is cancelled.
type CancelDelayedRequest struct {
	MsgID string
	Topic string
}

// DecodeCancelDelayedRequest reads a PETREL_CANCEL_DELAYED header.
func DecodeCancelDelayedRequest(c *remoting.Command) (CancelDelayedRequest, error) {
	f := fields{c: c}
	h := CancelDelayedRequest{MsgID: f.need("msgId"), Topic: f.str("topic")}
	return h, f.result()
}

// EncodeCancelDelayedRequest returns a PETREL_CANCEL_DELAYED request.
func EncodeCancelDelayedRequest(h CancelDelayedRequest) *remoting.Command {
	ext := map[string]string{"msgId": h.MsgID}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return remoting.NewRequest(CodePetrelCancelDelayed, ext, nil)
}
