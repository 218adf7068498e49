package broker

import (
	"strconv"
	"strings"
)

// Message request modes of server-side load balancing (RocketMQ 5's
// SET_MESSAGE_REQUEST_MODE / QUERY_ASSIGNMENT): per topic and consumer
// group, whether the group's 4.x members pull their share of the queues
// (PULL, the default) or pop from every queue (POP).
//
// RocketMQ persists the table (messageRequestMode.json). Petrel keeps
// each entry as an attribute of the group's config, under
// RequestModeAttrPrefix + topic, so that it is durable and replicated
// with the rest of the group's metadata and leaves with the group. The
// attribute value is "PULL" or "POP" with ":n" for popShareQueueNum.
// Attribute changes of updateSubGroup are applied to the current ones
// (GroupAttributes), so an update of the group keeps the modes.

// RequestModeAttrPrefix starts the group attribute holding a topic's mode.
const RequestModeAttrPrefix = "petrel.requestMode."

// Request modes.
const (
	RequestModePull = "PULL"
	RequestModePop  = "POP"
)

// RequestMode is a group's mode on a topic.
type RequestMode struct {
	Mode             string // RequestModePull or RequestModePop
	PopShareQueueNum int32
}

// MessageRequestMode returns the mode set for group on topic, and
// whether one was set.
func (b *Broker) MessageRequestMode(topic, group string) (RequestMode, bool) {
	g, ok := b.meta.Group(group)
	if !ok {
		return RequestMode{}, false
	}
	v, ok := g.Attributes[RequestModeAttrPrefix+topic]
	if !ok {
		return RequestMode{}, false
	}
	return parseRequestMode(v)
}

func parseRequestMode(v string) (RequestMode, bool) {
	mode, share, _ := strings.Cut(v, ":")
	if mode != RequestModePull && mode != RequestModePop {
		return RequestMode{}, false
	}
	n, _ := strconv.ParseInt(share, 10, 32)
	return RequestMode{Mode: mode, PopShareQueueNum: int32(max(n, 0))}, true
}

// SetMessageRequestMode stores m for group on topic, as RocketMQ's
// setMessageRequestMode: a retry topic is KindNoPermission, an unknown
// topic KindTopicNotExist, a group without a config KindGroupNotExist.
func (b *Broker) SetMessageRequestMode(topic, group string, m RequestMode) error {
	if strings.HasPrefix(topic, RetryGroupTopicPrefix) {
		return errorf(KindNoPermission, nil, "retry topic is not allowed to set mode")
	}
	if m.Mode != RequestModePull && m.Mode != RequestModePop {
		return errorf(KindMessageIllegal, nil, "mode %.32q is neither PULL nor POP", m.Mode)
	}
	if _, ok := b.Topic(topic); !ok {
		return errorf(KindTopicNotExist, nil, "topic[%s] not exist", topic)
	}
	gc, ok := b.Group(group)
	if !ok {
		return errorf(KindGroupNotExist, nil, "subscription group does not exist")
	}
	v := m.Mode
	if m.PopShareQueueNum > 0 {
		v += ":" + strconv.Itoa(int(m.PopShareQueueNum))
	}
	attrs := make(map[string]string, len(gc.Attributes)+1)
	for k, x := range gc.Attributes {
		attrs[k] = x
	}
	attrs[RequestModeAttrPrefix+topic] = v
	gc.Attributes = attrs
	return b.UpdateGroup(gc)
}
