package brokerfront

// SEND_MESSAGE (10) carries the V1 header with long ext keys; Java clients
// send SEND_MESSAGE_V2 (310) and every client sends SEND_BATCH_MESSAGE (320)
// with the V2 header, whose keys are single letters (rmq.SendHeader).
//
// The answer is code 0, or 10 FLUSH_DISK_TIMEOUT when the flush did not
// finish in time, 12 FLUSH_SLAVE_TIMEOUT or 11 SLAVE_NOT_AVAILABLE when sync
// replication did not cover it (the client counts all as stored), with ext msgId (the
// offset id; comma-joined for batches), queueId, queueOffset, MSG_REGION,
// TRACE_ON and, for a single delayed message, recallHandle (RocketMQ
// 5.3+; broker.SendResult.RecallHandle says when). The transactional Go producer parses msgId, so it is always a
// valid offset id.

import (
	"context"
	"net/netip"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

// sendRequest decodes a send (rmq.DecodeSendHeader: one pass over its
// fields, V1 names and V2 letters alike) into the broker's typed request,
// or returns the MESSAGE_ILLEGAL answer refusing it: a numeric field that
// does not parse, ambiguous properties (checkSendProperties), a delay
// property that does not parse. The 4.x protocol's transaction flag (the
// sysflag's prepared type or TRAN_MSG) and delay properties become
// Transactional and Delay (ItemDelays for a batch's items); the
// properties are kept encoded as they arrived.
func sendRequest(c *remoting.Conn, req *remoting.Command) (*broker.SendRequest, *remoting.Command) {
	return decodeSend(addrPort(c.RemoteAddr()), req)
}

// decodeSend is sendRequest for a producer at born.
func decodeSend(born netip.AddrPort, req *remoting.Command) (*broker.SendRequest, *remoting.Command) {
	h, err := rmq.DecodeSendHeader(req)
	if err != nil {
		return nil, remoting.NewResponse(req, rmq.RespMessageIllegal, err.Error())
	}
	sr := &broker.SendRequest{
		ProducerGroup: h.ProducerGroup, Topic: h.Topic,
		DefaultTopic: h.DefaultTopic, DefaultTopicQueueNums: h.DefaultTopicQueueNums,
		QueueID: h.QueueID, SysFlag: h.SysFlag, Flag: h.Flag, BornTimestamp: h.BornTimestamp,
		BornHost: born, Properties: message.EncodedProperties(h.Properties), Body: req.Body,
		ReconsumeTimes: h.ReconsumeTimes, MaxReconsumeTimes: h.MaxReconsumeTimes, Batch: h.IsBatch(req.Code),
		Transactional: rmq.Prepared(h.SysFlag, h.Properties),
	}
	if resp := checkSendProperties(req, sr, h.Properties); resp != nil {
		return nil, resp
	}
	return sr, nil
}

// send is the batch handler of the send codes: the sends the connection's
// reader decoded from one read go to the broker in one SendBatch, through
// the connection's Sender (one group commit; under async flush written on
// this reader, which then writes the replies too). The broker answers
// each; the response is built on the connection's writer (or reader).
//
// A slave that knows its master forwards the sends instead (forward.go).
func (f *Front) send(ctx context.Context, c *remoting.Conn, reqs []*remoting.Command, reply func(int, func() *remoting.Command)) {
	if master, moved := f.forwardTo(); master != "" {
		local := f.fwd.forwardSends(ctx, reqs, reply, master, moved)
		if len(local) == 0 {
			return
		}
		rest := make([]*remoting.Command, len(local))
		for k, i := range local {
			rest[k] = reqs[i]
		}
		f.sendLocal(ctx, c, rest, func(k int, build func() *remoting.Command) { reply(local[k], build) })
		return
	}
	f.sendLocal(ctx, c, reqs, reply)
}

// sendLocal is send through the connection's broker.Sender.
func (f *Front) sendLocal(ctx context.Context, c *remoting.Conn, reqs []*remoting.Command, reply func(int, func() *remoting.Command)) {
	b := sendBatch{srs: make([]*broker.SendRequest, 0, len(reqs)), cmds: make([]*remoting.Command, 0, len(reqs)), idx: make([]int, 0, len(reqs))}
	for i, req := range reqs {
		sr, refused := sendRequest(c, req)
		if refused != nil {
			reply(i, func() *remoting.Command { return refused })
			continue
		}
		f.noteRequester(c, req, sr) // reply.go
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
	switch res.Status {
	case broker.SendFlushDiskTimeout:
		code = rmq.RespFlushDiskTimeout
	case broker.SendFlushSlaveTimeout:
		code = rmq.RespFlushSlaveTimeout
	case broker.SendSlaveNotAvailable:
		code = rmq.RespSlaveNotAvailable
	}
	region := res.RegionID
	if region == "" {
		region = "DefaultRegion"
	}
	return rmq.EncodeSendResponse(req, code, rmq.SendResponse{
		MsgID: res.MsgID, QueueID: res.QueueID, QueueOffset: res.QueueOffset, Region: region, TraceOn: true,
		RecallHandle: res.RecallHandle})
}
