package brokerfront

// Clients. 34 HEART_BEAT: JSON body with clientID, producerDataSet and
// consumerDataSet (subscriptions; subVersion is a 19-digit integer, codeSet
// is ignored: the broker hashes tags itself); answered with code 0.
// 38 GET_CONSUMER_LIST_BY_GROUP: {"consumerIdList":[...]}, which must list
// the asking client. 41 LOCK_BATCH_MQ / 42 UNLOCK_BATCH_MQ: body
// {consumerGroup, clientId, mqSet:[{topic, brokerName, queueId}]}; the lock
// answer lists the queues now held in lockOKMQSet. 35 UNREGISTER_CLIENT
// (Java clients on shutdown) is answered; the client's connection closing
// removes it anyway.

import (
	"context"
	"encoding/json"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

type heartbeatBody struct {
	ClientID        string `json:"clientID"`
	ProducerDataSet []struct {
		GroupName string `json:"groupName"`
	} `json:"producerDataSet"`
	ConsumerDataSet []struct {
		GroupName           string `json:"groupName"`
		ConsumeType         string `json:"consumeType"`
		MessageModel        string `json:"messageModel"`
		ConsumeFromWhere    string `json:"consumeFromWhere"`
		SubscriptionDataSet []struct {
			Topic          string   `json:"topic"`
			SubString      string   `json:"subString"`
			TagsSet        []string `json:"tagsSet"`
			SubVersion     int64    `json:"subVersion"`
			ExpressionType string   `json:"expressionType"`
		} `json:"subscriptionDataSet"`
	} `json:"consumerDataSet"`
}

func (f *Front) heartbeat(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body heartbeatBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, "heartbeat body is not valid JSON: "+err.Error())
	}
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
	noteClient(c, req)
	f.b.Heartbeat(f.id(c), hb)
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) unregisterClient(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	body, err := json.Marshal(v)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, "encode answer: "+err.Error())
	}
	resp.Body = body
	return resp
}

func (f *Front) consumerList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ids := f.b.ConsumerIDs(req.ExtFields["consumerGroup"])
	if ids == nil {
		ids = []string{}
	}
	return jsonResponse(req, struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}{ids})
}

type queueJSON struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

type lockBody struct {
	ConsumerGroup string      `json:"consumerGroup"`
	ClientID      string      `json:"clientId"`
	MQSet         []queueJSON `json:"mqSet"`
}

func decodeLock(req *remoting.Command) (lockBody, []broker.QueueRef, error) {
	var body lockBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return body, nil, err
	}
	qs := make([]broker.QueueRef, len(body.MQSet))
	for i, q := range body.MQSet {
		qs[i] = broker.QueueRef{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}
	}
	return body, qs, nil
}

func (f *Front) lockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, qs, err := decodeLock(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, "lock body is not valid JSON: "+err.Error())
	}
	held := f.b.LockQueues(body.ConsumerGroup, body.ClientID, qs)
	out := make([]queueJSON, len(held))
	for i, q := range held {
		out[i] = queueJSON{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}
	}
	return jsonResponse(req, struct {
		LockOKMQSet []queueJSON `json:"lockOKMQSet"`
	}{out})
}

func (f *Front) unlockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, qs, err := decodeLock(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, "unlock body is not valid JSON: "+err.Error())
	}
	f.b.UnlockQueues(body.ConsumerGroup, body.ClientID, qs)
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
