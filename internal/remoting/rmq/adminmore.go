package rmq

// The long tail of mqadmin's broker and name server requests (RocketMQ's
// AdminBrokerProcessor and the name server's DefaultRequestProcessor; the
// admin client is MQClientAPIImpl):
//
//	43  GET_ALL_CONSUMER_OFFSET       -> {"offsetTable":{"topic@group":{0:5,...}},"dataVersion":{...}}
//	45  GET_ALL_DELAY_OFFSET          -> {"offsetTable":{level:offset,...},"dataVersion":{...}}
//	204 GET_PRODUCER_CONNECTION_LIST  ext producerGroup -> ProducerConnection {"connectionSet":[Connection]};
//	                                  1 (SYSTEM_ERROR) "the producer group[G] not exist" when none is online
//	305 GET_SYSTEM_TOPIC_LIST_FROM_BROKER -> TopicList {"topicList":[...]}: the broker's system topics
//	306 CLEAN_EXPIRED_CONSUMEQUEUE    -> 0
//	315 VIEW_BROKER_STATS_DATA        ext statsName, statsKey -> BrokerStatsData; 1 for stats not kept
//	316 CLEAN_UNUSED_TOPIC            -> 0
//	317 GET_BROKER_CONSUME_STATS      ext isOrder -> ConsumeStatsList
//	318 UPDATE_NAMESRV_CONFIG         body properties -> 0
//	319 GET_NAMESRV_CONFIG            -> body properties
//	321 QUERY_CONSUME_QUEUE           ext topic, queueId, index, count, consumerGroup (optional)
//	                                  -> QueryConsumeQueueResponseBody
//	328 GET_ALL_PRODUCER_INFO         -> ProducerTableInfo {"data":{"group":[ProducerInfo]}}
//	329 DELETE_EXPIRED_COMMITLOG      -> 0
//
// Java's fastjson writes maps keyed by numbers with bare number keys
// ({0:5}), which is not JSON; 43 and 45 are written that way, and 317's
// ConsumeStats carry the message-queue keys of 208 (stats.go). Those
// bodies are only written here: Petrel reads none of them back.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
)

// The request codes of this file.
const (
	CodeGetAllConsumerOffset      int16 = 43
	CodeGetAllDelayOffset         int16 = 45
	CodeGetProducerConnectionList int16 = 204
	CodeCleanExpiredConsumeQueue  int16 = 306
	CodeViewBrokerStatsData       int16 = 315
	CodeCleanUnusedTopic          int16 = 316
	CodeGetBrokerConsumeStats     int16 = 317
	CodeUpdateNamesrvConfig       int16 = 318
	CodeGetNamesrvConfig          int16 = 319
	CodeQueryConsumeQueue         int16 = 321
	CodeGetAllProducerInfo        int16 = 328
	CodeDeleteExpiredCommitLog    int16 = 329
	maxAdminNameBytes                   = 255
	maxStatsKeyBytes                    = 512
	maxAdminBodyBytes                   = 8 << 20
	producerGroupField                  = "producerGroup"
	isOrderField                        = "isOrder"
	statsNameField                      = "statsName"
	statsKeyField                       = "statsKey"
	queueIDField                        = "queueId"
	indexField                          = "index"
	countField                          = "count"
	consumerGroupField                  = "consumerGroup"
	cqTopicField                        = "topic"
	MaxQueryConsumeQueueCount     int32 = 1000
)

// ProducerConnectionListRequest is the header of 204.
type ProducerConnectionListRequest struct {
	ProducerGroup string
}

// DecodeProducerConnectionListRequest reads the header of 204
// (producerGroup required, at most 255 bytes).
func DecodeProducerConnectionListRequest(c *remoting.Command) (ProducerConnectionListRequest, error) {
	f := fields{c: c}
	h := ProducerConnectionListRequest{ProducerGroup: f.need(producerGroupField)}
	if err := f.result(); err != nil {
		return h, err
	}
	if len(h.ProducerGroup) > maxAdminNameBytes {
		return h, &FieldError{Field: producerGroupField, Value: clip(h.ProducerGroup), Want: "a group name of at most 255 bytes"}
	}
	return h, nil
}

// EncodeProducerConnectionListRequest is a 204 request.
func EncodeProducerConnectionListRequest(h ProducerConnectionListRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetProducerConnectionList, map[string]string{producerGroupField: h.ProducerGroup}, nil)
}

// ProducerConnection is the answer body of 204.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// EncodeProducerConnectionBody writes the answer body of 204 (a nil set
// as []).
func EncodeProducerConnectionBody(p ProducerConnection) []byte {
	if p.ConnectionSet == nil {
		p.ConnectionSet = []Connection{}
	}
	return mustJSON(p)
}

// DecodeProducerConnectionBody reads the answer body of 204 (at most
// 8 MiB).
func DecodeProducerConnectionBody(body []byte) (ProducerConnection, error) {
	var p ProducerConnection
	err := decodeBounded(body, "ProducerConnection", &p)
	return p, err
}

// ProducerInfo is one producer of a ProducerTableInfo.
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// ProducerTableInfo is the answer body of 328: producers by group.
type ProducerTableInfo struct {
	Data map[string][]ProducerInfo `json:"data"`
}

// EncodeProducerTableBody writes the answer body of 328 (a nil table as
// {}).
func EncodeProducerTableBody(t ProducerTableInfo) []byte {
	if t.Data == nil {
		t.Data = map[string][]ProducerInfo{}
	}
	return mustJSON(t)
}

// DecodeProducerTableBody reads the answer body of 328 (at most 8 MiB).
func DecodeProducerTableBody(body []byte) (ProducerTableInfo, error) {
	var t ProducerTableInfo
	err := decodeBounded(body, "ProducerTableInfo", &t)
	return t, err
}

// BrokerConsumeStatsRequest is the header of 317: IsOrder limits the
// answer to ordered topics.
type BrokerConsumeStatsRequest struct {
	IsOrder bool
}

// DecodeBrokerConsumeStatsRequest reads the header of 317 (isOrder
// "true" or "false"; absent is false).
func DecodeBrokerConsumeStatsRequest(c *remoting.Command) (BrokerConsumeStatsRequest, error) {
	f := fields{c: c}
	h := BrokerConsumeStatsRequest{IsOrder: f.strictBool(isOrderField)}
	return h, f.result()
}

// EncodeBrokerConsumeStatsRequest is a 317 request.
func EncodeBrokerConsumeStatsRequest(h BrokerConsumeStatsRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetBrokerConsumeStats, map[string]string{isOrderField: btoa(h.IsOrder)}, nil)
}

// GroupConsumeStats is one group's entry of a ConsumeStatsList: its
// ConsumeStats, one per topic.
type GroupConsumeStats struct {
	Group string
	Stats []ConsumeStats
}

// ConsumeStatsList is the answer body of 317.
type ConsumeStatsList struct {
	Groups            []GroupConsumeStats // each written as a one-entry map {"group":[...]}
	BrokerAddr        string
	TotalDiff         int64
	TotalInflightDiff int64
}

// EncodeConsumeStatsListBody writes the answer body of 317:
// {"brokerAddr":A,"consumeStatsList":[{"group":[<ConsumeStats>,...]},...],"totalDiff":N,"totalInflightDiff":N}
// with each ConsumeStats as 208 writes it.
func EncodeConsumeStatsListBody(l ConsumeStatsList) []byte {
	b := append([]byte(`{"brokerAddr":`), mustJSON(l.BrokerAddr)...)
	b = append(b, `,"consumeStatsList":[`...)
	for i, g := range l.Groups {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = append(b, mustJSON(g.Group)...)
		b = append(b, ":["...)
		for j, s := range g.Stats {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, EncodeConsumeStatsBody(s)...)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"totalDiff":`...)
	b = strconv.AppendInt(b, l.TotalDiff, 10)
	b = append(b, `,"totalInflightDiff":`...)
	b = strconv.AppendInt(b, l.TotalInflightDiff, 10)
	return append(b, '}')
}

// GroupOffsets is one topic@group entry of 43's offset table.
type GroupOffsets struct {
	Topic, Group string
	Offsets      map[int32]int64 // by queue id
}

// EncodeAllConsumerOffsetBody writes the answer body of 43 as Java's
// ConsumerOffsetManager writes itself: entries in the order given,
// queue ids ascending, written as bare numbers.
func EncodeAllConsumerOffsetBody(entries []GroupOffsets, v DataVersion) []byte {
	b := []byte(`{"offsetTable":{`)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, mustJSON(e.Topic+"@"+e.Group)...)
		b = append(b, ':')
		b = appendIntKeyMap(b, e.Offsets)
	}
	b = append(b, `},"dataVersion":`...)
	b = append(b, mustJSON(v)...)
	return append(b, '}')
}

// EncodeAllDelayOffsetBody writes the answer body of 45 (Java's
// DelayOffsetSerializeWrapper): delivery offsets by delay level.
func EncodeAllDelayOffsetBody(levels map[int32]int64, v DataVersion) []byte {
	b := []byte(`{"offsetTable":`)
	b = appendIntKeyMap(b, levels)
	b = append(b, `,"dataVersion":`...)
	b = append(b, mustJSON(v)...)
	return append(b, '}')
}

// appendIntKeyMap appends {k:v,...} with bare number keys, ascending.
func appendIntKeyMap(b []byte, m map[int32]int64) []byte {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, m[k], 10)
	}
	return append(b, '}')
}

// QueryConsumeQueueRequest is the header of 321.
type QueryConsumeQueueRequest struct {
	Topic         string
	QueueID       int32
	Index         int64
	Count         int32
	ConsumerGroup string // optional
}

// DecodeQueryConsumeQueueRequest reads the header of 321: topic,
// queueId, index and count required; count 1 to 1000; consumerGroup
// optional; names at most 255 bytes.
func DecodeQueryConsumeQueueRequest(c *remoting.Command) (QueryConsumeQueueRequest, error) {
	f := fields{c: c}
	h := QueryConsumeQueueRequest{Topic: f.need(cqTopicField), QueueID: f.needI32(queueIDField), Index: f.needI64(indexField),
		Count: f.needI32(countField), ConsumerGroup: f.str(consumerGroupField)}
	if err := f.result(); err != nil {
		return h, err
	}
	switch {
	case len(h.Topic) > maxAdminNameBytes:
		return h, &FieldError{Field: cqTopicField, Value: clip(h.Topic), Want: "a topic name of at most 255 bytes"}
	case len(h.ConsumerGroup) > maxAdminNameBytes:
		return h, &FieldError{Field: consumerGroupField, Value: clip(h.ConsumerGroup), Want: "a group name of at most 255 bytes"}
	case h.QueueID < 0:
		return h, &FieldError{Field: queueIDField, Value: itoa(h.QueueID), Want: "a queue id of 0 or more"}
	case h.Index < 0:
		return h, &FieldError{Field: indexField, Value: itoa(h.Index), Want: "a queue offset of 0 or more"}
	case h.Count < 1 || h.Count > MaxQueryConsumeQueueCount:
		return h, &FieldError{Field: countField, Value: itoa(h.Count), Want: fmt.Sprintf("a count of 1 to %d", MaxQueryConsumeQueueCount)}
	}
	return h, nil
}

// EncodeQueryConsumeQueueRequest is a 321 request (consumerGroup only
// when set).
func EncodeQueryConsumeQueueRequest(h QueryConsumeQueueRequest) *remoting.Command {
	ext := map[string]string{cqTopicField: h.Topic, queueIDField: itoa(h.QueueID), indexField: itoa(h.Index), countField: itoa(h.Count)}
	if h.ConsumerGroup != "" {
		ext[consumerGroupField] = h.ConsumerGroup
	}
	return remoting.NewRequest(CodeQueryConsumeQueue, ext, nil)
}

// ConsumeQueueData is one entry of a QueryConsumeQueueResponseBody.
// Petrel's consume queues have no extension units, so ExtendDataJSON and
// BitMap stay empty and Eval false.
type ConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// QueryConsumeQueueBody is the answer body of 321.
type QueryConsumeQueueBody struct {
	SubscriptionData *SubscriptionData  `json:"subscriptionData,omitempty"`
	FilterData       string             `json:"filterData,omitempty"`
	QueueData        []ConsumeQueueData `json:"queueData"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
}

// EncodeQueryConsumeQueueBody writes the answer body of 321 (nil entries
// as []).
func EncodeQueryConsumeQueueBody(q QueryConsumeQueueBody) []byte {
	if q.QueueData == nil {
		q.QueueData = []ConsumeQueueData{}
	}
	return mustJSON(q)
}

// DecodeQueryConsumeQueueBody reads the answer body of 321 (at most
// 8 MiB).
func DecodeQueryConsumeQueueBody(body []byte) (QueryConsumeQueueBody, error) {
	var q QueryConsumeQueueBody
	err := decodeBounded(body, "QueryConsumeQueueResponseBody", &q)
	return q, err
}

// ViewBrokerStatsRequest is the header of 315: a stats item by RocketMQ's
// name (TOPIC_PUT_NUMS, GROUP_GET_NUMS, BROKER_PUT_NUMS, ...) and key (a
// topic, topic@group, or the cluster name).
type ViewBrokerStatsRequest struct {
	StatsName, StatsKey string
}

// DecodeViewBrokerStatsRequest reads the header of 315 (both fields
// required; statsName at most 255 bytes, statsKey at most 512).
func DecodeViewBrokerStatsRequest(c *remoting.Command) (ViewBrokerStatsRequest, error) {
	f := fields{c: c}
	h := ViewBrokerStatsRequest{StatsName: f.need(statsNameField), StatsKey: f.need(statsKeyField)}
	if err := f.result(); err != nil {
		return h, err
	}
	switch {
	case len(h.StatsName) > maxAdminNameBytes:
		return h, &FieldError{Field: statsNameField, Value: clip(h.StatsName), Want: "a stats name of at most 255 bytes"}
	case len(h.StatsKey) > maxStatsKeyBytes:
		return h, &FieldError{Field: statsKeyField, Value: clip(h.StatsKey), Want: "a stats key of at most 512 bytes"}
	}
	return h, nil
}

// EncodeViewBrokerStatsRequest is a 315 request.
func EncodeViewBrokerStatsRequest(h ViewBrokerStatsRequest) *remoting.Command {
	return remoting.NewRequest(CodeViewBrokerStatsData, map[string]string{statsNameField: h.StatsName, statsKeyField: h.StatsKey}, nil)
}

// BrokerStatsItem is one window of a BrokerStatsData: the sum over the
// window, the rate per second and the average value per event.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	TPS   float64 `json:"tps"`
	AvgPT float64 `json:"avgpt"`
}

// BrokerStatsData is the answer body of 315.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// EncodeBrokerStatsBody writes the answer body of 315.
func EncodeBrokerStatsBody(d BrokerStatsData) []byte { return mustJSON(d) }

// DecodeBrokerStatsBody reads the answer body of 315 (at most 8 MiB).
func DecodeBrokerStatsBody(body []byte) (BrokerStatsData, error) {
	var d BrokerStatsData
	err := decodeBounded(body, "BrokerStatsData", &d)
	return d, err
}

// EncodeGetNamesrvConfig is a 319 request.
func EncodeGetNamesrvConfig() *remoting.Command {
	return remoting.NewRequest(CodeGetNamesrvConfig, nil, nil)
}

// EncodeGetNamesrvConfigResponse answers a 319: the configuration as a
// properties body.
func EncodeGetNamesrvConfigResponse(req *remoting.Command, props []Property) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.Body = EncodeProperties(props)
	return resp
}

// EncodeUpdateNamesrvConfig is a 318 request with props as its body.
func EncodeUpdateNamesrvConfig(props []Property) *remoting.Command {
	return remoting.NewRequest(CodeUpdateNamesrvConfig, nil, EncodeProperties(props))
}

// decodeBounded is decodeJSON for bodies of at most 8 MiB.
func decodeBounded(body []byte, name string, v any) error {
	if len(body) > maxAdminBodyBytes {
		return &BodyError{Body: name, Problem: fmt.Sprintf("%d bytes, over the limit of %d", len(body), maxAdminBodyBytes)}
	}
	return decodeJSON(body, name, v)
}

// queryConsumeQueue is the ACL rule of 321: Get on the topic, and on the
// consumer group when one is named.
func queryConsumeQueue(f auth.Fields, _ []byte) ([]auth.Request, error) {
	t, err := need(f, "QUERY_CONSUME_QUEUE (321)", cqTopicField)
	if err != nil {
		return nil, err
	}
	out := []auth.Request{topicReq(t, actGet)}
	if g := f.Ext(consumerGroupField); g != "" {
		out = append(out, groupReq(g, actGet))
	}
	return out, nil
}
