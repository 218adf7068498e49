package brokerfront

// Operator requests, answered in RocketMQ's shapes so that its tools can
// read them too:
//
//	28  GET_BROKER_RUNTIME_INFO      -> KVTable {"table":{"putTps":"1.00 1.00 1.00", ...}}
//	202 GET_TOPIC_STATS_INFO         ext topic -> TopicStatsTable; 17 for an unknown topic
//	203 GET_CONSUMER_CONNECTION_LIST ext consumerGroup -> ConsumerConnection; 206 when no member is online
//	208 GET_CONSUME_STATS            ext consumerGroup, topic (optional) -> ConsumeStats; 26 for an unknown group
//	222 INVOKE_BROKER_TO_RESET_OFFSET ext topic, group, timestamp (ms; -1 = latest), isForce
//	                                 -> ResetOffsetBody; stores the offsets, then sends 220 to every member;
//	                                 26 for an unknown group, 17 for an unknown topic. isForce is
//	                                 ignored: offsets move either way, also for a group with no member
//	220 RESET_CONSUMER_CLIENT_OFFSET (to clients, oneway) ext topic, group, timestamp; body ResetOffsetBody
//
// Maps keyed by a message queue are written as Java's fastjson writes them,
// with the queue object as the key, which is not JSON:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":0,...},...}}
//
// The official Go client reads that form in 220 (and also an array form);
// Java tools read nothing else.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

const (

	// brokerVersionDesc is the RocketMQ version we answer to as, the one
	// DefaultVersion (401) names.
	brokerVersionDesc = "V4_9_4"
)

// tpsWindows are the windows of the putTps and getTransferredTps values,
// as RocketMQ's (10 s, 1 min, 10 min; ours stop at 1 min).
var tpsWindows = [...]time.Duration{10 * time.Second, time.Minute, time.Minute}

// clientInfoKey keys the language and version a connection's heartbeats
// carry (the remoting header's), which GET_CONSUMER_CONNECTION_LIST reports.
type clientInfoKey struct{}

type clientInfo struct {
	language string
	version  int16
}

// noteClient remembers the language and version of a heartbeat's sender.
func noteClient(c *remoting.Conn, req *remoting.Command) {
	c.SetValue(clientInfoKey{}, clientInfo{language: req.Language, version: req.Version})
}

// mqKey is a message queue as fastjson writes it: fields in name order.
func mqKey(topic, brokerName string, queueID int32) string {
	b, _ := json.Marshal(struct {
		BrokerName string `json:"brokerName"`
		QueueID    int32  `json:"queueId"`
		Topic      string `json:"topic"`
	}{brokerName, queueID, topic})
	return string(b)
}

// mqMap writes {key:value,...} with message-queue keys; entries are in the
// order given.
type mqMap struct {
	keys   []string
	values []any
}

func (m *mqMap) add(key string, v any) {
	m.keys = append(m.keys, key)
	m.values = append(m.values, v)
}

func (m *mqMap) appendTo(sb *strings.Builder) error {
	sb.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		v, err := json.Marshal(m.values[i])
		if err != nil {
			return err
		}
		sb.WriteString(k)
		sb.WriteByte(':')
		sb.Write(v)
	}
	sb.WriteByte('}')
	return nil
}

// mqMapBody renders {"offsetTable":<m>,<extra fields>} where extra is a
// JSON object whose fields follow the table.
func mqMapBody(m *mqMap, extra map[string]any) ([]byte, error) {
	var sb strings.Builder
	sb.WriteString(`{"offsetTable":`)
	if err := m.appendTo(&sb); err != nil {
		return nil, err
	}
	if len(extra) > 0 {
		x, err := json.Marshal(extra)
		if err != nil {
			return nil, err
		}
		sb.WriteByte(',')
		sb.Write(x[1 : len(x)-1])
	}
	sb.WriteByte('}')
	return []byte(sb.String()), nil
}

func bodyResponse(req *remoting.Command, body []byte, err error) *remoting.Command {
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, "encode answer: "+err.Error())
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = body
	return resp
}

func (f *Front) runtimeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	tps := func(get bool) string {
		var parts []string
		for _, w := range tpsWindows {
			put, got := f.b.Throughput(w)
			v := put
			if get {
				v = got
			}
			parts = append(parts, strconv.FormatFloat(v, 'f', 2, 64))
		}
		return strings.Join(parts, " ")
	}
	tot := f.b.TotalTraffic()
	cfg := f.b.Config()
	table := map[string]string{
		rmq.RuntimeBrokerVersionDesc:   brokerVersionDesc,
		rmq.RuntimeBrokerVersion:       strconv.Itoa(int(remoting.DefaultVersion)),
		rmq.RuntimeBootTimestamp:       itoa(f.b.Started().UnixMilli()),
		rmq.RuntimeBrokerActive:        "true",
		rmq.RuntimePutTps:              tps(false),
		rmq.RuntimeGetTransferredTps:   tps(true),
		rmq.RuntimeGetTransferedTps:    tps(true),
		rmq.RuntimeMsgPutTotalTodayNow: strconv.FormatUint(tot.PutMsgs, 10),
		rmq.RuntimeMsgGetTotalTodayNow: strconv.FormatUint(tot.GetMsgs, 10),
		rmq.RuntimePutMessageSizeTotal: strconv.FormatUint(tot.PutBytes, 10),
		rmq.RuntimeBrokerName:          cfg.BrokerName,
		rmq.RuntimeClusterName:         cfg.ClusterName,
		rmq.RuntimeBrokerID:            itoa(cfg.BrokerID),
	}
	if u, err := f.b.DiskUsage(); err == nil {
		table[rmq.RuntimeCommitLogDiskRatio] = strconv.FormatFloat(u.UsedFraction(), 'f', -1, 64)
		table[rmq.RuntimeCommitLogDirCapacity] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(u.TotalBytes), humanBytes(u.FreeBytes))
		table[rmq.RuntimeCommitLogDirTotalBytes] = strconv.FormatUint(u.TotalBytes, 10)
		table[rmq.RuntimeCommitLogDirFreeBytes] = strconv.FormatUint(u.FreeBytes, 10)
		table[rmq.RuntimeCommitLogDirUsedBytes] = strconv.FormatUint(u.UsedBytes, 10)
	}
	// Petrel's own: messages retention removed early (disk above the
	// high-water mark) before a group consumed them, since start.
	var lost uint64
	for _, r := range f.b.RemovedUnconsumed() {
		lost += r.Messages
	}
	table[rmq.RuntimeRemovedUnconsumedMsgs] = strconv.FormatUint(lost, 10)
	addReplicationInfo(f.b, table)
	addDayTotals(f.b, table)
	return bodyResponse(req, rmq.EncodeRuntimeInfoBody(table), nil)
}

// humanBytes formats n as Java's MixAll.humanReadableByteCount(n, false):
// binary units with one decimal.
func humanBytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	const units = "KMGTPE"
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

func (f *Front) topicStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeTopicStatsRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	stats, err := f.b.TopicStats(h.Topic)
	if err != nil {
		return f.errorResponse(req, err)
	}
	name := f.b.Config().BrokerName
	out := rmq.TopicStatsTable{Offsets: make([]rmq.TopicOffset, 0, len(stats)), RemovedUnconsumed: map[string]uint64{}}
	for _, s := range stats {
		out.Offsets = append(out.Offsets, rmq.TopicOffset{Topic: h.Topic, BrokerName: name, QueueID: s.QueueID,
			MinOffset: s.MinOffset, MaxOffset: s.MaxOffset, LastUpdateTimestamp: s.LastStoreTime})
	}
	// Per-topic rates are not sampled (the broker's are, in runtime info).
	// removedUnconsumed is Petrel's own: per group, the messages of the
	// topic retention removed early before the group consumed them.
	for _, r := range f.b.RemovedUnconsumed() {
		if r.Topic == h.Topic {
			out.RemovedUnconsumed[r.Group] += r.Messages
		}
	}
	return bodyResponse(req, rmq.EncodeTopicStatsBody(out), nil)
}

func (f *Front) consumerConnections(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeConsumerConnectionListRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	group := h.ConsumerGroup
	members := f.b.ConsumerMembers(group)
	if len(members) == 0 {
		return remoting.NewResponse(req, rmq.RespConsumerNotOnline, "the consumer group ["+group+"] not online: no member has sent a heartbeat to this broker")
	}
	out := rmq.ConsumerConnection{SubscriptionTable: map[string]rmq.SubscriptionData{}}
	for _, m := range members {
		cj := rmq.Connection{ClientID: m.ClientID, Language: "OTHER"}
		f.mu.Lock()
		c := f.conns[m.Conn]
		f.mu.Unlock()
		// A member of another front (gRPC) says what it is itself.
		if m.Language != "" {
			cj.Language = m.Language
		}
		cj.Version, cj.ClientAddr = int16(m.Version), m.ClientAddr
		if c != nil {
			cj.ClientAddr = c.RemoteAddr().String()
			if ci, ok := c.Value(clientInfoKey{}).(clientInfo); ok {
				cj.Language, cj.Version = ci.language, ci.version
			}
		}
		out.ConnectionSet = append(out.ConnectionSet, cj)
		out.ConsumeType, out.MessageModel, out.ConsumeFromWhere = m.ConsumeType, m.MessageModel, m.ConsumeFromWhere
		for _, s := range m.Subscriptions {
			if cur, ok := out.SubscriptionTable[s.Topic]; ok && cur.SubVersion > s.SubVersion {
				continue
			}
			et := s.ExpressionType
			if et == "" {
				et = "TAG"
			}
			out.SubscriptionTable[s.Topic] = rmq.SubscriptionData{Topic: s.Topic, SubString: s.Expression, TagsSet: s.Tags,
				SubVersion: s.SubVersion, ExpressionType: et}
		}
	}
	return bodyResponse(req, rmq.EncodeConsumerConnectionBody(out), nil)
}

func (f *Front) consumeStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeConsumeStatsRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	stats, err := f.b.ConsumeStats(h.ConsumerGroup, h.Topic)
	if err != nil {
		return f.errorResponse(req, err)
	}
	name := f.b.Config().BrokerName
	out := rmq.ConsumeStats{Offsets: make([]rmq.ConsumeOffset, 0, len(stats))}
	for _, s := range stats {
		out.Offsets = append(out.Offsets, rmq.ConsumeOffset{Topic: s.Topic, BrokerName: name, QueueID: s.QueueID,
			BrokerOffset: s.BrokerOffset, ConsumerOffset: s.ConsumerOffset, PullOffset: s.PullOffset,
			LastTimestamp: s.LastTimestamp, InFlight: s.InFlight})
	}
	return bodyResponse(req, rmq.EncodeConsumeStatsBody(out), nil)
}

func (f *Front) resetOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeResetOffsetRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	offsets, err := f.b.ResetOffset(h.Group, h.Topic, h.Timestamp)
	if err != nil {
		return f.errorResponse(req, err)
	}
	name := f.b.Config().BrokerName
	table := make(rmq.OffsetTable, len(offsets))
	for q, off := range offsets {
		table[rmq.MessageQueue{Topic: h.Topic, BrokerName: name, QueueID: int32(q)}] = off
	}
	body := rmq.EncodeOffsetTable(table)
	notice := rmq.ResetOffsetRequest{Topic: h.Topic, Group: h.Group, Timestamp: h.Timestamp, IsForce: true}
	for _, id := range f.b.ConsumerConns(h.Group) {
		f.mu.Lock()
		c := f.conns[id]
		f.mu.Unlock()
		if c == nil {
			continue
		}
		if err := c.InvokeOneway(rmq.EncodeResetClientOffset(notice, body)); err != nil {
			f.log.Warn("reset offset notice not sent", "group", h.Group, "topic", h.Topic, "remote", c.RemoteAddr().String(), "err", err)
		}
	}
	return rmq.EncodeResetOffsetResponse(req, body)
}

// applyAttributes applies RocketMQ's attribute changes ("+key=value" sets,
// "-key" removes, comma-separated) to a copy of cur.
func applyAttributes(cur map[string]string, changes string) (map[string]string, error) {
	out := make(map[string]string, len(cur))
	for k, v := range cur {
		out[k] = v
	}
	for _, item := range strings.Split(changes, ",") {
		switch {
		case strings.HasPrefix(item, "+") && strings.Contains(item, "="):
			k, v, _ := strings.Cut(item[1:], "=")
			if k == "" {
				return nil, fmt.Errorf("attribute %q has no key; write +key=value", item)
			}
			out[k] = v
		case strings.HasPrefix(item, "-") && len(item) > 1 && !strings.Contains(item, "="):
			delete(out, item[1:])
		default:
			return nil, fmt.Errorf("attribute change %q is neither +key=value nor -key", item)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
