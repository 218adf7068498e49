package rmq

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
)

// The ACL table: what each request code Petrel serves needs, after
// RocketMQ 5.3's DefaultAuthorizationContextBuilder and the
// @RocketMQAction / @RocketMQResource annotations of its request headers:
//
//   - sends (10, 310, 320): Pub on the topic; a retry topic %RETRY%G is
//     Sub on Group:G (so is every retry topic below);
//   - replies (324, 325): as sends, Pub on the topic (the reply topic);
//   - pull (11): Sub on the topic and on the consumer group;
//   - heartbeat (34): Sub on each consumer group of the body and on each
//     topic it subscribes (producer groups need nothing);
//   - lock/unlock (41/42): Sub on the body's group and queues' topics;
//   - offsets, stats and queries: Get (or Sub, Get / Sub, Update as
//     RocketMQ lists them) on the topic and group;
//   - admin codes: Create / Update / Delete / Get on the topic or group,
//     or Update / Get on the Cluster (user and ACL management, name
//     server writes).
//
// Petrel differs from RocketMQ in a few places, all stricter or equal:
// codes RocketMQ leaves unchecked because they name no resource (21, 28,
// 106, 200, 201, 206; 33 without a topic) need Get or List on the Cluster
// (200: Create or Update on its group); replies (324, 325), which RocketMQ
// leaves unchecked (no request header is registered for their codes),
// need Pub on their topic as sends do; offset queries by queue (29, 30,
// 31) take Sub as well as Get, as consumers make them; a send to a retry
// topic needs Sub on the group the topic names (RocketMQ reads the V2
// header's producer group there); Petrel's own codes (10101-10104) are in
// the table too.

// retryPrefix starts a retry topic's name: %RETRY%GROUP.
const retryPrefix = "%RETRY%"

var (
	actPub          = []auth.Action{auth.ActionPub}
	actSub          = []auth.Action{auth.ActionSub}
	actGet          = []auth.Action{auth.ActionGet}
	actCreate       = []auth.Action{auth.ActionCreate}
	actUpdate       = []auth.Action{auth.ActionUpdate}
	actDelete       = []auth.Action{auth.ActionDelete}
	actSubGet       = []auth.Action{auth.ActionSub, auth.ActionGet}
	actSubUpdate    = []auth.Action{auth.ActionSub, auth.ActionUpdate}
	actPubSubGet    = []auth.Action{auth.ActionPub, auth.ActionSub, auth.ActionGet}
	actGetList      = []auth.Action{auth.ActionGet, auth.ActionList}
	actCreateUpdate = []auth.Action{auth.ActionCreate, auth.ActionUpdate}
)

// aclRule is a code's entry: its name (for messages), whether it changes
// a name server's state, and what it needs on a broker.
type aclRule struct {
	name  string
	write bool
	reqs  func(f auth.Fields, body []byte) ([]auth.Request, error)
}

// Cluster is the resource of cluster-wide requests: the cluster the
// request was sent to (a guard puts the broker's cluster name in).
func clusterRes() auth.Resource {
	return auth.Resource{Type: auth.ResourceCluster, Pattern: auth.Literal}
}

func topicReq(name string, acts []auth.Action) auth.Request {
	if g, ok := strings.CutPrefix(name, retryPrefix); ok {
		return groupReq(g, acts)
	}
	return auth.Request{Resource: auth.Resource{Type: auth.ResourceTopic, Name: name, Pattern: auth.Literal}, Actions: acts}
}

func groupReq(name string, acts []auth.Action) auth.Request {
	name = strings.TrimPrefix(name, retryPrefix)
	return auth.Request{Resource: auth.Resource{Type: auth.ResourceGroup, Name: name, Pattern: auth.Literal}, Actions: acts}
}

func clusterReq(acts []auth.Action) auth.Request {
	return auth.Request{Resource: clusterRes(), Actions: acts}
}

// need reads a field a code's authorization needs.
func need(f auth.Fields, name, field string) (string, error) {
	v := f.Ext(field)
	if v == "" {
		return "", fmt.Errorf("%s names no %s (header field %s): set it", name, what(field), field)
	}
	return v, nil
}

func what(field string) string {
	switch {
	case strings.EqualFold(field, "topic") || field == "b":
		return "topic"
	case strings.Contains(strings.ToLower(field), "group"):
		return "group"
	}
	return field
}

// cluster is a rule of one Cluster request.
func cluster(name string, write bool, acts []auth.Action) aclRule {
	return aclRule{name: name, write: write, reqs: func(auth.Fields, []byte) ([]auth.Request, error) {
		return []auth.Request{clusterReq(acts)}, nil
	}}
}

// topicField is a rule of one topic request (field required).
func topicField(name, field string, acts []auth.Action) aclRule {
	return aclRule{name: name, reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		t, err := need(f, name, field)
		if err != nil {
			return nil, err
		}
		return []auth.Request{topicReq(t, acts)}, nil
	}}
}

// groupField is a rule of one group request (field required).
func groupField(name, field string, acts []auth.Action) aclRule {
	return aclRule{name: name, reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		g, err := need(f, name, field)
		if err != nil {
			return nil, err
		}
		return []auth.Request{groupReq(g, acts)}, nil
	}}
}

// groupTopic is a rule of a group and a topic request (both required;
// a retry topic adds nothing beyond its group).
func groupTopic(name, groupF, topicF string, acts []auth.Action) aclRule {
	return aclRule{name: name, reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		g, err := need(f, name, groupF)
		if err != nil {
			return nil, err
		}
		t, err := need(f, name, topicF)
		if err != nil {
			return nil, err
		}
		return []auth.Request{groupReq(g, acts), topicReq(t, acts)}, nil
	}}
}

// send: the topic of a send, by its V1 name or V2 letter (the send
// decoder takes either, DecodeSendHeader); a send naming two different
// topics is refused rather than guessed at.
func send(name string) aclRule {
	return aclRule{name: name, reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		t, t1 := f.Ext("b"), f.Ext("topic")
		switch {
		case t == "":
			t = t1
		case t1 != "" && t1 != t:
			return nil, fmt.Errorf("%s names two topics (header fields b and topic): send one", name)
		}
		if t == "" {
			return nil, fmt.Errorf("%s names no topic (header field b or topic): set it", name)
		}
		if strings.HasPrefix(t, retryPrefix) {
			return []auth.Request{topicReq(t, actSub)}, nil
		}
		return []auth.Request{topicReq(t, actPub)}, nil
	}}
}

func heartbeat(f auth.Fields, body []byte) ([]auth.Request, error) {
	h, err := DecodeHeartbeatBody(body)
	if err != nil {
		return nil, err
	}
	var out []auth.Request
	for _, c := range h.ConsumerDataSet {
		out = append(out, groupReq(c.GroupName, actSub))
		for _, s := range c.SubscriptionDataSet {
			if !strings.HasPrefix(s.Topic, retryPrefix) {
				out = append(out, topicReq(s.Topic, actSub))
			}
		}
	}
	return out, nil
}

func lockBatch(what string) func(auth.Fields, []byte) ([]auth.Request, error) {
	return func(_ auth.Fields, body []byte) ([]auth.Request, error) {
		var b LockBatchBody
		if err := decodeBody(what, body, &b); err != nil {
			return nil, err
		}
		if b.ConsumerGroup == "" {
			return nil, fmt.Errorf("the %s body names no consumerGroup: set it", what)
		}
		out := []auth.Request{groupReq(b.ConsumerGroup, actSub)}
		for _, q := range b.MQSet {
			if !strings.HasPrefix(q.Topic, retryPrefix) {
				out = append(out, topicReq(q.Topic, actSub))
			}
		}
		return out, nil
	}
}

// aclTable holds every code Petrel's broker and name server serve, and
// the user/ACL management codes.
var aclTable = map[int32]aclRule{
	int32(CodeSendMessage):      send("SEND_MESSAGE (10)"),
	int32(CodeSendMessageV2):    send("SEND_MESSAGE_V2 (310)"),
	int32(CodeSendBatchMessage): send("SEND_BATCH_MESSAGE (320)"),
	int32(CodePullMessage): {name: "PULL_MESSAGE (11)", reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		const name = "PULL_MESSAGE (11)"
		g, err := need(f, name, "consumerGroup")
		if err != nil {
			return nil, err
		}
		t, err := need(f, name, "topic")
		if err != nil {
			return nil, err
		}
		return []auth.Request{topicReq(t, actSub), groupReq(g, actSub)}, nil
	}},
	int32(CodeQueryMessage):            topicField("QUERY_MESSAGE (12)", "topic", actSubGet),
	int32(CodeQueryConsumerOffset):     groupTopic("QUERY_CONSUMER_OFFSET (14)", "consumerGroup", "topic", actSubGet),
	int32(CodeUpdateConsumerOffset):    groupTopic("UPDATE_CONSUMER_OFFSET (15)", "consumerGroup", "topic", actSubUpdate),
	int32(CodeUpdateAndCreateTopic):    topicField("UPDATE_AND_CREATE_TOPIC (17)", "topic", actCreate),
	int32(CodeGetAllTopicConfig):       cluster("GET_ALL_TOPIC_CONFIG (21)", false, actGetList),
	int32(CodeGetBrokerRuntimeInfo):    cluster("GET_BROKER_RUNTIME_INFO (28)", false, actGet),
	int32(CodeSearchOffsetByTimestamp): topicField("SEARCH_OFFSET_BY_TIMESTAMP (29)", "topic", actSubGet),
	int32(CodeGetMaxOffset):            topicField("GET_MAX_OFFSET (30)", "topic", actSubGet),
	int32(CodeGetMinOffset):            topicField("GET_MIN_OFFSET (31)", "topic", actSubGet),
	int32(CodeViewMessageByID): {name: "VIEW_MESSAGE_BY_ID (33)", reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		if t := f.Ext("topic"); t != "" {
			return []auth.Request{topicReq(t, actGet)}, nil
		}
		return []auth.Request{clusterReq(actGet)}, nil // any message of the cluster
	}},
	int32(CodeHeartBeat): {name: "HEART_BEAT (34)", reqs: heartbeat},
	int32(CodeUnregisterClient): {name: "UNREGISTER_CLIENT (35)", reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		if g := f.Ext("consumerGroup"); g != "" {
			return []auth.Request{groupReq(g, actSub)}, nil
		}
		return nil, nil // a producer leaving needs nothing
	}},
	int32(CodeConsumerSendMsgBack): groupField("CONSUMER_SEND_MSG_BACK (36)", "group", actSub),
	int32(CodeEndTransaction): {name: "END_TRANSACTION (37)", reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		// As RocketMQ: the topic when the producer names it (5.x
		// clients); 4.x headers name none.
		if t := f.Ext("topic"); t != "" {
			return []auth.Request{topicReq(t, actPub)}, nil
		}
		return nil, nil
	}},
	int32(CodeGetConsumerListByGroup):           groupField("GET_CONSUMER_LIST_BY_GROUP (38)", "consumerGroup", actSubGet),
	int32(CodeLockBatchMQ):                      {name: "LOCK_BATCH_MQ (41)", reqs: lockBatch("lock")},
	int32(CodeUnlockBatchMQ):                    {name: "UNLOCK_BATCH_MQ (42)", reqs: lockBatch("unlock")},
	int32(CodeUpdateAndCreateSubscriptionGroup): {name: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200)", reqs: updateGroup},
	int32(CodeGetAllSubscriptionGroup):          cluster("GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)", false, actGetList),
	int32(CodeGetTopicStatsInfo):                topicField("GET_TOPIC_STATS_INFO (202)", "topic", actGet),
	int32(CodeGetConsumerConnectionList):        groupField("GET_CONSUMER_CONNECTION_LIST (203)", "consumerGroup", actGet),
	int32(CodeDeleteSubscriptionGroup):          groupField("DELETE_SUBSCRIPTIONGROUP (207)", "groupName", actDelete),
	int32(CodeGetConsumeStats): {name: "GET_CONSUME_STATS (208)", reqs: func(f auth.Fields, _ []byte) ([]auth.Request, error) {
		g, err := need(f, "GET_CONSUME_STATS (208)", "consumerGroup")
		if err != nil {
			return nil, err
		}
		out := []auth.Request{groupReq(g, actGet)}
		if t := f.Ext("topic"); t != "" {
			out = append(out, topicReq(t, actGet))
		}
		return out, nil
	}},
	int32(CodeQueryTopicConsumeByWho): topicField("QUERY_TOPIC_CONSUME_BY_WHO (300)", "topic", actGet),
	int32(CodeQueryTopicsByConsumer):  groupField("QUERY_TOPICS_BY_CONSUMER (301)", "group", actGet),
	int32(CodeGetTopicConfig):         topicField("GET_TOPIC_CONFIG (351)", "topic", actGet),
	// RocketMQ's RecallMessageRequestHeader: Pub on the topic.
	int32(CodeRecallMessage): topicField("RECALL_MESSAGE (370)", "topic", actPub),

	int32(CodeDeleteTopicInBroker):       topicField("DELETE_TOPIC_IN_BROKER (215)", "topic", actDelete),
	int32(CodeInvokeBrokerToResetOffset): groupTopic("INVOKE_BROKER_TO_RESET_OFFSET (222)", "group", "topic", actUpdate),

	// Request-reply (reply.go).
	int32(CodeSendReplyMessage):   send("SEND_REPLY_MESSAGE (324)"),
	int32(CodeSendReplyMessageV2): send("SEND_REPLY_MESSAGE_V2 (325)"),

	CodePopMessage:          groupTopic("POP_MESSAGE (200050)", "consumerGroup", "topic", actSub),
	CodeAckMessage:          groupTopic("ACK_MESSAGE (200051)", "consumerGroup", "topic", actSub),
	CodeChangeInvisibleTime: groupTopic("CHANGE_MESSAGE_INVISIBLETIME (200053)", "consumerGroup", "topic", actSub),
	CodePeekMessage:         groupTopic("PEEK_MESSAGE (200052)", "consumerGroup", "topic", actSub),
	CodeNotification:        groupTopic("NOTIFICATION (200054)", "consumerGroup", "topic", actSub),
	CodePollingInfo:         groupTopic("POLLING_INFO (200055)", "consumerGroup", "topic", actGet),
	CodeBatchAckMessage:     {name: "BATCH_ACK_MESSAGE (200151)", reqs: batchAck},

	int32(CodePetrelResendDLQ):       groupField("PETREL_RESEND_DLQ (10101)", "group", actUpdate),
	int32(CodePetrelCancelDelayed):   cluster("PETREL_CANCEL_DELAYED (10102)", false, actUpdate),
	int32(CodePetrelHandBackOffsets): cluster("PETREL_HAND_BACK_OFFSETS (10103)", false, actUpdate),
	int32(CodePetrelForwardPopToDLQ): groupTopic("PETREL_FORWARD_POP_TO_DLQ (10104)", "consumerGroup", "topic", actSub),

	int32(CodeAuthCreateUser): cluster("AUTH_CREATE_USER (3001)", false, actUpdate),
	int32(CodeAuthUpdateUser): cluster("AUTH_UPDATE_USER (3002)", false, actUpdate),
	int32(CodeAuthDeleteUser): cluster("AUTH_DELETE_USER (3003)", false, actUpdate),
	int32(CodeAuthGetUser):    cluster("AUTH_GET_USER (3004)", false, actGet),
	int32(CodeAuthListUser):   cluster("AUTH_LIST_USER (3005)", false, actGet),
	int32(CodeAuthCreateACL):  cluster("AUTH_CREATE_ACL (3006)", false, actUpdate),
	int32(CodeAuthUpdateACL):  cluster("AUTH_UPDATE_ACL (3007)", false, actUpdate),
	int32(CodeAuthDeleteACL):  cluster("AUTH_DELETE_ACL (3008)", false, actUpdate),
	int32(CodeAuthGetACL):     cluster("AUTH_GET_ACL (3009)", false, actGet),
	int32(CodeAuthListACL):    cluster("AUTH_LIST_ACL (3010)", false, actGet),

	// The name server's codes (a name server authorizes by
	// NameServerWrite alone; the requests say what RocketMQ asks).
	int32(CodePutKVConfig):          cluster("PUT_KV_CONFIG (100)", true, actUpdate),
	int32(CodeGetKVConfig):          cluster("GET_KV_CONFIG (101)", false, actGet),
	int32(CodeDeleteKVConfig):       cluster("DELETE_KV_CONFIG (102)", true, actUpdate),
	int32(CodeRegisterBroker):       cluster("REGISTER_BROKER (103)", true, actUpdate),
	int32(CodeUnregisterBroker):     cluster("UNREGISTER_BROKER (104)", true, actUpdate),
	int32(CodeGetRouteInfoByTopic):  {name: "GET_ROUTEINFO_BY_TOPIC (105)", reqs: route},
	int32(CodeGetBrokerClusterInfo): cluster("GET_BROKER_CLUSTER_INFO (106)", false, actGet),
	int32(CodeGetAllTopicList):      cluster("GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)", false, actGetList),
	int32(CodeDeleteTopicInNamesrv): cluster("DELETE_TOPIC_IN_NAMESRV (216)", true, actUpdate),
	int32(CodeGetKVListByNamespace): cluster("GET_KVLIST_BY_NAMESPACE (219)", false, actGet),
	int32(CodeQueryDataVersion):     cluster("QUERY_DATA_VERSION (322)", false, actGet),

	// Broker configuration and drains (brokerconfig.go).
	int32(CodeUpdateBrokerConfig):    cluster("UPDATE_BROKER_CONFIG (25)", false, actUpdate),
	int32(CodeGetBrokerConfig):       cluster("GET_BROKER_CONFIG (26)", false, actGet),
	int32(CodeWipeWritePermOfBroker): cluster("WIPE_WRITE_PERM_OF_BROKER (205)", true, actUpdate),
	int32(CodeAddWritePermOfBroker):  cluster("ADD_WRITE_PERM_OF_BROKER (327)", true, actUpdate),

	// The long tail of mqadmin (adminmore.go): listings and stats are Get
	// on the Cluster, cleaning Update; 321 is Get on its topic (and group,
	// when named), as RocketMQ's header says.
	int32(CodeGetAllConsumerOffset):         cluster("GET_ALL_CONSUMER_OFFSET (43)", false, actGet),
	int32(CodeGetAllDelayOffset):            cluster("GET_ALL_DELAY_OFFSET (45)", false, actGet),
	int32(CodeGetProducerConnectionList):    cluster("GET_PRODUCER_CONNECTION_LIST (204)", false, actGet),
	int32(CodeGetSystemTopicListFromBroker): cluster("GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305)", false, actGet),
	int32(CodeCleanExpiredConsumeQueue):     cluster("CLEAN_EXPIRED_CONSUMEQUEUE (306)", false, actUpdate),
	int32(CodeViewBrokerStatsData):          cluster("VIEW_BROKER_STATS_DATA (315)", false, actGet),
	int32(CodeCleanUnusedTopic):             cluster("CLEAN_UNUSED_TOPIC (316)", false, actUpdate),
	int32(CodeGetBrokerConsumeStats):        cluster("GET_BROKER_CONSUME_STATS (317)", false, actGet),
	int32(CodeUpdateNamesrvConfig):          cluster("UPDATE_NAMESRV_CONFIG (318)", true, actUpdate),
	int32(CodeGetNamesrvConfig):             cluster("GET_NAMESRV_CONFIG (319)", false, actGet),
	int32(CodeQueryConsumeQueue):            {name: "QUERY_CONSUME_QUEUE (321)", reqs: queryConsumeQueue},
	int32(CodeGetAllProducerInfo):           cluster("GET_ALL_PRODUCER_INFO (328)", false, actGet),
	int32(CodeDeleteExpiredCommitLog):       cluster("DELETE_EXPIRED_COMMITLOG (329)", false, actUpdate),

	// Forwarded to clients, load balancing and admin lists (clientfwd.go,
	// assign.go, adminlist.go; rules in aclfwd.go).
	int32(CodeGetConsumerRunningInfo):               groupField("GET_CONSUMER_RUNNING_INFO (307)", "consumerGroup", actGet),
	int32(CodeConsumeMessageDirectly):               {name: "CONSUME_MESSAGE_DIRECTLY (309)", reqs: consumeDirectly},
	int32(CodeInvokeBrokerToGetConsumerStatus):      groupTopic("INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)", "group", "topic", actGet),
	int32(CodeQueryConsumeTimeSpan):                 groupTopic("QUERY_CONSUME_TIME_SPAN (303)", "group", "topic", actGet),
	int32(CodeQueryAssignment):                      {name: "QUERY_ASSIGNMENT (400)", reqs: queryAssignment},
	int32(CodeSetMessageRequestMode):                {name: "SET_MESSAGE_REQUEST_MODE (401)", reqs: setRequestMode},
	int32(CodeCheckClientConfig):                    {name: "CHECK_CLIENT_CONFIG (46)", reqs: checkClientConfig},
	int32(CodeUpdateAndCreateTopicList):             {name: "UPDATE_AND_CREATE_TOPIC_LIST (18)", reqs: createTopicList},
	int32(CodeUpdateAndCreateSubscriptionGroupList): {name: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225)", reqs: updateGroupList},
	int32(CodeGetTopicsByCluster):                   cluster("GET_TOPICS_BY_CLUSTER (224)", false, actGetList),
	int32(CodeGetSystemTopicListFromNS):             cluster("GET_SYSTEM_TOPIC_LIST_FROM_NS (304)", false, actGet),
}

// route: Pub, Sub or Get on the topic; a retry topic's route is Sub or
// Get on its group (RocketMQ's builder).
func route(f auth.Fields, _ []byte) ([]auth.Request, error) {
	t, err := need(f, "GET_ROUTEINFO_BY_TOPIC (105)", "topic")
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(t, retryPrefix) {
		return []auth.Request{groupReq(t, actSubGet)}, nil
	}
	return []auth.Request{topicReq(t, actPubSubGet)}, nil
}

func updateGroup(_ auth.Fields, body []byte) ([]auth.Request, error) {
	g, err := DecodeSubscriptionGroupBody(body)
	if err != nil {
		return nil, err
	}
	if g.GroupName == "" {
		return nil, errors.New("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) names no group (body field groupName): set it")
	}
	return []auth.Request{groupReq(g.GroupName, actCreateUpdate)}, nil
}

// batchAck: Sub on the group and the topic of every ack of the body, as
// an ACK_MESSAGE of each would need (RocketMQ checks nothing: the request
// has no header to name them).
func batchAck(_ auth.Fields, body []byte) ([]auth.Request, error) {
	b, err := DecodeBatchAckRequest(body)
	if err != nil {
		return nil, err
	}
	type gt struct{ g, t string }
	seen := make(map[gt]bool, len(b.Acks))
	var out []auth.Request
	for _, a := range b.Acks {
		if seen[gt{a.ConsumerGroup, a.Topic}] {
			continue
		}
		seen[gt{a.ConsumerGroup, a.Topic}] = true
		out = append(out, groupReq(a.ConsumerGroup, actSub), topicReq(a.Topic, actSub))
	}
	return out, nil
}

// Known reports whether code has an entry in the ACL table.
func Known(code int32) bool {
	_, ok := aclTable[code]
	return ok
}

// ACLCodes lists the codes of the ACL table, ascending.
func ACLCodes() []int32 {
	out := make([]int32, 0, len(aclTable))
	for c := range aclTable {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// BrokerRequests says what a request of code with header fields f and
// body needs on a broker: each Request must be allowed (any one of its
// actions). Cluster resources have an empty name (the cluster the
// request was sent to). A code without an entry, or a request whose
// fields or body do not name what it needs (a missing topic, a body that
// is not JSON), is an error whose text is for the client. The returned
// Actions slices are shared: do not change them.
func BrokerRequests(code int32, f auth.Fields, body []byte) ([]auth.Request, error) {
	r, ok := aclTable[code]
	if !ok {
		return nil, fmt.Errorf("request code %d is not in the broker's ACL table: only super users may send it", code)
	}
	return r.reqs(f, body)
}

// NameServerWrite reports whether code changes a name server's state
// (registrations, KV and topic writes): those need a super user. Codes
// not in the table count as writes, so a new code is closed until it is
// classified.
func NameServerWrite(code int32) bool {
	r, ok := aclTable[code]
	return !ok || r.write
}
