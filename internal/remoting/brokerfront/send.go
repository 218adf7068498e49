package brokerfront

// SEND_MESSAGE (10) carries the V1 header with long ext keys; Java clients
// send SEND_MESSAGE_V2 (310) and every client sends SEND_BATCH_MESSAGE (320)
// with the V2 header, whose keys are single letters:
//
//	a producerGroup  b topic  c defaultTopic  d defaultTopicQueueNums
//	e queueId  f sysFlag  g bornTimestamp  h flag  i properties
//	j reconsumeTimes  k unitMode  l maxReconsumeTimes  m batch  n brokerName
//
// The answer is code 0, or 10 FLUSH_DISK_TIMEOUT when the flush did not
// finish in time (the client counts both as stored), with ext msgId (the
// offset id; comma-joined for batches), queueId, queueOffset, MSG_REGION and
// TRACE_ON. The transactional Go producer parses msgId, so it is always a
// valid offset id.

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

var v2Keys = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
	"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
	"reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m",
}

func sendExt(req *remoting.Command, key string) string {
	if req.Code == codeSendMessage {
		return req.ExtFields[key]
	}
	return req.ExtFields[v2Keys[key]]
}

// sendRequest decodes a send's header.
func sendRequest(c *remoting.Conn, req *remoting.Command) *broker.SendRequest {
	return &broker.SendRequest{
		ProducerGroup:         sendExt(req, "producerGroup"),
		Topic:                 sendExt(req, "topic"),
		DefaultTopic:          sendExt(req, "defaultTopic"),
		DefaultTopicQueueNums: parseInt32(sendExt(req, "defaultTopicQueueNums")),
		QueueID:               parseInt32(sendExt(req, "queueId")),
		SysFlag:               parseInt32(sendExt(req, "sysFlag")),
		Flag:                  parseInt32(sendExt(req, "flag")),
		BornTimestamp:         parseInt64(sendExt(req, "bornTimestamp")),
		BornHost:              addrPort(c.RemoteAddr()),
		Properties:            sendExt(req, "properties"),
		Body:                  req.Body,
		ReconsumeTimes:        parseInt32(sendExt(req, "reconsumeTimes")),
		MaxReconsumeTimes:     parseInt32(sendExt(req, "maxReconsumeTimes")),
		Batch:                 req.Code == codeSendBatchMessage || sendExt(req, "batch") == "true",
	}
}

// send is the async handler of the send codes: the store answers it, and
// the response is built on the connection's writer. A send to a topic that
// must be created first runs on a goroutine of its own.
func (f *Front) send(ctx context.Context, c *remoting.Conn, req *remoting.Command, reply func(func() *remoting.Command)) {
	sr := sendRequest(c, req)
	done := func(res broker.SendResult, err error) {
		reply(func() *remoting.Command { return sendResponse(req, res, err) })
	}
	if f.b.SendAsync(ctx, sr, done) {
		return
	}
	go func() { done(f.b.Send(ctx, sr)) }()
}

func sendResponse(req *remoting.Command, res broker.SendResult, err error) *remoting.Command {
	if err != nil {
		return errorResponse(req, err)
	}
	code := respSuccess
	if res.Status == broker.SendFlushDiskTimeout {
		code = respFlushDiskTimeout
	}
	resp := remoting.NewResponse(req, code, "")
	region := res.RegionID
	if region == "" {
		region = "DefaultRegion"
	}
	resp.ExtFields = map[string]string{
		"msgId":       res.MsgID,
		"queueId":     itoa(int64(res.QueueID)),
		"queueOffset": itoa(res.QueueOffset),
		"MSG_REGION":  region,
		"TRACE_ON":    "true",
	}
	return resp
}
