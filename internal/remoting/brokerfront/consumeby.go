package brokerfront

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// registerConsumeBy installs the topic and group lookups of mqadmin's
// topicStatus, consumerProgress, queryMsgById and statsAll.
func (f *Front) registerConsumeBy(s *remoting.Server) {
	s.Handle(rmq.CodeGetTopicConfig, f.topicConfig)
	s.Handle(rmq.CodeQueryTopicConsumeByWho, f.topicConsumedBy)
	s.Handle(rmq.CodeQueryTopicsByConsumer, f.topicsOfGroup)
}

// topicConfig answers GET_TOPIC_CONFIG (351): the topic's config, system
// topics included; TOPIC_NOT_EXIST for one the broker does not hold.
func (f *Front) topicConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeTopicRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	t, ok := f.b.Topic(h.Topic)
	if !ok {
		for _, st := range f.b.SystemTopics() {
			if st.Name == h.Topic {
				t, ok = st, true
			}
		}
	}
	if !ok {
		return remoting.NewResponse(req, rmq.RespTopicNotExist, "No topic in this broker. topic: "+h.Topic)
	}
	return bodyResponse(req, rmq.EncodeTopicConfigAndMapping(rmq.TopicConfigAndMapping{TopicConfig: topicWire(t)}), nil)
}

// topicConsumedBy answers QUERY_TOPIC_CONSUME_BY_WHO (300): the groups
// with a live member subscribed to the topic or an offset on it.
func (f *Front) topicConsumedBy(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeTopicRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return bodyResponse(req, rmq.EncodeGroupListBody(rmq.GroupListBody{GroupList: f.b.GroupsConsuming(h.Topic)}), nil)
}

// topicsOfGroup answers QUERY_TOPICS_BY_CONSUMER (301): the topics the
// group has offsets on, with this broker's address.
func (f *Front) topicsOfGroup(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeGroupRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return bodyResponse(req, rmq.EncodeTopicListAddr(rmq.TopicListAddr{
		TopicList: f.b.TopicsConsumedBy(h.Group), BrokerAddr: f.b.Config().StoreHost.String()}), nil)
}
