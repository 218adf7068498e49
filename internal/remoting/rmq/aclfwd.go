package rmq

import (
	"fmt"
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
)

// ACL rules of the codes of clientfwd.go, assign.go and adminlist.go,
// after RocketMQ's annotations where its headers carry them:
// 307 Get on the group; 309 Sub on the group (and topic when named);
// 223 and 303 Get on topic and group; 18 Create on each topic of the
// list; 225 Create or Update on each group; 400 Sub on the body's group
// and topic; 401 Update on them; 46 Sub on the body's group (Get on the
// Cluster without one). 224, 304 and 305 name no resource: Get (List)
// on the Cluster. RocketMQ leaves 400, 401, 46 and 225 unchecked: Petrel
// is stricter.

func consumeDirectly(f auth.Fields, _ []byte) ([]auth.Request, error) {
	const name = "CONSUME_MESSAGE_DIRECTLY (309)"
	g, err := need(f, name, "consumerGroup")
	if err != nil {
		return nil, err
	}
	out := []auth.Request{groupReq(g, actSub)}
	if t := f.Ext("topic"); t != "" && !strings.HasPrefix(t, retryPrefix) {
		out = append(out, topicReq(t, actSub))
	}
	return out, nil
}

func queryAssignment(_ auth.Fields, body []byte) ([]auth.Request, error) {
	r, err := DecodeQueryAssignment(body)
	if err != nil {
		return nil, err
	}
	return []auth.Request{groupReq(r.ConsumerGroup, actSub), topicReq(r.Topic, actSub)}, nil
}

func setRequestMode(_ auth.Fields, body []byte) ([]auth.Request, error) {
	r, err := DecodeSetMessageRequestMode(body)
	if err != nil {
		return nil, err
	}
	return []auth.Request{groupReq(r.ConsumerGroup, actUpdate), topicReq(r.Topic, actUpdate)}, nil
}

func checkClientConfig(_ auth.Fields, body []byte) ([]auth.Request, error) {
	r, err := DecodeCheckClientConfig(body)
	if err != nil {
		return nil, err
	}
	if r.Group == "" {
		return []auth.Request{clusterReq(actGet)}, nil
	}
	return []auth.Request{groupReq(r.Group, actSub)}, nil
}

func createTopicList(_ auth.Fields, body []byte) ([]auth.Request, error) {
	b, err := DecodeCreateTopicList(body)
	if err != nil {
		return nil, err
	}
	out := make([]auth.Request, 0, len(b.TopicConfigList))
	for _, t := range b.TopicConfigList {
		out = append(out, topicReq(t.TopicName, actCreate))
	}
	return out, nil
}

func updateGroupList(_ auth.Fields, body []byte) ([]auth.Request, error) {
	l, err := DecodeSubscriptionGroupList(body)
	if err != nil {
		return nil, err
	}
	if len(l.GroupConfigList) == 0 {
		return nil, fmt.Errorf("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225) names no group (body field groupConfigList): set it")
	}
	out := make([]auth.Request, 0, len(l.GroupConfigList))
	for _, g := range l.GroupConfigList {
		out = append(out, groupReq(g.GroupName, actCreateUpdate))
	}
	return out, nil
}
