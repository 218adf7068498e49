package brokerfront

// Admin. 17 UPDATE_AND_CREATE_TOPIC (rmq.CreateTopicRequest): the
// attributes are RocketMQ 5's "+key=value,-key" changes to the topic's
// current attributes (e.g. "+persistent=false" for an in-memory topic);
// the broker registers the change with the name servers before answering,
// so the route is there when the client moves on (bounded by
// Options.RouteWait; after it the answer is success with a remark that the
// route is still propagating). 215 DELETE_TOPIC_IN_BROKER: ext topic;
// likewise answered once the name servers dropped the route.
// 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG and 21 GET_ALL_TOPIC_CONFIG: JSON
// tables with a dataVersion, decoded by clients with strict types.

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (f *Front) createTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeCreateTopic(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	t := broker.TopicConfig{
		Name:            h.Topic,
		ReadQueueNums:   h.ReadQueueNums,
		WriteQueueNums:  h.WriteQueueNums,
		Perm:            h.Perm,
		TopicFilterType: h.TopicFilterType,
		TopicSysFlag:    h.TopicSysFlag,
		Order:           h.Order,
	}
	cur, _ := f.b.Topic(t.Name)
	t.Attributes = cur.Attributes
	if h.Attributes != "" {
		attrs, err := applyAttributes(cur.Attributes, h.Attributes)
		if err != nil {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, err.Error())
		}
		t.Attributes = attrs
	}
	if err := f.b.CreateTopic(t); err != nil {
		return f.errorResponse(req, err)
	}
	return f.routed(ctx, req, t.Name, "created")
}

func (f *Front) deleteTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeDeleteTopic(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	if err := f.b.DeleteTopic(h.Topic); err != nil {
		return f.errorResponse(req, err)
	}
	return f.routed(ctx, req, h.Topic, "deleted")
}

// routed answers a topic change once the name servers have accepted it,
// or, after RouteWait, with a success whose remark says the route is still
// propagating.
func (f *Front) routed(ctx context.Context, req *remoting.Command, topic, done string) *remoting.Command {
	if f.awaitRoutes == nil {
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	}
	ctx, cancel := context.WithTimeout(ctx, f.routeWait)
	defer cancel()
	if err := f.awaitRoutes(ctx); err != nil {
		f.log.Warn("topic change not yet accepted by every name server", "topic", topic, "change", done, "waited", f.routeWait, "err", err)
		return remoting.NewResponse(req, rmq.RespSuccess, "topic "+done+"; its route is still propagating to the name servers")
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) allTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	sys, topics := f.b.SystemTopics(), f.b.Topics()
	table := make(map[string]rmq.TopicConfig, len(sys)+len(topics))
	for _, t := range sys {
		table[t.Name] = topicWire(t)
	}
	for _, t := range topics {
		table[t.Name] = topicWire(t)
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeTopicConfigBody(rmq.TopicConfigBody{TopicConfigTable: table, DataVersion: versionWire(f.b.TopicsVersion())})
	return resp
}
