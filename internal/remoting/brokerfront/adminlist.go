package brokerfront

// Admin lists and checks (bodies in rmq/adminlist.go): 18
// UPDATE_AND_CREATE_TOPIC_LIST and 225
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (mqadmin updateTopicList /
// updateSubGroupList: every entry is checked before any is stored, as
// RocketMQ validates the whole list first), 46 CHECK_CLIENT_CONFIG (a
// SQL92 subscription must compile), 303 QUERY_CONSUME_TIME_SPAN and 305
// GET_SYSTEM_TOPIC_LIST_FROM_BROKER.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func (f *Front) registerAdminList(s *remoting.Server) {
	s.Handle(rmq.CodeUpdateAndCreateTopicList, f.createTopicList)
	s.Handle(rmq.CodeUpdateAndCreateSubscriptionGroupList, f.updateGroupList)
	s.Handle(rmq.CodeCheckClientConfig, f.checkClientConfig)
	s.Handle(rmq.CodeQueryConsumeTimeSpan, f.consumeTimeSpan)
	s.Handle(rmq.CodeGetSystemTopicListFromBroker, f.systemTopics)
}

// attrChanges turns a TopicConfig's attributes as a list body carries
// them ("+k": v sets, "-k" removes, a bare "k" sets) into the change
// string applyAttributes reads.
func attrChanges(m map[string]string) string {
	items := make([]string, 0, len(m))
	for k, v := range m {
		switch {
		case strings.HasPrefix(k, "-"):
			items = append(items, k)
		case strings.HasPrefix(k, "+"):
			items = append(items, k+"="+v)
		default:
			items = append(items, "+"+k+"="+v)
		}
	}
	slices.Sort(items)
	return strings.Join(items, ",")
}

func (f *Front) createTopicList(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	b, err := rmq.DecodeCreateTopicList(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	topics := make([]broker.TopicConfig, 0, len(b.TopicConfigList))
	for _, w := range b.TopicConfigList {
		t := broker.TopicConfig{Name: w.TopicName, ReadQueueNums: w.ReadQueueNums, WriteQueueNums: w.WriteQueueNums,
			Perm: w.Perm, TopicFilterType: w.TopicFilterType, TopicSysFlag: w.TopicSysFlag, Order: w.Order}
		if err := broker.CheckTopicName(t.Name); err != nil {
			return f.errorResponse(req, err)
		}
		cur, _ := f.b.Topic(t.Name)
		t.Attributes = cur.Attributes
		if len(w.Attributes) > 0 {
			attrs, err := applyAttributes(cur.Attributes, attrChanges(w.Attributes))
			if err != nil {
				return remoting.NewResponse(req, rmq.RespInvalidParameter, "topic "+t.Name+": "+err.Error())
			}
			t.Attributes = attrs
		}
		topics = append(topics, t)
	}
	for _, t := range topics {
		if err := f.b.CreateTopic(t); err != nil {
			return f.errorResponse(req, err)
		}
	}
	f.log.Debug("topic list created by an admin request", "topics", len(topics), "remote", c.RemoteAddr().String())
	return f.routed(ctx, req, fmt.Sprintf("%d topics", len(topics)), "created")
}

func (f *Front) updateGroupList(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	l, err := rmq.DecodeSubscriptionGroupList(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, fmt.Sprintf("%s: %s", errGroupConfig, err))
	}
	groups := make([]broker.GroupConfig, 0, len(l.GroupConfigList))
	for _, w := range l.GroupConfigList {
		g := groupFromWire(w)
		changes := g.Attributes
		if err := broker.CheckGroup(g); err != nil {
			return f.groupErrorResponse(req, g.Name, err)
		}
		cur, _ := f.b.Group(g.Name)
		attrs, err := broker.GroupAttributes(cur.Attributes, changes)
		if err != nil {
			return f.groupErrorResponse(req, g.Name, err)
		}
		g.Attributes = attrs
		groups = append(groups, g)
	}
	for _, g := range groups {
		if err := f.b.UpdateGroup(g); err != nil {
			return f.groupErrorResponse(req, g.Name, err)
		}
	}
	f.log.Debug("subscription group list set by an admin request", "groups", len(groups), "remote", c.RemoteAddr().String())
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// checkClientConfig is RocketMQ's ClientManageProcessor.checkClientConfig:
// a TAG subscription (or none) passes; SQL92 must compile.
func (f *Front) checkClientConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := rmq.DecodeCheckClientConfig(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	s := r.SubscriptionData
	if s == nil || s.ExpressionType == "" || strings.EqualFold(s.ExpressionType, "TAG") {
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	}
	if !strings.EqualFold(s.ExpressionType, "SQL92") {
		return remoting.NewResponse(req, rmq.RespSystemError, "The broker does not support consumer to filter message by "+s.ExpressionType)
	}
	if err := broker.CheckFilter(s.SubString); err != nil {
		return f.errorResponse(req, err)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) consumeTimeSpan(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueryConsumeTimeSpan(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	spans, err := f.b.ConsumeTimeSpan(h.Group, h.Topic)
	if err != nil {
		return f.errorResponse(req, err)
	}
	out := rmq.QueryConsumeTimeSpanBody{ConsumeTimeSpanSet: make([]rmq.QueueTimeSpan, 0, len(spans))}
	for _, s := range spans {
		out.ConsumeTimeSpanSet = append(out.ConsumeTimeSpanSet, rmq.QueueTimeSpan{
			MessageQueue: rmq.MessageQueue{Topic: h.Topic, BrokerName: f.name, QueueID: s.QueueID},
			MinTimeStamp: s.MinTimeStamp, MaxTimeStamp: s.MaxTimeStamp, ConsumeTimeStamp: s.ConsumeTimeStamp, DelayTime: s.DelayTime})
	}
	return bodyResponse(req, rmq.EncodeQueryConsumeTimeSpanBody(out), nil)
}

// systemTopics lists the topics the broker keeps for itself (RocketMQ:
// TopicValidator's system topic set), the message trace topic included.
func (f *Front) systemTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	sys := f.b.SystemTopics()
	names := make([]string, 0, len(sys)+1)
	for _, t := range sys {
		names = append(names, t.Name)
	}
	if _, ok := f.b.Topic(broker.TraceTopic); ok {
		names = append(names, broker.TraceTopic)
	}
	slices.Sort(names)
	return bodyResponse(req, rmq.EncodeTopicListAddr(rmq.TopicListAddr{TopicList: names}), nil)
}
