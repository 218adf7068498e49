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

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// sendRequest decodes a send's header in one pass over its fields, V1
// names and V2 letters alike (a send handler is async: no ExtFields map).
func sendRequest(c *remoting.Conn, req *remoting.Command, n *numbers) *broker.SendRequest {
	sr := &broker.SendRequest{BornHost: addrPort(c.RemoteAddr()), Body: req.Body, Batch: req.Code == rmq.CodeSendBatchMessage}
	req.EachExt(func(k, v string) {
		switch k {
		case "a", "producerGroup":
			sr.ProducerGroup = v
		case "b", "topic":
			sr.Topic = v
		case "c", "defaultTopic":
			sr.DefaultTopic = v
		case "d", "defaultTopicQueueNums":
			sr.DefaultTopicQueueNums = n.int32("defaultTopicQueueNums", v)
		case "e", "queueId":
			sr.QueueID = n.int32("queueId", v)
		case "f", "sysFlag":
			sr.SysFlag = n.int32("sysFlag", v)
		case "g", "bornTimestamp":
			sr.BornTimestamp = n.int64("bornTimestamp", v)
		case "h", "flag":
			sr.Flag = n.int32("flag", v)
		case "i", "properties":
			sr.Properties = v
		case "j", "reconsumeTimes":
			sr.ReconsumeTimes = n.int32("reconsumeTimes", v)
		case "l", "maxReconsumeTimes":
			sr.MaxReconsumeTimes = n.int32("maxReconsumeTimes", v)
		case "m", "batch":
			sr.Batch = sr.Batch || v == "true"
		}
	})
	return sr
}

// send is the async handler of the send codes: the store answers it, and
// the response is built on the connection's writer. A send to a topic that
// must be created first runs on a goroutine of its own.
func (f *Front) send(ctx context.Context, c *remoting.Conn, req *remoting.Command, reply func(func() *remoting.Command)) {
	var n numbers
	sr := sendRequest(c, req, &n)
	if resp := n.refused(req, rmq.RespMessageIllegal); resp != nil {
		reply(func() *remoting.Command { return resp })
		return
	}
	if resp := checkSendProperties(req, sr); resp != nil {
		reply(func() *remoting.Command { return resp })
		return
	}
	done := func(res broker.SendResult, err error) {
		reply(func() *remoting.Command { return f.sendResponse(req, res, err) })
	}
	sr.Deferred = true // written at ReadIdle, with the rest of this read
	if f.b.SendAsync(ctx, sr, done) {
		return
	}
	sr.Deferred = false
	go func() { done(f.b.Send(ctx, sr)) }()
}

// readIdle writes the sends deferred by the connection readers.
func (f *Front) readIdle(*remoting.Conn) { f.b.FlushSends() }

func (f *Front) sendResponse(req *remoting.Command, res broker.SendResult, err error) *remoting.Command {
	if err != nil {
		return f.errorResponse(req, err)
	}
	code := rmq.RespSuccess
	if res.Status == broker.SendFlushDiskTimeout {
		code = rmq.RespFlushDiskTimeout
	}
	resp := remoting.NewResponse(req, code, "")
	region := res.RegionID
	if region == "" {
		region = "DefaultRegion"
	}
	return resp.AppendExt("msgId", res.MsgID).
		AppendExt("queueId", itoa(int64(res.QueueID))).
		AppendExt("queueOffset", itoa(res.QueueOffset)).
		AppendExt("MSG_REGION", region).
		AppendExt("TRACE_ON", "true")
}
