package brokerfront

// Server-side load balancing of 4.x clients (bodies in rmq/assign.go):
// 400 QUERY_ASSIGNMENT answers the requesting member's queues of this
// broker under the group's mode (broker.QueryAssignment); 401
// SET_MESSAGE_REQUEST_MODE stores the mode of a topic and group
// (broker.SetMessageRequestMode, durable with the group's config).

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (f *Front) registerAssign(s *remoting.Server) {
	s.Handle(rmq.CodeQueryAssignment, f.queryAssignment)
	s.Handle(rmq.CodeSetMessageRequestMode, f.setMessageRequestMode)
}

func (f *Front) queryAssignment(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := rmq.DecodeQueryAssignment(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	a := f.b.QueryAssignment(broker.AssignmentRequest{Topic: r.Topic, Group: r.ConsumerGroup, ClientID: r.ClientID,
		Strategy: r.StrategyName, Broadcasting: r.MessageModel == "BROADCASTING"})
	var out rmq.QueryAssignmentResponse
	if a.Valid {
		out.MessageQueueAssignments = make([]rmq.MessageQueueAssignment, 0, len(a.QueueIDs))
		for _, q := range a.QueueIDs {
			out.MessageQueueAssignments = append(out.MessageQueueAssignments, rmq.MessageQueueAssignment{
				MessageQueue: rmq.MessageQueue{Topic: r.Topic, BrokerName: f.name, QueueID: q}, Mode: a.Mode.Mode})
		}
	} else {
		f.log.Debug("no assignment", "topic", r.Topic, "group", r.ConsumerGroup, "client_id", r.ClientID, "strategy", r.StrategyName)
	}
	return bodyResponse(req, rmq.EncodeQueryAssignmentResponse(out), nil)
}

func (f *Front) setMessageRequestMode(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := rmq.DecodeSetMessageRequestMode(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	err = f.b.SetMessageRequestMode(r.Topic, r.ConsumerGroup, broker.RequestMode{Mode: r.Mode, PopShareQueueNum: r.PopShareQueueNum})
	if err != nil {
		return f.errorResponse(req, err) // KindGroupNotExist: SUBSCRIPTION_GROUP_NOT_EXIST (26), as RocketMQ
	}
	f.log.Debug("message request mode set", "topic", r.Topic, "group", r.ConsumerGroup, "mode", r.Mode, "remote", c.RemoteAddr().String())
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
