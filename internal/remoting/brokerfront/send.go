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

// send is the batch handler of the send codes: the sends the connection's
// reader decoded from one read go to the broker in one SendBatch, through
// the connection's Sender (one group commit; under async flush written on
// this reader, which then writes the replies too). The broker answers
// each; the response is built on the connection's writer (or reader).
func (f *Front) send(ctx context.Context, c *remoting.Conn, reqs []*remoting.Command, reply func(int, func() *remoting.Command)) {
	b := sendBatch{srs: make([]*broker.SendRequest, 0, len(reqs)), cmds: make([]*remoting.Command, 0, len(reqs)), idx: make([]int, 0, len(reqs))}
	for i, req := range reqs {
		var n numbers
		sr := sendRequest(c, req, &n)
		if resp := n.refused(req, rmq.RespMessageIllegal); resp != nil {
			reply(i, func() *remoting.Command { return resp })
			continue
		}
		if resp := checkSendProperties(req, sr); resp != nil {
			reply(i, func() *remoting.Command { return resp })
			continue
		}
		b.srs = append(b.srs, sr)
		b.cmds = append(b.cmds, req)
		b.idx = append(b.idx, i)
	}
	if len(b.srs) == 0 {
		return
	}
	f.sender(c).SendBatch(ctx, b.srs, func(k int, res broker.SendResult, err error) {
		req := b.cmds[k]
		reply(b.idx[k], func() *remoting.Command { return f.sendResponse(req, res, err) })
	})
}

// sendBatch is what send hands the broker: srs[k] is the send of cmds[k],
// the idx[k]-th request of the reader's batch.
type sendBatch struct {
	srs  []*broker.SendRequest
	cmds []*remoting.Command
	idx  []int
}

type senderKey struct{}

// sender is the connection's broker.Sender, made on its first send. Only
// the connection's reader calls it (batch handlers run there), one batch
// at a time, as a Sender requires.
func (f *Front) sender(c *remoting.Conn) *broker.Sender {
	if s, ok := c.Value(senderKey{}).(*broker.Sender); ok {
		return s
	}
	s := f.b.NewSender()
	c.SetValue(senderKey{}, s)
	return s
}

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
