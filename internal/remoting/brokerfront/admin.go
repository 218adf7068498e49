package brokerfront

// Admin. 17 UPDATE_AND_CREATE_TOPIC: ext topic, readQueueNums,
// writeQueueNums, perm, topicFilterType, topicSysFlag, order and
// attributes (RocketMQ 5: "+key=value,-key", changes to the topic's
// current attributes; e.g. "+persistent=false" for an in-memory topic); the broker
// registers the change with the name servers before answering, so the route
// is there when the client moves on (bounded by Options.RouteWait; after
// it the answer is success with a remark that the route is still
// propagating). 215 DELETE_TOPIC_IN_BROKER: ext topic; likewise answered
// once the name servers dropped the route.
// 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG and 21 GET_ALL_TOPIC_CONFIG: JSON
// tables with a dataVersion, decoded by clients with strict types.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store/meta"
)

func (f *Front) createTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	t := meta.Topic{
		Name:            ext["topic"],
		ReadQueueNums:   n.int32("readQueueNums", ext["readQueueNums"]),
		WriteQueueNums:  n.int32("writeQueueNums", ext["writeQueueNums"]),
		Perm:            n.int32("perm", ext["perm"]),
		TopicFilterType: ext["topicFilterType"],
		TopicSysFlag:    n.int32("topicSysFlag", ext["topicSysFlag"]),
		Order:           ext["order"] == "true",
	}
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		return resp
	}
	if a := ext["attributes"]; a != "" {
		cur, _ := f.b.Topic(t.Name)
		attrs, err := applyAttributes(cur.Attributes, a)
		if err != nil {
			return remoting.NewResponse(req, rmq.RespMessageIllegal, err.Error())
		}
		t.Attributes = attrs
	} else if cur, ok := f.b.Topic(t.Name); ok {
		t.Attributes = cur.Attributes
	}
	if err := f.b.CreateTopic(t); err != nil {
		return f.errorResponse(req, err)
	}
	return f.routed(ctx, req, t.Name, "created")
}

func (f *Front) deleteTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.ExtFields["topic"]
	if err := f.b.DeleteTopic(topic); err != nil {
		return f.errorResponse(req, err)
	}
	return f.routed(ctx, req, topic, "deleted")
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
	table := map[string]meta.Topic{}
	for _, t := range f.b.SystemTopics() {
		table[t.Name] = t
	}
	for _, t := range f.b.Topics() {
		table[t.Name] = t
	}
	return jsonResponse(req, struct {
		TopicConfigTable map[string]meta.Topic `json:"topicConfigTable"`
		DataVersion      meta.DataVersion      `json:"dataVersion"`
	}{table, f.b.TopicsVersion()})
}
