package rmq

// Request-reply: SEND_REPLY_MESSAGE (324, the V1 send header) and
// SEND_REPLY_MESSAGE_V2 (325, the V2 letters) carry a replier's answer to
// the cluster's reply topic; both decode with DecodeSendHeader and are
// answered like a send. The broker pushes the reply to its requester with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326, broker → client, answered by the
// client with code 0): Java's ReplyMessageRequestHeader, the send header's
// fields plus the replier's and broker's addresses and the push time; the
// body is the reply body as the replier sent it (zlib when sysFlag&1).
//
// The properties (encoded, key 0x01 value 0x02 ...) carry what the
// requester matches the reply by: CORRELATION_ID, REPLY_TO_CLIENT (the
// requester's client id), TTL, MSG_TYPE=reply, and PUSH_REPLY_TIME, which
// the broker adds.

import "github.com/petrelmq/petrel/internal/remoting"

// Request-reply codes (RocketMQ's RequestCode).
const (
	CodeSendReplyMessage         int16 = 324
	CodeSendReplyMessageV2       int16 = 325
	CodePushReplyMessageToClient int16 = 326 // broker → requester
)

// Property keys of request-reply (RocketMQ's MessageConst).
const (
	PropertyCorrelationID = "CORRELATION_ID"
	PropertyReplyToClient = "REPLY_TO_CLIENT"
	PropertyMessageTTL    = "TTL"
	PropertyMessageType   = "MSG_TYPE"
	// MessageTypeReply is MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG).
	MessageTypeReply = "reply"
)

// PushReplyRequest is the header of PUSH_REPLY_MESSAGE_TO_CLIENT. Java's
// @CFNotNull fields are required: producerGroup, topic, defaultTopic,
// defaultTopicQueueNums, queueId, sysFlag, bornTimestamp, flag, bornHost,
// storeHost, storeTimestamp; properties, reconsumeTimes and unitMode are
// optional. (A replier may send an empty defaultTopic; the broker then
// pushes TBW102, the template clients name by default.)
type PushReplyRequest struct {
	ProducerGroup         string // the replier's
	Topic                 string // the reply topic
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64 // ms, the replier's clock
	Flag                  int32
	Properties            string // encoded
	ReconsumeTimes        int32
	UnitMode              bool
	BornHost              string // the replier, ip:port
	StoreHost             string // the broker, ip:port
	StoreTimestamp        int64  // ms, when the broker pushed it
}

// DecodePushReply reads a PUSH_REPLY_MESSAGE_TO_CLIENT header; the reply
// body is the command's body.
func DecodePushReply(c *remoting.Command) (PushReplyRequest, error) {
	f := fields{c: c}
	h := PushReplyRequest{
		ProducerGroup:         f.need("producerGroup"),
		Topic:                 f.need("topic"),
		DefaultTopic:          f.need("defaultTopic"),
		DefaultTopicQueueNums: f.needI32("defaultTopicQueueNums"),
		QueueID:               f.needI32("queueId"),
		SysFlag:               f.needI32("sysFlag"),
		BornTimestamp:         f.needI64("bornTimestamp"),
		Flag:                  f.needI32("flag"),
		Properties:            f.str("properties"),
		ReconsumeTimes:        f.i32("reconsumeTimes"),
		UnitMode:              f.strictBool("unitMode"),
		BornHost:              f.need("bornHost"),
		StoreHost:             f.need("storeHost"),
		StoreTimestamp:        f.needI64("storeTimestamp"),
	}
	return h, f.result()
}

// EncodePushReply returns a PUSH_REPLY_MESSAGE_TO_CLIENT request carrying
// body, every field written (the Java client refuses a header without its
// required fields).
func EncodePushReply(h PushReplyRequest, body []byte) *remoting.Command {
	return remoting.NewRequest(CodePushReplyMessageToClient, nil, body).
		AppendExt("producerGroup", h.ProducerGroup).
		AppendExt("topic", h.Topic).
		AppendExt("defaultTopic", h.DefaultTopic).
		AppendExt("defaultTopicQueueNums", itoa(h.DefaultTopicQueueNums)).
		AppendExt("queueId", itoa(h.QueueID)).
		AppendExt("sysFlag", itoa(h.SysFlag)).
		AppendExt("bornTimestamp", itoa(h.BornTimestamp)).
		AppendExt("flag", itoa(h.Flag)).
		AppendExt("properties", h.Properties).
		AppendExt("reconsumeTimes", itoa(h.ReconsumeTimes)).
		AppendExt("unitMode", btoa(h.UnitMode)).
		AppendExt("bornHost", h.BornHost).
		AppendExt("storeHost", h.StoreHost).
		AppendExt("storeTimestamp", itoa(h.StoreTimestamp))
}
