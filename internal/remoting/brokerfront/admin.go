package brokerfront

// Admin. 17 UPDATE_AND_CREATE_TOPIC: ext topic, readQueueNums,
// writeQueueNums, perm, topicFilterType, topicSysFlag, order and
// attributes (RocketMQ 5: "+key=value,-key", changes to the topic's
// current attributes; e.g. "+persistent=false" for an in-memory topic); the broker
// registers the change with the name servers before answering, so the route
// is there when the client moves on. 215 DELETE_TOPIC_IN_BROKER: ext topic.
// 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG and 21 GET_ALL_TOPIC_CONFIG: JSON
// tables with a dataVersion, decoded by clients with strict types.

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store/meta"
)

func (f *Front) createTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	t := meta.Topic{
		Name:            ext["topic"],
		ReadQueueNums:   parseInt32(ext["readQueueNums"]),
		WriteQueueNums:  parseInt32(ext["writeQueueNums"]),
		Perm:            parseInt32(ext["perm"]),
		TopicFilterType: ext["topicFilterType"],
		TopicSysFlag:    parseInt32(ext["topicSysFlag"]),
		Order:           ext["order"] == "true",
	}
	if a := ext["attributes"]; a != "" {
		cur, _ := f.b.Topic(t.Name)
		attrs, err := applyAttributes(cur.Attributes, a)
		if err != nil {
			return remoting.NewResponse(req, respMessageIllegal, err.Error())
		}
		t.Attributes = attrs
	} else if cur, ok := f.b.Topic(t.Name); ok {
		t.Attributes = cur.Attributes
	}
	if err := f.b.CreateTopic(t); err != nil {
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, respSuccess, "")
}

func (f *Front) deleteTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if err := f.b.DeleteTopic(req.ExtFields["topic"]); err != nil {
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, respSuccess, "")
}

func (f *Front) allTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	table := map[string]meta.Topic{}
	for _, t := range f.b.Topics() {
		table[t.Name] = t
	}
	return jsonResponse(req, struct {
		TopicConfigTable map[string]meta.Topic `json:"topicConfigTable"`
		DataVersion      meta.DataVersion      `json:"dataVersion"`
	}{table, f.b.TopicsVersion()})
}
