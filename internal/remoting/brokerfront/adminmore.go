package brokerfront

// The long tail of mqadmin's broker requests (rmq/adminmore.go has the
// codes and shapes):
//
//	204 GET_PRODUCER_CONNECTION_LIST  mqadmin producerConnection
//	328 GET_ALL_PRODUCER_INFO         mqadmin producer
//	305 GET_SYSTEM_TOPIC_LIST_FROM_BROKER mqadmin exportMetrics, topicList's system topics
//	306 CLEAN_EXPIRED_CONSUMEQUEUE    mqadmin cleanExpiredCQ
//	316 CLEAN_UNUSED_TOPIC            mqadmin cleanUnusedTopic
//	329 DELETE_EXPIRED_COMMITLOG      mqadmin deleteExpiredCommitLog
//	317 GET_BROKER_CONSUME_STATS      mqadmin brokerConsumeStats
//	43  GET_ALL_CONSUMER_OFFSET       a slave's offset sync, exports
//	45  GET_ALL_DELAY_OFFSET          a slave's delay-progress sync
//	321 QUERY_CONSUME_QUEUE           mqadmin queryCq
//	315 VIEW_BROKER_STATS_DATA        mqadmin statsAll
//
// The three cleaning requests answer success and change nothing, because
// Petrel's store leaves nothing for them to clean (see cleanNothing).

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// registerAdminMore installs the handlers of this file.
func (f *Front) registerAdminMore(s *remoting.Server) {
	s.Handle(rmq.CodeGetProducerConnectionList, f.producerConnections)
	s.Handle(rmq.CodeGetAllProducerInfo, f.allProducers)
	for _, code := range []int16{rmq.CodeCleanExpiredConsumeQueue, rmq.CodeCleanUnusedTopic, rmq.CodeDeleteExpiredCommitLog} {
		s.Handle(code, f.cleanNothing)
	}
	s.Handle(rmq.CodeGetBrokerConsumeStats, f.brokerConsumeStats)
	s.Handle(rmq.CodeGetAllConsumerOffset, f.allConsumerOffsets)
	s.Handle(rmq.CodeGetAllDelayOffset, f.allDelayOffsets)
	s.Handle(rmq.CodeQueryConsumeQueue, f.queryConsumeQueue)
	s.Handle(rmq.CodeViewBrokerStatsData, f.brokerStats)
}

// producerConnection describes one producer's connection as 204 and 328
// report it: its address and the language and version its heartbeats
// carry (OTHER and 0 when it sent none on this front).
func (f *Front) producerConnection(p broker.Producer) rmq.Connection {
	cj := rmq.Connection{ClientID: p.ClientID, Language: "OTHER"}
	f.mu.Lock()
	c := f.conns[p.Conn]
	f.mu.Unlock()
	if c != nil {
		cj.ClientAddr = c.RemoteAddr().String()
		if ci, ok := c.Value(clientInfoKey{}).(clientInfo); ok {
			cj.Language, cj.Version = ci.language, ci.version
		}
	}
	return cj
}

// producerConnections answers 204; like RocketMQ, a group with no live
// producer is SYSTEM_ERROR (RocketMQ has no PRODUCER_NOT_ONLINE code).
func (f *Front) producerConnections(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeProducerConnectionListRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	ps := f.b.Producers(h.ProducerGroup)
	if len(ps) == 0 {
		return remoting.NewResponse(req, rmq.RespSystemError, "the producer group["+h.ProducerGroup+"] not exist: no producer of it has sent a heartbeat to this broker")
	}
	out := rmq.ProducerConnection{ConnectionSet: make([]rmq.Connection, 0, len(ps))}
	for _, p := range ps {
		out.ConnectionSet = append(out.ConnectionSet, f.producerConnection(p))
	}
	return bodyResponse(req, rmq.EncodeProducerConnectionBody(out), nil)
}

// allProducers answers 328: every live producer, by group.
func (f *Front) allProducers(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	out := rmq.ProducerTableInfo{Data: map[string][]rmq.ProducerInfo{}}
	for _, p := range f.b.Producers("") {
		cj := f.producerConnection(p)
		ip := cj.ClientAddr
		if i := strings.LastIndexByte(ip, ':'); i > 0 {
			ip = strings.Trim(ip[:i], "[]")
		}
		out.Data[p.Group] = append(out.Data[p.Group], rmq.ProducerInfo{ClientID: cj.ClientID, RemoteIP: ip,
			Language: cj.Language, Version: int32(cj.Version), LastUpdateTimestamp: p.LastHeartbeat})
	}
	return bodyResponse(req, rmq.EncodeProducerTableBody(out), nil)
}

// cleanNothing answers 306, 316 and 329 with success and changes nothing:
//
//   - 306 CLEAN_EXPIRED_CONSUMEQUEUE: RocketMQ removes consume queues of
//     deleted topics and the parts below the commit log's first offset.
//     Petrel removes a topic's queues when the topic is deleted, and its
//     retention pass (every RetentionInterval, 10 s by default) cuts the
//     queues with the commit-log segments it removes, so none is expired.
//   - 316 CLEAN_UNUSED_TOPIC: RocketMQ removes consume queues whose topic
//     has no config; in Petrel a topic's queues go with its config (215).
//   - 329 DELETE_EXPIRED_COMMITLOG: RocketMQ deletes expired commit-log
//     files at once instead of waiting for deleteWhen (4 a.m.). Petrel's
//     retention pass has no such hour: it removes segments past
//     fileReservedTime within one RetentionInterval, so they are gone
//     already or will be within seconds.
func (f *Front) cleanNothing(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	f.log.Info("clean request answered; Petrel's store has nothing to clean", "code", req.Code, "remote", remoteAddr(c))
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// brokerConsumeStats answers 317: every subscription group's consume
// stats on each topic it consumes here (committed offsets or a live
// member's subscription), with the lag summed over all of them.
func (f *Front) brokerConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeBrokerConsumeStatsRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	cfg := f.b.Config()
	out := rmq.ConsumeStatsList{BrokerAddr: cfg.StoreHost.String()}
	for _, g := range f.b.Groups() {
		stats, err := f.b.ConsumeStats(g.Name, "")
		if err != nil {
			continue // the group went away meanwhile
		}
		gs := rmq.GroupConsumeStats{Group: g.Name, Stats: []rmq.ConsumeStats{}}
		for i := 0; i < len(stats); {
			topic := stats[i].Topic
			j := i
			for j < len(stats) && stats[j].Topic == topic {
				j++
			}
			if t, ok := f.b.Topic(topic); h.IsOrder && (!ok || !t.Order) {
				i = j
				continue
			}
			cs := rmq.ConsumeStats{Offsets: make([]rmq.ConsumeOffset, 0, j-i)}
			for _, s := range stats[i:j] {
				cs.Offsets = append(cs.Offsets, rmq.ConsumeOffset{Topic: s.Topic, BrokerName: cfg.BrokerName, QueueID: s.QueueID,
					BrokerOffset: s.BrokerOffset, ConsumerOffset: s.ConsumerOffset, PullOffset: s.PullOffset,
					LastTimestamp: s.LastTimestamp, InFlight: s.InFlight})
				out.TotalDiff += s.BrokerOffset - s.ConsumerOffset
				out.TotalInflightDiff += s.PullOffset - s.ConsumerOffset
			}
			gs.Stats = append(gs.Stats, cs)
			i = j
		}
		out.Groups = append(out.Groups, gs)
	}
	return bodyResponse(req, rmq.EncodeConsumeStatsListBody(out), nil)
}

// allConsumerOffsets answers 43: every committed offset, by topic@group.
// The data version is the subscription groups' (Petrel versions no
// offset table).
func (f *Front) allConsumerOffsets(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var entries []rmq.GroupOffsets
	for _, o := range f.b.CommittedOffsets() {
		if n := len(entries); n == 0 || entries[n-1].Topic != o.Topic || entries[n-1].Group != o.Group {
			entries = append(entries, rmq.GroupOffsets{Topic: o.Topic, Group: o.Group, Offsets: map[int32]int64{}})
		}
		entries[len(entries)-1].Offsets[o.QueueID] = o.Offset
	}
	return bodyResponse(req, rmq.EncodeAllConsumerOffsetBody(entries, versionWire(f.b.GroupsVersion())), nil)
}

// allDelayOffsets answers 45 with an empty table: RocketMQ's table is how
// far each delay level's queue of SCHEDULE_TOPIC_XXXX has been delivered;
// Petrel keeps delayed messages in one timer store ordered by due time,
// with no per-level queues, so no level has an offset to report.
func (f *Front) allDelayOffsets(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return bodyResponse(req, rmq.EncodeAllDelayOffsetBody(nil, rmq.DataVersion{Timestamp: f.b.Started().UnixMilli()}), nil)
}

// queryConsumeQueue answers 321: count entries of a queue from index,
// and, when a consumer group is named, its subscription to the topic.
func (f *Front) queryConsumeQueue(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueryConsumeQueueRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	minOff, maxOff, entries, err := f.b.QueueEntries(h.Topic, h.QueueID, h.Index, int(h.Count))
	if err != nil {
		return f.errorResponse(req, err)
	}
	out := rmq.QueryConsumeQueueBody{MinQueueIndex: minOff, MaxQueueIndex: maxOff, QueueData: make([]rmq.ConsumeQueueData, 0, len(entries))}
	for _, e := range entries {
		out.QueueData = append(out.QueueData, rmq.ConsumeQueueData{PhysicOffset: e.PhysicalOffset, PhysicSize: e.Size, TagsCode: e.TagHash})
	}
	if h.ConsumerGroup != "" {
		out.FilterData = h.ConsumerGroup + "@" + h.Topic + " is not online!"
		for _, m := range f.b.ConsumerMembers(h.ConsumerGroup) {
			for _, s := range m.Subscriptions {
				if s.Topic != h.Topic {
					continue
				}
				et := s.ExpressionType
				if et == "" {
					et = "TAG"
				}
				out.SubscriptionData = &rmq.SubscriptionData{Topic: s.Topic, SubString: s.Expression, TagsSet: s.Tags, SubVersion: s.SubVersion, ExpressionType: et}
				out.FilterData = "null" // RocketMQ's for a subscription with no filter data (tags)
			}
		}
	}
	resp := bodyResponse(req, rmq.EncodeQueryConsumeQueueBody(out), nil)
	if len(entries) == 0 {
		resp.Remark = "no entry of queue " + itoa(int64(h.QueueID)) + " of " + h.Topic + " at index " + itoa(h.Index) +
			" (the queue holds " + itoa(minOff) + " to " + itoa(maxOff-1) + ")"
	}
	return resp
}

// The stats names of 315 that Petrel keeps (RocketMQ's BrokerStatsManager
// names) and the broker counter each reads.
var statsNames = map[string]broker.StatsKind{
	"TOPIC_PUT_NUMS":  broker.StatsTopicPutMsgs,
	"TOPIC_PUT_SIZE":  broker.StatsTopicPutBytes,
	"GROUP_GET_NUMS":  broker.StatsGroupGetMsgs,
	"GROUP_GET_SIZE":  broker.StatsGroupGetBytes,
	"BROKER_PUT_NUMS": broker.StatsBrokerPutMsgs,
	"BROKER_GET_NUMS": broker.StatsBrokerGetMsgs,
}

// brokerStats answers 315 from the broker's traffic windows (the last
// minute, hour and day, sampled every 10 s, 10 min and hour as RocketMQ's
// StatsItem): TOPIC_PUT_NUMS / _SIZE keyed by a topic (a topic with no
// traffic yet answers zeros), GROUP_GET_NUMS / _SIZE keyed by
// "topic@group", BROKER_PUT_NUMS / _GET_NUMS keyed by the cluster name.
// Anything else, and a group with no gets, is SYSTEM_ERROR "The stats
// <NAME> <KEY> not exist", as RocketMQ answers stats it has not.
func (f *Front) brokerStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeViewBrokerStatsRequest(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	notExist := func(why string) *remoting.Command {
		return remoting.NewResponse(req, rmq.RespSystemError, "The stats <"+h.StatsName+"> <"+h.StatsKey+"> not exist: "+why)
	}
	kind, known := statsNames[h.StatsName]
	if !known {
		names := make([]string, 0, len(statsNames))
		for n := range statsNames {
			names = append(names, n)
		}
		slices.Sort(names)
		return notExist("Petrel keeps " + strings.Join(names, ", "))
	}
	topic, group := h.StatsKey, ""
	switch kind {
	case broker.StatsGroupGetMsgs, broker.StatsGroupGetBytes:
		var ok bool
		if topic, group, ok = strings.Cut(h.StatsKey, "@"); !ok {
			return notExist("the key of group stats is TOPIC@GROUP")
		}
	case broker.StatsBrokerPutMsgs, broker.StatsBrokerGetMsgs:
		if h.StatsKey != f.b.Config().ClusterName {
			return notExist("the key of broker stats is the cluster name, " + f.b.Config().ClusterName)
		}
	}
	w, ok := f.b.StatsWindows(kind, topic, group)
	if !ok {
		switch kind {
		case broker.StatsTopicPutMsgs, broker.StatsTopicPutBytes:
			if _, exists := f.b.Topic(topic); !exists {
				return notExist("no such topic on this broker")
			}
		default:
			return notExist("the group has got nothing of the topic on this broker since it started")
		}
	}
	item := func(s broker.WindowStat) rmq.BrokerStatsItem {
		return rmq.BrokerStatsItem{Sum: int64(s.Sum), TPS: s.TPS()}
	}
	out := rmq.BrokerStatsData{StatsMinute: item(w.Minute), StatsHour: item(w.Hour), StatsDay: item(w.Day)}
	return bodyResponse(req, rmq.EncodeBrokerStatsBody(out), nil)
}

// addDayTotals puts into a GET_BROKER_RUNTIME_INFO table what
// mqadmin exportMetrics reads for "messages of the last day":
// msgPutTotalTodayMorning, msgPutTotalYesterdayMorning and the Get
// pair, RocketMQ's counters as they stood at local midnight. Petrel's
// counters start at 0 when the broker starts and no midnight snapshot is
// kept, so a value is known, 0, only for a midnight after the start; for
// an earlier one the key is left out rather than guessed.
func addDayTotals(b *broker.Broker, table map[string]string) {
	now := b.Config().Clock.Now().In(time.Local)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
	started := b.Started()
	for _, m := range []struct {
		put, get string
		at       time.Time
	}{
		{"msgPutTotalTodayMorning", "msgGetTotalTodayMorning", today},
		{"msgPutTotalYesterdayMorning", "msgGetTotalYesterdayMorning", today.AddDate(0, 0, -1)},
	} {
		if !started.After(m.at) {
			continue
		}
		table[m.put], table[m.get] = "0", "0"
	}
}
