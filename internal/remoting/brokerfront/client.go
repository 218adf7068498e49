package brokerfront

// Clients (bodies and headers in rmq/client.go). 34 HEART_BEAT: answered
// with code 0 (codeSet is ignored: the broker hashes tags itself).
// 38 GET_CONSUMER_LIST_BY_GROUP: the group's client ids, which must list
// the asking client. 41 LOCK_BATCH_MQ / 42 UNLOCK_BATCH_MQ: the lock answer
// lists the queues now held. 35 UNREGISTER_CLIENT (Java clients on
// shutdown) is answered; the client's connection closing removes it
// anyway.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// heartbeatOf converts a heartbeat's wire shape into the broker's.
func heartbeatOf(body rmq.HeartbeatData) broker.Heartbeat {
	hb := broker.Heartbeat{ClientID: body.ClientID}
	for _, p := range body.ProducerDataSet {
		hb.Producers = append(hb.Producers, p.GroupName)
	}
	for _, cd := range body.ConsumerDataSet {
		d := broker.ConsumerData{Group: cd.GroupName, ConsumeType: cd.ConsumeType, MessageModel: cd.MessageModel, ConsumeFromWhere: cd.ConsumeFromWhere}
		for _, s := range cd.SubscriptionDataSet {
			d.Subscriptions = append(d.Subscriptions, broker.Subscription{
				Topic: s.Topic, Expression: s.SubString, ExpressionType: s.ExpressionType, Tags: s.TagsSet, SubVersion: s.SubVersion,
			})
		}
		hb.Consumers = append(hb.Consumers, d)
	}
	return hb
}

func (f *Front) heartbeat(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := rmq.DecodeHeartbeat(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	noteClient(c, req)
	f.b.Heartbeat(f.id(c), heartbeatOf(body))
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) unregisterClient(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if _, err := rmq.DecodeUnregisterClientRequest(req); err != nil {
		return refuseHeader(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) consumerList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeConsumerGroupRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return rmq.EncodeConsumerListResponse(req, rmq.ConsumerListBody{ConsumerIDList: f.b.ConsumerIDs(h.ConsumerGroup)})
}

// queueRefs converts a lock body's queues into the broker's.
func queueRefs(mqs []rmq.MessageQueue) []broker.QueueRef {
	qs := make([]broker.QueueRef, len(mqs))
	for i, q := range mqs {
		qs[i] = broker.QueueRef{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}
	}
	return qs
}

func (f *Front) lockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := rmq.DecodeLockBatch(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	held := f.b.LockQueues(body.ConsumerGroup, body.ClientID, queueRefs(body.MQSet))
	out := make([]rmq.MessageQueue, len(held))
	for i, q := range held {
		out[i] = rmq.MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}
	}
	return rmq.EncodeLockBatchResponse(req, rmq.LockBatchResponse{LockOKMQSet: out})
}

func (f *Front) unlockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := rmq.DecodeLockBatch(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	f.b.UnlockQueues(body.ConsumerGroup, body.ClientID, queueRefs(body.MQSet))
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
